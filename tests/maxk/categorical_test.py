"""Tests for maxk._src.categorical: the checks every probs/rewards function shares."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import maxk
from maxk._src import categorical

_P4 = np.array([0.1, 0.2, 0.3, 0.4], np.float32)


@pytest.mark.parametrize(
  "fn",
  [
    maxk.bon_pmf,
    maxk.bon_kl,
    maxk.bon_win_rate,
    maxk.max_at_k_exact,
    maxk.bon_kl_estimate_expectation,
    maxk.bon_kl_gap_bound,
    maxk.bon_win_rate_gap_bound,
    maxk.bon_kl_gap_lower_bound,
  ],
)
def test_bad_input_raises(fn):
  r = np.array([0.0, 1.0, 2.0, 3.0], np.float32)
  with pytest.raises(ValueError, match="non-negative"):
    fn(np.array([0.6, -0.1, 0.3, 0.2], np.float32), r, 2)
  with pytest.raises(ValueError, match="sum to 1"):
    fn(np.array([0.6, 0.1, 0.3, 0.2], np.float32), r, 2)
  with pytest.raises(ValueError, match="finite"):
    fn(np.array([np.nan, 0.1, 0.3, 0.2], np.float32), r, 2)
  with pytest.raises(ValueError, match="shape"):
    fn(_P4, r[:3], 2)
  with pytest.raises(ValueError, match="rewards must not contain NaN"):
    fn(_P4, np.array([0.0, np.nan, 2.0, 3.0], np.float32), 2)
  for bad in (0, -3, 2.0, True, None):
    with pytest.raises(ValueError, match="n=|k="):
      fn(_P4, r, bad)
  # The same array values are not checked under jit (documented behaviour).
  out = jax.jit(lambda a: fn(a, r, 2))(np.array([0.6, 0.1, 0.3, 0.2], np.float32))
  assert np.all(np.isfinite(np.asarray(out)))


def test_prepare_normalizes_and_promotes():
  p, r = categorical.prepare(np.array([0.25, 0.75], np.float32), np.array([1, 2]))
  assert p.dtype == r.dtype == jnp.float32
  np.testing.assert_allclose(p, [0.25, 0.75])
  # Under jit values are not checked, and probs are divided by their sum.
  p2, _ = jax.jit(categorical.prepare)(jnp.array([1.0, 3.0]), jnp.array([0.0, 1.0]))
  np.testing.assert_allclose(p2, [0.25, 0.75])


def test_sum_tolerance_grows_with_the_number_of_outcomes():
  assert categorical.check_probabilities(jnp.full(10, 0.1), "probs") is None
  with pytest.raises(ValueError, match="sum to 1 along the last axis within 1.0e-04"):
    categorical.check_probabilities(jnp.array([0.5, 0.5001]), "probs")
  size = 10**6
  # float32 rounding of a sum of 10^6 terms is tolerated.
  categorical.check_probabilities(jnp.full(size, 1 / size, jnp.float32), "probs")


def test_outcome_axis_must_not_be_empty():
  with pytest.raises(ValueError, match="probs must have at least one outcome"):
    maxk.bon_pmf(np.zeros((2, 0), np.float32), np.zeros((2, 0), np.float32), 2)
  with pytest.raises(ValueError, match="probs must have at least 1 dimension"):
    maxk.bon_kl(np.float32(1.0), np.float32(0.0), 2)


def test_check_unit_interval():
  np.testing.assert_array_equal(categorical.check_unit_interval([0.0, 1.0], "delta"), [0, 1])
  with pytest.raises(ValueError, match="delta must lie in"):
    categorical.check_unit_interval([0.5, np.nan], "delta")


def test_rowwise_keeps_batch_axes():
  x = jnp.arange(24.0).reshape(2, 3, 4)
  out = categorical.rowwise(lambda n, row: n * jnp.sum(row), 2, x)
  np.testing.assert_allclose(out, 2 * np.sum(np.arange(24.0).reshape(2, 3, 4), -1))
