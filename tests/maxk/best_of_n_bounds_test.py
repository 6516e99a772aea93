"""Tests for maxk._src.best_of_n_bounds: the KL and win-rate gap bounds.

The per-class tests check the proofs in docs/best_of_n_bounds.md by quadrature.
"""

import math

import hypothesis
import hypothesis.strategies as st
import jax
import numpy as np
import pytest
from scipy import integrate

import maxk
from tests.maxk import enumeration
from tests.maxk.variants import VARIANTS

_CASES = enumeration.BON_CASES
_PADDED_SIZE = 12


def _all_stats(p, r, n):
  """Every per-distribution quantity (each compiles once per shape, not per n)."""
  return dict(
    pmf=maxk.bon_pmf(p, r, n),
    kl=maxk.bon_kl(p, r, n),
    gap_bound=maxk.bon_kl_gap_bound(p, r, n),
    gap_lower=maxk.bon_kl_gap_lower_bound(p, r, n),
    win_rate=maxk.bon_win_rate(p, r, n),
    win_gap_bound=maxk.bon_win_rate_gap_bound(p, r, n),
    estimate=maxk.bon_kl_estimate_expectation(p, r, n),
  )


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
  p[:size] = rng.dirichlet(np.full(size, concentration))  # Padding has π = 0.
  p = np.where(p < 1e-30, 0.0, p)
  p = (p / p.sum()).astype(np.float32)
  r = rng.integers(0, num_levels, size=_PADDED_SIZE).astype(np.float32)  # Ties.
  stats = {key: np.asarray(v, np.float64) for key, v in _all_stats(p, r, n).items()}
  pmf_ref, kl_ref = enumeration.bon_pmf_and_kl(p, r, n)
  np.testing.assert_allclose(stats["pmf"], pmf_ref, atol=1e-6)
  assert abs(stats["kl"] - kl_ref) <= 1e-5 + 1e-5 * kl_ref
  bound = float(maxk.bon_kl_bound(n))
  assert -1e-6 <= stats["kl"] <= bound + 1e-5
  gap = bound - stats["kl"]
  assert gap <= stats["gap_bound"] + 1e-5
  assert gap >= stats["gap_lower"] - 1e-5
  wr_bound = float(maxk.bon_win_rate_bound(n))
  assert 0.5 - 1e-6 <= stats["win_rate"] <= wr_bound + 1e-6
  assert wr_bound - stats["win_rate"] <= stats["win_gap_bound"] + 1e-6
  assert abs(stats["win_rate"] - enumeration.win_rate(pmf_ref, p, r)) <= 1e-5
  assert -1e-6 <= stats["estimate"] <= bound + 1e-5


@pytest.mark.parametrize("variant", VARIANTS)
def test_closed_forms_in_the_collision_probability(variant):
  """The gap bounds equal their closed forms in the collision probability, with and
  without jit and vmapped over a batch."""
  n = 5
  probs = np.stack([c[0] for c in _CASES[:3]])
  rewards = np.stack([c[1] for c in _CASES[:3]]).astype(np.float32)
  fns = {
    "kl": (lambda a, b: maxk.bon_kl_gap_bound(a, b, n), 2 * n * (n - 1)),
    "win": (lambda a, b: maxk.bon_win_rate_gap_bound(a, b, n), (n - 1) / 2),
  }
  for name, (fn, factor) in fns.items():
    batched = np.asarray(variant(jax.vmap(fn))(probs, rewards))  # NumPy rows: no slicing programs
    for i in range(len(probs)):
      want = factor * enumeration.collision_probability(probs[i], rewards[i])
      np.testing.assert_allclose(variant(fn)(probs[i], rewards[i]), want, rtol=1e-5)
      np.testing.assert_allclose(batched[i], want, rtol=1e-5, err_msg=name)
  delta = np.array([0.0, 0.25, 1.0], np.float32)
  np.testing.assert_allclose(
    variant(lambda d: maxk.bon_kl_gap_bound_delta(d, n))(delta), 2 * n * (n - 1) * delta
  )
  np.testing.assert_allclose(
    variant(lambda d: maxk.bon_win_rate_gap_bound_delta(d, n))(delta), (n - 1) / 2 * delta
  )


@pytest.mark.parametrize("case", range(len(_CASES)))
def test_win_rate_gap_closed_form_at_n2(case):
  # For n = 2 the win-rate gap 2/3 - W is exactly Σ over tie classes of P(class)^3 / 6
  # (per class, 2/3 (F^3 - G^3) - (F^2 - G^2)(F + G)/2 = (F - G)^3 / 6), well below
  # the bound (n-1)/2 Σ P(class)^2 = Σ P(class)^2 / 2.
  p, r = _CASES[case]
  p64 = p.astype(np.float64) / p.astype(np.float64).sum()
  _, inverse = np.unique(r, return_inverse=True)
  mass = np.bincount(inverse, weights=p64)
  gap = 2 / 3 - float(maxk.bon_win_rate(p, r, 2))
  np.testing.assert_allclose(gap, np.sum(mass**3) / 6, atol=2e-7)
  np.testing.assert_allclose(
    float(maxk.bon_win_rate_gap_bound(p, r, 2)), np.sum(mass**2) / 2, rtol=1e-5
  )


def _class_gap_terms(mass, n):
  """Per-class terms of the KL and win-rate gaps by quadrature (float64).

  The coupling in the proofs (docs/best_of_n_bounds.md): class i is the interval
  [a, b] = [F_(i-1), F_i] of [0, 1]; M = max of n uniforms has density
  phi(u) = n u^(n-1).  KL term: (b^n - a^n) KL(phi / (b^n - a^n) || 1/p) on [a, b];
  win-rate term: integral_a^b phi(u) (u - (a + b)/2) du.
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
  # The proofs: gap = sum of per-class terms, each KL term in [0, 2 n (n-1) p_i^2]
  # and each win-rate term in [0, n p_i^2 / 8].
  rng = np.random.default_rng(seed)
  size = 12
  p = rng.dirichlet(np.full(size, [0.1, 0.5, 2.0, 20.0][seed]))
  r = rng.integers(0, 9, size=size).astype(np.float64)  # Ties.
  _, inverse = np.unique(r, return_inverse=True)
  mass = np.bincount(inverse, weights=p)
  pmf, kl = enumeration.bon_pmf_and_kl(p, r, n)
  kl_terms, win_terms = _class_gap_terms(mass, n)
  np.testing.assert_allclose(
    kl_terms[:, 0].sum(), enumeration.bon_kl_bound(n) - kl, rtol=1e-8, atol=1e-10
  )
  np.testing.assert_allclose(
    win_terms[:, 0].sum(), n / (n + 1) - enumeration.win_rate(pmf, p, r), rtol=1e-8, atol=1e-10
  )
  for (kl_term, p_i), (win_term, _) in zip(kl_terms, win_terms):
    assert -1e-12 <= kl_term <= 2 * n * (n - 1) * p_i**2 + 1e-12
    assert -1e-12 <= win_term <= n * p_i**2 / 8 + 1e-12
  # And the library's bounds dominate the summed terms.
  p32, r32 = p.astype(np.float32), r.astype(np.float32)
  assert kl_terms[:, 0].sum() <= float(maxk.bon_kl_gap_bound(p32, r32, n)) * (1 + 1e-5) + 1e-12
  assert (
    win_terms[:, 0].sum() <= float(maxk.bon_win_rate_gap_bound(p32, r32, n)) * (1 + 1e-5) + 1e-12
  )


@hypothesis.settings(max_examples=40, deadline=None, derandomize=True)
@hypothesis.given(
  n=st.integers(1, 500), seed=st.integers(0, 2**31 - 1), num_levels=st.integers(1, 8)
)
def test_likelihood_ratio_at_most_inverse_top_class_mass(n, seed, num_levels):
  # The lemma behind bon_kl_gap_lower_bound: π_n(y)/π(y) <= 1/eps_inf for every y,
  # hence KL <= log(1/eps_inf) and gap >= log(n eps_inf) - (n-1)/n.
  rng = np.random.default_rng(seed)
  p = rng.dirichlet(np.full(10, 0.5))
  p = np.where(p < 1e-30, 0.0, p)
  p = p / p.sum()
  r = rng.integers(0, num_levels, size=10).astype(np.float64)
  pmf, kl = enumeration.bon_pmf_and_kl(p, r, n)
  top = r[p > 0].max()
  eps_inf = p[r == top].sum()
  pos = p > 0
  assert np.all(pmf[pos] / p[pos] <= (1 + 1e-9) / eps_inf)
  assert kl <= math.log(1 / eps_inf) + 1e-9
  lower = float(maxk.bon_kl_gap_lower_bound(p.astype(np.float32), r.astype(np.float32), n))
  np.testing.assert_allclose(
    lower, max(0.0, math.log(n * eps_inf) - (n - 1) / n), rtol=1e-5, atol=1e-6
  )


@pytest.mark.parametrize("n", [2, 8, 32])
def test_uniform_reference_approaches_analytical_formulas(n):
  size = 100_000
  p = np.full(size, 1 / size, np.float32)
  r = np.arange(size, dtype=np.float32)
  kl, wr = float(maxk.bon_kl(p, r, n)), float(maxk.bon_win_rate(p, r, n))
  bound = enumeration.bon_kl_bound(n)
  assert abs(kl - bound) < 1e-4
  assert abs(wr - n / (n + 1)) < 1e-4
  assert bound - kl <= float(maxk.bon_kl_gap_bound(p, r, n)) + 1e-5
  assert float(maxk.bon_kl_gap_bound_delta(1 / size, n)) == pytest.approx(
    2 * n * (n - 1) / size, rel=1e-6
  )
  assert float(maxk.bon_win_rate_gap_bound_delta(1 / size, n)) == pytest.approx(
    (n - 1) / (2 * size), rel=1e-6
  )


def test_bad_delta_and_n():
  with pytest.raises(ValueError, match="delta"):
    maxk.bon_kl_gap_bound_delta(2.0, 3)
  with pytest.raises(ValueError, match="delta"):
    maxk.bon_win_rate_gap_bound_delta(-0.1, 3)
  with pytest.raises(ValueError, match="n="):
    maxk.bon_kl_gap_bound_delta(0.1, 0)
