"""Tests for experiments.bandits.policies: exact objectives and exact gradients."""

import functools
import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import integrate
from scipy import stats

from experiments.bandits import policies


def _softmax(logits):
  """Float64 NumPy softmax (a test-side reference, no XLA compilation)."""
  z = np.asarray(logits, np.float64)
  e = np.exp(z - z.max())
  return e / e.sum()


# ------------------------------------------------------------------------------
# PKPO's Gaussian toy.
# ------------------------------------------------------------------------------


def _max_at_k_by_cdf_of_x(theta, sigma, k):
  """Independent float64 reference: E[max of k rewards] from the CDF of the reward.

  P(R <= t) = P(x < sqrt(t)) + P(x > 1) for t in [0, 1); E[max] = int_0^1 1 - P(R <= t)^k dt.
  """
  cdf = lambda t: stats.norm.cdf(np.sqrt(t), theta, sigma) + stats.norm.sf(1.0, theta, sigma)
  value, _ = integrate.quad(
    lambda t: 1.0 - cdf(t) ** k,
    0.0,
    1.0,
    epsabs=1e-13,
    limit=500,
    points=[min(max(theta, 0.01), 0.99) ** 2],
  )
  return value


@pytest.mark.parametrize("theta,sigma", [(1.0, 0.1), (0.5, 0.1), (0.8, 0.3), (1.3, 0.2)])
@pytest.mark.parametrize("k", [1, 2, 4, 8])
def test_gaussian_max_at_k_matches_reference(theta, sigma, k):
  got = policies.gaussian_max_at_k_float64(theta, sigma, k)
  np.testing.assert_allclose(got, _max_at_k_by_cdf_of_x(theta, sigma, k), atol=1e-9)


def test_gaussian_max_at_1_is_expected_reward():
  theta, sigma = 1.0, 0.1
  mean_reward, _ = integrate.quad(
    lambda x: x**2 * stats.norm.pdf(x, theta, sigma), 0.0, 1.0, epsabs=1e-14
  )
  np.testing.assert_allclose(
    policies.gaussian_max_at_k_float64(theta, sigma, 1), mean_reward, atol=1e-11
  )


def test_gaussian_max_at_k_matches_monte_carlo():
  theta, sigma, k = 1.0, 0.1, 4
  x = np.random.default_rng(0).normal(theta, sigma, size=(400_000, k))
  r = np.where((x >= 0) & (x <= 1), x**2, 0.0).max(-1)
  se = r.std() / np.sqrt(r.size)
  assert abs(r.mean() - policies.gaussian_max_at_k_float64(theta, sigma, k)) < 5 * se


@pytest.mark.parametrize("theta,sigma", [(1.0, 0.1), (0.5, 0.1), (0.8, 0.3), (1.3, 0.2)])
@pytest.mark.parametrize("k", [1, 4, 8])
def test_gaussian_gradient_matches_finite_differences(theta, sigma, k):
  # Accuracy to 1e-6 (the variance study's requirement): the five-point stencil on
  # the float64 quadrature has error O(h^4 f^(5)) + O(1e-13 / h) ~ 1e-9 here.
  h = 1e-3
  f = lambda t: policies.gaussian_max_at_k_float64(t, sigma, k)
  fd = (f(theta - 2 * h) - 8 * f(theta - h) + 8 * f(theta + h) - f(theta + 2 * h)) / (12 * h)
  got = policies.gaussian_max_at_k_grad_float64(theta, sigma, k)
  np.testing.assert_allclose(got, fd, atol=1e-7)
  toy = policies.GaussianToy(sigma=sigma)
  # The policy's parameters are float32: its exact gradient is at float32(theta).
  theta32 = float(np.float32(theta))
  np.testing.assert_allclose(
    toy.exact_gradient(toy.init_params(theta), k),
    [policies.gaussian_max_at_k_grad_float64(theta32, sigma, k)],
    rtol=1e-12,
  )


@functools.partial(jax.jit, static_argnums=0)
def _gaussian_max_at_k_and_grad(toy, params, k):
  """toy.max_at_k and its jax.grad, jitted once for every (theta, k): k is traced."""
  return toy.max_at_k(params, k), jax.grad(toy.max_at_k)(params, k)


@pytest.mark.parametrize("theta", [0.3, 0.7, 1.0, 1.2])
@pytest.mark.parametrize("k", [1, 4, 16])
def test_gaussian_jax_objective_matches_float64(theta, k):
  toy = policies.GaussianToy(sigma=0.1)
  params = toy.init_params(theta)
  value, grad = _gaussian_max_at_k_and_grad(toy, params, k)
  np.testing.assert_allclose(value, policies.gaussian_max_at_k_float64(theta, 0.1, k), atol=2e-6)
  np.testing.assert_allclose(
    grad, policies.gaussian_max_at_k_grad_float64(theta, 0.1, k), atol=2e-4, rtol=1e-4
  )


@functools.partial(jax.jit, static_argnums=(0, 3))
def _sample_score_log_prob(policy, params, key, n):
  """sample, score, log_prob and the autodiff score of a policy in one compilation."""
  y = policy.sample(params, key, n)
  auto = jax.vmap(jax.grad(lambda t, yi: policy.log_prob(t, yi)), in_axes=(None, 0))(params, y)
  return y, policy.score(params, y), auto, policy.log_prob(params, y)


def test_gaussian_score_reward_and_log_prob():
  toy = policies.GaussianToy(sigma=0.2)
  theta = toy.init_params(0.7)
  y, score, auto, log_prob = _sample_score_log_prob(toy, theta, jax.random.key(0), 64)
  np.testing.assert_allclose(score[:, 0], auto, rtol=1e-5, atol=1e-5)
  np.testing.assert_allclose(log_prob, stats.norm.logpdf(y, 0.7, 0.2), rtol=1e-5)
  np.testing.assert_allclose(
    jax.jit(toy.reward)(jnp.array([-0.1, 0.0, 0.5, 1.0, 1.01])), [0.0, 0.0, 0.25, 1.0, 0.0]
  )


# One compilation per threshold (its branch is chosen in Python) instead of op by op.
_gaussian_pass_at_k = jax.jit(policies.GaussianToy.pass_at_k, static_argnums=(0, 3))


@pytest.mark.parametrize("threshold", [0.0, 0.25, 0.81, 1.0, 1.5])
def test_gaussian_pass_at_k(threshold):
  toy = policies.GaussianToy(sigma=0.1)
  theta, k = 0.9, 4
  if threshold <= 0:
    p = 1.0
  elif threshold > 1:
    p = 0.0
  else:
    p = stats.norm.cdf(1.0, theta, 0.1) - stats.norm.cdf(np.sqrt(threshold), theta, 0.1)
  np.testing.assert_allclose(
    _gaussian_pass_at_k(toy, toy.init_params(theta), k, threshold), 1 - (1 - p) ** k, atol=1e-6
  )


# ------------------------------------------------------------------------------
# Categorical bandit.
# ------------------------------------------------------------------------------


def _max_at_k_by_enumeration(probs, rewards, k):
  """E[max of k i.i.d. draws] by enumerating all L^k outcomes (float64)."""
  total = 0.0
  for idx in itertools.product(range(len(probs)), repeat=k):
    total += np.prod(probs[list(idx)]) * rewards[list(idx)].max()
  return total


@pytest.mark.parametrize("k", [1, 2, 3, 4])
@pytest.mark.parametrize("tied", [False, True])
def test_categorical_max_at_k_matches_enumeration(k, tied):
  rng = np.random.default_rng(k)
  rewards = (rng.integers(0, 3, 5) if tied else rng.random(5)).astype(np.float64)
  probs = rng.dirichlet(np.ones(5))
  want = _max_at_k_by_enumeration(probs, rewards, k)
  policy = policies.CategoricalBandit(rewards)
  got = policy.max_at_k(jnp.log(jnp.asarray(probs, jnp.float32)), k)
  np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-6)


def test_categorical_max_at_k_matches_tie_grouped_cdf_formula():
  """max@k = sum over reward classes v of v (F(v)^k - F(v-)^k), float64, many arms."""
  rng = np.random.default_rng(7)
  rewards = rng.integers(0, 12, 50) / 11.0  # Many ties.
  probs = rng.dirichlet(np.ones(50))
  policy = policies.CategoricalBandit(rewards)
  for k in (1, 5, 16):
    values = np.unique(rewards)
    cdf = np.array([probs[rewards <= v].sum() for v in values])
    cdf_minus = np.concatenate([[0.0], cdf[:-1]])
    want = np.sum(values * (cdf**k - cdf_minus**k))
    got = policy.max_at_k(jnp.log(jnp.asarray(probs, jnp.float32)), k)
    np.testing.assert_allclose(got, want, rtol=1e-5)


def test_categorical_exact_gradient_matches_finite_differences():
  rng = np.random.default_rng(0)
  rewards = np.round(rng.random(6), 1)  # Ties included.
  logits = rng.normal(size=6)
  policy = policies.CategoricalBandit(rewards)
  k = 4

  def objective(z):
    p = np.exp(z - z.max())
    p /= p.sum()
    return _max_at_k_by_enumeration(p, policy.rewards.astype(np.float64), k)

  h = 1e-5
  fd = np.array(
    [(objective(logits + h * e) - objective(logits - h * e)) / (2 * h) for e in np.eye(6)]
  )
  got = policy.exact_gradient(jnp.asarray(logits, jnp.float32), k)
  assert got.shape == (6,) and got.dtype == np.float64
  np.testing.assert_allclose(got, fd, atol=2e-6)
  np.testing.assert_allclose(got.sum(), 0.0, atol=1e-6)  # Softmax: gradients sum to 0.


@functools.partial(jax.jit, static_argnums=(0, 3))
def _reward_and_pass_at_k(policy, logits, y, ks):
  """policy.reward(y) and policy.pass_at_k(logits, k, 0.5) for every k in ks, one compilation."""
  return policy.reward(y), [policy.pass_at_k(logits, k, 0.5) for k in ks]


def test_categorical_score_reward_and_pass_at_k():
  policy, logits = policies.random_bandit(7, seed=3)
  y, score, auto, _ = _sample_score_log_prob(policy, logits, jax.random.key(1), 32)
  np.testing.assert_allclose(score, auto, atol=1e-6)
  ks = (1, 3, 16)
  reward, pass_at_ks = _reward_and_pass_at_k(policy, logits, y, ks)
  np.testing.assert_allclose(reward, policy.rewards[np.asarray(y)])
  probs = _softmax(logits)
  p_correct = probs[policy.rewards >= 0.5].sum()
  for k, pass_at_k in zip(ks, pass_at_ks, strict=True):
    np.testing.assert_allclose(pass_at_k, 1 - (1 - p_correct) ** k, rtol=1e-5)


def test_categorical_sampling_frequencies():
  policy, logits = policies.random_bandit(5, seed=1)
  y = policy.sample(logits, jax.random.key(0), 200_000)
  freq = np.bincount(np.asarray(y), minlength=5) / y.size
  np.testing.assert_allclose(freq, _softmax(logits), atol=4e-3)


def test_bandit_constructors():
  policy, logits = policies.hard_bandit(10, best_arm_prob=0.02, decoy_reward=0.6)
  probs = _softmax(logits)
  np.testing.assert_allclose(probs[0], 0.02, rtol=1e-5)
  assert policy.rewards[0] == 1.0 and policy.rewards[1:].max() == pytest.approx(0.6)
  policy, logits = policies.easy_bandit(4)
  np.testing.assert_allclose(policy.rewards, [0, 1 / 3, 2 / 3, 1], rtol=1e-6)
  np.testing.assert_allclose(_softmax(logits), 0.25)
  with pytest.raises(ValueError, match="best_arm_prob"):
    policies.hard_bandit(10, best_arm_prob=1.5)
  with pytest.raises(ValueError, match="num_arms"):
    policies.hard_bandit(2)
  with pytest.raises(ValueError, match="rewards"):
    policies.CategoricalBandit(np.array([1.0]))
  for sigma in (0.0, -0.1, float("nan"), float("inf")):
    with pytest.raises(ValueError, match="sigma=.* must be finite and > 0"):
      policies.GaussianToy(sigma=sigma)
