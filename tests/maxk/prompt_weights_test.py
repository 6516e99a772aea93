"""Tests for implied_prompt_weight and success_objective_advantages."""

from fractions import Fraction
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import maxk
from maxk import testing

_P = np.array([0.0, 1e-3, 0.05, 0.3, 0.5, 0.77, 0.99, 1.0])
_BASELINES = ("none", "loo", "loo_centered", "loo_minus_one")


def _binary_groups(n, rng, size=40):
  """Random 0/1 groups plus the all-incorrect and all-correct ones."""
  g = (rng.random((size, n)) < rng.random((size, 1))).astype(np.float32)
  return np.concatenate([g, np.zeros((1, n), np.float32), np.ones((1, n), np.float32)])


def _pass_mixture_derivative(coefficients, p):
  """f'(p) for f = Σ_j c_j (1 − (1 − p)^j), in float64."""
  p = np.asarray(p, np.float64)
  return sum(c * j * (1 - p) ** (j - 1) for j, c in enumerate(coefficients, 1))


def _softmax_policy(logits, correct_arms):
  """Arm probabilities, arm rewards, p and ∇_logits p of a softmax policy."""
  probs = np.exp(logits - logits.max())
  probs /= probs.sum()
  rewards = np.asarray(correct_arms, np.float64)
  p = probs @ rewards
  return probs, rewards, p, probs * (rewards - p)


# ----------------------------------------------------------------------------
# implied_prompt_weight
# ----------------------------------------------------------------------------


@pytest.mark.parametrize("n", [1, 5, 16])
def test_unbiased_transforms_have_weight_f_prime(n):
  # An unbiased estimator of ∇f has w = f' with every baseline, edges included.
  for k in sorted({1, min(2, n), n}):
    want = k * (1 - _P) ** (k - 1)
    for baseline in _BASELINES:
      got = maxk.implied_prompt_weight(
        lambda r, k=k, b=baseline: maxk.max_at_k_advantages(r, k, baseline=b), _P, n
      )
      np.testing.assert_allclose(got, want, rtol=2e-6, atol=2e-6, err_msg=f"{k} {baseline}")
  if n >= 2:
    np.testing.assert_allclose(
      maxk.implied_prompt_weight(maxk.rloo_advantages, _P, n), n, rtol=1e-6
    )
    # MaxRL: n ∇Σ_{j<=T} pass@j / j, i.e. w = n Σ_{j<=T} (1 − p)^(j−1).
    for cv, terms in ((False, n), (True, n - 1)):
      want = n * sum((1 - _P) ** (j - 1) for j in range(1, terms + 1))
      got = maxk.implied_prompt_weight(
        lambda r, cv=cv: maxk.maxrl_advantages(r, control_variate=cv), _P, n
      )
      np.testing.assert_allclose(got, want, rtol=2e-6, err_msg=f"control_variate={cv}")


@pytest.mark.parametrize(
  "name, transform",
  [
    ("grpo", maxk.grpo_advantages),
    ("grpo_ddof1", lambda r: maxk.grpo_advantages(r, std_ddof=1)),
    ("pass_at_k_training", lambda r: maxk.pass_at_k_training_advantages(r, 2)),
    ("max_minus_second", maxk.max_minus_second_advantages),
  ],
)
def test_weight_is_the_exact_expected_update_of_biased_transforms(name, transform):
  # E[ĝ] by enumerating all 3^5 outcome tuples of a softmax policy with two correct
  # arms equals w(p) ∇p: the derivation, checked where w is not any f'.
  n = 5
  for logits in (np.array([0.3, -1.0, 0.5]), np.array([-2.0, 1.0, -0.5])):
    probs, rewards, p, grad_p = _softmax_policy(logits, [1, 0, 1])
    want = testing.expected_gradient(transform, probs, rewards, n)
    w = float(maxk.implied_prompt_weight(transform, p, n))
    np.testing.assert_allclose(w * grad_p, want, rtol=1e-5, atol=1e-7, err_msg=name)


def test_grpo_weight_at_the_edges_and_middle():
  # GRPO (population std, eps = 0) in a group with c correct of n: a correct sample
  # gets (1 − c/n)/σ(c) and an incorrect one −(c/n)/σ(c), σ(c) = sqrt(c/n (1 − c/n)),
  # and 0 in a constant group.  A lone correct sample gets √(n−1).
  n = 16

  def sigma(c):
    return math.sqrt(c / n * (1 - c / n))

  def success(c):
    return (1 - c / n) / sigma(c) if c < n else 0.0

  def failure(c):
    return -(c / n) / sigma(c) if c > 0 else 0.0

  def weight(p):
    return n * sum(
      math.comb(n - 1, c) * p**c * (1 - p) ** (n - 1 - c) * (success(c + 1) - failure(c))
      for c in range(n)
    )

  p = [0.0, 1.0, 0.5, 0.1]
  got = maxk.implied_prompt_weight(lambda r: maxk.grpo_advantages(r, eps=0.0), p, n)
  np.testing.assert_allclose(got[:2], n * math.sqrt(n - 1), rtol=1e-6)
  np.testing.assert_allclose(got, [weight(x) for x in p], rtol=1e-6)
  assert got[2] < got[0] / 1.9  # U-shaped, and bounded at finite n.


def test_numpy_transform_shapes_jit_and_grad():
  n = 6

  def rloo_numpy(r):  # A NumPy transform, called on NumPy input.
    assert isinstance(r, np.ndarray)
    return r - (r.sum(-1, keepdims=True) - r) / (r.shape[-1] - 1)

  p = np.linspace(0, 1, 6, dtype=np.float32).reshape(2, 3)
  got = maxk.implied_prompt_weight(rloo_numpy, p, n)
  assert got.shape == (2, 3) and got.dtype == jnp.float32
  np.testing.assert_allclose(got, n, rtol=1e-6)
  assert maxk.implied_prompt_weight(rloo_numpy, 0.25, n).shape == ()

  def w4(q):
    return maxk.implied_prompt_weight(lambda r: maxk.max_at_k_advantages(r, 4), q, n)

  q = np.array([0.1, 0.6], np.float32)
  # w4 under jit, under vmap and its gradient, in one program; the references in NumPy.
  jitted, vmapped, grad = jax.jit(
    lambda q: (w4(q), jax.vmap(w4)(q), jax.grad(lambda x: w4(x).sum())(q))
  )(q)
  np.testing.assert_allclose(jitted, 4 * (1 - q) ** 3, rtol=1e-6)
  np.testing.assert_allclose(vmapped, 4 * (1 - q) ** 3, rtol=1e-6)
  np.testing.assert_allclose(grad, -12 * (1 - q) ** 2, rtol=1e-5)
  # Under jit p cannot be checked: out-of-range p gives NaN, as does NaN.
  out = np.asarray(jax.jit(w4)(np.array([-0.5, 1.5, np.nan, 0.5], np.float32)))
  assert np.all(np.isnan(out[:3])) and np.isfinite(out[3])
  assert np.isnan(w4(np.array([np.nan, 0.5]))[0])


def test_bad_inputs_raise():
  good = maxk.rloo_advantages
  with pytest.raises(ValueError, match="p must lie in"):
    maxk.implied_prompt_weight(good, [0.5, 1.2], 4)
  with pytest.raises(ValueError, match="p must lie in"):
    maxk.implied_prompt_weight(good, -1e-9, 4)
  with pytest.raises(ValueError, match="n="):
    maxk.implied_prompt_weight(good, 0.5, 0)
  with pytest.raises(ValueError, match="callable"):
    maxk.implied_prompt_weight("grpo", 0.5, 4)
  with pytest.raises(ValueError, match="shape"):
    maxk.implied_prompt_weight(lambda r: r[..., :-1], 0.5, 4)
  with pytest.raises(ValueError, match="non-finite"):
    maxk.implied_prompt_weight(lambda r: np.where(r > 0, np.inf, 0.0), 0.5, 4)
  # Advantages by position: unequal for equal outcomes, or changed by reordering.
  with pytest.raises(ValueError, match="permutation-equivariant"):
    maxk.implied_prompt_weight(lambda r: r * np.arange(r.shape[-1]), 0.5, 4)
  with pytest.raises(ValueError, match="permutation-equivariant"):
    maxk.implied_prompt_weight(lambda r: r - r[..., :1], 0.5, 4)


# ----------------------------------------------------------------------------
# success_objective_advantages
# ----------------------------------------------------------------------------


@pytest.mark.parametrize("n", [1, 2, 6])
def test_unit_coefficients_equal_max_at_k_advantages(n):
  g = _binary_groups(n, np.random.default_rng(n))
  for k in range(1, n + 1):
    unit = np.eye(k)[k - 1]
    for baseline in _BASELINES:
      got = maxk.success_objective_advantages(g, unit, baseline=baseline)
      want = maxk.max_at_k_advantages(g, k, baseline=baseline)
      np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6, err_msg=f"{k} {baseline}")


def _estimate(coefficients, c, n):
  """The unbiased estimate of Σ_j c_j pass@j from c correct of n, as a Fraction."""
  return sum(
    Fraction(cj) * (1 - Fraction(math.comb(n - c, j), math.comb(n, j)))
    for j, cj in enumerate(coefficients, 1)
  )


@pytest.mark.parametrize("n", [17, 32])
def test_min_at_k_accurate_in_float32_against_exact_rationals(n):
  # min@k = p^k = Σ_j (−1)^(j+1) C(k, j) pass@j: large alternating coefficients.
  # "loo_centered" is U − U_{−i} (U: the unbiased estimate), exactly in rationals.
  groups = (np.arange(n)[None, :] < np.arange(n + 1)[:, None]).astype(np.float32)
  for k in (2, 5, 11, 16):
    coefficients = [(-1) ** (j + 1) * math.comb(k, j) for j in range(1, k + 1)]
    got = np.asarray(
      maxk.success_objective_advantages(groups, coefficients, baseline="loo_centered")
    )
    for c in range(n + 1):
      u = _estimate(coefficients, c, n)
      success = float(u - _estimate(coefficients, c - 1, n - 1)) if c else None
      failure = float(u - _estimate(coefficients, c, n - 1)) if c < n else None
      want = np.array([success] * c + [failure] * (n - c), np.float64)
      np.testing.assert_allclose(got[c], want, rtol=0, atol=6e-8 * k / n, err_msg=f"{k} {c}")
    # The same advantages as the rank objective min@k (rank weights e_1).
    np.testing.assert_allclose(
      got,
      maxk.order_stat_advantages(groups, maxk.rank_weights("min", k), baseline="loo_centered"),
      rtol=0,
      atol=1e-6,
    )


@pytest.mark.parametrize("n", [2, 6, 16])
def test_maxrl_is_the_mixture_of_pass_at_j_over_j(n):
  g = _binary_groups(n, np.random.default_rng(7 + n))
  others = (g.sum(-1, keepdims=True) - g).astype(np.float64)  # K_{−i}
  for cv, terms in ((False, n), (True, n - 1)):
    coefficients = [n / j for j in range(1, terms + 1)]
    ours = np.asarray(maxk.success_objective_advantages(g, coefficients), np.float64)
    baseline = others / (n - 1) - (cv * (others >= 1))
    np.testing.assert_allclose(
      maxk.maxrl_advantages(g, control_variate=cv), ours + baseline, rtol=1e-6, atol=1e-5
    )


@pytest.mark.parametrize("baseline", _BASELINES)
def test_unbiased_for_every_baseline_by_enumeration(baseline):
  # Both ways: the exact expected update of a softmax policy (all 3^5 tuples), and
  # the implied weight, equal f'(p) ∇p, for random coefficients of mixed signs.
  n = 5
  coefficients = np.array([0.7, -1.3, 2.0, 0.4])
  fn = lambda r: maxk.success_objective_advantages(r, coefficients, baseline=baseline)  # noqa: E731
  probs, rewards, p, grad_p = _softmax_policy(np.array([0.2, -0.4, 0.9]), [0, 1, 1])
  want = _pass_mixture_derivative(coefficients, p)
  np.testing.assert_allclose(
    testing.expected_gradient(fn, probs, rewards, n), want * grad_p, rtol=1e-5, atol=1e-7
  )
  np.testing.assert_allclose(
    maxk.implied_prompt_weight(fn, _P, n),
    _pass_mixture_derivative(coefficients, _P),
    rtol=1e-5,
    atol=1e-5,
  )


def test_traced_coefficients_nan_groups_and_dtypes():
  n = 8
  g = _binary_groups(n, np.random.default_rng(3), size=6)
  coefficients = np.array([0.5, 0.0, -1.0, 2.0])
  host = maxk.success_objective_advantages(g, coefficients)
  traced = jax.jit(maxk.success_objective_advantages)(g, jnp.asarray(coefficients, jnp.float32))
  np.testing.assert_allclose(traced, host, rtol=1e-6, atol=1e-6)
  # Linear in the coefficients: the gradient is the table of each pass@j alone.
  grad = jax.jit(jax.grad(lambda c: maxk.success_objective_advantages(g, c)[0, 0]))(
    np.ones(4, np.float32)
  )
  want = [np.asarray(maxk.max_at_k_advantages(g, j))[0, 0] for j in range(1, 5)]
  np.testing.assert_allclose(grad, want, rtol=1e-6, atol=1e-7)
  bad = g.copy()
  bad[2, 1] = np.nan
  out = np.asarray(maxk.success_objective_advantages(bad, coefficients))
  assert np.all(np.isnan(out[2])) and np.all(np.isfinite(np.delete(out, 2, axis=0)))
  assert maxk.success_objective_advantages(g.astype(bool), [1.0]).dtype == jnp.float32
  with jax.enable_x64(True):
    out64 = maxk.success_objective_advantages(g.astype(np.float64), coefficients)
    assert out64.dtype == jnp.float64
    np.testing.assert_allclose(out64, host, rtol=1e-6, atol=1e-7)


def test_success_objective_bad_inputs_raise():
  g = np.ones((2, 4))
  for bad, match in [
    ([], "len"),
    ([1.0] * 5, "len"),
    ([[1.0]], "1-D"),
    ([1.0, np.nan], "finite"),
    (["a"], "real"),
  ]:
    with pytest.raises(ValueError, match=match):
      maxk.success_objective_advantages(g, bad)
  with pytest.raises(ValueError, match="baseline"):
    maxk.success_objective_advantages(g, [1.0], baseline="mean_std")
  with pytest.raises(ValueError, match="0/1"):
    maxk.success_objective_advantages(np.full((2, 4), 0.5), [1.0])
