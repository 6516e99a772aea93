"""Tests for Best-of-Poisson, the exponential tilt and soft best-of-n.

maxk._src.tilted_policies and maxk._src.soft_best_of_n, against brute force over
all outcome tuples (soft best-of-n), the Poisson mixture of exact best-of-n laws
(Best-of-Poisson), direct float64 formulas (the tilt), their limits, Monte Carlo
sampling, and finite differences in float64.
"""

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
# Six outcomes with ties at the top and in the middle.
_P6 = np.array([0.3, 0.1, 0.15, 0.05, 0.25, 0.15], np.float32)
_R6 = np.array([0.0, 2.0, 1.0, 2.0, 1.0, 3.0], np.float32)


# ----------------------------------------------------------------------------
# float64 references.
# ----------------------------------------------------------------------------


def _normalized(p):
  p = np.asarray(p, np.float64)
  return p / p.sum()


def _kl(q, p):
  pos = q > 0
  return float(np.sum(q[pos] * np.log(q[pos] / p[pos])))


def _bop_reference(p, r, mu):
  """Σ_{n=1..n_max} Poisson(n − 1; μ) π_n (exact best-of-n laws), and the tail mass left out."""
  n_max = int(mu + 12 * math.sqrt(mu) + 25)
  p = _normalized(p)
  out = np.zeros(len(p))
  for n in range(1, n_max + 1):
    weight = math.exp(-mu + (n - 1) * math.log(mu) - math.lgamma(n)) if mu > 0 else float(n == 1)
    out += weight * enumeration.bon_pmf_and_kl(p, r, n)[0]
  tail = 1.0 - sum(
    math.exp(-mu + j * math.log(mu) - math.lgamma(j + 1)) if mu > 0 else float(j == 0)
    for j in range(n_max)
  )
  return out, tail


def _soft_bon_brute_force(p, r, n, lam):
  """Soft best-of-n by summing over all L^n draws: sample i kept with probability ∝ e^{r_i/λ}."""
  p = _normalized(p)
  r = np.asarray(r, np.float64)
  draws = np.array(list(itertools.product(range(len(p)), repeat=n)))  # [L^n, n]
  weight = np.prod(p[draws], axis=1)
  w = np.exp((r - r.max()) / lam)[draws]
  chosen = weight[:, None] * w / w.sum(axis=1, keepdims=True)
  return np.bincount(draws.ravel(), weights=chosen.ravel(), minlength=len(p))


def _tilt_reference(p, r, beta):
  p = _normalized(p)
  a = np.where(p > 0, beta * np.asarray(r, np.float64), -np.inf)
  shift = a.max()
  z = np.sum(p * np.exp(a - shift))
  return p * np.exp(a - shift) / z, shift + math.log(z)


# ----------------------------------------------------------------------------
# Best-of-Poisson.
# ----------------------------------------------------------------------------


@pytest.mark.parametrize("case", [0, 1, 2, 7])  # Four outcomes: ties, zeros at top and bottom.
@pytest.mark.parametrize("mu", [0.0, 0.7, 4.0])
def test_bop_equals_poisson_mixture_of_best_of_n(case, mu):
  p, r = _CASES[case]
  want, tail = _bop_reference(p, r, mu)
  assert tail < 1e-12  # The truncated Poisson tail bounds the reference's error.
  np.testing.assert_allclose(maxk.bop_pmf(p, r, mu), want, rtol=1e-5, atol=1e-7)
  p64 = _normalized(p)
  np.testing.assert_allclose(float(maxk.bop_kl(p, r, mu)), _kl(want, p64), rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(
    float(maxk.bop_win_rate(p, r, mu)), enumeration.win_rate(want, p64, r), rtol=1e-5, atol=1e-6
  )


def test_bop_at_mu_zero_is_the_reference_and_continuous_density_matches():
  np.testing.assert_allclose(maxk.bop_pmf(_P6, _R6, 0.0), _P6, rtol=1e-6)
  assert float(maxk.bop_kl(_P6, _R6, 0.0)) == 0.0
  np.testing.assert_allclose(float(maxk.bop_win_rate(_P6, _R6, 0.0)), 0.5, rtol=1e-6)
  # A fine uniform reference: L π_μ(y) -> (1 + μu) e^{μ(u−1)} at u = F(y).
  size, mu = 1000, 3.0
  u = (np.arange(size) + 0.5) / size  # Midpoints: O(1/size^2) discretisation error.
  got = np.asarray(maxk.bop_pmf(np.full(size, 1 / size, np.float32), np.arange(size), mu)) * size
  np.testing.assert_allclose(got, (1 + mu * u) * np.exp(mu * (u - 1)), rtol=1e-4)


# ----------------------------------------------------------------------------
# The exponential tilt.
# ----------------------------------------------------------------------------


@pytest.mark.parametrize("case", [0, 1, 2, 7])
@pytest.mark.parametrize("beta", [-1.5, 0.5, 3.0])
def test_tilt_equals_direct_formula(case, beta):
  p, r = _CASES[case]
  want, log_z = _tilt_reference(p, r, beta)
  p64 = _normalized(p)
  np.testing.assert_allclose(maxk.tilt_pmf(p, r, beta), want, rtol=1e-5, atol=1e-7)
  np.testing.assert_allclose(
    float(maxk.tilt_log_partition(p, r, beta)), log_z, rtol=1e-5, atol=1e-6
  )
  np.testing.assert_allclose(float(maxk.tilt_kl(p, r, beta)), _kl(want, p64), rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(
    float(maxk.tilt_win_rate(p, r, beta)), enumeration.win_rate(want, p64, r), rtol=1e-5, atol=1e-6
  )


def test_tilt_kl_is_accurate_for_small_beta_in_float32():
  p64 = _normalized(_P6)
  r = _R6.astype(np.float64) + 1000.0  # A large offset must not cost accuracy.
  variance = np.sum(p64 * r**2) - np.sum(p64 * r) ** 2
  for beta in (1e-2, 1e-4):
    want = _kl(_tilt_reference(p64, r, beta)[0], p64) if beta > 1e-3 else beta**2 * variance / 2
    got = float(maxk.tilt_kl(_P6, r.astype(np.float32), beta))
    np.testing.assert_allclose(got, want, rtol=2e-3)


# ----------------------------------------------------------------------------
# Soft best-of-n.
# ----------------------------------------------------------------------------


@pytest.mark.parametrize("case", [1, 2, 7])
@pytest.mark.parametrize("n", [2, 4])  # n = 1 (the reference): test_soft_bon_limits.
@pytest.mark.parametrize("lam", [0.1, 1.0])
def test_soft_bon_equals_enumeration(case, n, lam):
  p, r = _CASES[case]
  want = _soft_bon_brute_force(p, r, n, lam)
  p64 = _normalized(p)
  np.testing.assert_allclose(maxk.soft_bon_pmf(p, r, n, lam), want, rtol=1e-5, atol=1e-7)
  np.testing.assert_allclose(
    float(maxk.soft_bon_kl(p, r, n, lam)), _kl(want, p64), rtol=1e-5, atol=1e-6
  )
  np.testing.assert_allclose(
    float(maxk.soft_bon_win_rate(p, r, n, lam)),
    enumeration.win_rate(want, p64, r),
    rtol=1e-5,
    atol=1e-6,
  )


@pytest.mark.parametrize(("n", "lam", "num_nodes"), [(3, 0.05, 512), (5, 0.3, 128), (2, 5.0, 96)])
def test_soft_bon_quadrature_is_accurate_in_float64(n, lam, num_nodes):
  # The documented rule: relative error <= 1e-9 for a step h <= 0.35 and <= 1e-6 at
  # h <= 0.5 (h = ((r_max − r_min)/λ + 40) / (num_nodes − 1)).
  step = (3.0 / lam + 40.0) / (num_nodes - 1)
  want = _soft_bon_brute_force(_P6, _R6, n, lam)
  with jax.enable_x64(True):
    got = np.asarray(maxk.soft_bon_pmf(_normalized(_P6), _R6, n, lam, num_nodes=num_nodes))
  error = np.max(np.abs(got - want) / want)
  assert step <= 0.5 and error <= (1e-9 if step <= 0.35 else 1e-6), (step, error)


def test_soft_bon_limits():
  p, r = _P6, _R6
  # λ -> 0: best-of-n with ties split in proportion to probs.
  for n in (2, 7):
    np.testing.assert_allclose(maxk.soft_bon_pmf(p, r, n, 0.02), maxk.bon_pmf(p, r, n), atol=1e-6)
  # At the edge of the default rule's range, (r_max − r_min)/λ = 200, in float32.
  want = _soft_bon_brute_force(p, r, 3, 3.0 / 200)
  np.testing.assert_allclose(maxk.soft_bon_pmf(p, r, 3, 3.0 / 200), want, rtol=5e-5, atol=1e-7)
  # n = 1: the reference.
  np.testing.assert_allclose(maxk.soft_bon_pmf(p, r, 1, 0.5), p, rtol=1e-5)
  np.testing.assert_allclose(maxk.tilt_pmf(p, r, 0.0), p, rtol=1e-6)  # And β = 0.
  # n -> ∞: the tilt at β = 1/λ, at rate O(1/n).
  tilt = np.asarray(maxk.tilt_pmf(p, r, 2.0), np.float64)
  gaps = [np.max(np.abs(np.asarray(maxk.soft_bon_pmf(p, r, n, 0.5)) - tilt)) for n in (500, 2000)]
  assert gaps[1] < 2e-3 and 0.2 < gaps[1] / gaps[0] < 0.3, gaps
  # Soft selection among the same n draws never beats the hard max's win rate.
  assert float(maxk.soft_bon_win_rate(p, r, 8, 0.5)) < float(maxk.bon_win_rate(p, r, 8))


def test_soft_bon_matches_monte_carlo_sampling():
  rng = np.random.default_rng(0)
  n, lam, draws = 4, 0.7, 40000
  samples = rng.choice(len(_P6), size=(draws, n), p=_normalized(_P6))
  w = np.exp(_R6[samples] / lam)
  cumulative = np.cumsum(w / w.sum(axis=1, keepdims=True), axis=1)
  pick = np.minimum((cumulative < rng.random((draws, 1))).sum(axis=1), n - 1)
  freq = np.bincount(samples[np.arange(draws), pick], minlength=len(_P6)) / draws
  pmf = np.asarray(maxk.soft_bon_pmf(_P6, _R6, n, lam), np.float64)
  stderr = np.sqrt(pmf * (1 - pmf) / draws)
  assert np.all(np.abs(freq - pmf) <= 4 * stderr), (freq, pmf)


# ----------------------------------------------------------------------------
# jit, vmap, batch axes, NaN rows.
# ----------------------------------------------------------------------------

_FNS = {
  "bop_pmf": lambda a, b: maxk.bop_pmf(a, b, 1.5),
  "bop_kl": lambda a, b: maxk.bop_kl(a, b, 1.5),
  "bop_win_rate": lambda a, b: maxk.bop_win_rate(a, b, 1.5),
  "tilt_pmf": lambda a, b: maxk.tilt_pmf(a, b, 0.8),
  "tilt_kl": lambda a, b: maxk.tilt_kl(a, b, 0.8),
  "tilt_log_partition": lambda a, b: maxk.tilt_log_partition(a, b, 0.8),
  "tilt_win_rate": lambda a, b: maxk.tilt_win_rate(a, b, 0.8),
  "soft_bon_pmf": lambda a, b: maxk.soft_bon_pmf(a, b, 3, 0.4),
  "soft_bon_kl": lambda a, b: maxk.soft_bon_kl(a, b, 3, 0.4),
  "soft_bon_win_rate": lambda a, b: maxk.soft_bon_win_rate(a, b, 3, 0.4),
}


def _references(p, r):
  p64 = _normalized(p)
  bop = _bop_reference(p, r, 1.5)[0]
  tilt, log_z = _tilt_reference(p, r, 0.8)
  soft = _soft_bon_brute_force(p, r, 3, 0.4)
  out = {"tilt_log_partition": log_z}
  for name, q in (("bop", bop), ("tilt", tilt), ("soft_bon", soft)):
    out[f"{name}_pmf"] = q
    out[f"{name}_kl"] = _kl(q, p64)
    out[f"{name}_win_rate"] = enumeration.win_rate(q, p64, r)
  return out


def _all_outputs(a, b):
  return {name: fn(a, b) for name, fn in _FNS.items()}


@pytest.mark.parametrize("variant", VARIANTS)
def test_against_float64_references_with_jit_and_vmap(variant):
  rng = np.random.default_rng(2)
  probs = rng.dirichlet(np.ones(4), size=3).astype(np.float32)
  probs[1, 3] = 0.0
  probs[1] /= probs[1].sum()
  rewards = rng.integers(0, 3, size=(3, 4)).astype(np.float32)  # Ties.
  # with_jit: vmap over the rows under one jit; without_jit: row by row, eagerly.
  if variant.__name__ == "with_jit":
    outputs = variant(jax.vmap(_all_outputs))(probs, rewards)
  else:
    rows = [variant(_all_outputs)(probs[i], rewards[i]) for i in range(len(probs))]
    outputs = {name: [row[name] for row in rows] for name in _FNS}
  for i in range(len(probs)):
    want = _references(probs[i], rewards[i].astype(np.float64))
    for name, got in outputs.items():
      np.testing.assert_allclose(got[i], want[name], rtol=2e-5, atol=1e-6, err_msg=name)


def test_parameters_may_be_traced_and_nan_rows_stay_nan():
  probs = np.stack([_P6, _P6[::-1]])
  rewards = np.stack([_R6, _R6])
  mus = jnp.array([0.0, 1.0, 5.0])
  sweep = np.asarray(jax.jit(jax.vmap(lambda m: maxk.bop_kl(probs, rewards, m)))(mus))
  for i, mu in enumerate([0.0, 1.0, 5.0]):
    np.testing.assert_allclose(sweep[i], maxk.bop_kl(probs, rewards, mu), rtol=1e-6, atol=1e-7)
  p_bad = probs.copy()
  p_bad[0, 2] = np.nan
  r_bad = rewards.copy()
  r_bad[1, 0] = np.inf  # Values matter for the tilt and soft best-of-n.
  for name in ("tilt_kl", "soft_bon_win_rate"):
    out = np.asarray(jax.jit(_FNS[name])(p_bad, r_bad))
    assert np.all(np.isnan(out[0])) and np.all(np.isnan(out[1])), name
    out = np.asarray(jax.jit(_FNS[name])(p_bad, rewards))
    assert np.all(np.isnan(out[0])) and np.all(np.isfinite(out[1])), name
  out = np.asarray(jax.jit(_FNS["bop_pmf"])(p_bad, r_bad))  # Only the order matters.
  assert np.all(np.isnan(out[0])) and np.all(np.isfinite(out[1]))


# ----------------------------------------------------------------------------
# Gradients against finite differences (float64).
# ----------------------------------------------------------------------------


def _central_difference(f, x, h):
  x = np.asarray(x, np.float64)
  grad = np.zeros_like(x)
  for i in np.ndindex(x.shape):
    e = np.zeros_like(x)
    e[i] = h
    grad[i] = (float(f(x + e)) - float(f(x - e))) / (2 * h)
  return grad


@pytest.mark.parametrize(
  "name",
  ["bop_kl", "bop_win_rate", "tilt_kl", "tilt_win_rate", "soft_bon_kl", "soft_bon_win_rate"],
)
def test_grads_equal_finite_differences(name):
  family = name.rsplit("_", 2)[0] if "win_rate" in name else name.rsplit("_", 1)[0]
  fn = getattr(maxk, name)
  rewards = _R6.astype(np.float64)
  logits = np.log(_P6.astype(np.float64)) + np.linspace(-0.3, 0.3, 6)
  param = {"bop": 1.3, "tilt": 0.7, "soft_bon": 0.6}[family]
  with jax.enable_x64(True):

    def objective(z, t):
      probs = jax.nn.softmax(z)
      return fn(probs, rewards, 4, t) if family == "soft_bon" else fn(probs, rewards, t)

    # One compiled program gives the gradient and the values the differences are taken of.
    value_and_grad = jax.jit(jax.value_and_grad(objective, argnums=(0, 1)))
    grad_z, grad_t = value_and_grad(jnp.asarray(logits), param)[1]
    value = lambda z, t: value_and_grad(jnp.asarray(z), float(t))[0]
    fd_z = _central_difference(lambda z: value(z, param), logits, 1e-6)
    fd_t = _central_difference(lambda t: value(logits, t), param, 1e-6)
  np.testing.assert_allclose(grad_z, fd_z, rtol=1e-6, atol=1e-9)
  np.testing.assert_allclose(float(grad_t), float(fd_t), rtol=1e-6, atol=1e-9)


# d pmf / d probs, one compiled program each (rewards are an argument), shared by the cases.
_PMF_JACOBIANS = {
  "bop": jax.jit(jax.jacobian(lambda a, b: maxk.bop_pmf(a, b, 1.5))),
  "tilt": jax.jit(jax.jacobian(lambda a, b: maxk.tilt_pmf(a, b, 0.8))),
  "soft_bon": jax.jit(jax.jacobian(lambda a, b: maxk.soft_bon_pmf(a, b, 3, 0.4))),
}


@pytest.mark.parametrize("case", [2, 7])
def test_pmf_jacobians_with_zero_probabilities_equal_forward_differences(case):
  # Zeros at the top, the bottom and inside tie classes: the forward difference into
  # the simplex is the derivative a policy gradient needs.
  p, r = _CASES[case]
  r64 = r.astype(np.float64)
  pairs = [
    (_PMF_JACOBIANS["bop"], lambda q: _bop_reference(q, r64, 1.5)[0]),
    (_PMF_JACOBIANS["tilt"], lambda q: _tilt_reference(q, r64, 0.8)[0]),
    (_PMF_JACOBIANS["soft_bon"], lambda q: _soft_bon_brute_force(q, r64, 3, 0.4)),
  ]
  p64 = p.astype(np.float64)
  for jacobian, reference in pairs:
    jac = np.asarray(jacobian(jnp.asarray(p), jnp.asarray(r, jnp.float32)))
    for i in range(len(p)):
      e = np.zeros_like(p64)
      e[i] = 1e-6
      fd = (reference(p64 + e) - reference(p64)) / 1e-6
      np.testing.assert_allclose(jac[:, i], fd, atol=2e-4, rtol=1e-3)


def test_traced_parameters_out_of_range_give_nan():
  assert np.all(np.isnan(jax.jit(lambda m: maxk.bop_pmf(_P6, _R6, m))(-0.5)))
  kl = jax.jit(lambda t: maxk.soft_bon_kl(_P6, _R6, 3, t))  # One program for both.
  for lam in (0.0, -1.0):
    assert np.isnan(float(kl(lam)))
  # β may be any real number: β < 0 tilts towards low rewards.
  assert float(maxk.tilt_win_rate(_P6, _R6, -1.0)) < 0.5 < float(maxk.tilt_win_rate(_P6, _R6, 1.0))


def test_log_partition_derivative_is_the_tilted_mean_reward():
  with jax.enable_x64(True):
    p, r = _normalized(_P6), _R6.astype(np.float64)
    slope = jax.jit(jax.grad(lambda b: maxk.tilt_log_partition(p, r, b)))(0.9)
    np.testing.assert_allclose(
      float(slope), float(np.sum(np.asarray(maxk.tilt_pmf(p, r, 0.9)) * r)), rtol=1e-12
    )


# ----------------------------------------------------------------------------
# Bad input.
# ----------------------------------------------------------------------------


@pytest.mark.parametrize(
  "call",
  [
    lambda p, r, x: maxk.bop_pmf(p, r, x),
    lambda p, r, x: maxk.bop_kl(p, r, x),
    lambda p, r, x: maxk.bop_win_rate(p, r, x),
    lambda p, r, x: maxk.tilt_pmf(p, r, x),
    lambda p, r, x: maxk.tilt_kl(p, r, x),
    lambda p, r, x: maxk.tilt_log_partition(p, r, x),
    lambda p, r, x: maxk.tilt_win_rate(p, r, x),
    lambda p, r, x: maxk.soft_bon_pmf(p, r, 2, x),
    lambda p, r, x: maxk.soft_bon_kl(p, r, 2, x),
    lambda p, r, x: maxk.soft_bon_win_rate(p, r, 2, x),
  ],
)
def test_bad_input_raises(call):
  with pytest.raises(ValueError, match="sum to 1"):
    call(np.array([0.6, 0.1, 0.3, 0.2], np.float32), np.arange(4.0), 1.0)
  with pytest.raises(ValueError, match="shape"):
    call(_P6, _R6[:5], 1.0)
  with pytest.raises(ValueError, match="must be a scalar"):
    call(_P6, _R6, np.ones(2))
  with pytest.raises(ValueError, match=r"(mu|beta|lam)=nan must be a finite"):
    call(_P6, _R6, float("nan"))


def test_bad_parameters_name_the_argument():
  for mu in (-0.1, -np.inf):
    with pytest.raises(ValueError, match=r"^mu=.* must be a finite real number >= 0\.$"):
      maxk.bop_pmf(_P6, _R6, mu)
  for lam in (0.0, -1.0):
    with pytest.raises(ValueError, match=r"^lam=.* must be a finite real number > 0\.$"):
      maxk.soft_bon_pmf(_P6, _R6, 3, lam)
  for n in (0, -2, 2.0, None):
    with pytest.raises(ValueError, match="n="):
      maxk.soft_bon_kl(_P6, _R6, n, 1.0)
  with pytest.raises(ValueError, match="num_nodes="):
    maxk.soft_bon_pmf(_P6, _R6, 3, 1.0, num_nodes=4)
  with pytest.raises(ValueError, match="rewards must be finite"):
    maxk.tilt_pmf(_P6, np.where(_R6 > 2, np.inf, _R6), 1.0)
  with pytest.raises(ValueError, match="rewards must be finite"):
    maxk.soft_bon_win_rate(_P6, np.where(_R6 > 2, np.inf, _R6), 3, 1.0)
  # ±inf rewards are fine for Best-of-Poisson (only the order matters).
  assert np.isfinite(float(maxk.bop_kl(_P6, np.where(_R6 > 2, np.inf, _R6), 2.0)))
