"""maxk.testing: the public bias checker, against brute force and on known estimators."""

import itertools
import math

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

  # And JAX's gradient of maxk's own exact objective agrees (float32), as one compiled
  # program (not one per primitive, run eagerly).
  def objective(lg):
    return maxk.order_stat_exact(jax.nn.softmax(lg), jnp.asarray(_REWARDS), weights)

  jax_grad = jax.jit(lambda p: jax.grad(objective)(jnp.log(p)))(jnp.asarray(_PROBS))
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
  assert rloo.verdict == f"unbiased up to a constant factor {n}", rloo
  # MaxRL (no control variate) follows ∇ Σ_{k<=n} pass@k / k on the same scale.
  objective = sum(
    maxk.lift_rank_weights(maxk.rank_weights("max", k), n) / k for k in range(1, n + 1)
  )
  maxrl = testing.gradient_bias(
    lambda c: maxk.maxrl_advantages(c, control_variate=False), _PROBS, binary, n, objective
  )
  assert maxrl.verdict == f"unbiased up to a constant factor {n}", maxrl
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
  assert check.verdict == "unbiased up to a constant factor 4"
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


def test_a_z_score_on_binary_rewards_points_the_right_way_at_one_policy_only():
  # With 0/1 rewards GRPO's expected gradient is w(p)·∇p: the right direction, and
  # with policies=() (one policy compared) the verdict is the single-policy one.
  check = testing.gradient_bias(maxk.grpo_advantages, [0.7, 0.3], [0.0, 1.0], 6, [1.0], policies=())
  assert check.verdict.startswith("unbiased up to a factor") and check.scale > 1, check
  assert check.scales.shape == (1,) and check.policies.shape == (1, 2)


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


# ----------------------------------------------------------------------------
# A factor that changes with the policy: estimators that follow another objective.
# With 0/1 rewards E[ĝ] = w(p)·∇p for every advantage function (p = P(correct)), so
# the factor c(p) = w(p) / w_objective(p); the closed forms below are derived by hand.
# ----------------------------------------------------------------------------


def _binomial_weight(a_success, a_failure, n, p):
  """w(p) = n Σ_c C(n−1, c) p^c (1−p)^(n−1−c) (a_success(c+1) − a_failure(c)).

  Sample 1's outcome o_1 decides E[∇log π(y_1) | o_1] = ±∇p / p(1−p)·(p or 1−p); the
  other n − 1 samples hold c ~ Bin(n − 1, p) correct.
  """
  return n * sum(
    math.comb(n - 1, c) * p**c * (1 - p) ** (n - 1 - c) * (a_success(c + 1) - a_failure(c))
    for c in range(n)
  )


def _grpo_numpy(r):  # Population std; a group with one outcome gets 0.
  std = r.std(axis=-1, keepdims=True)
  return np.where(std > 0, (r - r.mean(axis=-1, keepdims=True)) / np.where(std > 0, std, 1), 0.0)


def _grpo_factor(n):
  # m correct of n: mean m/n, std √(m(n−m))/n, so a correct sample gets √((n−m)/m)
  # and an incorrect one −√(m/(n−m)); all-equal groups get 0. Objective pass@1: w = 1.
  def a_s(m):
    return math.sqrt((n - m) / m) if m < n else 0.0

  def a_f(m):
    return -math.sqrt(m / (n - m)) if m > 0 else 0.0

  return lambda p: _binomial_weight(a_s, a_f, n, p)


def _minus_mean(r):
  return r - r.mean(axis=-1, keepdims=True)


def _max_minus_second_for_all(r):
  """verl's grpo_passk credit max − second, given to every sample, not the best only."""
  top = np.sort(r, axis=-1)
  return np.broadcast_to(top[..., -1:] - top[..., -2:-1], r.shape).copy()


def _correct_mass(policies, rewards):
  return np.sum(np.asarray(policies) * (np.asarray(rewards) == 1), axis=-1)


_GRID = np.array([0.1, 0.3, 0.5, 0.7, 0.9])


@pytest.mark.parametrize(
  "name, transform, n, k, factor, implied",
  [
    # pass@3 (unbiased, w = 3(1−p)²) for pass@2 (w = 2(1−p)): c = 1.5(1 − p).
    ("pass@3 on pass@2", lambda r: maxk.max_at_k_advantages(r, 3), 5, 2,
     lambda p: 1.5 * (1 - p), "pass@3"),
    # r − mean: a correct sample's advantage exceeds an incorrect one's by (n−1)/n
    # whatever the others are, so w = n−1 (E[r] at scale n−1); pass@2: c = 3/(2(1−p)).
    ("r - mean on pass@2", _minus_mean, 4, 2, lambda p: 3 / (2 * (1 - p)), "3·pass@1"),
    ("grpo on pass@1", _grpo_numpy, 6, 1, _grpo_factor(6), ""),
    # max − second for all: E[ĝ] = ∇E[X_(n) − X_(n−1)] = ∇ n p (1−p)^(n−1)
    # = n (1−p)^(n−2) (1 − n p) ∇p; pass@n has w = n (1−p)^(n−1): c = (1 − n p)/(1 − p).
    ("max - second for all on pass@4", _max_minus_second_for_all, 4, 4,
     lambda p: (1 - 4 * p) / (1 - p), ""),
  ],
)  # fmt: skip
def test_binary_estimators_of_another_objective_are_named(name, transform, n, k, factor, implied):
  probs, rewards = np.array([0.65, 0.2, 0.15]), np.array([0.0, 1.0, 0.0])
  check = testing.gradient_bias(transform, probs, rewards, n, maxk.rank_weights("max", k))
  p_each = _correct_mass(check.policies, rewards)
  assert p_each[0] == pytest.approx(0.2) and len(p_each) == 4
  want = np.array([factor(p) for p in p_each])
  np.testing.assert_allclose(check.scales, want, rtol=1e-5, err_msg=name)
  np.testing.assert_allclose(check.implied_weight_p, _GRID)
  np.testing.assert_allclose(
    check.implied_weight_ratio, [factor(p) for p in _GRID], rtol=1e-5, err_msg=name
  )
  everywhere = np.concatenate([want, [factor(p) for p in _GRID]])
  np.testing.assert_allclose(check.scale_range, (everywhere.min(), everywhere.max()), rtol=1e-5)
  low, high = (f"{v:.4g}" for v in check.scale_range)
  tail = f" ({implied})" if implied else ""
  assert check.verdict == (
    f"a factor c that changes with the policy (c from {low} to {high}): "
    f"follows another objective{tail}"
  ), (name, check.verdict)
  assert check.implied_objective == implied
  # The weight is maxk.implied_prompt_weight's (float32 there).
  np.testing.assert_allclose(
    check.implied_weight, maxk.implied_prompt_weight(transform, _GRID, n), rtol=2e-5, atol=1e-5
  )


def test_pass3_advantages_for_pass2_have_the_issues_factors():
  transform, w = (lambda r: maxk.max_at_k_advantages(r, 3)), maxk.rank_weights("max", 2)
  for p, c in ((0.2, 1.2), (0.7, 0.45)):
    check = testing.gradient_bias(transform, [1 - p, p], [0.0, 1.0], 4, w)
    assert check.scales[0] == pytest.approx(c, rel=1e-6) == check.scale
    assert check.verdict.endswith("follows another objective (pass@3)"), check.verdict


def test_automatic_policies_move_the_logits_by_one_along_the_rewards_and_alternating_signs():
  check = testing.gradient_bias(maxk.rloo_advantages, [0.8, 0.2], [0.0, 1.0], 3, [1.0])
  logit = math.log(0.2 / 0.8)  # The correct arm's logit minus the other's.
  sigmoid = lambda x: 1 / (1 + math.exp(-x))  # noqa: E731
  # ±(r − mean r)/(max r − min r) = ±(−1/2, 1/2) moves the logit gap by ±1; the
  # alternating (+1, −1) by −2.
  want = [0.2, sigmoid(logit + 1), sigmoid(logit - 1), sigmoid(logit - 2)]
  np.testing.assert_allclose(check.policies[:, 1], want, rtol=1e-12)
  # RLOO: w = n at every p, pass@1's w = 1: a constant factor 3 everywhere.
  assert check.verdict == "unbiased up to a constant factor 3", check
  np.testing.assert_allclose(check.scales, 3.0, rtol=1e-6)
  np.testing.assert_allclose(check.implied_weight_ratio, 3.0, rtol=1e-6)
  assert check.implied_objective == "3·pass@1"


@pytest.mark.parametrize("binary", [True, False])
def test_unbiased_and_rescaled_estimators_keep_their_factor_at_every_policy(binary):
  probs = np.array([0.5, 0.3, 0.2])
  rewards = np.array([0.0, 1.0, 1.0]) if binary else np.array([0.0, 0.5, 1.0])
  w = maxk.rank_weights("max", 2)
  loo = lambda r: maxk.max_at_k_advantages(r, 2, baseline="loo")  # noqa: E731
  check = testing.gradient_bias(loo, probs, rewards, 4, w)
  assert check.verdict == "unbiased", check
  np.testing.assert_allclose(check.scales, 1.0, rtol=1e-5)
  twice = testing.gradient_bias(lambda r: 2 * np.asarray(loo(r)), probs, rewards, 4, w)
  assert twice.verdict == "unbiased up to a constant factor 2", twice
  np.testing.assert_allclose(twice.scale_range, (2.0, 2.0), rtol=1e-5)
  if binary:
    assert check.implied_objective == "pass@2" and twice.implied_objective == "2·pass@2"
    np.testing.assert_allclose(twice.implied_weight, 2 * 2 * (1 - _GRID), rtol=1e-5)
  else:
    assert twice.implied_weight is None and twice.implied_objective == ""


def test_a_biased_estimator_on_non_binary_rewards_reports_its_size():
  # E[Σ_i (r_i − mean r) ∇log π(y_i)] = (n − 1) ∇E[r] (only j = i survives in
  # E[r_j ∇log π(y_i)]), ∇_θ E[r] = π ⊙ (r − <π, r>); max@2's gradient by finite differences.
  probs, rewards, n, w = _PROBS, _REWARDS, 4, maxk.rank_weights("max", 2)
  check = testing.gradient_bias(_minus_mean, probs, rewards, n, w)
  expected = (n - 1) * probs * (rewards - probs @ rewards)
  exact = _brute_logit_gradient(probs, rewards, w)
  assert check.verdict == "biased", check
  assert check.relative_bias == pytest.approx(
    np.linalg.norm(expected - exact) / np.linalg.norm(exact), rel=1e-5
  )
  assert check.implied_weight is None


def _brute_batch_weight(transform, p, n, num_prompts=2):
  """w_i(p) of each prompt when all prompts are at P(correct) = p, over all 0/1 outcomes."""
  total = np.zeros(num_prompts)
  for outcome in itertools.product((0.0, 1.0), repeat=num_prompts * n):
    o = np.array(outcome).reshape(num_prompts, n)
    prob = p ** o.sum() * (1 - p) ** (o.size - o.sum())
    a = np.asarray(transform(o[None]))[0]
    total += prob * np.sum(a * (o - p), axis=-1)  # The correct arm's ∇_θ log π is o − p.
  return total / (p * (1 - p))  # ∇_θ p on the correct arm is p(1 − p).


def test_a_cross_prompt_z_score_on_binary_rewards_follows_another_objective():
  p_batch = np.array([[0.7, 0.3], [0.7, 0.3]])
  r_batch = np.array([[0.0, 1.0], [0.0, 1.0]])
  n = 3
  check = testing.gradient_bias(_batch_z_score, p_batch, r_batch, n, [1.0])
  assert check.scales.shape == (4, 2) and check.implied_weight.shape == (5, 2)
  # Both prompts at the same p at every compared policy; pass@1's weight is 1.
  p_each = check.policies[:, 0, 1]
  np.testing.assert_allclose(check.policies[:, 1, 1], p_each)
  want = np.array([_brute_batch_weight(_batch_z_score, p, n) for p in p_each])
  np.testing.assert_allclose(check.scales, want, rtol=1e-6)
  grid = np.array([_brute_batch_weight(_batch_z_score, p, n) for p in _GRID])
  np.testing.assert_allclose(check.implied_weight, grid, rtol=1e-6)
  every = np.concatenate([want.ravel(), grid.ravel()])
  np.testing.assert_allclose(check.scale_range, (every.min(), every.max()), rtol=1e-6)
  assert check.verdict.startswith("a factor c that changes with the policy"), check.verdict
  assert check.verdict.endswith("follows another objective"), check.verdict


def test_per_prompt_grpo_on_a_batch_has_a_factor_per_prompt():
  p_batch = np.array([[0.8, 0.2], [0.4, 0.6]])
  r_batch = np.array([[0.0, 1.0], [0.0, 1.0]])
  n, factor = 4, _grpo_factor(4)
  check = testing.gradient_bias(_grpo_numpy, p_batch, r_batch, n, [1.0], policies=())
  np.testing.assert_allclose(check.scales[0], [factor(0.2), factor(0.6)], rtol=1e-6)
  # One policy, two prompts, two factors: it reweights the prompts.
  assert check.verdict.startswith("a factor c that changes with the policy"), check.verdict


def test_bad_policies_are_named():
  fn, w = maxk.rloo_advantages, [1.0]
  with pytest.raises(ValueError, match="policies"):
    testing.gradient_bias(fn, [0.5, 0.5], [0.0, 1.0], 3, w, policies=[[0.5, 0.2]])
  with pytest.raises(ValueError, match="policies"):
    testing.gradient_bias(fn, [0.5, 0.5], [0.0, 1.0], 3, w, policies=[[0.2, 0.3, 0.5]])
  with pytest.raises(ValueError, match="policies"):
    testing.gradient_bias(fn, [0.5, 0.5], [0.0, 1.0], 3, w, policies="auto")


def test_monte_carlo_policies_with_an_exact_binary_grid():
  # 6^9 tuples: Monte Carlo at the four policies; the 0/1 grid (2^9 tuples) is exact.
  probs, rewards, n = np.full(6, 1 / 6), np.array([0.0, 1.0, 0.0, 0.0, 1.0, 0.0]), 9
  check = testing.gradient_bias(_grpo_numpy, probs, rewards, n, [1.0], num_samples=20_000)
  assert check.method == "monte carlo (20000 groups)", check
  np.testing.assert_allclose(check.implied_weight_ratio, [_grpo_factor(n)(p) for p in _GRID])
  assert check.verdict.endswith("follows another objective"), check.verdict
  # Each policy's c is within a few standard errors of the hand formula.
  p_each = _correct_mass(check.policies, rewards)
  np.testing.assert_allclose(check.scales, [_grpo_factor(n)(p) for p in p_each], rtol=0.05)
