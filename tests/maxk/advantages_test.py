"""Tests for maxk.max_at_k_advantages: brute force, PKPO identities, exact unbiasedness."""

import functools
import math

import hypothesis
import hypothesis.extra.numpy as hnp
import hypothesis.strategies as st
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import maxk
from tests.maxk import enumeration
from tests.maxk.variants import VARIANTS

BASELINES = ["none", "loo", "loo_centered", "loo_minus_one", "leave_two_out", "mean_std"]
UNBIASED = ["none", "loo", "loo_centered", "loo_minus_one"]


@pytest.mark.parametrize("n", range(1, 9))
@pytest.mark.parametrize("baseline", BASELINES)
def test_matches_enumeration(n, baseline):
  rng = np.random.default_rng(n)
  for kind, r in enumeration.reward_kinds(n, rng).items():
    for k in range(1, n + 1):
      got = np.asarray(maxk.max_at_k_advantages(r.astype(np.float32), k, baseline=baseline))
      want = np.apply_along_axis(enumeration.advantages, -1, r, k, baseline)
      assert got.shape == r.shape
      np.testing.assert_allclose(
        got, want, rtol=1e-4, atol=2e-5, err_msg=f"{kind} k={k} {baseline}"
      )


@hypothesis.settings(max_examples=30, deadline=None)
@hypothesis.given(
  r=hnp.arrays(
    np.float64, st.integers(2, 7), elements=st.sampled_from([-1.0, 0.0, 0.25, 0.5, 1.0, 3.0])
  ),
  data=st.data(),
)
def test_tied_rewards_property(r, data):
  n = r.shape[0]
  k = data.draw(st.integers(1, n))
  baseline = data.draw(st.sampled_from(UNBIASED))
  got = maxk.max_at_k_advantages(r.astype(np.float32), k, baseline=baseline)
  np.testing.assert_allclose(got, enumeration.advantages(r, k, baseline), atol=1e-5)


@pytest.mark.parametrize("n,k", [(4, 1), (6, 2), (8, 3), (8, 8), (5, 4)])
def test_binary_rewards_reproduce_pkpo_eq8(n, k):
  """PKPO Eq. 8: r_i = k/n if correct, else (k/n)·ρ(n−1, c, k−1)."""
  rng = np.random.default_rng(n * 10 + k)
  correct = rng.random((20, n)) < 0.5
  got = np.asarray(maxk.max_at_k_advantages(correct.astype(np.float32), k, baseline="none"))
  comb = lambda a, b: math.comb(a, b) if a >= 0 else 0
  for row, c_row in zip(got, correct):
    c = int(c_row.sum())
    rho = 1 - comb(n - 1 - c, k - 1) / comb(n - 1, k - 1)
    want = np.where(c_row, k / n, (k / n) * rho)
    np.testing.assert_allclose(row, want, rtol=1e-5, atol=1e-7)


def _pkpo_per_group(g, k):
  """PKPO Eqs. 18-21, 29-30, 33-34 for one sorted group, written as in the paper:
  s_i = (1/C(n,k)) Σ_{j≥i} m_ij g_j with m_ii = C(i−1,k−1), m_ij = C(j−2,k−2) (j > i);
  b_i^(k) = Σ_{j≠i} S(j, k, [n]∖i); s^(loo) = s − b^(k)/(n−1);
  s^(loo−1) = s − k/(n(k−1)) b^(k−1)."""
  n = len(g)

  def s_of(x, kk):
    m = len(x)
    out = np.zeros(m)
    for i in range(1, m + 1):
      tot = math.comb(i - 1, kk - 1) * x[i - 1]
      if kk >= 2:
        tot += sum(math.comb(j - 2, kk - 2) * x[j - 1] for j in range(i + 1, m + 1))
      out[i - 1] = tot / math.comb(m, kk)
    return out

  s = s_of(g, k)
  b = lambda kk: np.array([s_of(np.delete(g, i), kk).sum() for i in range(n)])
  loo = s - b(k) / (n - 1)
  loo_m1 = s - k / (n * (k - 1)) * b(k - 1)
  return s, loo, loo_m1


@pytest.mark.parametrize("n,k", [(4, 2), (6, 3), (7, 2), (8, 5)])
def test_pkpo_equations_on_sorted_groups(n, k):
  rng = np.random.default_rng(n + k)
  g = np.sort(rng.random(n))
  s, loo, loo_m1 = _pkpo_per_group(g, k)
  np.testing.assert_allclose(maxk.max_at_k_advantages(g, k, baseline="none"), s, atol=1e-6)
  np.testing.assert_allclose(maxk.max_at_k_advantages(g, k, baseline="loo"), loo, atol=1e-6)
  np.testing.assert_allclose(
    maxk.max_at_k_advantages(g, k, baseline="loo_minus_one"), loo_m1, atol=1e-6
  )


def test_worked_example():
  """Four rewards, k = 2, values worked out by hand from the subset definitions:
  pairs (0.1,0.5),(0.1,0.2),(0.1,0.9),(0.5,0.2),(0.5,0.9),(0.2,0.9) have maxima
  0.5, 0.2, 0.9, 0.5, 0.9, 0.9, so S(0.1) = 1.6/6, S(0.5) = 1.9/6, S(0.9) = 2.7/6."""
  g = np.array([0.1, 0.5, 0.2, 0.9], np.float32)
  np.testing.assert_allclose(
    maxk.max_at_k_advantages(g, 2, baseline="none"), [1.6 / 6, 1.9 / 6, 1.6 / 6, 2.7 / 6], rtol=1e-6
  )
  # loo−1: Σ over pairs containing i of (max − the other), / 6.
  np.testing.assert_allclose(
    maxk.max_at_k_advantages(g, 2), [0.0, 0.7 / 6, 0.1 / 6, 1.9 / 6], rtol=1e-5, atol=1e-7
  )


def test_baseline_identities():
  rng = np.random.default_rng(1)
  r = rng.normal(size=(6, 7)).astype(np.float32)
  n = 7
  for k in range(1, n + 1):
    centered = maxk.max_at_k_advantages(r, k, baseline="loo_centered")
    if k < n:  # at k = n it is "none" (no leave-one-out estimate exists)
      np.testing.assert_allclose(jnp.sum(centered, -1), 0, atol=1e-5)
    # Shift invariance of the baselines that subtract a max@k of the same scale.
    for b in ("loo_centered", "loo_minus_one") if k < n else ("loo_minus_one",):
      np.testing.assert_allclose(
        maxk.max_at_k_advantages(r + 3.0, k, baseline=b),
        maxk.max_at_k_advantages(r, k, baseline=b),
        atol=1e-5,
      )
  np.testing.assert_allclose(
    maxk.max_at_k_advantages(r, 1, baseline="loo_centered"), maxk.rloo_advantages(r) / n, atol=1e-6
  )
  np.testing.assert_allclose(
    maxk.max_at_k_advantages(r, 1, baseline="loo_minus_one"),
    maxk.max_at_k_advantages(r, 1, baseline="loo_centered"),
  )
  for b in ("loo", "loo_centered"):
    np.testing.assert_allclose(
      maxk.max_at_k_advantages(r, n, baseline=b), maxk.max_at_k_advantages(r, n, baseline="none")
    )
  # k = n, loo−1 is max-minus-second (Tang et al.).
  np.testing.assert_allclose(
    maxk.max_at_k_advantages(r, n), maxk.max_minus_second_advantages(r), atol=1e-6
  )
  # Constant groups get exactly zero advantage under the centred baselines.
  const = jnp.full((2, 5), 0.7)
  for b in ("loo_centered", "loo_minus_one", "mean_std"):
    assert np.all(np.asarray(maxk.max_at_k_advantages(const, 3, baseline=b)) == 0)


@pytest.mark.parametrize("values", [[0.0, 1.0, 1.0], [-1.0, 0.5, 2.0], [0.0, 0.0, 1.0]])
@pytest.mark.parametrize("n", [2, 3, 4])
def test_unbiased_exactly_on_categorical_policy(values, n):
  """E over all L^n outcome tuples of Σ a_i ∇log π(y_i) equals ∇ max@k exactly."""
  logits = np.array([0.3, -0.5, 0.1])
  for k in range(1, n + 1):
    exact = enumeration.exact_max_at_k_grad(logits, values, k)
    for baseline in UNBIASED:
      est = enumeration.expected_score_estimate(
        lambda r, lr: maxk.max_at_k_advantages(r, k, baseline=baseline), logits, logits, values, n
      )
      np.testing.assert_allclose(est, exact, atol=2e-6, err_msg=f"k={k} {baseline}")


def test_mean_std_is_biased():
  logits = np.array([0.3, -0.5, 0.1])
  values = [-1.0, 0.5, 2.0]
  exact = enumeration.exact_max_at_k_grad(logits, values, 2)
  est = enumeration.expected_score_estimate(
    lambda r, lr: maxk.max_at_k_advantages(r, 2, baseline="mean_std"), logits, logits, values, 4
  )
  assert np.max(np.abs(est - exact)) > 1e-2


@functools.cache
def _every_baseline(variant, k, vmapped):
  """``variant`` of max_at_k_advantages(·, k) for every baseline at once, keyed by baseline.

  Shared by the cases of test_against_enumeration_jit_vmap: under jit each (k, vmapped)
  compiles one program for all baselines instead of one per baseline.
  """

  def every(x):
    return {b: maxk.max_at_k_advantages(x, k, baseline=b) for b in BASELINES}

  return variant(jax.vmap(every) if vmapped else every)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("baseline", BASELINES)
@pytest.mark.parametrize("k", [2, 6])
def test_against_enumeration_jit_vmap(variant, baseline, k):
  rng = np.random.default_rng(0)
  r = rng.normal(size=(4, 6)).astype(np.float32)
  want = np.apply_along_axis(enumeration.advantages, -1, r.astype(np.float64), k, baseline)
  for vmapped in (False, True):
    got = _every_baseline(variant, k, vmapped)(r)[baseline]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=2e-5, err_msg=f"vmapped={vmapped}")


def test_grad_matches_finite_differences():
  rng = np.random.default_rng(0)
  r = jnp.asarray(rng.normal(size=(4, 6)), jnp.float32)
  for baseline in BASELINES:
    for k in (2, 6):
      f = lambda x, k=k, b=baseline: maxk.max_at_k_advantages(x, k, baseline=b)
      # Gradient w.r.t. rewards (piecewise linear in r): compare with finite differences.
      v = jnp.asarray(rng.normal(size=r.shape), jnp.float32)
      obj = lambda x: jnp.sum(f(x) * v)
      g = jax.grad(obj)(r)
      h = 1e-3
      d = jnp.asarray(rng.normal(size=r.shape), jnp.float32)
      fd = (obj(r + h * d) - obj(r - h * d)) / (2 * h)
      np.testing.assert_allclose(jnp.sum(g * d), fd, rtol=2e-2, atol=2e-3)


def test_nan_only_affects_its_group():
  rng = np.random.default_rng(3)
  r = rng.normal(size=(3, 5)).astype(np.float32)
  bad = r.copy()
  bad[1, 2] = np.nan
  cases = [(baseline, k) for baseline in BASELINES for k in (1, 2, 5)]
  # Every (baseline, k) under jit in one program, compiled once for both inputs, not
  # one program per case.
  f = jax.jit(lambda x: [maxk.max_at_k_advantages(x, k, baseline=b) for b, k in cases])
  outs, cleans = f(bad), f(r)
  assert len(outs) == len(cleans) == len(cases)
  for case, out, clean in zip(cases, outs, cleans):
    out, clean = np.asarray(out), np.asarray(clean)
    np.testing.assert_array_equal(out[[0, 2]], clean[[0, 2]], err_msg=str(case))
    assert not np.all(np.isfinite(out[1])), case


def test_exported_baselines_are_the_valid_options():
  assert maxk.BASELINES == tuple(BASELINES)
  for baseline in maxk.BASELINES:
    maxk.max_at_k_advantages(np.ones(3, np.float32), 2, baseline=baseline)


def test_bad_input():
  r = np.ones((2, 4), np.float32)
  with pytest.raises(ValueError, match=r"k=0 must satisfy 1 <= k <= n=4"):
    maxk.max_at_k_advantages(r, 0)
  with pytest.raises(ValueError, match=r"k=5 must satisfy 1 <= k <= n=4"):
    maxk.max_at_k_advantages(r, 5)
  with pytest.raises(ValueError, match=r"k=1.5 must be a Python int"):
    maxk.max_at_k_advantages(r, 1.5)
  with pytest.raises(ValueError, match=r"Unknown baseline='loo2'.*'loo_minus_one'"):
    maxk.max_at_k_advantages(r, 2, baseline="loo2")
  with pytest.raises(ValueError, match="rewards must have at least 1 dimension"):
    maxk.max_at_k_advantages(np.float32(1.0), 1)


@pytest.mark.parametrize("n", [64, 1024, 4096])
def test_float32_large_n_stays_finite_and_accurate(n):
  rng = np.random.default_rng(n)
  r = rng.random((2, n)).astype(np.float32)
  for k in sorted({1, 2, n // 4, n // 2, n - 1, n}):
    for baseline in BASELINES:
      a = np.asarray(maxk.max_at_k_advantages(r, k, baseline=baseline))
      assert np.all(np.isfinite(a)), (k, baseline)
      if baseline != "mean_std":
        # Σ_i S(i) = k · max@k is preserved by the un-baselined transform.
        if baseline == "none":
          np.testing.assert_allclose(a.sum(-1), k * np.asarray(maxk.max_at_k(r, k)), rtol=1e-4)
    if k >= 2:  # loo−1 is non-negative: max_I r ≥ max_{I∖i} r.
      assert np.min(np.asarray(maxk.max_at_k_advantages(r, k))) > -1e-6


@pytest.mark.parametrize("n", [64, 1024, 4096])
def test_float32_matches_float64_reference(n):
  """Every unbiased transform within 2e-6 · max|a| (mean_std 5e-5) of a float64 NumPy
  evaluation of the same formulas (group by group), for k in
  {1, 2, n/4, n/2, n-1, n}."""
  rng = np.random.default_rng(n + 1)
  r32 = rng.random((2, n)).astype(np.float32)
  r64 = r32.astype(np.float64)
  for k in sorted({1, 2, n // 4, n // 2, n - 1, n}):
    for baseline in BASELINES:
      got = np.asarray(maxk.max_at_k_advantages(r32, k, baseline=baseline), np.float64)
      want = enumeration.advantages_float64(r64, k, baseline)
      scale = np.abs(want).max()
      # z-scoring an almost constant S (k near n) amplifies rounding by 1/std(S).
      rtol = 5e-5 if baseline == "mean_std" else 2e-6
      assert np.abs(got - want).max() <= rtol * scale, (k, baseline)
