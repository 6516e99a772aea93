"""maxk.testing.aggregation_bias: token-level loss aggregations, against brute force."""

import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from maxk import testing

_LOGITS = np.array([[0.3, 0.0, 0.2], [0.0, 0.5, -0.3], [0.2, -0.1, 0.4]])


def _my_sequences(max_length, vocab):
  """All sequences by a recursion: end at token 0 or at max_length."""
  out = []

  def grow(prefix):
    for t in range(vocab):
      y = prefix + (t,)
      if t == 0 or len(y) == max_length:
        out.append(y)
      else:
        grow(y)

  grow(())
  return out


def _softmax(z):
  e = np.exp(z - z.max())
  return e / e.sum()


def _token_score(logits, t, token):
  """∇_logits log softmax(logits[t])[token]: one position's row."""
  g = np.zeros_like(logits)
  g[t] = -_softmax(logits[t])
  g[t, token] += 1
  return g


def _sequence_prob(logits, y):
  return math.prod(_softmax(logits[t])[tok] for t, tok in enumerate(y))


def _rewards_in_module_order(reward_fn, max_length, vocab):
  tokens, lengths = testing.token_sequences(max_length, vocab)
  return np.array([reward_fn(tuple(row[:m])) for row, m in zip(tokens, lengths)])


def _rloo(r):
  n = r.shape[-1]
  return r - (r.sum(axis=-1, keepdims=True) - r) / (n - 1)


def _brute(logits, reward_fn, n, aggregation, advantage_fn=_rloo):
  """E[ĝ] over all ordered n-tuples, token by token as each method writes its loss."""
  seqs = _my_sequences(*logits.shape)
  max_length = logits.shape[0]
  total = np.zeros_like(logits)
  for group in itertools.product(seqs, repeat=n):
    prob = math.prod(_sequence_prob(logits, y) for y in group)
    a = advantage_fn(np.array([[reward_fn(y) for y in group]]))[0]
    g = np.zeros_like(logits)
    tokens = sum(len(y) for y in group)
    for a_i, y in zip(a, group):
      for t, tok in enumerate(y):
        token_term = a_i * _token_score(logits, t, tok)
        if aggregation in ("grpo", "gspo"):
          g += token_term / (n * len(y))
        elif aggregation == "dapo":
          g += token_term / tokens
        else:
          g += token_term / (n * max_length)
    total += prob * g
  return total


def _contains_one(y):  # Longer sequences are more often right.
  return float(1 in y)


def _brute_objective(logits, g_fn):
  """∇E[g(y)] by central differences of the enumerated expectation."""
  seqs, h = _my_sequences(*logits.shape), 1e-6
  out = np.zeros_like(logits)
  for idx in np.ndindex(*logits.shape):
    e = np.zeros_like(logits)
    e[idx] = h

    def value(z):
      return sum(_sequence_prob(z, y) * g_fn(y) for y in seqs)

    out[idx] = (value(logits + e) - value(logits - e)) / (2 * h)
  return out


def test_token_sequences_are_every_sequence_once():
  tokens, lengths = testing.token_sequences(3, 3)
  got = [tuple(row[:m]) for row, m in zip(tokens, lengths)]
  assert sorted(got) == sorted(_my_sequences(3, 3)) and len(got) == 1 + 2 + 2 * 2 * 3
  assert np.all(tokens[lengths < 3, -1] == -1)
  np.testing.assert_array_equal(lengths, [len(y) for y in got])


@pytest.mark.parametrize("aggregation", ["grpo", "dapo", "dr_grpo", "gspo"])
def test_expected_gradient_equals_a_loop_over_all_ordered_groups(aggregation):
  logits, n = _LOGITS[:2], 3  # 7 sequences, 343 ordered groups.
  rewards = _rewards_in_module_order(_contains_one, 2, 3)
  got = testing.expected_aggregated_gradient(logits, rewards, n, aggregation)
  np.testing.assert_allclose(got, _brute(logits, _contains_one, n, aggregation), atol=1e-13)


def test_objective_gradients_equal_finite_differences():
  rewards = _rewards_in_module_order(_contains_one, 3, 3)
  got = testing.sequence_objective_gradients(_LOGITS, rewards)
  for name, g_fn in [
    ("E[r]", _contains_one),
    ("E[r/|y|]", lambda y: _contains_one(y) / len(y)),
    ("E[|y|]", len),
  ]:
    np.testing.assert_allclose(got[name], _brute_objective(_LOGITS, g_fn), atol=1e-8)


def test_two_sample_dapo_has_its_closed_form():
  # n = 2, RLOO: a_1 = r_1 − r_2 = −a_2, so ĝ = (r_1 − r_2)(s_1 − s_2) / (|y_1| + |y_2|)
  # with s = ∇log π(y): a double sum over sequences.
  seqs = _my_sequences(3, 3)
  score = {y: sum(_token_score(_LOGITS, t, tok) for t, tok in enumerate(y)) for y in seqs}
  want = sum(
    _sequence_prob(_LOGITS, y)
    * _sequence_prob(_LOGITS, z)
    * (_contains_one(y) - _contains_one(z))
    * (score[y] - score[z])
    / (len(y) + len(z))
    for y in seqs
    for z in seqs
  )
  rewards = _rewards_in_module_order(_contains_one, 3, 3)
  got = testing.expected_aggregated_gradient(_LOGITS, rewards, 2, "dapo")
  np.testing.assert_allclose(got, want, atol=1e-13)


@pytest.mark.parametrize("n", [2, 3, 5])
def test_rloo_closed_forms_of_grpo_and_dr_grpo(n):
  rewards = _rewards_in_module_order(_contains_one, 3, 3)
  grad_r = _brute_objective(_LOGITS, _contains_one)
  # Dr. GRPO's constant normaliser: Σ_i a_i ∇log π(y_i) / (n L), E = n ∇E[r] / (n L).
  dr = testing.aggregation_bias(_LOGITS, rewards, n, "dr_grpo")
  np.testing.assert_allclose(dr.expected, grad_r / 3, atol=1e-8)
  assert dr.verdict == "unbiased up to a constant factor 0.333333", dr.verdict
  assert dr.cosine == pytest.approx(1)
  np.testing.assert_allclose(dr.scales, 1 / 3, rtol=1e-9)  # 1/L at every compared policy.
  # With Dr. GRPO's own r − mean: E = (n − 1) ∇E[r] / (n L).
  own = testing.aggregation_bias(
    _LOGITS, rewards, n, "dr_grpo", advantage_fn=lambda r: r - r.mean(-1, keepdims=True)
  )
  assert own.scale == pytest.approx((n - 1) / (3 * n), rel=1e-7)
  assert own.verdict.startswith("unbiased up to a constant factor")
  # GRPO's sequence mean: E = ∇E[r/|y|] − E[r] ∇E[1/|y|], the same for every n.
  mean_r = sum(_sequence_prob(_LOGITS, y) * _contains_one(y) for y in _my_sequences(3, 3))
  want = _brute_objective(_LOGITS, lambda y: _contains_one(y) / len(y)) - mean_r * (
    _brute_objective(_LOGITS, lambda y: 1 / len(y))
  )
  grpo = testing.aggregation_bias(_LOGITS, rewards, n, "grpo")
  np.testing.assert_allclose(grpo.expected, want, atol=1e-8)
  assert grpo.verdict == "biased" and grpo.cosine < 0.99 and grpo.relative_error > 0.1


def test_gspo_gradient_at_the_on_policy_point_is_the_sequence_mean():
  # d/dθ of (1/n) Σ_i min(s_i a_i, clip(s_i, 1 − ε, 1 + ε) a_i) with
  # s_i = (π_θ(y_i) / π_old(y_i))^(1/|y_i|), at θ = θ_old, by JAX, for one group.
  group = [(1, 2, 0), (0,), (2, 0), (1, 1, 1)]
  a = jnp.asarray([0.7, -0.4, 0.2, -0.5])
  n = len(group)

  def log_prob(z, y):
    return sum(jax.nn.log_softmax(z[t])[tok] for t, tok in enumerate(y))

  def objective(z):
    total = 0.0
    for a_i, y in zip(a, group):
      s = jnp.exp((log_prob(z, y) - jax.lax.stop_gradient(log_prob(z, y))) / len(y))
      total += jnp.minimum(s * a_i, jnp.clip(s, 0.8, 1.2) * a_i)
    return total / n

  got = jax.grad(objective)(jnp.asarray(_LOGITS))
  want = sum(
    float(a_i) / (n * len(y)) * sum(_token_score(_LOGITS, t, tok) for t, tok in enumerate(y))
    for a_i, y in zip(a, group)
  )
  np.testing.assert_allclose(got, want, atol=1e-6)
  rewards = _rewards_in_module_order(_contains_one, 3, 3)
  np.testing.assert_allclose(
    testing.expected_aggregated_gradient(_LOGITS, rewards, 3, "gspo"),
    testing.expected_aggregated_gradient(_LOGITS, rewards, 3, "grpo"),
  )


def test_dapo_is_biased_at_finite_n_and_approaches_grad_over_mean_length():
  rewards = _rewards_in_module_order(_contains_one, 3, 3)
  grad_r = _brute_objective(_LOGITS, _contains_one)
  mean_len = sum(_sequence_prob(_LOGITS, y) * len(y) for y in _my_sequences(3, 3))
  errors, residuals = [], []
  for n in (2, 4, 8):
    check = testing.aggregation_bias(_LOGITS, rewards, n, "dapo")
    assert check.verdict == "biased", check
    assert check.mean_length == pytest.approx(mean_len)
    errors.append(check.relative_error)
    residuals.append(np.linalg.norm(check.expected - grad_r / mean_len))
  assert errors[0] > errors[1] > errors[2] > 0, errors
  assert residuals[0] > residuals[1] > residuals[2], residuals


def test_equal_lengths_make_every_aggregation_unbiased():
  logits = np.array([[0.2, -0.3, 0.5]])  # L = 1: every sequence has one token.
  rewards = np.array([0.0, 1.0, 3.0])
  # Σ_i a_i ∇log π(y_i) has mean n ∇E[r]; every normaliser (n, n|y|, Σ|y|, n L) is n.
  for name in testing.AGGREGATIONS:
    check = testing.aggregation_bias(logits, rewards, 4, name)
    assert check.verdict == "unbiased", (name, check)


def _grpo_numpy(r):  # Population std; a group with one outcome gets 0.
  std = r.std(axis=-1, keepdims=True)
  return np.where(std > 0, (r - r.mean(axis=-1, keepdims=True)) / np.where(std > 0, std, 1), 0.0)


def test_z_scores_with_a_constant_normaliser_have_a_factor_that_changes_with_the_policy():
  # With 0/1 rewards, E[Σ_i a_i ∇log π(y_i)] = w(p) ∇p, p = P(r = 1), for any advantages
  # of the outcomes; the z-score's w (m correct of n: a correct sample gets √((n−m)/m),
  # an incorrect one −√(m/(n−m))) is a binomial sum. Dr. GRPO divides by n L.
  n, max_length = 4, 3

  def weight(p):
    def a_s(m):
      return math.sqrt((n - m) / m) if m < n else 0.0

    def a_f(m):
      return -math.sqrt(m / (n - m)) if m > 0 else 0.0

    return n * sum(
      math.comb(n - 1, c) * p**c * (1 - p) ** (n - 1 - c) * (a_s(c + 1) - a_f(c)) for c in range(n)
    )

  rewards = _rewards_in_module_order(_contains_one, 3, 3)
  check = testing.aggregation_bias(_LOGITS, rewards, n, "dr_grpo", advantage_fn=_grpo_numpy)
  seqs = _my_sequences(3, 3)
  p_each = [sum(_sequence_prob(z, y) * _contains_one(y) for y in seqs) for z in check.policies]
  np.testing.assert_allclose(check.scales, [weight(p) / (n * max_length) for p in p_each])
  assert len(p_each) == 4 and check.verdict.startswith("a factor c that changes with the policy")
  # Only the given policy: the single-policy verdict.
  one = testing.aggregation_bias(
    _LOGITS, rewards, n, "dr_grpo", advantage_fn=_grpo_numpy, policies=()
  )
  assert one.verdict.startswith("unbiased up to a factor") and one.scales.shape == (1,)


def test_bad_input_is_named():
  rewards = np.zeros(15)
  with pytest.raises(ValueError, match="aggregation"):
    testing.aggregation_bias(_LOGITS, rewards, 2, "ppo")
  with pytest.raises(ValueError, match="rewards"):
    testing.aggregation_bias(_LOGITS, np.zeros(14), 2, "grpo")
  with pytest.raises(ValueError, match="logits"):
    testing.aggregation_bias(np.zeros((3, 1)), rewards, 2, "grpo")
  with pytest.raises(ValueError, match="n must"):
    testing.aggregation_bias(_LOGITS, rewards, 0, "grpo")
  with pytest.raises(ValueError, match="multisets"):
    testing.aggregation_bias(_LOGITS, rewards, 40, "grpo")
  with pytest.raises(ValueError, match="equivariant"):
    testing.aggregation_bias(
      _LOGITS, rewards + np.arange(15), 2, "grpo", advantage_fn=lambda r: r * [[1.0, 2.0]]
    )
  with pytest.raises(ValueError, match="policies"):
    testing.aggregation_bias(_LOGITS, rewards, 2, "grpo", policies=[np.zeros((2, 3))])
  with pytest.raises(ValueError, match="max_length"):
    testing.token_sequences(0, 3)


@pytest.mark.parametrize(
  "reward_fn", [_contains_one, lambda y: float(len(y) <= 2)], ids=["long right", "short right"]
)
def test_in_these_examples_the_sequence_mean_moves_the_length_faster(reward_fn):
  # What the exact numbers show here (not a theorem): per unit step, GRPO's (= GSPO's)
  # expected update changes E|y| faster than ∇E[r] does, toward the rewarded length;
  # DAPO's lies between and approaches ∇E[r]'s as n grows; Dr. GRPO's is ∇E[r]'s.
  rewards = _rewards_in_module_order(reward_fn, 3, 3)
  grpo = testing.aggregation_bias(_LOGITS, rewards, 4, "grpo", policies=())
  target = grpo.reward_length_slope
  assert abs(grpo.length_slope) > abs(target) > 0 and grpo.length_slope * target > 0
  gaps = [
    abs(testing.aggregation_bias(_LOGITS, rewards, n, "dapo", policies=()).length_slope - target)
    for n in (2, 4, 8)
  ]
  assert abs(grpo.length_slope - target) > gaps[0] > gaps[1] > gaps[2] > 0, gaps
  dr = testing.aggregation_bias(_LOGITS, rewards, 4, "dr_grpo", policies=())
  assert dr.length_slope == pytest.approx(target, rel=1e-9)
