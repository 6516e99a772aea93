"""Tests for maxk._src.tie_classes: the tie-class CDFs and the collision probability."""

import jax
import numpy as np
import pytest

import maxk
from maxk._src import tie_classes
from tests.maxk import enumeration
from tests.maxk.variants import VARIANTS

_CASES = enumeration.BON_CASES


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("case", range(len(_CASES)))
def test_collision_probability_equals_brute_force_sum_over_pairs(variant, case):
  p, r = _CASES[case]
  got = variant(maxk.reward_collision_probability)(p, r)
  np.testing.assert_allclose(got, enumeration.collision_probability(p, r), rtol=1e-6)


@pytest.mark.parametrize("variant", VARIANTS)
def test_collision_probability_batch_axes_and_vmap(variant):
  rng = np.random.default_rng(0)
  p = rng.dirichlet(np.ones(6), size=(2, 3)).astype(np.float32)
  r = rng.integers(0, 3, size=(2, 3, 6)).astype(np.float32)
  batched = variant(maxk.reward_collision_probability)(p, r)
  vmapped = variant(jax.vmap(maxk.reward_collision_probability))(p, r)
  assert batched.shape == (2, 3)
  for i in range(2):
    for j in range(3):
      want = enumeration.collision_probability(p[i, j], r[i, j])
      np.testing.assert_allclose(batched[i, j], want, rtol=1e-5)
      np.testing.assert_allclose(vmapped[i, j], want, rtol=1e-5)


def test_collision_probability_unique_rewards_and_ties():
  p = np.array([0.1, 0.2, 0.3, 0.4], np.float32)
  # Unique rewards: Σ_y π(y)²; all tied: 1.
  np.testing.assert_allclose(maxk.reward_collision_probability(p, np.arange(4.0)), 0.3, rtol=1e-6)
  np.testing.assert_allclose(maxk.reward_collision_probability(p, np.zeros(4)), 1.0, rtol=1e-6)
  # Under jit probs are divided by their sum; a NaN reward makes its row NaN.
  f = jax.jit(maxk.reward_collision_probability)
  np.testing.assert_allclose(f(3 * p, np.arange(4.0)), 0.3, rtol=1e-6)
  out = f(np.stack([p, p]), np.array([[0.0, 1, 2, 3], [0.0, np.nan, 2, 3]], np.float32))
  np.testing.assert_allclose(out[0], 0.3, rtol=1e-6)
  assert np.isnan(out[1])


@jax.jit
def _classes_log_cdf_and_top_mass(p, r):
  """The tie classes of one row, their log F and the top class's mass, in one program."""
  classes = tie_classes.tie_classes(p, r)
  log_f = tie_classes.log_cdf(classes.F, classes.S)
  return classes, log_f, tie_classes.top_class_mass_row(None, p, r)


@pytest.mark.parametrize("case", range(len(_CASES)))
def test_tie_class_cdfs_against_numpy(case):
  p, r = _CASES[case]
  p64, r64 = p.astype(np.float64) / p.sum(), r.astype(np.float64)
  classes, log_f, top_mass = _classes_log_cdf_and_top_mass(p / p.sum(), r.astype(np.float32))
  order = np.argsort(r64, kind="stable")
  np.testing.assert_array_equal(classes.order.perm, order)
  rs = r64[order]
  want_f = np.array([p64[r64 <= v].sum() for v in rs])
  want_fm = np.array([p64[r64 < v].sum() for v in rs])
  want_s = np.array([p64[r64 > v].sum() for v in rs])
  np.testing.assert_allclose(classes.F, want_f, atol=1e-6)
  np.testing.assert_allclose(classes.F_minus, want_fm, atol=1e-6)
  np.testing.assert_allclose(classes.c, want_f - want_fm, atol=1e-6)
  np.testing.assert_allclose(classes.S, want_s, atol=1e-6)
  # log F is defined where F > 0 (F = 0 gets a finite placeholder, masked by its users).
  log_f = np.asarray(log_f)
  np.testing.assert_allclose(np.exp(log_f[want_f > 0]), want_f[want_f > 0], rtol=1e-5)
  top = r64[p64 > 0].max()
  np.testing.assert_allclose(top_mass, p64[r64 == top].sum(), rtol=1e-6)


def test_bad_input():
  p = np.array([0.1, 0.2, 0.3, 0.4], np.float32)
  with pytest.raises(ValueError, match="rewards must not contain NaN"):
    maxk.reward_collision_probability(p, np.array([0.0, np.nan, 1.0, 2.0]))
  with pytest.raises(ValueError, match="shape"):
    maxk.reward_collision_probability(p, np.arange(3.0))
  with pytest.raises(ValueError, match="sum to 1"):
    maxk.reward_collision_probability(2 * p, np.arange(4.0))
