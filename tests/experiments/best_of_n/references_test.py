"""Tests for experiments.best_of_n.references."""

import jax.numpy as jnp
import numpy as np
import pytest

from experiments.best_of_n import references
import maxk


def test_uniform():
  ref = references.uniform(4)
  assert ref.name == "uniform_L4" and ref.family == "uniform"
  np.testing.assert_array_equal(ref.probs, [0.25] * 4)
  np.testing.assert_array_equal(ref.rewards, [0, 1, 2, 3])


def test_cherry_top_puts_eps_on_the_best_outcome():
  ref = references.cherry_top(5, 0.01)
  np.testing.assert_allclose(ref.probs, [0.2475] * 4 + [0.01])
  assert np.argmax(ref.rewards) == 4 and ref.family == "cherry"


def test_cherry_staircase_levels():
  # eps = 1e-4, step 100: levels 1, 1e-2, 1e-4, the lowest taking the rest.
  ref = references.cherry_staircase(1e-4, 100.0)
  np.testing.assert_allclose(ref.probs, [1 - 0.0101, 0.01, 1e-4])
  np.testing.assert_array_equal(ref.rewards, [0, 1, 2])
  # eps = 1e-3, step 10: levels 1e-1, 1e-2, 1e-3 above the lowest.
  np.testing.assert_allclose(references.staircase_probs(1e-3, 10.0), [0.889, 0.1, 0.01, 0.001])


def test_dirichlet_is_reproducible_and_keeps_full_support():
  a = references.dirichlet(np.random.default_rng(1), 50, 0.01)
  b = references.dirichlet(np.random.default_rng(1), 50, 0.01)
  np.testing.assert_array_equal(a.probs, b.probs)
  np.testing.assert_array_equal(a.rewards, b.rewards)
  assert a.name == "dirichlet_a0.01"
  assert a.probs.min() >= 1e-12 * 0.99 and abs(a.probs.sum() - 1) < 1e-12


@pytest.mark.parametrize(
  "build, match",
  [
    (lambda: references.uniform(0), "size=0"),
    (lambda: references.cherry_top(1, 0.1), "size=1"),
    (lambda: references.cherry_top(5, 1.0), "eps=1.0"),
    (lambda: references.staircase_probs(0.0, 10.0), "eps=0.0"),
    (lambda: references.staircase_probs(1e-4, 1.0), "step=1.0"),
    (lambda: references.staircase_probs(1e-4, float("inf")), "step=inf"),
    # 1.5^-1 + 1.5^-2 + ... exceeds 1: no mass is left for the lowest level.
    (lambda: references.staircase_probs(1e-4, 1.5), "step=1.5"),
    (lambda: references.dirichlet(np.random.default_rng(0), 5, 0.0), "alpha=0.0"),
    (lambda: references.dirichlet(np.random.default_rng(0), 5, float("nan")), "alpha=nan"),
  ],
)
def test_bad_arguments_raise(build, match):
  with pytest.raises(ValueError, match=match):
    build()


def test_make_references_order_and_distinct_names():
  refs = references.make_references(
    uniform_sizes=[3, 5],
    cherry_eps=1e-3,
    cherry_size=4,
    cherry_step=10.0,
    dirichlet_alphas=[0.5],
    dirichlet_size=6,
    rng=np.random.default_rng(0),
  )
  assert [r.name for r in refs] == [
    "uniform_L3",
    "uniform_L5",
    "cherry_top",
    "cherry_staircase",
    "dirichlet_a0.5",
  ]
  with pytest.raises(ValueError, match="distinct"):
    references.make_references(
      uniform_sizes=[3, 3],
      cherry_eps=1e-3,
      cherry_size=4,
      cherry_step=10.0,
      dirichlet_alphas=[],
      dirichlet_size=6,
      rng=np.random.default_rng(0),
    )


def test_padding_changes_no_best_of_n_quantity():
  refs = [references.uniform(2), references.cherry_top(5, 0.05)]
  probs, rewards = references.pad(refs, jnp.float32)
  assert probs.shape == (2, 5) and probs.dtype == jnp.float32
  np.testing.assert_array_equal(probs[0, 2:], 0.0)
  assert float(rewards[0, 2:].max()) < 0.0
  for i, ref in enumerate(refs):
    for n in (1, 3, 20):
      np.testing.assert_allclose(
        maxk.bon_kl(probs, rewards, n)[i], maxk.bon_kl(ref.probs, ref.rewards, n), rtol=1e-5
      )
