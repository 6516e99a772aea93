"""Tests for maxk._src.sorted_kernels against NumPy loops and matrix forms."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from maxk._src import sorted_kernels
from tests.maxk.variants import VARIANTS


@pytest.fixture
def x32() -> np.ndarray:
  """A [3, 6] batch of normal rows in float32, fresh for each test."""
  rng = np.random.default_rng(0)
  return rng.normal(size=(3, 6)).astype(np.float32)


@pytest.mark.parametrize("variant", VARIANTS)
def test_exclusive_sums(variant, x32):
  x = x32.astype(np.float64)
  n = x.shape[-1]
  want_prefix = np.stack([[x[b, :j].sum() for j in range(n)] for b in range(3)])
  want_suffix = np.stack([[x[b, j + 1 :].sum() for j in range(n)] for b in range(3)])
  prefix = variant(sorted_kernels.exclusive_prefix_sum)
  suffix = variant(sorted_kernels.exclusive_suffix_sum)
  np.testing.assert_allclose(prefix(x32), want_prefix, atol=1e-5)
  np.testing.assert_allclose(suffix(x32), want_suffix, atol=1e-5)
  np.testing.assert_allclose(variant(jax.vmap(prefix))(x32), want_prefix, atol=1e-5)


@pytest.mark.parametrize("variant", VARIANTS)
def test_apply_sorted_transform_equals_its_matrix(variant, x32):
  rng = np.random.default_rng(1)
  n = x32.shape[-1]
  coeffs = sorted_kernels.SortedTransform(
    diag=rng.random(n), suffix=rng.random(n), prefix=rng.random(n)
  )
  # a_j = d_j r_j + Σ_{m>j} u_m r_m − Σ_{m<j} p_m r_m as a matrix over ranks.
  j, m = np.arange(n)[:, None], np.arange(n)[None, :]
  w = np.where(j == m, coeffs.diag[m], 0) + np.where(m > j, coeffs.suffix[m], 0)
  w -= np.where(m < j, coeffs.prefix[m], 0)
  r = np.sort(x32, axis=-1)
  got = variant(lambda a: sorted_kernels.apply_sorted_transform(a, coeffs))(r)
  np.testing.assert_allclose(got, r.astype(np.float64) @ w.T, atol=1e-5)
  vmapped = variant(jax.vmap(lambda a: sorted_kernels.apply_sorted_transform(a, coeffs)))
  np.testing.assert_allclose(vmapped(r), r.astype(np.float64) @ w.T, atol=1e-5)


# One jitted program for the gradient, shared by both variants (op-by-op eager
# differentiation compiles every primitive separately).
_zscore_grad = jax.jit(
  jax.grad(lambda a: jnp.sum(sorted_kernels.zscore(a, eps=1e-6) * jnp.arange(6.0)))
)


@pytest.mark.parametrize("variant", VARIANTS)
def test_zscore_matches_numpy_and_constant_groups_are_zero(variant, x32):
  x = x32.astype(np.float64)
  want = (x - x.mean(-1, keepdims=True)) / (x.std(-1, keepdims=True) + 1e-6)
  zscore = variant(lambda a: sorted_kernels.zscore(a, eps=1e-6))
  np.testing.assert_allclose(zscore(x32), want, rtol=1e-4, atol=1e-5)
  # The constant groups have x32's shape, so they reuse its programs.
  const = np.full(x32.shape, 1e6 + 0.7, np.float32)
  assert np.all(np.asarray(zscore(const)) == 0)
  assert np.all(np.isfinite(_zscore_grad(const)))


def test_zero_coefficients_ignore_infinite_rewards():
  r = jnp.array([-jnp.inf, 0.5, 2.0])
  coeffs = np.array([0.0, 0.25, 0.75])
  np.testing.assert_array_equal(sorted_kernels.scaled(coeffs, r), [0.0, 0.125, 1.5])
  np.testing.assert_allclose(sorted_kernels.weighted_sorted_sum(r, coeffs), 1.625)


def test_from_group_max_and_finite_or_zero():
  x = jnp.array([[1e6 + 1.0, 1e6 + 3.0], [-jnp.inf, -jnp.inf], [jnp.nan, 1.0]], jnp.float32)
  out = np.asarray(sorted_kernels.from_group_max(x))
  np.testing.assert_array_equal(out[0], [-2.0, 0.0])
  # A non-finite maximum is not subtracted (no inf − inf = NaN).
  np.testing.assert_array_equal(out[1], [-np.inf, -np.inf])
  np.testing.assert_array_equal(
    sorted_kernels.finite_or_zero(jnp.array([jnp.inf, jnp.nan, -2.0])), [0.0, 0.0, -2.0]
  )
  # The shift carries no gradient.
  # One jitted program for the gradient (not op-by-op eager differentiation).
  g = jax.jit(jax.grad(lambda a: jnp.sum(sorted_kernels.from_group_max(a))))(
    np.array([1.0, 2.0], np.float32)
  )
  np.testing.assert_array_equal(g, [1.0, 1.0])


def test_compensated_sum_keeps_what_cancellation_loses():
  """1e8 + 1 − 1e8 + 0.5 is 1.5; a float32 sum from the left gives 0.5 (1e8 + 1 rounds
  to 1e8).  The derivative is the plain sum's."""
  x = np.array([[1e8, 1.0, -1e8, 0.5], [3.0, -1.0, 0.25, 0.0]], np.float32)
  # The batched call, the vmapped call and the gradient in one jitted program.
  total, vmapped, g = jax.jit(
    lambda a: (
      sorted_kernels.compensated_sum(a),
      jax.vmap(sorted_kernels.compensated_sum)(a),
      jax.grad(lambda b: jnp.sum(sorted_kernels.compensated_sum(b) * jnp.array([1.0, 2.0])))(a),
    )
  )(x)
  np.testing.assert_array_equal(total, [1.5, 2.25])
  np.testing.assert_array_equal(vmapped, [1.5, 2.25])
  np.testing.assert_array_equal(g, [[1.0] * 4, [2.0] * 4])
  assert float(sorted_kernels.compensated_sum(jnp.zeros((0,), jnp.float32))) == 0.0
