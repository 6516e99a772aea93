"""Tests for maxk._src.best_of_n (Beirami et al., arXiv 2401.01879)."""

import itertools
import math
import time

import hypothesis
import hypothesis.strategies as st
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import integrate

from maxk._src import best_of_n as bon

# ----------------------------------------------------------------------------
# Independent references (numpy, float64).
# ----------------------------------------------------------------------------


def _enumerate_bon(p, r, n):
  """best-of-n PMF by summing over all L^n draws; ties split uniformly."""
  p = np.asarray(p, np.float64)
  r = np.asarray(r, np.float64)
  out = np.zeros(len(p))
  for draw in itertools.product(range(len(p)), repeat=n):
    weight = np.prod(p[list(draw)])
    if weight == 0:
      continue
    best = max(r[j] for j in draw)
    tied = [j for j in draw if r[j] == best]
    for j in tied:
      out[j] += weight / len(tied)
  return out


def _enumerate_max_at_k(p, r, k):
  p = np.asarray(p, np.float64)
  r = np.asarray(r, np.float64)
  total = 0.0
  for draw in itertools.product(range(len(p)), repeat=k):
    total += np.prod(p[list(draw)]) * max(r[j] for j in draw)
  return total


def _reference_bon(p, r, n):
  """float64 PMF and KL via tie classes, in log space (independent formulation)."""
  p = np.asarray(p, np.float64)
  p = p / p.sum()
  r = np.asarray(r, np.float64)
  values, inverse = np.unique(r, return_inverse=True)
  mass = np.bincount(inverse, weights=p, minlength=len(values))
  upper = np.cumsum(mass)
  above = np.cumsum(mass[::-1])[::-1] - mass
  below = upper - mass
  with np.errstate(divide="ignore", invalid="ignore"):
    log_f = np.where(upper < 0.5, np.log(upper), np.log1p(-above))
    log_fm = np.where(below < 0.5, np.log(below), np.log1p(-(above + mass)))
    cls = np.exp(n * log_f) * -np.expm1(n * (log_fm - log_f))
  cls = np.where(below == 0, np.exp(n * log_f), cls)
  c = mass[inverse]
  pmf = np.where(c > 0, p * cls[inverse] / np.where(c > 0, c, 1.0), 0.0)
  pos = pmf > 0
  kl = float(np.sum(pmf[pos] * np.log(pmf[pos] / p[pos])))
  return pmf, kl


def _win_rate_np(q, p, r):
  q, p, r = (np.asarray(a, np.float64) for a in (q, p, r))
  return float(
    sum(
      q[i] * p[j] * (1.0 if r[i] > r[j] else 0.5 if r[i] == r[j] else 0.0)
      for i in range(len(q))
      for j in range(len(p))
    )
  )


def _kl_np(q, p):
  q, p = np.asarray(q, np.float64), np.asarray(p, np.float64)
  pos = q > 0
  return float(np.sum(q[pos] * np.log(q[pos] / p[pos])))


def _bound(n):
  return math.log(n) - (n - 1) / n


# Small references with ties and zero probabilities.
_P4 = np.array([0.1, 0.2, 0.3, 0.4], np.float32)
_CASES = [
  (np.array([0.25, 0.25, 0.25, 0.25], np.float32), np.array([0.0, 1.0, 2.0, 3.0])),
  (np.array([0.1, 0.2, 0.3, 0.4], np.float32), np.array([1.0, 1.0, 0.0, 2.0])),
  (np.array([0.5, 0.0, 0.3, 0.2], np.float32), np.array([2.0, 2.0, 1.0, 2.0])),
  (np.array([0.6, 0.4], np.float32), np.array([5.0, 5.0])),
  (np.array([0.7, 0.0, 0.3], np.float32), np.array([0.0, 9.0, 1.0])),
  (np.array([1.0], np.float32), np.array([3.0])),
  # Zero probability on the lowest reward (x = c/F = 1 exactly for the next class).
  (np.array([0.6, 0.0, 0.4], np.float32), np.array([1.0, -1.0, 2.0])),
  (np.array([0.3, 0.0, 0.7, 0.0], np.float32), np.array([1.0, 0.0, 1.0, 0.0])),
]

# ----------------------------------------------------------------------------
# bon_pmf.
# ----------------------------------------------------------------------------


@pytest.mark.parametrize("case", range(len(_CASES)))
@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_bon_pmf_equals_enumeration(case, n):
  p, r = _CASES[case]
  got = np.asarray(bon.bon_pmf(p, r, n))
  np.testing.assert_allclose(got, _enumerate_bon(p, r, n), atol=2e-7, rtol=1e-5)


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
  pmf = np.asarray(bon.bon_pmf(p, r, n), np.float64)
  stderr = np.sqrt(pmf * (1 - pmf) / draws)
  assert np.all(np.abs(freq - pmf) <= 4 * stderr + 1e-12), (freq, pmf)


def test_bon_pmf_keeps_caller_order_and_batch_axes():
  rng = np.random.default_rng(1)
  p = rng.dirichlet(np.ones(7), size=(2, 3)).astype(np.float32)
  r = rng.integers(0, 4, size=(2, 3, 7)).astype(np.float32)
  batched = np.asarray(bon.bon_pmf(p, r, 5))
  assert batched.shape == (2, 3, 7)
  perm = rng.permutation(7)
  pmf5 = jax.jit(lambda a, b: bon.bon_pmf(a, b, 5))
  for i, j in itertools.product(range(2), range(3)):
    row = np.asarray(pmf5(p[i, j], r[i, j]))
    np.testing.assert_allclose(batched[i, j], row, atol=1e-7)
    permuted = np.asarray(pmf5(p[i, j][perm], r[i, j][perm]))
    np.testing.assert_allclose(permuted, row[perm], atol=1e-7)
    np.testing.assert_allclose(row, _reference_bon(p[i, j], r[i, j], 5)[0], atol=1e-6)


def test_jit_vmap_and_group_isolation():
  rng = np.random.default_rng(2)
  p = rng.dirichlet(np.ones(5), size=4).astype(np.float32)
  r = rng.standard_normal((4, 5)).astype(np.float32)
  eager = np.asarray(bon.bon_kl(p, r, 8))
  kl8 = jax.jit(bon.bon_kl, static_argnums=2)
  jitted = np.asarray(kl8(p, r, 8))
  vmapped = np.asarray(jax.jit(jax.vmap(lambda a, b: bon.bon_kl(a, b, 8)))(p, r))
  np.testing.assert_allclose(jitted, eager, rtol=1e-6)
  np.testing.assert_allclose(vmapped, eager, rtol=1e-6)
  # Under jit probs are not checked: a NaN row stays in its row.
  p_bad = p.copy()
  p_bad[1, 2] = np.nan
  r_bad = r.copy()
  r_bad[3, 0] = np.nan
  out = np.asarray(kl8(p_bad, r_bad, 8))
  assert np.isnan(out[1]) and np.isnan(out[3])  # A NaN reward poisons its row.
  np.testing.assert_allclose(out[[0, 2]], eager[[0, 2]], rtol=1e-6)
  rr = np.asarray(
    jax.jit(bon.rewind_repeat_pmf)(p, r_bad, np.array([0.0, np.nan, 0.0, 0.0], np.float32))
  )
  assert np.all(np.isnan(rr[[1, 3]]))
  np.testing.assert_allclose(
    rr[[0, 2]], np.asarray(bon.rewind_repeat_pmf(p, r, 0.0))[[0, 2]], rtol=1e-6
  )
  # Under jit probs are divided by their sum.
  pmf_scaled = jax.jit(bon.bon_pmf, static_argnums=2)(3.0 * p, r, 8)
  np.testing.assert_allclose(pmf_scaled, bon.bon_pmf(p, r, 8), rtol=1e-5, atol=1e-7)


# ----------------------------------------------------------------------------
# KL, bounds, win rate.
# ----------------------------------------------------------------------------


def _all_stats(p, r, n):
  """Every per-distribution quantity (each compiles once per shape, not per n)."""
  return dict(
    pmf=bon.bon_pmf(p, r, n),
    kl=bon.bon_kl(p, r, n),
    gap_bound=bon.bon_kl_gap_bound(p, r, n),
    gap_lower=bon.bon_kl_gap_lower_bound(p, r, n),
    win_rate=bon.bon_win_rate(p, r, n),
    win_gap_bound=bon.bon_win_rate_gap_bound(p, r, n),
    estimate=bon.bon_kl_estimate_expectation(p, r, n),
  )


_PADDED_SIZE = 12


@hypothesis.settings(max_examples=60, deadline=None, derandomize=True)
@hypothesis.given(
  size=st.integers(1, _PADDED_SIZE),
  n=st.integers(1, 300),
  concentration=st.sampled_from([0.05, 0.3, 1.0, 5.0]),
  num_levels=st.integers(1, 12),
  seed=st.integers(0, 2**31 - 1),
)
def test_bounds_hold_on_random_references(size, n, concentration, num_levels, seed):
  rng = np.random.default_rng(seed)
  p = np.zeros(_PADDED_SIZE)
  p[:size] = rng.dirichlet(np.full(size, concentration))  # Padding has pi = 0.
  p = np.where(p < 1e-30, 0.0, p)
  p = (p / p.sum()).astype(np.float32)
  r = rng.integers(0, num_levels, size=_PADDED_SIZE).astype(np.float32)  # Ties.
  stats = {k: np.asarray(v, np.float64) for k, v in _all_stats(p, r, n).items()}
  pmf_ref, kl_ref = _reference_bon(p, r, n)
  np.testing.assert_allclose(stats["pmf"], pmf_ref, atol=1e-6)
  assert abs(stats["kl"] - kl_ref) <= 1e-5 + 1e-5 * kl_ref
  bound = float(bon.bon_kl_bound(n))
  assert -1e-6 <= stats["kl"] <= bound + 1e-5
  gap = bound - stats["kl"]
  assert gap <= stats["gap_bound"] + 1e-5
  assert gap >= stats["gap_lower"] - 1e-5
  wr_bound = float(bon.bon_win_rate_bound(n))
  assert 0.5 - 1e-6 <= stats["win_rate"] <= wr_bound + 1e-6
  assert wr_bound - stats["win_rate"] <= stats["win_gap_bound"] + 1e-6
  assert abs(stats["win_rate"] - _win_rate_np(pmf_ref, p, r)) <= 1e-5
  assert -1e-6 <= stats["estimate"] <= bound + 1e-5


@pytest.mark.parametrize("n", [1, 2, 7, 100, 10_000])
@pytest.mark.parametrize("eps", [1e-6, 1e-3, 0.3, 0.9])
def test_two_outcome_closed_form(n, eps):
  p = np.array([1 - eps, eps], np.float32)
  r = np.array([0.0, 1.0], np.float32)
  e = float(p[1])  # The float32 value actually used.
  qn = (1 - e) ** n
  expected_kl = qn * (n - 1) * math.log1p(-e) + (1 - qn) * math.log((1 - qn) / e)
  expected_pmf = [qn, 1 - qn]
  np.testing.assert_allclose(bon.bon_pmf(p, r, n), expected_pmf, rtol=2e-5, atol=1e-7)
  np.testing.assert_allclose(float(bon.bon_kl(p, r, n)), expected_kl, rtol=2e-5, atol=1e-7)
  # The KL is bounded by log(1/eps) (largest likelihood ratio), not only by log n.
  assert float(bon.bon_kl(p, r, n)) <= math.log(1 / e) + 1e-5


@pytest.mark.parametrize("case", range(len(_CASES)))
def test_win_rate_gap_closed_form_at_n2(case):
  # For n = 2 the win-rate gap 2/3 - W is exactly sum over tie classes of P(class)^3 / 6
  # (per class, 2/3 (F^3 - G^3) - (F^2 - G^2)(F + G)/2 = (F - G)^3 / 6), well below
  # the bound (n-1)/2 sum P(class)^2 = sum P(class)^2 / 2.
  p, r = _CASES[case]
  p64 = p.astype(np.float64) / p.astype(np.float64).sum()
  _, inverse = np.unique(r, return_inverse=True)
  mass = np.bincount(inverse, weights=p64)
  gap = 2 / 3 - float(bon.bon_win_rate(p, r, 2))
  np.testing.assert_allclose(gap, np.sum(mass**3) / 6, atol=2e-7)
  np.testing.assert_allclose(
    float(bon.bon_win_rate_gap_bound(p, r, 2)), np.sum(mass**2) / 2, rtol=1e-5
  )


def _class_gap_terms(mass, n):
  """Per-class terms of the KL and win-rate gaps by quadrature (float64).

  The coupling in the proofs of bon_kl_gap_bound / bon_win_rate_gap_bound: class i
  is the interval [a, b] = [F_(i-1), F_i] of [0, 1]; M = max of n uniforms has
  density phi(u) = n u^(n-1).  KL term: (b^n - a^n) KL(phi / (b^n - a^n) || 1/p)
  on [a, b]; win-rate term: integral_a^b phi(u) (u - (a + b)/2) du.
  """
  upper = np.cumsum(mass)
  upper[-1] = 1.0
  lower = np.concatenate([[0.0], upper[:-1]])
  kl_terms, win_terms = [], []
  for a, b in zip(lower, upper):
    p = b - a
    if p <= 0:
      continue
    log_mass = (
      n * math.log(b) + math.log(-math.expm1(n * math.log(a / b))) if a > 0 else n * math.log(b)
    )  # log(b^n - a^n).

    def kl_integrand(u):
      if u <= 0:
        return 0.0
      log_phi = math.log(n) + (n - 1) * math.log(u)
      return math.exp(log_phi) * (log_phi + math.log(p) - log_mass)

    def win_integrand(u):
      return n * u ** (n - 1) * (u - 0.5 * (a + b)) if u > 0 else 0.0

    opts = dict(epsabs=1e-13, epsrel=1e-11, limit=200)
    kl_terms.append((integrate.quad(kl_integrand, a, b, **opts)[0], p))
    win_terms.append((integrate.quad(win_integrand, a, b, **opts)[0], p))
  return np.array(kl_terms), np.array(win_terms)


@pytest.mark.parametrize("n", [1, 2, 3, 7, 50, 400])
@pytest.mark.parametrize("seed", range(4))
def test_gap_bounds_proof_per_class(n, seed):
  # The proofs in the docstrings: gap = sum of per-class terms, each KL term in
  # [0, 2 n (n-1) p_i^2] and each win-rate term in [0, n p_i^2 / 8].
  rng = np.random.default_rng(seed)
  size = 12
  p = rng.dirichlet(np.full(size, [0.1, 0.5, 2.0, 20.0][seed]))
  r = rng.integers(0, 9, size=size).astype(np.float64)  # Ties.
  _, inverse = np.unique(r, return_inverse=True)
  mass = np.bincount(inverse, weights=p)
  pmf, kl = _reference_bon(p, r, n)
  kl_terms, win_terms = _class_gap_terms(mass, n)
  np.testing.assert_allclose(kl_terms[:, 0].sum(), _bound(n) - kl, rtol=1e-8, atol=1e-10)
  np.testing.assert_allclose(
    win_terms[:, 0].sum(), n / (n + 1) - _win_rate_np(pmf, p, r), rtol=1e-8, atol=1e-10
  )
  for (kl_term, p_i), (win_term, _) in zip(kl_terms, win_terms):
    assert -1e-12 <= kl_term <= 2 * n * (n - 1) * p_i**2 + 1e-12
    assert -1e-12 <= win_term <= n * p_i**2 / 8 + 1e-12
  # And the library's bounds dominate the summed terms.
  p32, r32 = p.astype(np.float32), r.astype(np.float32)
  assert kl_terms[:, 0].sum() <= float(bon.bon_kl_gap_bound(p32, r32, n)) * (1 + 1e-5) + 1e-12
  assert (
    win_terms[:, 0].sum() <= float(bon.bon_win_rate_gap_bound(p32, r32, n)) * (1 + 1e-5) + 1e-12
  )


@hypothesis.settings(max_examples=40, deadline=None, derandomize=True)
@hypothesis.given(
  n=st.integers(1, 500), seed=st.integers(0, 2**31 - 1), num_levels=st.integers(1, 8)
)
def test_likelihood_ratio_at_most_inverse_top_class_mass(n, seed, num_levels):
  # The lemma behind bon_kl_gap_lower_bound: pi_n(y)/pi(y) <= 1/eps_inf for every y,
  # hence KL <= log(1/eps_inf) and gap >= log(n eps_inf) - (n-1)/n.
  rng = np.random.default_rng(seed)
  p = rng.dirichlet(np.full(10, 0.5))
  p = np.where(p < 1e-30, 0.0, p)
  p = p / p.sum()
  r = rng.integers(0, num_levels, size=10).astype(np.float64)
  pmf, kl = _reference_bon(p, r, n)
  top = r[p > 0].max()
  eps_inf = p[r == top].sum()
  pos = p > 0
  assert np.all(pmf[pos] / p[pos] <= (1 + 1e-9) / eps_inf)
  assert kl <= math.log(1 / eps_inf) + 1e-9
  lower = float(bon.bon_kl_gap_lower_bound(p.astype(np.float32), r.astype(np.float32), n))
  np.testing.assert_allclose(
    lower, max(0.0, math.log(n * eps_inf) - (n - 1) / n), rtol=1e-5, atol=1e-6
  )


@pytest.mark.parametrize("n", [2, 8, 32])
def test_uniform_reference_approaches_analytical_formulas(n):
  size = 100_000
  p = np.full(size, 1 / size, np.float32)
  r = np.arange(size, dtype=np.float32)
  kl, wr = float(bon.bon_kl(p, r, n)), float(bon.bon_win_rate(p, r, n))
  assert abs(kl - _bound(n)) < 1e-4
  assert abs(wr - n / (n + 1)) < 1e-4
  assert _bound(n) - kl <= float(bon.bon_kl_gap_bound(p, r, n)) + 1e-5
  assert float(bon.bon_kl_gap_bound_delta(1 / size, n)) == pytest.approx(
    2 * n * (n - 1) / size, rel=1e-6
  )
  assert float(bon.bon_win_rate_gap_bound_delta(1 / size, n)) == pytest.approx(
    (n - 1) / (2 * size), rel=1e-6
  )


def test_kl_accurate_in_float32_at_large_n_and_large_L():
  size = 10**6
  rng = np.random.default_rng(3)
  p = rng.dirichlet(np.ones(size)).astype(np.float32)
  r = rng.standard_normal(size).astype(np.float32)
  p64 = p.astype(np.float64) / p.astype(np.float64).sum()
  kl_fn = jax.jit(bon.bon_kl, static_argnums=2)
  for n in (10_000, 37):
    _, kl_ref = _reference_bon(p64, r, n)
    np.testing.assert_allclose(float(kl_fn(p, r, n)), kl_ref, rtol=1e-5)


def test_win_rate_and_kl_divergence_generic():
  rng = np.random.default_rng(4)
  p = rng.dirichlet(np.ones(6)).astype(np.float32)
  q = rng.dirichlet(np.ones(6)).astype(np.float32)
  r = np.array([1, 0, 1, 2, 2, 3], np.float32)
  np.testing.assert_allclose(float(bon.win_rate(q, p, r)), _win_rate_np(q, p, r), rtol=1e-5)
  np.testing.assert_allclose(
    float(bon.win_rate(q, p, r)) + float(bon.win_rate(p, q, r)), 1.0, rtol=1e-6
  )
  np.testing.assert_allclose(float(bon.bon_win_rate(p, r, 1)), 0.5, rtol=1e-6)
  np.testing.assert_allclose(float(bon.kl_divergence(q, p)), _kl_np(q, p), rtol=1e-5)
  assert float(bon.kl_divergence(p, p)) == pytest.approx(0.0, abs=1e-7)
  assert np.isinf(float(bon.kl_divergence([0.5, 0.5], [1.0, 0.0])))
  assert float(bon.kl_divergence([1.0, 0.0], [0.5, 0.5])) == pytest.approx(math.log(2))
  pmf = bon.bon_pmf(p, r, 6)
  np.testing.assert_allclose(
    float(bon.kl_divergence(pmf, p)), float(bon.bon_kl(p, r, 6)), rtol=1e-5
  )
  np.testing.assert_allclose(
    float(bon.win_rate(pmf, p, r)), float(bon.bon_win_rate(p, r, 6)), rtol=1e-6
  )
  # Gradient of the generic KL is finite with zeros in q.
  g = jax.grad(
    lambda a: bon.kl_divergence(
      jax.nn.softmax(a) * jnp.array([1, 1, 0.0]) / jnp.sum(jax.nn.softmax(a)[:2]),
      jnp.array([0.2, 0.3, 0.5]),
    )
  )(jnp.zeros(3))
  assert np.all(np.isfinite(g))


# ----------------------------------------------------------------------------
# The estimator d_n.
# ----------------------------------------------------------------------------


def _d_n_reference(eps, n):
  eps = np.asarray(eps, np.float64)
  qn = np.exp(n * np.log1p(-eps))
  b = -np.expm1(n * np.log1p(-eps))
  return qn * (math.log(n) + (n - 1) * np.log1p(-eps) - (n - 1) / n) + b * np.log(b / eps)


@pytest.mark.parametrize("n", [1, 2, 50, 10_000])
def test_kl_estimate_is_stable(n):
  eps = np.concatenate([np.logspace(-12, -0.01, 60), [0.5, 1 - 1e-6]]).astype(np.float32)
  got = np.asarray(bon.bon_kl_estimate(eps, n))
  np.testing.assert_allclose(got, _d_n_reference(eps.astype(np.float64), n), rtol=1e-4, atol=1e-6)
  assert np.all((got >= -1e-7) & (got <= _bound(n) + 1e-6))
  np.testing.assert_allclose(float(bon.bon_kl_estimate(0.0, n)), _bound(n), rtol=1e-6)
  assert float(bon.bon_kl_estimate(1.0, n)) == 0.0
  grad = jax.jit(jax.vmap(jax.grad(lambda e: bon.bon_kl_estimate(e, n))))
  assert np.all(np.isfinite(grad(jnp.asarray(eps[:-1]))))


@pytest.mark.parametrize("n", [2, 8, 32])
@pytest.mark.parametrize("eps", [0.01, 0.2, 0.6])
def test_kl_estimate_is_kl_of_top_outcome_above_a_continuum(n, eps):
  # Derivation of d_n independent of the paper: d_n(eps) is the exact KL of best-of-n
  # for a reference whose top outcome has probability eps and whose other mass 1 - eps
  # is spread infinitely finely below it.  A fine uniform grid approximates the limit.
  size = 100_000
  p = np.concatenate([np.full(size, (1 - eps) / size), [eps]])
  r = np.arange(size + 1, dtype=np.float32)
  p = p.astype(np.float32)
  e = float(p[-1])
  kl = float(bon.bon_kl(p, r, n))
  np.testing.assert_allclose(kl, float(_d_n_reference(e, n)), rtol=1e-4, atol=1e-5)
  np.testing.assert_allclose(float(bon.bon_kl_estimate(e, n)), kl, rtol=1e-4, atol=1e-5)


def test_kl_estimate_expectation_equals_pmf_average():
  p = np.array([0.5, 0.2, 0.2, 0.1], np.float32)
  r = np.array([0.0, 1.0, 1.0, 2.0], np.float32)
  n = 6
  pmf = np.asarray(bon.bon_pmf(p, r, n), np.float64)
  expected = np.sum(pmf * _d_n_reference(p.astype(np.float64), n))
  np.testing.assert_allclose(float(bon.bon_kl_estimate_expectation(p, r, n)), expected, rtol=1e-5)


# ----------------------------------------------------------------------------
# max_at_k_exact.
# ----------------------------------------------------------------------------


@pytest.mark.parametrize("case", range(len(_CASES)))
@pytest.mark.parametrize("k", [1, 2, 3, 4])
def test_max_at_k_exact_equals_enumeration(case, k):
  p, r = _CASES[case]
  np.testing.assert_allclose(
    float(bon.max_at_k_exact(p, r, k)), _enumerate_max_at_k(p, r, k), rtol=1e-5, atol=1e-6
  )


def _normalized_max_at_k_np(p, r, k):
  return _enumerate_max_at_k(np.asarray(p) / np.sum(p), r, k)


@pytest.mark.parametrize("case", [1, 2, 4, 6, 7])
@pytest.mark.parametrize("k", [1, 2, 4])
def test_max_at_k_exact_grad_equals_finite_differences(case, k):
  p, r = _CASES[case]
  grad = np.asarray(jax.grad(lambda a: bon.max_at_k_exact(a, r, k))(jnp.asarray(p)))
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
  jac = np.asarray(jax.jacobian(lambda a: bon.bon_pmf(a, r, n))(jnp.asarray(p)))
  g_wr = np.asarray(jax.grad(lambda a: bon.bon_win_rate(a, r, n))(jnp.asarray(p)))
  h = 1e-6
  p64 = p.astype(np.float64)

  def pmf_np(q):
    return _enumerate_bon(q / q.sum(), r, n)

  for i in range(len(p)):
    e = np.zeros_like(p64)
    e[i] = h
    fd = (pmf_np(p64 + e) - pmf_np(p64)) / h
    np.testing.assert_allclose(jac[:, i], fd, atol=2e-4, rtol=1e-3)
    fd_wr = (
      _win_rate_np(pmf_np(p64 + e), (p64 + e) / (p64 + e).sum(), r)
      - _win_rate_np(pmf_np(p64), p64 / p64.sum(), r)
    ) / h
    np.testing.assert_allclose(g_wr[i], fd_wr, atol=2e-4, rtol=1e-3)


def test_max_at_k_exact_policy_gradient_through_softmax():
  rng = np.random.default_rng(5)
  logits = rng.standard_normal(6).astype(np.float32)
  logits[2] = -np.inf  # A zero-probability outcome.
  r = np.array([0.0, 1.0, 1.0, 0.5, 2.0, 2.0], np.float32)  # Ties, incl. the top.
  k = 5

  def objective(z):
    return bon.max_at_k_exact(jax.nn.softmax(z), r, k)

  grad = np.asarray(jax.grad(objective)(jnp.asarray(logits)))
  assert np.all(np.isfinite(grad))

  # Exact policy gradient: sum_y pi_k(y) r(y) differentiated through the softmax.
  def exact_np(z):
    w = np.exp(z - z[np.isfinite(z)].max())
    return _enumerate_max_at_k(w / w.sum(), r, k)

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
  g_kl = np.asarray(jax.grad(lambda z: bon.bon_kl(jax.nn.softmax(z), r, k))(jnp.asarray(logits)))
  assert np.all(np.isfinite(g_kl))

  def kl_np(z):
    w = np.exp(z - z[np.isfinite(z)].max())
    return _reference_bon(w / w.sum(), r, k)[1]

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
    pmf_ref, _ = _reference_bon(p, r, k)
    np.testing.assert_allclose(
      float(bon.max_at_k_exact(p, r, k)), float(np.sum(pmf_ref * r)), rtol=2e-6, atol=2e-6
    )


# ----------------------------------------------------------------------------
# Rewind-and-repeat.
# ----------------------------------------------------------------------------


def test_rewind_repeat_unlimited_kl_is_log_inverse_acceptance():
  rng = np.random.default_rng(7)
  p = rng.dirichlet(np.ones(20), size=3).astype(np.float32)
  r = rng.standard_normal((3, 20)).astype(np.float32)
  threshold = np.array([0.5, 1.0, 1.5], np.float32)
  q = bon.rewind_repeat_pmf(p, r, threshold)
  accept = np.where(r >= threshold[:, None], p.astype(np.float64), 0).sum(-1)
  np.testing.assert_allclose(bon.kl_divergence(q, p), np.log(1 / accept), rtol=1e-5)
  np.testing.assert_allclose(np.sum(q, -1), 1.0, rtol=1e-6)
  assert np.all(np.asarray(q)[r < threshold[:, None]] == 0)


def test_rewind_repeat_with_try_limit():
  p = np.array([0.5, 0.2, 0.2, 0.1], np.float32)
  r = np.array([0.0, 1.0, 2.0, 3.0], np.float32)
  m = 3
  q = np.asarray(bon.rewind_repeat_pmf(p, r, 2.0, max_tries=m), np.float64)
  # Enumerate m draws: stop at the first draw in A, else keep the m-th draw.
  expected = np.zeros(4)
  for draw in itertools.product(range(4), repeat=m):
    w = np.prod(p[list(draw)].astype(np.float64))
    kept = next((y for y in draw if r[y] >= 2.0), draw[-1])
    expected[kept] += w
  np.testing.assert_allclose(q, expected, rtol=1e-5)
  np.testing.assert_allclose(bon.rewind_repeat_pmf(p, r, 2.0, max_tries=1), p, rtol=1e-6)
  many = bon.rewind_repeat_pmf(p, r, 2.0, max_tries=2000)
  np.testing.assert_allclose(many, bon.rewind_repeat_pmf(p, r, 2.0), atol=1e-6)
  # Nothing reaches the threshold: the reference is returned (eager and jit).
  np.testing.assert_allclose(bon.rewind_repeat_pmf(p, r, 10.0), p, rtol=1e-6)
  np.testing.assert_allclose(
    jax.jit(lambda t: bon.rewind_repeat_pmf(p, r, t, max_tries=5))(10.0), p, rtol=1e-6
  )
  # Tiny acceptance probability with many tries: factor ~ m, accurately.
  p2 = np.array([1 - 1e-7, 1e-7], np.float32)
  q2 = bon.rewind_repeat_pmf(p2, np.array([0.0, 1.0]), 1.0, max_tries=1000)
  np.testing.assert_allclose(float(q2[1]), 1e-4 * (1 - 0.5 * 999 * 1e-7), rtol=1e-4)


# ----------------------------------------------------------------------------
# Bad input.
# ----------------------------------------------------------------------------


@pytest.mark.parametrize(
  "fn",
  [
    bon.bon_pmf,
    bon.bon_kl,
    bon.bon_win_rate,
    bon.max_at_k_exact,
    bon.bon_kl_estimate_expectation,
    bon.bon_kl_gap_bound,
    bon.bon_win_rate_gap_bound,
    bon.bon_kl_gap_lower_bound,
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


def test_bad_input_raises_other_functions():
  p, r = _P4, np.arange(4.0)
  with pytest.raises(ValueError, match="n="):
    bon.bon_kl_bound(0)
  with pytest.raises(ValueError, match="n="):
    bon.bon_win_rate_bound(1.5)
  with pytest.raises(ValueError, match="n="):
    bon.bon_kl_estimate(0.5, 0)
  with pytest.raises(ValueError, match="eps"):
    bon.bon_kl_estimate([0.5, 1.5], 3)
  with pytest.raises(ValueError, match="max_tries"):
    bon.rewind_repeat_pmf(p, r, 1.0, max_tries=0)
  with pytest.raises(ValueError, match="threshold"):
    bon.rewind_repeat_pmf(np.stack([p, p]), np.stack([r, r]), [1.0, 2.0, 3.0])
  with pytest.raises(ValueError, match="threshold must not contain NaN"):
    bon.rewind_repeat_pmf(p, r, np.nan)
  with pytest.raises(ValueError, match="rewards must not contain NaN"):
    bon.win_rate(p, p, np.array([0.0, np.nan, 1.0, 2.0]))
  with pytest.raises(ValueError, match="shape"):
    bon.kl_divergence(p, p[:3])
  with pytest.raises(ValueError, match="sum to 1"):
    bon.kl_divergence(p, 2 * p)
  with pytest.raises(ValueError, match="non-negative"):
    bon.win_rate(np.array([1.2, -0.2, 0, 0]), p, r)
  with pytest.raises(ValueError, match="delta"):
    bon.bon_kl_gap_bound_delta(2.0, 3)


@pytest.mark.slow
def test_bon_kl_jit_time_at_one_million_outcomes():
  size = 10**6
  p = np.full(size, 1 / size, np.float32)
  r = np.random.default_rng(8).standard_normal(size).astype(np.float32)
  fn = jax.jit(bon.bon_kl, static_argnums=2)
  start = time.perf_counter()
  fn(p, r, 10_000).block_until_ready()  # Includes compilation.
  assert time.perf_counter() - start < 2.0 * 3
  start = time.perf_counter()
  fn(p, r, 10_000).block_until_ready()
  assert time.perf_counter() - start < 2.0
