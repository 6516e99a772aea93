"""Another k at the same shape reuses the compiled estimator; no trace leaks a table."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import maxk
from maxk._src import advantages
from maxk._src import estimate_variance
from maxk._src import metrics
from maxk._src import peers
from tests.maxk import enumeration

# (public call, its compiled kernel); k >= 2 throughout, so that the same
# coefficient vectors are all zero (k = 1 has no suffix term: its own program).
_SWEEPS = [
  (lambda r, c, k: maxk.max_at_k(r, k), metrics._max_at_k),  # pylint: disable=protected-access
  (lambda r, c, k: maxk.pass_at_k(c, k), metrics.table_lookup),
  (lambda r, c, k: maxk.max_at_k_advantages(r, k), advantages._max_at_k_advantages),  # pylint: disable=protected-access
  (
    lambda r, c, k: maxk.max_at_k_advantages(r, k, baseline="loo"),
    advantages._max_at_k_advantages,  # pylint: disable=protected-access
  ),
  (lambda r, c, k: maxk.max_at_k_variance(r, k), estimate_variance._max_at_k_variance),  # pylint: disable=protected-access
  (
    lambda r, c, k: maxk.pass_at_k_training_advantages(c, k),
    peers._pass_at_k_training,  # pylint: disable=protected-access
  ),
]


@pytest.mark.parametrize("index", range(len(_SWEEPS)))
def test_a_sweep_over_k_compiles_once_and_stays_exact(index):
  call, kernel = _SWEEPS[index]
  rng = np.random.default_rng(index)
  shape = (3, 11)
  r = jnp.asarray(rng.normal(size=shape), jnp.float32)
  c = jnp.asarray(rng.random(shape) < 0.4)
  before = kernel._cache_size()  # pylint: disable=protected-access
  outs = {k: np.asarray(call(r, c, k)) for k in (2, 3, 4, 5)}
  assert kernel._cache_size() - before <= 1  # pylint: disable=protected-access
  # The reused program reads each k's own coefficients.
  if index in (0, 2):
    for k, out in outs.items():
      row = np.asarray(r[0], np.float64)
      want = (
        enumeration.max_at_k(row, k)
        if index == 0
        else enumeration.advantages(row, k, "loo_minus_one")
      )
      np.testing.assert_allclose(out[0], want, rtol=1e-5, atol=1e-6)
  assert len({out.tobytes() for out in outs.values()}) == 4


def test_an_estimator_traced_inside_jit_then_called_eagerly_leaks_nothing():
  r = jnp.asarray(np.random.default_rng(0).normal(size=(2, 9)), jnp.float32)
  inside = jax.jit(lambda x: maxk.max_at_k_advantages(x, 3) + maxk.max_at_k(x, 3)[:, None])(r)
  eager = maxk.max_at_k_advantages(r, 3) + maxk.max_at_k(r, 3)[:, None]
  again = jax.jit(lambda x: maxk.max_at_k_advantages(2 * x, 3) / 2 + maxk.max_at_k(x, 3)[:, None])(
    r
  )
  np.testing.assert_allclose(inside, eager, rtol=1e-6)
  np.testing.assert_allclose(again, eager, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("ragged", [False, True])
def test_maj_at_k_advantages_compile_once_for_every_baseline(ragged):
  """The baseline is an argument of the compiled kernel: the four baselines at one
  (shape, k, tie) share one program, and each still gives its own advantages."""
  from maxk._src import majority_vote  # pylint: disable=g-import-not-at-top

  rng = np.random.default_rng(3)
  ids = rng.integers(-1, 3, size=(4, 7))
  correct = ids == 1
  where = rng.random(ids.shape) < 0.8 if ragged else None
  kernel = (
    majority_vote._maj_at_k_advantages_ragged  # pylint: disable=protected-access
    if ragged
    else majority_vote._maj_at_k_advantages  # pylint: disable=protected-access
  )
  before = kernel._cache_size()  # pylint: disable=protected-access
  outs = {
    baseline: np.asarray(maxk.maj_at_k_advantages(ids, correct, 3, baseline=baseline, where=where))
    for baseline in majority_vote.MAJ_BASELINES
  }
  assert kernel._cache_size() - before <= 1  # pylint: disable=protected-access
  assert len({out.tobytes() for out in outs.values()}) == len(outs)
