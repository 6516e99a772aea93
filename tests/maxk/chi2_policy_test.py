"""Tests for the χ²-regularised optimum (maxk._src.chi2_policy).

Against a float64 bisection for the threshold λ_β, the optimality of π_β for
E_q[r] − β χ²(q || π) over the simplex, its limits, Monte Carlo draws for the win
rate, and finite differences in float64.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import maxk
from tests.maxk import enumeration

_P6 = np.array([0.3, 0.1, 0.15, 0.05, 0.25, 0.15], np.float32)
_R6 = np.array([0.0, 2.0, 1.0, 2.0, 1.0, 3.0], np.float32)
_BETAS = (0.02, 0.3, 1.0, 5.0, 1e3)


def _chi2_reference(p, r, beta):
  """π (r − λ)_+/β with Σ π (r − λ)_+ = β, λ by float64 bisection."""
  p = np.asarray(p, np.float64) / np.sum(p)
  r = np.asarray(r, np.float64)
  lo, hi = r[p > 0].min() - beta - 1.0, r[p > 0].max()
  for _ in range(200):
    mid = 0.5 * (lo + hi)
    lo, hi = (mid, hi) if np.sum(p * np.maximum(r - mid, 0.0)) > beta else (lo, mid)
  return p * np.maximum(r - 0.5 * (lo + hi), 0.0) / beta


def _objective(q, p, r, beta):
  pos = p > 0
  return float(q @ r - beta * 0.5 * (np.sum(q[pos] ** 2 / p[pos]) - 1.0))


def _padded_cases():
  """BON_CASES padded with zero-probability outcomes to one shape [C, 4] (no effect on π_β)."""
  probs = np.zeros((len(enumeration.BON_CASES), 4), np.float32)
  rewards = np.zeros((len(enumeration.BON_CASES), 4), np.float32)
  for i, (p, r) in enumerate(enumeration.BON_CASES):
    probs[i, : len(p)], rewards[i, : len(p)] = p, r
  return probs, rewards


def test_pmf_kl_and_win_rate_match_float64_reference_under_jit_and_vmap():
  probs, rewards = _padded_cases()
  betas = jnp.asarray(_BETAS, jnp.float32)
  fns = (maxk.chi2_pmf, maxk.chi2_kl, maxk.chi2_win_rate)
  outs = jax.jit(jax.vmap(lambda b: [f(probs, rewards, b) for f in fns]))(betas)
  outs = [np.asarray(o) for o in outs]  # NumPy indexing in the loops compiles nothing
  for j, beta in enumerate(_BETAS):
    for i, (p, r) in enumerate(zip(probs, rewards)):
      want = _chi2_reference(p, r, beta)
      np.testing.assert_allclose(outs[0][j, i], want, atol=2e-6)
      np.testing.assert_allclose(
        outs[1][j, i], enumeration.kl_divergence(want, p), rtol=1e-4, atol=1e-7
      )
      np.testing.assert_allclose(outs[2][j, i], enumeration.win_rate(want, p, r), atol=2e-6)


def test_maximizes_the_chi2_regularised_objective():
  rng = np.random.default_rng(0)
  p = np.asarray(_P6, np.float64) / _P6.sum()
  r = np.asarray(_R6, np.float64)
  for beta in (0.1, 0.7, 3.0):
    best = np.asarray(maxk.chi2_pmf(_P6, _R6, beta), np.float64)
    value = _objective(best, p, r, beta)
    for other in [maxk.bon_pmf(_P6, _R6, 4), maxk.tilt_pmf(_P6, _R6, 1.0), _P6]:
      assert value >= _objective(np.asarray(other, np.float64), p, r, beta) - 1e-6
    for _ in range(200):
      q = np.abs(best + 0.05 * rng.normal(size=6))
      q /= q.sum()
      assert value >= _objective(q, p, r, beta) - 1e-6


def test_limits_large_and_small_beta():
  p, r = _P6, _R6
  # Large β: every outcome stays in and π_β = π (1 + (r − E r)/β); KL ≈ Var/(2β²).
  beta = 1e3
  mean = float(np.sum(p * r))
  np.testing.assert_allclose(maxk.chi2_pmf(p, r, beta), p * (1 + (r - mean) / beta), rtol=1e-5)
  var = float(np.sum(p * (r - mean) ** 2))
  np.testing.assert_allclose(maxk.chi2_kl(p, r, beta), var / (2 * beta**2), rtol=1e-3)
  np.testing.assert_allclose(maxk.chi2_win_rate(p, r, 1e6), 0.5, atol=1e-6)
  # Small β: the reference restricted to its top class, as best-of-n for large n.
  np.testing.assert_allclose(maxk.chi2_pmf(p, r, 1e-4), maxk.bon_pmf(p, r, 10**6), atol=1e-5)
  top = np.array([0.0, 0.0, 0.0, 0.0, 0.0, 1.0])
  np.testing.assert_allclose(maxk.chi2_kl(p, r, 1e-4), -np.log(0.15), rtol=1e-5)
  np.testing.assert_allclose(maxk.chi2_pmf(p, r, 1e-4), top, atol=1e-5)


def test_ties_share_one_ratio_and_zero_probability_stays_zero():
  p = np.array([0.2, 0.0, 0.3, 0.5], np.float32)
  r = np.array([1.0, 5.0, 1.0, 0.0], np.float32)
  q = np.asarray(maxk.chi2_pmf(p, r, 0.4))
  assert q[1] == 0.0
  np.testing.assert_allclose(q[0] / p[0], q[2] / p[2], rtol=1e-6)


def test_win_rate_monte_carlo_and_composition():
  beta = 0.5
  q = maxk.chi2_pmf(_P6, _R6, beta)
  np.testing.assert_allclose(
    maxk.chi2_win_rate(_P6, _R6, beta), maxk.win_rate(q, _P6, _R6), atol=1e-6
  )
  rng = np.random.default_rng(1)
  num = 200_000
  qa = np.asarray(q, np.float64)
  pa = np.asarray(_P6, np.float64)
  a = rng.choice(6, size=num, p=qa / qa.sum())
  b = rng.choice(6, size=num, p=pa / pa.sum())
  ra, rb = _R6[a], _R6[b]
  mc = np.mean((ra > rb) + 0.5 * (ra == rb))
  assert abs(mc - float(maxk.chi2_win_rate(_P6, _R6, beta))) < 4 * 0.5 / np.sqrt(num)


def test_grad_matches_finite_differences():
  with jax.enable_x64(True):
    # Test-side arithmetic in NumPy float64 (no eager programs).
    p = _P6.astype(np.float64)
    r = _R6.astype(np.float64)
    z = np.log(p) + 0.1
    h = 1e-6
    eye = h * np.eye(6)

    def f(z, b):
      q = jax.nn.softmax(z)
      return jnp.stack([maxk.chi2_kl(q, r, b), maxk.chi2_win_rate(q, r, b)])

    jz, jb = jax.jit(jax.jacrev(f, argnums=(0, 1)))(z, 0.7)
    both = jax.jit(jax.vmap(f, in_axes=(0, None)))
    fd_z = (np.asarray(both(z + eye, 0.7)) - np.asarray(both(z - eye, 0.7))) / (2 * h)  # [6, 2]
    np.testing.assert_allclose(jz, fd_z.T, atol=1e-7)
    f_jit = jax.jit(f)
    fd_b = (np.asarray(f_jit(z, 0.7 + h)) - np.asarray(f_jit(z, 0.7 - h))) / (2 * h)
    np.testing.assert_allclose(jb, fd_b, rtol=1e-6)


def test_nan_row_is_nan_and_others_untouched():
  p = np.stack([_P6, _P6])
  r = np.stack([_R6, _R6]).copy()
  r[0, 2] = np.nan
  fns = (maxk.chi2_pmf, maxk.chi2_kl, maxk.chi2_win_rate)
  outs = jax.jit(lambda p, r, b: [f(p, r, b) for f in fns])(p, r, 0.5)
  pmf, kl, win = (np.asarray(a) for a in outs)  # NumPy indexing below compiles nothing
  assert np.all(np.isnan(pmf[0])) and np.isnan(kl[0]) and np.isnan(win[0])
  np.testing.assert_allclose(pmf[1], maxk.chi2_pmf(_P6, _R6, 0.5), atol=1e-7)
  assert np.isfinite(kl[1]) and np.isfinite(win[1])
  assert np.isnan(jax.jit(maxk.chi2_kl)(_P6, _R6, -1.0))  # a traced β <= 0


@pytest.mark.parametrize(
  "call, match",
  [
    (lambda: maxk.chi2_pmf(_P6, _R6, 0.0), "^beta=0.0 must be"),
    (lambda: maxk.chi2_kl(_P6, _R6, -1.0), "^beta=-1.0 must be"),
    (lambda: maxk.chi2_win_rate(_P6, _R6, np.ones(2)), "^beta must be a scalar"),
    (lambda: maxk.chi2_pmf(_P6 * 2, _R6, 1.0), "^probs must sum to 1"),
    (lambda: maxk.chi2_pmf(_P6, _R6[:5], 1.0), "rewards"),
    (lambda: maxk.chi2_pmf(_P6, np.where(_R6 > 2, np.inf, _R6), 1.0), "^rewards must be finite"),
  ],
)
def test_bad_inputs_raise_one_line_value_error(call, match):
  with pytest.raises(ValueError, match=match) as info:
    call()
  assert "\n" not in str(info.value)


def test_win_rate_against_best_of_n_is_win_rate_of_the_two_laws():
  # The documented composition: a policy against best-of-m of the reference.
  p = np.array([0.2, 0.3, 0.1, 0.4], np.float32)
  r = np.array([0.0, 1.0, 1.0, 2.0], np.float32)
  bon2, bon3 = enumeration.bon_pmf(p, r, 2), enumeration.bon_pmf(p, r, 3)
  got = maxk.win_rate(maxk.bon_pmf(p, r, 2), maxk.bon_pmf(p, r, 3), r)
  np.testing.assert_allclose(got, enumeration.win_rate(bon2, bon3, r), atol=1e-6)
  q = maxk.chi2_pmf(p, r, 0.3)
  np.testing.assert_allclose(
    maxk.win_rate(q, maxk.bon_pmf(p, r, 3), r), enumeration.win_rate(q, bon3, r), atol=1e-6
  )
  # Continuous limit: best-of-n against best-of-m wins n/(n + m).
  fine = np.full(4000, 1 / 4000, np.float32)
  rf = np.arange(4000, dtype=np.float32)
  np.testing.assert_allclose(
    maxk.win_rate(maxk.bon_pmf(fine, rf, 4), maxk.bon_pmf(fine, rf, 12), rf), 0.25, atol=1e-3
  )
