"""Tests for maxk.pass_at_k and maxk.max_at_k against brute-force enumeration."""

import math

import hypothesis
import hypothesis.extra.numpy as hnp
import hypothesis.strategies as st
import jax
import numpy as np
import pytest

import maxk
from tests.maxk import enumeration
from tests.maxk.variants import VARIANTS


@pytest.mark.parametrize("n", range(1, 9))
def test_max_at_k_matches_enumeration(n):
  rng = np.random.default_rng(n)
  for kind, r in enumeration.reward_kinds(n, rng).items():
    for k in range(1, n + 1):
      got = np.asarray(maxk.max_at_k(r.astype(np.float32), k))
      want = np.apply_along_axis(enumeration.max_at_k, -1, r, k)
      assert got.shape == r.shape[:-1]
      np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=f"{kind} k={k}")


@pytest.mark.parametrize("n", range(1, 9))
def test_pass_at_k_matches_enumeration_and_formula(n):
  rng = np.random.default_rng(100 + n)
  correct = rng.random((4, 5, n)) < 0.35
  for k in range(1, n + 1):
    got = np.asarray(maxk.pass_at_k(correct, k))
    want = np.apply_along_axis(enumeration.pass_at_k, -1, correct, k)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    c = correct.sum(-1)
    formula = 1 - np.vectorize(lambda ci: math.comb(n - ci, k) / math.comb(n, k))(c)
    np.testing.assert_allclose(got, formula, rtol=1e-6, atol=1e-7)
    # For {0, 1} rewards max@k is pass@k.
    np.testing.assert_allclose(
      maxk.max_at_k(correct.astype(np.float32), k), got, rtol=1e-6, atol=1e-6
    )


def test_pass_at_k_accepts_int_and_bool_and_is_exact_for_large_n():
  n, k = 4096, 100
  correct = np.zeros(n, np.int32)
  correct[:3] = 1
  want = 1 - math.prod((n - 3 - i) / (n - i) for i in range(k))  # C(n-3,k)/C(n,k)
  np.testing.assert_allclose(maxk.pass_at_k(correct, k), want, rtol=1e-6)
  np.testing.assert_allclose(maxk.pass_at_k(correct.astype(bool), k), want, rtol=1e-6)


@hypothesis.settings(max_examples=40, deadline=None)
@hypothesis.given(
  r=hnp.arrays(np.float64, st.integers(1, 7), elements=st.floats(-5, 5, allow_nan=False, width=32)),
  data=st.data(),
)
def test_max_at_k_properties(r, data):
  n = r.shape[0]
  k = data.draw(st.integers(1, n))
  got = float(maxk.max_at_k(r.astype(np.float32), k))
  np.testing.assert_allclose(got, enumeration.max_at_k(r, k), rtol=1e-5, atol=1e-5)
  # max@1 is the mean, max@n the max, and max@k is non-decreasing in k.
  assert np.mean(r) - 1e-5 <= got <= np.max(r) + 1e-5
  if k < n:
    assert float(maxk.max_at_k(r.astype(np.float32), k + 1)) >= got - 1e-5


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("k", [1, 3, 6])
def test_against_enumeration_jit_vmap(variant, k):
  rng = np.random.default_rng(0)
  r = rng.normal(size=(5, 6)).astype(np.float32)
  c = rng.random((5, 6)) < 0.5
  want_max = [enumeration.max_at_k(row, k) for row in r]
  want_pass = [enumeration.pass_at_k(row, k) for row in c]
  max_at_k = lambda x: maxk.max_at_k(x, k)
  pass_at_k = lambda x: maxk.pass_at_k(x, k)
  np.testing.assert_allclose(variant(max_at_k)(r), want_max, rtol=1e-6, atol=1e-7)
  np.testing.assert_allclose(variant(jax.vmap(max_at_k))(r), want_max, rtol=1e-6, atol=1e-7)
  np.testing.assert_allclose(variant(pass_at_k)(c), want_pass, rtol=1e-6)
  np.testing.assert_allclose(variant(jax.vmap(pass_at_k))(c), want_pass, rtol=1e-6)


def test_grad_of_max_at_k_is_the_weight_vector():
  r = np.array([0.3, -1.0, 2.0, 0.5, 0.1], np.float32)
  k = 3
  g = jax.jit(jax.grad(lambda x: maxk.max_at_k(x, k)))(r)  # one program, not op by op
  # ∂/∂r_i of Σ_j C(j-1,k-1)/C(n,k) r_(j) is the weight of r_i's rank.
  rank = np.argsort(np.argsort(np.asarray(r))) + 1
  want = [math.comb(j - 1, k - 1) / math.comb(5, k) for j in rank]
  np.testing.assert_allclose(g, want, rtol=1e-6)


def test_nan_only_affects_its_group():
  r = np.array([[0.1, 0.5, 0.2], [0.3, np.nan, 0.9], [1.0, 2.0, 3.0]], np.float32)
  for k in (1, 2, 3):
    out = np.asarray(maxk.max_at_k(r, k))
    assert np.isnan(out[1])
    clean = np.asarray(maxk.max_at_k(r[[0, 2]], k))
    np.testing.assert_array_equal(out[[0, 2]], clean)
  c = np.array([[1.0, 0.0, 0.0], [np.nan, 1.0, 0.0]], np.float32)
  out = np.asarray(jax.jit(maxk.pass_at_k, static_argnums=1)(c, 2))
  assert np.isnan(out[1]) and out[0] == pytest.approx(2 / 3)


def test_neg_inf_rewards_are_never_the_max():
  r = np.array([-np.inf, 0.5, 1.0, -np.inf], np.float32)
  for k in (2, 3, 4):  # k=2 includes the all -inf subset, so the mean is -inf.
    want = enumeration.max_at_k(r, k)
    assert np.isfinite(want) == (k > 2)
    np.testing.assert_allclose(maxk.max_at_k(r, k), want, rtol=1e-6)


@pytest.mark.parametrize("fn", [maxk.max_at_k, maxk.pass_at_k])
def test_bad_k(fn):
  x = np.ones((2, 4), np.float32)
  with pytest.raises(ValueError, match=r"k=0 must satisfy 1 <= k <= n=4"):
    fn(x, 0)
  with pytest.raises(ValueError, match=r"k=5 must satisfy 1 <= k <= n=4"):
    fn(x, 5)
  with pytest.raises(ValueError, match=r"k=2.0 must be a Python int"):
    fn(x, 2.0)
  with pytest.raises(ValueError, match=r"k=True must be a Python int"):
    fn(x, True)
  with pytest.raises(ValueError, match="sample axis last"):
    fn(np.float32(1.0), 1)


def test_pass_at_k_rejects_non_binary():
  with pytest.raises(ValueError, match="correct must hold only 0/1"):
    maxk.pass_at_k(np.array([0.0, 0.5, 1.0]), 1)


@pytest.mark.parametrize("n", [64, 1024, 4096])
def test_float32_accuracy_against_exact_float64(n):
  """max@k within 1e-5 relative of an exact-rational float64 reference."""
  rng = np.random.default_rng(n)
  r = rng.random(n).astype(np.float32)
  r64 = np.sort(r.astype(np.float64))
  for k in sorted({1, 2, n // 4, n // 2, n - 1, n}):
    total = math.comb(n, k)
    weights = [math.comb(j - 1, k - 1) / total for j in range(1, n + 1)]  # exact ints -> float
    want = math.fsum(w * x for w, x in zip(weights, r64))
    got = float(maxk.max_at_k(r, k))
    assert np.isfinite(got)
    assert abs(got - want) <= 1e-5 * abs(want), (k, got, want)


@pytest.mark.parametrize("n", [16384, 65536])
def test_pass_at_k_table_beyond_the_exact_range_against_exact_rationals(n):
  """Above the exact-integer range the table keeps float64 relative accuracy (x64) and
  so rounds correctly to float32, including c = 1, k = 1 where the value is 1/n."""
  from fractions import Fraction

  for c, k in [(1, 1), (2, 8), (1, 1000), (n // 2, 3), (n - 1, n // 2)]:
    correct = np.zeros(n, np.int32)
    correct[:c] = 1
    want = 1 - Fraction(math.comb(n - c, k), math.comb(n, k))
    with jax.enable_x64(True):
      got64 = float(maxk.pass_at_k(correct, k))
    assert abs(Fraction(got64) - want) <= 1e-13 * want, (c, k, got64, float(want))
    assert float(maxk.pass_at_k(correct, k)) == np.float32(float(want)), (c, k)
