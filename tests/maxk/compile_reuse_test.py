"""Another k at the same shape reuses the compiled estimator; no trace leaks a table."""

from collections.abc import Iterator
import contextlib
import functools
import inspect

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


# (public call with where=, its compiled kernel): ragged groups (each group's own
# size m), and the rank objectives dense and ragged with rank_weights(kind, k).
def _ragged_sweeps() -> list[tuple[object, object]]:
  from maxk._src import metrics as m_  # pylint: disable=g-import-not-at-top
  from maxk._src import rank_objectives as ro  # pylint: disable=g-import-not-at-top

  return [
    (lambda r, c, w, k: maxk.max_at_k(r, k, where=w), m_._max_at_k_ragged),  # pylint: disable=protected-access
    (lambda r, c, w, k: maxk.pass_at_k(c, k, where=w), m_._pass_at_k_ragged),  # pylint: disable=protected-access
    (
      lambda r, c, w, k: maxk.max_at_k_variance(r, k, where=w),
      estimate_variance._max_at_k_variance_ragged,  # pylint: disable=protected-access
    ),
    (
      lambda r, c, w, k: maxk.pass_at_k_variance(c, k, where=w),
      estimate_variance._pass_at_k_variance_ragged,  # pylint: disable=protected-access
    ),
    *[
      (
        lambda r, c, w, k, b=b: maxk.max_at_k_advantages(r, k, baseline=b, where=w),
        advantages._max_at_k_advantages_ragged,  # pylint: disable=protected-access
      )
      for b in ("none", "loo", "loo_centered", "loo_minus_one", "mean_std")
    ],
    (
      lambda r, c, w, k: maxk.pass_at_k_training_advantages(c, k, where=w),
      peers._pass_at_k_training_ragged,  # pylint: disable=protected-access
    ),
    *[
      (
        lambda r, c, w, k, kind=kind: maxk.order_stat_at_k(r, maxk.rank_weights(kind, k)),
        ro._order_stat_at_k,  # pylint: disable=protected-access
      )
      for kind in ("max", "min")
    ],
    (
      lambda r, c, w, k: maxk.order_stat_at_k(r, maxk.rank_weights("max", k), where=w),
      ro._order_stat_at_k_ragged,  # pylint: disable=protected-access
    ),
    *[
      (
        lambda r, c, w, k, b=b: maxk.order_stat_advantages(
          r, maxk.rank_weights("top_m", k, m=2), baseline=b
        ),
        ro._order_stat_advantages,  # pylint: disable=protected-access
      )
      for b in ("none", "loo", "loo_centered")
    ],
    *[
      (
        lambda r, c, w, k, b=b: maxk.order_stat_advantages(
          r, maxk.rank_weights("top_m", k, m=2), baseline=b, where=w
        ),
        ro._order_stat_advantages_ragged,  # pylint: disable=protected-access
      )
      for b in ("none", "loo", "loo_centered")
    ],
  ]


@pytest.mark.parametrize("index", range(19))
def test_a_sweep_over_k_compiles_once_on_ragged_groups_and_rank_objectives(index):
  """k = 2..5 at one shape: one compiled program, each k with its own values, equal to
  the dense call on each group's valid samples (first group)."""
  sweeps = _ragged_sweeps()
  assert len(sweeps) == 19
  call, kernel = sweeps[index]
  rng = np.random.default_rng(index)
  shape = (4, 13)
  r = jnp.asarray(rng.normal(size=shape), jnp.float32)
  c = jnp.asarray(rng.random(shape) < 0.4)
  where = jnp.asarray(rng.random(shape) < 0.85).at[:, :11].set(True)  # m >= 11 >= 2k
  before = kernel._cache_size()  # pylint: disable=protected-access
  outs = {k: np.asarray(call(r, c, where, k)) for k in (2, 3, 4, 5)}
  assert kernel._cache_size() - before <= 1  # pylint: disable=protected-access
  assert len({out.tobytes() for out in outs.values()}) == 4
  keep = np.asarray(where[0])
  if "where=w" not in inspect.getsource(call):
    return  # a dense call
  for k, out in outs.items():
    # The same call on the first group's valid samples alone, dense.
    dense = np.asarray(call(r[:1, keep], c[:1, keep], jnp.ones((1, int(keep.sum())), bool), k))
    got = out[:1, keep] if out.ndim == 2 else out[:1]
    np.testing.assert_allclose(got, dense, rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("ragged", [False, True])
def test_maj_at_k_sweep_over_k_compiles_each_kernel_once(ragged):
  """k is traced in the majority-vote kernels: maj_at_k and maj_at_k_advantages at every
  k = 1..n share one program each, and each k still gives the brute-force values."""
  from maxk._src import majority_vote  # pylint: disable=g-import-not-at-top
  from tests.maxk import majority_vote_test as brute  # pylint: disable=g-import-not-at-top

  rng = np.random.default_rng(11)
  n = 7
  groups = [brute.random_group(rng, n) for _ in range(4)]
  ids, correct = np.stack([g[0] for g in groups]), np.stack([g[1] for g in groups])
  where = rng.random(ids.shape) < 0.8 if ragged else np.ones(ids.shape, bool)
  where[0] = True  # one group keeps all n samples, so that every k has a value
  kernels = (
    (majority_vote._maj_at_k_ragged, majority_vote._maj_at_k_advantages_ragged)  # pylint: disable=protected-access
    if ragged
    else (majority_vote._maj_at_k, majority_vote._maj_at_k_advantages)  # pylint: disable=protected-access
  )
  before = [kernel._cache_size() for kernel in kernels]  # pylint: disable=protected-access
  for k in range(1, n + 1):
    value = np.asarray(maxk.maj_at_k(ids, correct, k, where=where if ragged else None))
    adv = np.asarray(maxk.maj_at_k_advantages(ids, correct, k, where=where if ragged else None))
    for g in range(ids.shape[0]):
      v = where[g]
      if v.sum() < k:
        assert np.isnan(value[g]) and np.all(adv[g] == 0), (k, g)
        continue
      want = brute.maj_subsets(ids[g][v], correct[g][v], k, "uniform")
      want_adv = brute.advantages_subsets(ids[g][v], correct[g][v], k, "uniform", "loo_minus_one")
      np.testing.assert_allclose(value[g], want, atol=2e-6, err_msg=f"k={k} group {g}")
      np.testing.assert_allclose(adv[g][v], want_adv, atol=2e-6, err_msg=f"k={k} group {g}")
      assert np.all(adv[g][~v] == 0)
  after = [kernel._cache_size() for kernel in kernels]  # pylint: disable=protected-access
  assert all(a - b <= 1 for a, b in zip(after, before)), (before, after)


# The lists that JAX's compile events are appended to while a test counts them.
_COMPILE_EVENTS: list[list[str]] = []
# Lowering starts every compilation, also one that the test run's persistent compilation
# cache then answers without a backend compile (tests/conftest.py).
_STARTS = (
  "/jax/core/compile/jaxpr_to_mlir_module_duration",
  "/jax/core/compile/backend_compile_duration",
)


def _on_event(event, duration_secs, **kwargs):
  del duration_secs, kwargs
  if _COMPILE_EVENTS and event in _STARTS:
    _COMPILE_EVENTS[-1].append(event)


@functools.cache
def _listen_to_compiles() -> None:
  """Registers the listener once per process: JAX's oldest supported release has no
  public way to unregister one."""
  jax.monitoring.register_event_duration_secs_listener(_on_event)


@contextlib.contextmanager
def _compiles_counted() -> Iterator[list[str]]:
  """A list of the XLA compilations started inside the ``with`` block."""
  _listen_to_compiles()
  _COMPILE_EVENTS.append([])
  try:
    yield _COMPILE_EVENTS[-1]
  finally:
    _COMPILE_EVENTS.pop()


@pytest.mark.parametrize("ragged", [False, True])
@pytest.mark.parametrize("estimator", ["maj_at_k", "maj_at_k_advantages"])
def test_maj_at_k_a_new_k_compiles_nothing(estimator, ragged):
  """After one call at k = 2, the calls at k = 3..n of maj_at_k or maj_at_k_advantages
  (dense or ragged) start no XLA compilation at all: not their kernel, nor any eager
  operation around it (JAX's lowering and backend-compile events, counted with
  jax.monitoring)."""
  rng = np.random.default_rng(17)
  n = 8
  ids = rng.integers(-1, 4, size=(3, n))
  correct = ids == 2
  where = rng.random(ids.shape) < 0.8 if ragged else None
  if ragged:
    where[0] = True  # one group keeps all n samples, so that every k has a value
  call = getattr(maxk, estimator)
  jax.block_until_ready(call(ids, correct, 2, where=where))
  with _compiles_counted() as compiles:
    for k in range(3, n + 1):
      jax.block_until_ready(call(ids, correct, k, where=where))
  assert not compiles, f"{len(compiles)} compilations over k = 3..{n}"
