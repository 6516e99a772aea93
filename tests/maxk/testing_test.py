"""maxk.testing: the public bias checker, against brute force and on known estimators."""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import maxk
from maxk import testing
from tests.maxk import enumeration

_PROBS = np.array([0.45, 0.3, 0.15, 0.1])
_REWARDS = np.array([0.0, 1.0, 1.0, 2.5])  # Two arms tie.


def _brute_rank_objective(probs, rewards, weights):
  """E[Σ_j w_j X_(j:k)] over all k-tuples (k = len(weights))."""
  total = 0.0
  for t in itertools.product(range(len(probs)), repeat=len(weights)):
    total += np.prod(probs[list(t)]) * np.sort(rewards[list(t)]) @ weights
  return total


def _brute_logit_gradient(probs, rewards, weights, h=1e-6):
  logits = np.log(probs)
  grad = np.zeros_like(logits)
  for a in range(len(logits)):
    e = np.zeros_like(logits)
    e[a] = h
    plus = _brute_rank_objective(enumeration.softmax(logits + e), rewards, weights)
    minus = _brute_rank_objective(enumeration.softmax(logits - e), rewards, weights)
    grad[a] = (plus - minus) / (2 * h)
  return grad


@pytest.mark.parametrize(
  "weights",
  [
    maxk.rank_weights("max", 1),
    maxk.rank_weights("max", 3),
    maxk.rank_weights("min", 2),
    np.array([0.2, -1.0, 0.5, 1.3]),
  ],
)
def test_exact_gradient_equals_finite_differences_of_the_enumerated_objective(weights):
  got = testing.exact_gradient(_PROBS, _REWARDS, weights)
  np.testing.assert_allclose(got, _brute_logit_gradient(_PROBS, _REWARDS, weights), atol=1e-8)
  # And JAX's gradient of maxk's own exact objective agrees (float32).
  jax_grad = jax.grad(
    lambda lg: maxk.order_stat_exact(jax.nn.softmax(lg), jnp.asarray(_REWARDS), weights)
  )(jnp.log(jnp.asarray(_PROBS)))
  np.testing.assert_allclose(got, jax_grad, atol=1e-5)


def test_exact_gradient_with_an_arm_of_probability_zero():
  probs, rewards = np.array([0.0, 0.6, 0.4]), np.array([3.0, 0.0, 1.0])
  weights = maxk.rank_weights("max", 2)
  got = testing.exact_gradient(probs, rewards, weights)
  assert got[0] == 0  # d/dθ_a of anything carries the factor π(a) = 0
  np.testing.assert_allclose(
    got[1:], _brute_logit_gradient(probs[1:], rewards[1:], weights), atol=1e-8
  )


def test_expected_gradient_equals_a_loop_over_all_outcome_tuples():
  probs, rewards, n = _PROBS[:3] / _PROBS[:3].sum(), _REWARDS[:3], 3

  def transform(r):  # Deliberately biased and nonlinear: any function is checked as given.
    return r**2 - r.mean(axis=-1, keepdims=True) + 0.1 * np.arange(r.shape[-1])

  want = np.zeros(3)
  for ys in itertools.product(range(3), repeat=n):
    a = transform(rewards[list(ys)][None])[0]
    score = sum(a_i * (np.eye(3)[y] - probs) for a_i, y in zip(a, ys))
    want += np.prod(probs[list(ys)]) * score
  np.testing.assert_allclose(
    testing.expected_gradient(transform, probs, rewards, n), want, atol=1e-12
  )


@pytest.mark.parametrize("k", [1, 2, 4])
@pytest.mark.parametrize("baseline", ["none", "loo", "loo_centered", "loo_minus_one"])
def test_every_unbiased_max_at_k_baseline_passes(k, baseline):
  check = testing.gradient_bias(
    lambda r: maxk.max_at_k_advantages(r, k, baseline=baseline),
    _PROBS,
    _REWARDS,
    5,
    maxk.rank_weights("max", k),
  )
  assert check.verdict == "unbiased" and check.method == "exact", check
  assert check.relative_bias < 1e-5 and np.all(check.variance > 0)
  np.testing.assert_allclose(
    check.exact, testing.exact_gradient(_PROBS, _REWARDS, maxk.rank_weights("max", k))
  )


@pytest.mark.parametrize("baseline", ["none", "loo", "loo_centered"])
@pytest.mark.parametrize(
  "weights",
  [maxk.rank_weights("top_m", 3, m=2), maxk.rank_weights("min", 2), np.array([1.0, -2.0, 0.5])],
)
def test_every_rank_objective_baseline_passes(baseline, weights):
  check = testing.gradient_bias(
    lambda r: maxk.order_stat_advantages(r, weights, baseline=baseline),
    _PROBS,
    _REWARDS,
    5,
    weights,
  )
  assert check.verdict == "unbiased", check


def test_peers_with_unbiased_claims_pass_on_their_own_scale():
  n, binary = 5, np.array([0.0, 1.0, 0.0, 1.0])
  rloo = testing.gradient_bias(
    maxk.rloo_advantages, _PROBS, _REWARDS, n, maxk.rank_weights("max", 1)
  )
  # RLOO's Σ_i a_i ∇log π(y_i) estimates n ∇E[r] (GRPO's per-sample loss scale).
  assert rloo.verdict == f"unbiased up to a factor {n}", rloo
  # MaxRL (no control variate) follows ∇ Σ_{k<=n} pass@k / k on the same scale.
  objective = sum(
    maxk.lift_rank_weights(maxk.rank_weights("max", k), n) / k for k in range(1, n + 1)
  )
  maxrl = testing.gradient_bias(
    lambda c: maxk.maxrl_advantages(c, control_variate=False), _PROBS, binary, n, objective
  )
  assert maxrl.verdict == f"unbiased up to a factor {n}", maxrl
  # max-minus-second estimates ∇ max@n.
  mms = testing.gradient_bias(
    maxk.max_minus_second_advantages, _PROBS, _REWARDS, n, maxk.rank_weights("max", n)
  )
  assert mms.verdict == "unbiased", mms


def test_numpy_estimators_are_checked_like_jax_ones():
  def rloo_numpy(r):
    n = r.shape[-1]
    return r - (r.sum(axis=-1, keepdims=True) - r) / (n - 1)

  check = testing.gradient_bias(rloo_numpy, _PROBS, _REWARDS, 4, maxk.rank_weights("max", 1))
  assert check.verdict == "unbiased up to a factor 4"
  np.testing.assert_allclose(
    check.expected, testing.expected_gradient(maxk.rloo_advantages, _PROBS, _REWARDS, 4), rtol=1e-6
  )


def _max_at_k_minus_group_mean(k):
  """A pass@k credit minus the group's mean reward, the sample's own reward included."""

  def transform(r):
    s = np.asarray(maxk.max_at_k_advantages(r, k, baseline="none"), np.float64)
    return s - np.mean(r, axis=-1, keepdims=True)

  return transform


@pytest.mark.parametrize(
  "name, transform, k",
  [
    ("grpo", maxk.grpo_advantages, 1),
    ("mean_std", lambda r: maxk.max_at_k_advantages(r, 3, baseline="mean_std"), 3),
    ("group mean incl. self", _max_at_k_minus_group_mean(3), 3),
  ],
)
def test_the_three_biased_transforms_are_flagged_with_the_size_of_their_bias(name, transform, k):
  weights = maxk.rank_weights("max", k)
  check = testing.gradient_bias(transform, _PROBS, _REWARDS, 5, weights)
  assert check.verdict == "biased", (name, check)
  np.testing.assert_allclose(check.bias, check.expected - check.exact)
  # The bias is not a step size: the best rescaling still leaves a large residual.
  residual = np.linalg.norm(check.expected - check.scale * check.exact)
  assert residual > 0.05 * np.linalg.norm(check.expected), (name, residual)
  assert check.relative_bias == pytest.approx(
    np.linalg.norm(check.bias) / np.linalg.norm(check.exact)
  )


def test_a_z_score_on_binary_rewards_is_unbiased_up_to_a_factor():
  # With 0/1 rewards GRPO's expected gradient is w(p)·∇p: the right direction.
  check = testing.gradient_bias(maxk.grpo_advantages, [0.7, 0.3], [0.0, 1.0], 6, [1.0])
  assert check.verdict.startswith("unbiased up to a factor") and check.scale > 1, check


def test_monte_carlo_when_enumeration_is_too_large():
  probs, rewards, n = np.full(6, 1 / 6), np.array([0.0, 0.3, 0.3, 1.0, 2.0, 4.0]), 9  # 6^9 > 2^20
  with pytest.raises(ValueError, match="n=9"):
    testing.expected_gradient(maxk.rloo_advantages, probs, rewards, n)
  weights = maxk.rank_weights("max", 4)

  def check(transform):
    return testing.gradient_bias(transform, probs, rewards, n, weights, num_samples=40_000)

  loo = lambda r: maxk.max_at_k_advantages(r, 4, baseline="loo")  # noqa: E731
  good = check(loo)
  assert good.method == "monte carlo (40000 groups)" and good.verdict == "unbiased", good
  assert np.all(good.bias_se > 0)
  assert check(_max_at_k_minus_group_mean(4)).verdict == "biased"
  again = check(loo)  # The same seed gives the same answer.
  np.testing.assert_array_equal(again.expected, good.expected)


def test_bad_input_is_named():
  fn, w = maxk.rloo_advantages, [1.0]
  with pytest.raises(ValueError, match="probs"):
    testing.gradient_bias(fn, [0.5, 0.6], [0.0, 1.0], 3, w)
  with pytest.raises(ValueError, match="rewards"):
    testing.gradient_bias(fn, [0.5, 0.5], [0.0, 1.0, 2.0], 3, w)
  with pytest.raises(ValueError, match="n must"):
    testing.gradient_bias(fn, [0.5, 0.5], [0.0, 1.0], 0, w)
  with pytest.raises(ValueError, match="weights"):
    testing.exact_gradient([0.5, 0.5], [0.0, 1.0], [])
  with pytest.raises(ValueError, match="advantage_fn must return"):
    testing.expected_gradient(lambda r: r[..., :1], [0.5, 0.5], [0.0, 1.0], 3)
  with pytest.raises(ValueError, match="non-finite"):
    testing.expected_gradient(lambda r: np.where(r > 0, np.nan, r), [0.5, 0.5], [0.0, 1.0], 3)


_BATCH_PROBS = np.array([[0.5, 0.3, 0.2], [0.1, 0.3, 0.6]])
_BATCH_REWARDS = np.array([[0.0, 1.0, 1.0], [2.0, -1.0, 0.5]])


def _batch_z_score(r):  # A cross-prompt advantage: z-scored over every prompt's samples.
  return (r - r.mean(axis=(-2, -1), keepdims=True)) / (r.std(axis=(-2, -1), keepdims=True) + 0.1)


def test_a_batch_expected_gradient_equals_a_loop_over_all_prompts_outcome_tuples():
  p, r, n = _BATCH_PROBS, _BATCH_REWARDS, 3
  want = np.zeros((2, 3))
  for ys in itertools.product(range(3), repeat=2 * n):
    y = np.array(ys).reshape(2, n)
    a = _batch_z_score(r[[[0], [1]], y][None])[0]  # All prompts at once: [P, n].
    for prompt in range(2):
      score = sum(a_i * (np.eye(3)[y_i] - p[prompt]) for a_i, y_i in zip(a[prompt], y[prompt]))
      want[prompt] += np.prod(p[[[0], [1]], y]) * score
  got = testing.expected_gradient(_batch_z_score, p, r, n)
  assert got.shape == (2, 3)
  np.testing.assert_allclose(got, want, atol=1e-12)


def test_a_batch_exact_gradient_is_each_prompts_own():
  w = maxk.rank_weights("max", 2)
  got = testing.exact_gradient(_BATCH_PROBS, _BATCH_REWARDS, w)
  for prompt in range(2):
    np.testing.assert_allclose(
      got[prompt], _brute_logit_gradient(_BATCH_PROBS[prompt], _BATCH_REWARDS[prompt], w), atol=1e-8
    )


def test_gradient_bias_of_a_batch():
  p, r, n, w = _BATCH_PROBS, _BATCH_REWARDS, 4, maxk.rank_weights("max", 2)
  loo = testing.gradient_bias(lambda x: maxk.max_at_k_advantages(x, 2, baseline="loo"), p, r, n, w)
  assert loo.method == "exact" and loo.verdict == "unbiased", loo
  assert loo.expected.shape == loo.exact.shape == loo.variance.shape == (2, 3)
  np.testing.assert_allclose(loo.exact, testing.exact_gradient(p, r, w))
  # Per prompt, the batch's moments are the single prompt's.
  for prompt in range(2):
    one = testing.gradient_bias(
      lambda x: maxk.max_at_k_advantages(x, 2, baseline="loo"), p[prompt], r[prompt], n, w
    )
    np.testing.assert_allclose(loo.expected[prompt], one.expected, atol=1e-6)
    np.testing.assert_allclose(loo.variance[prompt], one.variance, atol=1e-5)
  # A z-score over all prompts' samples is biased (rewards are not 0/1).
  shared = testing.gradient_bias(_batch_z_score, p, r, n, [1.0])
  assert shared.verdict == "biased", shared
  # The variance agrees with the count-vector moments' diagonal.
  moments = testing.gradient_moments(_batch_z_score, p, r, n)
  np.testing.assert_allclose(shared.variance.reshape(-1), np.diag(moments.covariance), atol=1e-12)
  np.testing.assert_allclose(shared.expected, moments.mean, atol=1e-12)


def test_gradient_bias_of_a_batch_beyond_enumeration_is_monte_carlo():
  p, r, n = _BATCH_PROBS, _BATCH_REWARDS, 7  # 3^14 > 2^20 tuples
  with pytest.raises(ValueError, match="2 prompt"):
    testing.expected_gradient(maxk.rloo_advantages, p, r, n)
  check = testing.gradient_bias(maxk.rloo_advantages, p, r, n, [float(n)], num_samples=40_000)
  assert check.method == "monte carlo (40000 groups)" and check.verdict == "unbiased", check
  assert check.bias_se.shape == (2, 3) and np.all(check.bias_se > 0)
  biased = testing.gradient_bias(_batch_z_score, p, r, n, [1.0], num_samples=40_000)
  assert biased.verdict == "biased"


def test_bad_batch_input_is_named():
  fn, w = maxk.rloo_advantages, [1.0]
  with pytest.raises(ValueError, match="probs"):
    testing.gradient_bias(fn, [[[0.5, 0.5]]], [[[0.0, 1.0]]], 3, w)
  with pytest.raises(ValueError, match="probs"):
    testing.gradient_bias(fn, [[0.5, 0.5], [0.5, 0.6]], [[0.0, 1.0]] * 2, 3, w)
  with pytest.raises(ValueError, match="rewards"):
    testing.gradient_bias(fn, [[0.5, 0.5]] * 2, [0.0, 1.0], 3, w)
  with pytest.raises(ValueError, match="rewards"):
    testing.exact_gradient([[0.5, 0.5]] * 2, [[0.0, 1.0]] * 3, w)
