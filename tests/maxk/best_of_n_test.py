"""Tests for maxk._src.best_of_n: the best-of-n PMF, KL, win rate, d_n and max@k."""

import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import maxk
from tests.maxk import enumeration
from tests.maxk.variants import VARIANTS

_CASES = enumeration.BON_CASES


@pytest.mark.parametrize("case", range(len(_CASES)))
@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_bon_pmf_equals_enumeration(case, n):
  p, r = _CASES[case]
  got = np.asarray(maxk.bon_pmf(p, r, n))
  np.testing.assert_allclose(got, enumeration.bon_pmf(p, r, n), atol=2e-7, rtol=1e-5)


def test_bon_pmf_matches_monte_carlo_sampling():
  rng = np.random.default_rng(0)
  p = np.array([0.3, 0.1, 0.15, 0.05, 0.25, 0.15], np.float32)
  r = np.array([0.0, 2.0, 1.0, 2.0, 1.0, 3.0])
  n, draws = 4, 40000
  samples = rng.choice(len(p), size=(draws, n), p=p / p.sum())
  rs = r[samples]
  best = rs.max(axis=1, keepdims=True)
  # Uniform choice among the tied maximal draws.
  keys = np.where(rs == best, rng.random(rs.shape), -1.0)
  chosen = samples[np.arange(draws), keys.argmax(axis=1)]
  freq = np.bincount(chosen, minlength=len(p)) / draws
  pmf = np.asarray(maxk.bon_pmf(p, r, n), np.float64)
  stderr = np.sqrt(pmf * (1 - pmf) / draws)
  assert np.all(np.abs(freq - pmf) <= 4 * stderr + 1e-12), (freq, pmf)


def test_bon_pmf_keeps_caller_order_and_batch_axes():
  rng = np.random.default_rng(1)
  p = rng.dirichlet(np.ones(7), size=(2, 3)).astype(np.float32)
  r = rng.integers(0, 4, size=(2, 3, 7)).astype(np.float32)
  batched = np.asarray(maxk.bon_pmf(p, r, 5))
  assert batched.shape == (2, 3, 7)
  perm = rng.permutation(7)
  pmf5 = jax.jit(lambda a, b: maxk.bon_pmf(a, b, 5))
  for i, j in itertools.product(range(2), range(3)):
    row = np.asarray(pmf5(p[i, j], r[i, j]))
    np.testing.assert_allclose(batched[i, j], row, atol=1e-7)
    permuted = np.asarray(pmf5(p[i, j][perm], r[i, j][perm]))
    np.testing.assert_allclose(permuted, row[perm], atol=1e-7)
    np.testing.assert_allclose(row, enumeration.bon_pmf_and_kl(p[i, j], r[i, j], 5)[0], atol=1e-6)


def _transforms_batch() -> tuple[np.ndarray, np.ndarray]:
  """A batch of 4 distributions over 5 outcomes and their rewards, in float32."""
  rng = np.random.default_rng(2)
  p = rng.dirichlet(np.ones(5), size=4).astype(np.float32)
  r = rng.integers(0, 3, size=(4, 5)).astype(np.float32)  # Ties.
  return p, r


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("n", [1, 3, 8])
def test_against_float64_references(variant, n):
  """Every best-of-n function with and without jit, and vmapped over a batch."""
  probs, rewards = _transforms_batch()

  # All five functions in one program, so that each variant compiles one program per
  # shape (one row, and the vmapped batch) instead of one per function, row and vmap.
  def fns(a, b):
    return {
      "pmf": maxk.bon_pmf(a, b, n),
      "kl": maxk.bon_kl(a, b, n),
      "win_rate": maxk.bon_win_rate(a, b, n),
      "estimate": maxk.bon_kl_estimate_expectation(a, b, n),
      "max_at_k": maxk.max_at_k_exact(a, b, n),
    }

  single = variant(fns)
  # The vmapped batch does not depend on the row: computed once, checked row by row.
  batched = jax.tree.map(np.asarray, variant(jax.vmap(fns))(probs, rewards))
  for i in range(len(probs)):
    p, r = probs[i].astype(np.float64), rewards[i].astype(np.float64)
    pmf, kl = enumeration.bon_pmf_and_kl(p, r, n)
    want = {
      "pmf": pmf,
      "kl": kl,
      "win_rate": enumeration.win_rate(pmf, p, r),
      "estimate": np.sum(pmf * enumeration.bon_kl_estimate(p, n)),
      "max_at_k": np.sum(pmf * r),
    }
    got = single(probs[i], rewards[i])
    assert set(got) == set(want) == set(batched)
    for name in want:
      np.testing.assert_allclose(got[name], want[name], rtol=1e-5, atol=1e-6, err_msg=name)
      np.testing.assert_allclose(batched[name][i], want[name], rtol=1e-5, atol=1e-6, err_msg=name)


def test_group_isolation_and_normalization_under_jit():
  rng = np.random.default_rng(2)
  p = rng.dirichlet(np.ones(5), size=4).astype(np.float32)
  r = rng.standard_normal((4, 5)).astype(np.float32)
  eager = np.asarray(maxk.bon_kl(p, r, 8))
  kl8 = jax.jit(maxk.bon_kl, static_argnums=2)
  # Under jit probs are not checked: a NaN row stays in its row.
  p_bad = p.copy()
  p_bad[1, 2] = np.nan
  r_bad = r.copy()
  r_bad[3, 0] = np.nan
  out = np.asarray(kl8(p_bad, r_bad, 8))
  assert np.isnan(out[1]) and np.isnan(out[3])  # A NaN reward poisons its row.
  np.testing.assert_allclose(out[[0, 2]], eager[[0, 2]], rtol=1e-6)
  # Under jit probs are divided by their sum.
  pmf_scaled = jax.jit(maxk.bon_pmf, static_argnums=2)(3.0 * p, r, 8)
  np.testing.assert_allclose(pmf_scaled, maxk.bon_pmf(p, r, 8), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("n", [1, 2, 7, 100, 10_000])
@pytest.mark.parametrize("eps", [1e-6, 1e-3, 0.3, 0.9])
def test_two_outcome_closed_form(n, eps):
  p = np.array([1 - eps, eps], np.float32)
  r = np.array([0.0, 1.0], np.float32)
  e = float(p[1])  # The float32 value actually used.
  qn = (1 - e) ** n
  expected_kl = qn * (n - 1) * math.log1p(-e) + (1 - qn) * math.log((1 - qn) / e)
  expected_pmf = [qn, 1 - qn]
  np.testing.assert_allclose(maxk.bon_pmf(p, r, n), expected_pmf, rtol=2e-5, atol=1e-7)
  np.testing.assert_allclose(float(maxk.bon_kl(p, r, n)), expected_kl, rtol=2e-5, atol=1e-7)
  # The KL is bounded by log(1/eps) (largest likelihood ratio), not only by log n.
  assert float(maxk.bon_kl(p, r, n)) <= math.log(1 / e) + 1e-5


def test_kl_accurate_in_float32_at_large_n_and_large_L():
  size = 10**6
  rng = np.random.default_rng(3)
  p = rng.dirichlet(np.ones(size)).astype(np.float32)
  r = rng.standard_normal(size).astype(np.float32)
  p64 = p.astype(np.float64) / p.astype(np.float64).sum()
  kl_fn = jax.jit(maxk.bon_kl, static_argnums=2)
  for n in (10_000, 37):
    _, kl_ref = enumeration.bon_pmf_and_kl(p64, r, n)
    np.testing.assert_allclose(float(kl_fn(p, r, n)), kl_ref, rtol=1e-5)


def test_bon_win_rate_is_one_half_at_n1():
  p, r = _CASES[1]
  np.testing.assert_allclose(float(maxk.bon_win_rate(p, r, 1)), 0.5, rtol=1e-6)


# ----------------------------------------------------------------------------
# The estimator d_n.
# ----------------------------------------------------------------------------


@pytest.mark.parametrize("n", [1, 2, 50, 10_000])
def test_kl_estimate_is_stable(n):
  eps = np.concatenate([np.logspace(-12, -0.01, 60), [0.5, 1 - 1e-6]]).astype(np.float32)
  got = np.asarray(maxk.bon_kl_estimate(eps, n))
  np.testing.assert_allclose(
    got, enumeration.bon_kl_estimate(eps.astype(np.float64), n), rtol=1e-4, atol=1e-6
  )
  bound = enumeration.bon_kl_bound(n)
  assert np.all((got >= -1e-7) & (got <= bound + 1e-6))
  np.testing.assert_allclose(float(maxk.bon_kl_estimate(0.0, n)), bound, rtol=1e-6)
  assert float(maxk.bon_kl_estimate(1.0, n)) == 0.0
  grad = jax.jit(jax.vmap(jax.grad(lambda e: maxk.bon_kl_estimate(e, n))))
  assert np.all(np.isfinite(grad(jnp.asarray(eps[:-1]))))


@pytest.mark.parametrize("n", [2, 8, 32])
@pytest.mark.parametrize("eps", [0.01, 0.2, 0.6])
def test_kl_estimate_is_kl_of_top_outcome_above_a_continuum(n, eps):
  # The derivation of d_n (docs/best_of_n_bounds.md): d_n(eps) is the exact KL of
  # best-of-n for a reference whose top outcome has probability eps and whose other
  # mass 1 - eps is spread infinitely finely below it.  A fine grid approximates it.
  size = 100_000
  p = np.concatenate([np.full(size, (1 - eps) / size), [eps]])
  r = np.arange(size + 1, dtype=np.float32)
  p = p.astype(np.float32)
  e = float(p[-1])
  kl = float(maxk.bon_kl(p, r, n))
  np.testing.assert_allclose(kl, float(enumeration.bon_kl_estimate(e, n)), rtol=1e-4, atol=1e-5)
  np.testing.assert_allclose(float(maxk.bon_kl_estimate(e, n)), kl, rtol=1e-4, atol=1e-5)


def test_kl_estimate_expectation_equals_pmf_average():
  p = np.array([0.5, 0.2, 0.2, 0.1], np.float32)
  r = np.array([0.0, 1.0, 1.0, 2.0], np.float32)
  n = 6
  pmf = enumeration.bon_pmf(p, r, n)
  expected = np.sum(pmf * enumeration.bon_kl_estimate(p.astype(np.float64), n))
  np.testing.assert_allclose(float(maxk.bon_kl_estimate_expectation(p, r, n)), expected, rtol=1e-5)


# ----------------------------------------------------------------------------
# max_at_k_exact and gradients.
# ----------------------------------------------------------------------------


@pytest.mark.parametrize("case", range(len(_CASES)))
@pytest.mark.parametrize("k", [1, 2, 3, 4])
def test_max_at_k_exact_equals_enumeration(case, k):
  p, r = _CASES[case]
  np.testing.assert_allclose(
    float(maxk.max_at_k_exact(p, r, k)),
    enumeration.max_at_k_of_policy(p, r, k),
    rtol=1e-5,
    atol=1e-6,
  )


def _normalized_max_at_k_np(p, r, k):
  return enumeration.max_at_k_of_policy(np.asarray(p) / np.sum(p), r, k)


@pytest.mark.parametrize("case", [1, 2, 4, 6, 7])
@pytest.mark.parametrize("k", [1, 2, 4])
def test_max_at_k_exact_grad_equals_finite_differences(case, k):
  p, r = _CASES[case]
  grad = np.asarray(jax.grad(lambda a: maxk.max_at_k_exact(a, r, k))(jnp.asarray(p)))
  assert np.all(np.isfinite(grad))
  h = 1e-6
  p64 = p.astype(np.float64)
  fd = np.zeros_like(p64)
  for i in range(len(p)):
    e = np.zeros_like(p64)
    e[i] = h
    # Forward difference keeps probabilities non-negative (zeros, ties included).
    fd[i] = (_normalized_max_at_k_np(p64 + e, r, k) - _normalized_max_at_k_np(p64, r, k)) / h
  np.testing.assert_allclose(grad, fd, atol=2e-4, rtol=1e-3)


@pytest.mark.parametrize("case", [2, 4, 6, 7])
@pytest.mark.parametrize("n", [1, 2, 3])
def test_bon_pmf_and_win_rate_grads_equal_finite_differences(case, n):
  # Zero probabilities at the bottom, top and inside tie classes: the forward
  # difference into the simplex is the derivative a policy gradient needs.
  p, r = _CASES[case]
  jac = np.asarray(jax.jacobian(lambda a: maxk.bon_pmf(a, r, n))(jnp.asarray(p)))
  g_wr = np.asarray(jax.grad(lambda a: maxk.bon_win_rate(a, r, n))(jnp.asarray(p)))
  h = 1e-6
  p64 = p.astype(np.float64)

  def pmf_np(q):
    return enumeration.bon_pmf(q / q.sum(), r, n)

  for i in range(len(p)):
    e = np.zeros_like(p64)
    e[i] = h
    fd = (pmf_np(p64 + e) - pmf_np(p64)) / h
    np.testing.assert_allclose(jac[:, i], fd, atol=2e-4, rtol=1e-3)
    fd_wr = (
      enumeration.win_rate(pmf_np(p64 + e), (p64 + e) / (p64 + e).sum(), r)
      - enumeration.win_rate(pmf_np(p64), p64 / p64.sum(), r)
    ) / h
    np.testing.assert_allclose(g_wr[i], fd_wr, atol=2e-4, rtol=1e-3)


def test_max_at_k_exact_policy_gradient_through_softmax():
  rng = np.random.default_rng(5)
  logits = rng.standard_normal(6).astype(np.float32)
  logits[2] = -np.inf  # A zero-probability outcome.
  r = np.array([0.0, 1.0, 1.0, 0.5, 2.0, 2.0], np.float32)  # Ties, incl. the top.
  k = 5

  def objective(z):
    return maxk.max_at_k_exact(jax.nn.softmax(z), r, k)

  grad = np.asarray(jax.grad(objective)(jnp.asarray(logits)))
  assert np.all(np.isfinite(grad))

  # Exact policy gradient: Σ_y π_k(y) r(y) differentiated through the softmax.
  def exact_np(z):
    w = np.exp(z - z[np.isfinite(z)].max())
    return enumeration.max_at_k_of_policy(w / w.sum(), r, k)

  fd = np.zeros(6)
  for i in range(6):
    if not np.isfinite(logits[i]):
      continue
    e = np.zeros(6)
    e[i] = 1e-5
    fd[i] = (
      exact_np(logits.astype(np.float64) + e) - exact_np(logits.astype(np.float64) - e)
    ) / 2e-5
  np.testing.assert_allclose(grad, fd, atol=5e-5, rtol=1e-3)
  # Same for the KL of the best-of-n policy.
  g_kl = np.asarray(jax.grad(lambda z: maxk.bon_kl(jax.nn.softmax(z), r, k))(jnp.asarray(logits)))
  assert np.all(np.isfinite(g_kl))

  def kl_np(z):
    w = np.exp(z - z[np.isfinite(z)].max())
    return enumeration.bon_pmf_and_kl(w / w.sum(), r, k)[1]

  for i in np.flatnonzero(np.isfinite(logits)):
    e = np.zeros(6)
    e[i] = 1e-5
    fd_i = (kl_np(logits.astype(np.float64) + e) - kl_np(logits.astype(np.float64) - e)) / 2e-5
    np.testing.assert_allclose(g_kl[i], fd_i, atol=2e-4, rtol=2e-3)


def test_max_at_k_exact_large_k_is_accurate():
  size = 50_000
  rng = np.random.default_rng(6)
  p = rng.dirichlet(np.ones(size)).astype(np.float32)
  r = rng.standard_normal(size).astype(np.float32)
  for k in (4096, 10_000):
    pmf_ref, _ = enumeration.bon_pmf_and_kl(p, r, k)
    np.testing.assert_allclose(
      float(maxk.max_at_k_exact(p, r, k)), float(np.sum(pmf_ref * r)), rtol=2e-6, atol=2e-6
    )


# ----------------------------------------------------------------------------
# Bad input (the shared probs/rewards checks are in categorical_test.py).
# ----------------------------------------------------------------------------


def test_bad_static_arguments_and_eps():
  with pytest.raises(ValueError, match="n="):
    maxk.bon_kl_bound(0)
  with pytest.raises(ValueError, match="n="):
    maxk.bon_win_rate_bound(1.5)
  with pytest.raises(ValueError, match="n="):
    maxk.bon_kl_estimate(0.5, 0)
  with pytest.raises(ValueError, match="eps"):
    maxk.bon_kl_estimate([0.5, 1.5], 3)


def test_bon_kl_at_one_million_outcomes_matches_float64():
  """At 10^6 distinct outcomes (time per call: benchmarks.best_of_n), three of them
  heavy at the top so that the KL is far below the log n − (n−1)/n bound, the float32
  KL equals the float64 sum of pi log(pi / p), pi_i = F_i^n − F_(i−1)^n in reward
  order (Beirami et al., Lemma 1)."""
  size, n = 10**6, 10_000
  rng = np.random.default_rng(8)
  r = rng.permutation(size).astype(np.float32)  # Distinct and exact in float32.
  weights = rng.exponential(size=size)
  weights[np.argsort(r)[-3:]] = [300.0, 1000.0, 3000.0]
  p = (weights / weights.sum()).astype(np.float32)
  p_sorted = p.astype(np.float64)[np.argsort(r)]
  cdf = np.concatenate([[0.0], np.cumsum(p_sorted / p_sorted.sum())])
  pi = np.diff(np.minimum(cdf, 1.0) ** n)
  keep = pi > 0
  expected = np.sum(pi[keep] * np.log(pi[keep] / (p_sorted[keep] / p_sorted.sum())))
  assert expected < 0.75 * (np.log(n) - (n - 1) / n)
  got = float(jax.jit(maxk.bon_kl, static_argnums=2)(p, r, n))
  np.testing.assert_allclose(got, expected, rtol=1e-5)
