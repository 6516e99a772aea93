"""Tests for maxk.max_at_k_variance / maxk.pass_at_k_variance against enumeration."""

from fractions import Fraction
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import maxk
from tests.maxk import enumeration
from tests.maxk import enumeration_variance as ev
from tests.maxk.variants import VARIANTS


@pytest.mark.parametrize("n", range(2, 9))
def test_matches_disjoint_pair_enumeration(n):
  rng = np.random.default_rng(n)
  for kind, r in enumeration.reward_kinds(n, rng).items():
    for k in range(1, n // 2 + 1):
      got = np.asarray(maxk.max_at_k_variance(r.astype(np.float32), k))
      want = np.apply_along_axis(ev.max_at_k_variance, -1, r, k)
      assert got.shape == r.shape[:-1]
      np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-6, err_msg=f"{kind} k={k}")


@pytest.mark.parametrize("n", range(2, 9))
def test_pass_at_k_variance_matches_enumeration_and_closed_form(n):
  rng = np.random.default_rng(50 + n)
  correct = rng.random((2, 3, n)) < 0.4
  for k in range(1, n // 2 + 1):
    got = np.asarray(maxk.pass_at_k_variance(correct, k))
    want = np.apply_along_axis(ev.max_at_k_variance, -1, correct.astype(np.float64), k)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(
      maxk.max_at_k_variance(correct.astype(np.float32), k), got, rtol=1e-5, atol=1e-7
    )
    for c in range(n + 1):  # exact rational closed form
      p = Fraction(math.comb(n - c, k), math.comb(n, k))
      q = Fraction(math.comb(n - c - k, k) if n - c >= k else 0, math.comb(n - k, k))
      row = np.array([1] * c + [0] * (n - c), bool)
      np.testing.assert_allclose(maxk.pass_at_k_variance(row, k), float(p * (p - q)), rtol=1e-6)


@pytest.mark.parametrize(
  "values,probs", [([-1.0, 0.5, 2.0], [0.2, 0.5, 0.3]), ([0.0, 1.0, 1.0], [0.6, 0.3, 0.1])]
)
@pytest.mark.parametrize("n,k", [(2, 1), (3, 1), (4, 1), (4, 2), (5, 1), (5, 2)])
def test_unbiased_for_the_sampling_variance(values, probs, n, k):
  """E[V̂] = Var(M̂) = E[M̂²] − E[M̂]², both exact sums over all 3^n outcome tuples."""
  rewards, weights = ev.outcome_tuples(values, probs, n)
  m_hat = np.array([ev.max_at_k(r, k) for r in rewards])
  true_var = weights @ m_hat**2 - (weights @ m_hat) ** 2
  v_ref = np.array([ev.max_at_k_variance(r, k) for r in rewards])
  assert abs(weights @ v_ref - true_var) < 1e-12  # the definition is unbiased
  v_lib = np.asarray(maxk.max_at_k_variance(rewards.astype(np.float32), k), np.float64)
  assert abs(weights @ v_lib - true_var) < 1e-5 * max(1.0, true_var)
  assert true_var > 1e-3  # a non-trivial check
  # The library M̂ is the estimator whose variance this is.
  np.testing.assert_allclose(
    maxk.max_at_k(rewards.astype(np.float32), k), m_hat, rtol=1e-5, atol=1e-6
  )


@pytest.mark.parametrize("n,k", [(2, 1), (4, 2), (6, 2), (6, 3), (7, 3)])
def test_pass_at_k_variance_unbiased_for_bernoulli(n, k):
  p = 0.3
  rewards, weights = ev.outcome_tuples([0.0, 1.0], [1 - p, p], n)
  est = np.asarray(maxk.pass_at_k(rewards, k), np.float64)
  true_var = weights @ est**2 - (weights @ est) ** 2
  got = weights @ np.asarray(maxk.pass_at_k_variance(rewards, k), np.float64)
  assert true_var > 1e-3
  assert abs(got - true_var) < 1e-6


def test_k1_is_sample_variance_over_n():
  r = np.random.default_rng(0).normal(size=(4, 10))
  np.testing.assert_allclose(
    maxk.max_at_k_variance(r.astype(np.float32), 1), r.var(axis=-1, ddof=1) / 10, rtol=1e-5
  )


def test_nonnegative_and_shift_invariant():
  rng = np.random.default_rng(1)
  r = rng.normal(size=(200, 9)).astype(np.float32)
  for k in (1, 2, 3, 4):
    v = np.asarray(maxk.max_at_k_variance(r, k))
    assert np.all(v >= 0)
    np.testing.assert_allclose(maxk.max_at_k_variance(r + 1000.0, k), v, rtol=2e-3, atol=1e-6)
  # Zero exactly when the top n-k+1 sorted rewards are equal.
  assert float(maxk.max_at_k_variance(np.array([-3.0, 1.0, 1.0, 1.0]), 2)) == 0.0
  assert float(maxk.max_at_k_variance(np.array([-3.0, -2.0, 1.0, 1.0]), 2)) > 0.0


@pytest.mark.parametrize("n", [64, 1024])
@pytest.mark.parametrize("offset", [0.0, 100.0])
def test_float32_accuracy_against_exact_rational(n, offset):
  rng = np.random.default_rng(n)
  r = (offset + rng.random(n)).astype(np.float32)
  for k in sorted({1, 2, 8, n // 4, n // 2}):
    want = ev.exact_variance_by_ints(r, k)
    got = float(maxk.max_at_k_variance(r, k))
    assert want > 0
    assert abs(got - want) <= 2e-6 * want, (k, got, want)  # naive M̂² − T: up to 300x off


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("k", [1, 2, 3])
def test_against_enumeration_jit_vmap(variant, k):
  rng = np.random.default_rng(k)
  r = rng.normal(size=(5, 6)).astype(np.float32)
  c = rng.random((5, 6)) < 0.5
  want_max = [ev.max_at_k_variance(row, k) for row in r]
  want_pass = [ev.max_at_k_variance(row.astype(np.float64), k) for row in c]
  fmax = lambda x: maxk.max_at_k_variance(x, k)
  fpass = lambda x: maxk.pass_at_k_variance(x, k)
  for f, x, want in ((fmax, r, want_max), (fpass, c, want_pass)):
    np.testing.assert_allclose(variant(f)(x), want, rtol=2e-5, atol=1e-7)
    np.testing.assert_allclose(variant(jax.vmap(f))(x), want, rtol=2e-5, atol=1e-7)


def test_grad_for_k1_is_the_sample_variance_gradient():
  r = jnp.array([0.3, -1.0, 2.0, 0.5, 0.1])
  # Both gradients in one program; the reference in NumPy.
  g, g2 = jax.jit(
    lambda x: (
      jax.grad(lambda x: maxk.max_at_k_variance(x, 1))(x),
      jax.grad(lambda x: maxk.max_at_k_variance(x, 2))(x),
    )
  )(r)
  r = np.asarray(r)
  np.testing.assert_allclose(g, 2 * (r - r.mean()) / (5 * 4), rtol=1e-5, atol=1e-7)
  assert np.all(np.isfinite(g2))
  np.testing.assert_allclose(np.sum(np.asarray(g2)), 0.0, atol=1e-6)  # shift invariance


def test_nan_only_affects_its_group_and_neg_inf():
  r = np.array([[0.1, 0.5, 0.2, 0.9], [0.3, np.nan, 0.9, 0.0], [1.0, 2.0, 3.0, 0.0]], np.float32)
  for k in (1, 2):
    out = np.asarray(maxk.max_at_k_variance(r, k))
    assert np.isnan(out[1])
    np.testing.assert_array_equal(out[[0, 2]], np.asarray(maxk.max_at_k_variance(r[[0, 2]], k)))
  c = np.array([[1.0, 0.0, 0.0, 1.0], [np.nan, 1.0, 0.0, 0.0]], np.float32)
  out = np.asarray(jax.jit(maxk.pass_at_k_variance, static_argnums=1)(c, 2))
  assert np.isnan(out[1]) and np.isfinite(out[0])
  # Fewer than k -inf rewards: finite and equal to the definition; k or more: +inf.
  r = np.array([-np.inf, 0.5, 1.0, 2.0, 0.0], np.float32)
  assert np.isfinite(ev.max_at_k_variance(r, 2))
  np.testing.assert_allclose(maxk.max_at_k_variance(r, 2), ev.max_at_k_variance(r, 2), rtol=1e-5)
  assert float(maxk.max_at_k_variance(np.array([-np.inf, -np.inf, 1.0, 2.0]), 2)) == np.inf


@pytest.mark.parametrize("fn", [maxk.max_at_k_variance, maxk.pass_at_k_variance])
def test_bad_input(fn):
  x = np.ones((2, 5), np.float32)
  with pytest.raises(ValueError, match=r"k=3 must satisfy 1 <= k <= n/2 with n=5"):
    fn(x, 3)
  with pytest.raises(ValueError, match=r"k=0 must satisfy 1 <= k <= n=5"):
    fn(x, 0)
  with pytest.raises(ValueError, match=r"k=6 must satisfy 1 <= k <= n=5"):
    fn(x, 6)
  with pytest.raises(ValueError, match=r"k=2.0 must be a Python int"):
    fn(x, 2.0)
  with pytest.raises(ValueError, match="sample axis last"):
    fn(np.float32(1.0), 1)
  with pytest.raises(ValueError, match="n >= 2k"):
    fn(np.ones(1, np.float32), 1)


def test_pass_at_k_variance_rejects_non_binary():
  with pytest.raises(ValueError, match="correct must hold only 0/1"):
    maxk.pass_at_k_variance(np.array([0.0, 0.5, 1.0, 1.0]), 1)


@pytest.mark.parametrize("n", [1024, 4096, 16384])
def test_pass_at_k_variance_table_against_exact_rationals_at_large_n(n):
  """lgamma differences gave relative errors of 1.4e-6 / 1.2e-4 / 1.2e-2 at these n."""
  for k in (1, 7, n // 8):
    cs = [0, 1, 2, n // 3, n - 2 * k, n - 2 * k + 1]
    rows = np.arange(n)[None] < np.array(cs)[:, None]
    wants = []
    for c in cs:
      p = Fraction(math.comb(n - c, k), math.comb(n, k))
      q = Fraction(math.comb(n - c - k, k) if n - c >= 2 * k else 0, math.comb(n - k, k))
      wants.append(float(p * (p - q)))
    for x64 in (False, True):
      with jax.enable_x64(x64):
        got = np.asarray(maxk.pass_at_k_variance(rows, k), np.float64)
      for g, w, c in zip(got, wants, cs):
        if w > 1e-30:
          tol = 1e-13 if x64 else 6e-8  # float32: correctly rounded
          assert abs(g - w) <= tol * w, (k, c, x64, g, w)
        else:
          assert g == np.float32(w) or x64, (k, c)


@pytest.mark.parametrize("n", [1024, 16384])
def test_x64_accuracy_against_exact_rational(n):
  """Under x64 the lgamma-difference coefficients were 4.6e-9 (n = 1024) and 1.4e-6 off."""
  r = np.random.default_rng(n).random(n).astype(np.float32)
  for k in (1, 2, 8):
    want = ev.exact_variance_by_ints(r, k)
    with jax.enable_x64(True):
      got = float(maxk.max_at_k_variance(r.astype(np.float64), k))
    assert abs(got - want) <= 1e-13 * want, (k, got, want)


def test_k_or_more_neg_inf_rewards_give_inf_as_the_limit_of_the_definition():
  """With ties above them, two -inf rewards gave NaN (0 · inf) at k = 1, 2.

  The definition M̂² − T has inf − inf there; with the -inf rewards replaced by
  -L it grows like L² for k <= 2 (so the limit is +inf) and does not depend on L
  for k > 2 (every k-subset then has a finite maximum).
  """
  inf = np.inf
  r = np.array([-inf, -inf, 1, 0.5, 2, -1.41, -1, 2, -1], np.float32)
  curve = np.asarray(maxk.max_at_k_curve_variance(r))
  ragged = np.asarray(maxk.max_at_k_curve_variance(r, where=np.ones(9, bool)))
  for k in (1, 2, 3, 4):
    single = float(maxk.max_at_k_variance(r, k))
    masked = float(maxk.max_at_k_variance(r, k, where=np.ones(9, bool)))
    by_l = [ev.max_at_k_variance(np.where(np.isinf(r), -big, r), k) for big in (1e2, 1e4, 1e6)]
    if k <= 2:
      assert 0 < by_l[0] < by_l[1] < by_l[2] and by_l[2] > 1e3 * by_l[1]
      assert single == masked == curve[k - 1] == ragged[k - 1] == np.inf
    else:
      np.testing.assert_allclose(by_l[:2], by_l[2], rtol=1e-12)
      for got in (single, masked, curve[k - 1], ragged[k - 1]):
        np.testing.assert_allclose(got, by_l[2], rtol=1e-5)
  # A group of -inf rewards only: every k-subset has the same maximum, variance 0.
  assert float(maxk.max_at_k_variance(np.full(4, -inf, np.float32), 2)) == 0.0
