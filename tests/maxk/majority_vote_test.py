"""Tests for maxk's majority vote: maj_at_k, maj_at_k_advantages, maj_at_k_exact.

Every expected value is brute force: the vote of each k-subset (itertools.combinations)
or of each outcome tuple (itertools.product), written here without the library.
"""

import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import maxk

TIES = ["uniform", "wrong"]
BASELINES = ["none", "loo", "loo_centered", "loo_minus_one"]


def vote(ids, correct, tie):
  """h: credit of one multiset of (answer id, correct) samples; negative ids abstain."""
  counts, right = {}, {}
  for a, c in zip(ids, correct):
    if a >= 0:
      counts[a] = counts.get(a, 0) + 1
      right[a] = bool(c)
  if not counts:
    return 0.0
  top_count = max(counts.values())
  top = [a for a in counts if counts[a] == top_count]
  if tie == "wrong":
    return float(len(top) == 1 and right[top[0]])
  return sum(right[a] for a in top) / len(top)


def maj_subsets(ids, correct, k, tie):
  subsets = itertools.combinations(range(len(ids)), k)
  return float(np.mean([vote(ids[list(s)], correct[list(s)], tie) for s in subsets]))


def advantages_subsets(ids, correct, k, tie, baseline):
  n = len(ids)
  s_val = np.zeros(n)
  for sub in itertools.combinations(range(n), k):
    s_val[list(sub)] += vote(ids[list(sub)], correct[list(sub)], tie)
  s_val /= math.comb(n, k)
  if baseline == "loo_minus_one" and k == 1:
    baseline = "loo_centered"
  if baseline == "none" or (baseline in ("loo", "loo_centered") and n == k):
    return s_val
  out = np.empty(n)
  for i in range(n):
    rest_ids, rest_c = np.delete(ids, i), np.delete(correct, i)
    if baseline == "loo_minus_one":
      out[i] = s_val[i] - k / n * maj_subsets(rest_ids, rest_c, k - 1, tie)
    else:
      scale = k / (n - 1) if baseline == "loo" else k / n
      out[i] = s_val[i] - scale * maj_subsets(rest_ids, rest_c, k, tie)
  return out


def exact_tuples(p, correct, k, tie, answered=None):
  """Σ over all A^k draws of P(draw) · h(draw)."""
  total = 0.0
  for draw in itertools.product(range(len(p)), repeat=k):
    ids = np.array([a if answered is None or answered[a] else -1 for a in draw])
    total += np.prod(p[list(draw)]) * vote(ids, correct[list(draw)], tie)
  return total


def exact_gradient_tuples(p, correct, k, tie, answered):
  """∇_logits of maj@k of softmax(logits): Σ_draws P(draw) h(draw) Σ_i (e_{y_i} − π)."""
  grad = np.zeros(len(p))
  for draw in itertools.product(range(len(p)), repeat=k):
    ids = np.where(answered[list(draw)], np.array(draw), -1)
    h = vote(ids, correct[list(draw)], tie)
    score = np.bincount(draw, minlength=len(p)) - k * p
    grad += np.prod(p[list(draw)]) * h * score
  return grad


def random_group(rng, n, num_answers=4, abstain=True):
  """Ids with many ties (few distinct answers), a consistent correct flag per answer."""
  ids = rng.integers(-1 if abstain else 0, num_answers, size=n)
  truth = rng.random(num_answers) < 0.5
  return ids, np.where(ids >= 0, truth[np.maximum(ids, 0)], False)


# Every group of n = 5 draws from 4 arms (one of them "no answer"): many ties at the top.
ARM_P = np.array([0.3, 0.45, 0.1, 0.15])
ARM_ID = np.array([0, 1, 2, -1])
ARM_TRUE = np.array([True, False, True, False])
DRAWS = np.array(list(itertools.product(range(4), repeat=5)))


@pytest.mark.parametrize("tie", TIES)
def test_maj_at_k_matches_subsets_and_is_unbiased(tie):
  ids, correct, k = ARM_ID[DRAWS], ARM_TRUE[DRAWS], 3
  got = np.asarray(maxk.maj_at_k(ids, correct, k, tie=tie), np.float64)
  want = [maj_subsets(i, c, k, tie) for i, c in zip(ids, correct)]
  np.testing.assert_allclose(got, want, atol=2e-6)
  # E over all 4^5 groups equals the exact maj@3 (draw enumeration) and maj_at_k_exact.
  exact = exact_tuples(ARM_P, ARM_TRUE, k, tie, answered=ARM_ID >= 0)
  assert np.prod(ARM_P[DRAWS], axis=1) @ got == pytest.approx(exact, abs=1e-6)
  got_exact = maxk.maj_at_k_exact(ARM_P, ARM_TRUE, k, tie=tie, answered=ARM_ID >= 0)
  assert float(got_exact) == pytest.approx(exact, abs=1e-6)


def test_ties_at_the_top_follow_the_rule():
  # Two answers with 2 votes each, one correct; abstentions (-1) never win; k = n.
  ids = np.array([[5, 5, 9, 9], [-1, -1, -1, 2], [-1, -1, -1, -1]])
  correct = np.array([[1, 1, 0, 0], [0, 0, 0, 1], [0, 0, 0, 0]], bool)
  np.testing.assert_allclose(maxk.maj_at_k(ids, correct, 4, tie="uniform"), [0.5, 1.0, 0.0])
  np.testing.assert_allclose(maxk.maj_at_k(ids, correct, 4, tie="wrong"), [0.0, 1.0, 0.0])


def test_k1_is_pass_at_1_and_k_equals_n_is_the_vote_of_the_group():
  rng = np.random.default_rng(1)
  ids = rng.integers(0, 6, size=(2, 3, 40))
  correct = (rng.random(6) < 0.5)[ids]
  np.testing.assert_allclose(maxk.maj_at_k(ids, correct, 1), correct.mean(-1), atol=1e-6)
  want = [[vote(i, c, "uniform") for i, c in zip(ir, cr)] for ir, cr in zip(ids, correct)]
  np.testing.assert_allclose(maxk.maj_at_k(ids, correct, 40), want, atol=1e-5)


@pytest.mark.parametrize(
  "baseline,tie",
  [(b, "uniform") for b in BASELINES] + [("none", "wrong"), ("loo_minus_one", "wrong")],
)
def test_advantages_match_subsets_and_are_unbiased(baseline, tie):
  # Policy over 3 arms, the last "no answer"; all 3^5 groups of n = 5, k = 3.
  p, arm_id, truth = np.array([0.35, 0.4, 0.25]), np.array([0, 1, -1]), np.array([1, 0, 0], bool)
  n, k = 5, 3
  draws = np.array(list(itertools.product(range(3), repeat=n)))
  ids, correct = arm_id[draws], truth[draws]
  got = np.asarray(maxk.maj_at_k_advantages(ids, correct, k, tie=tie, baseline=baseline))
  want = [advantages_subsets(i, c, k, tie, baseline) for i, c in zip(ids, correct)]
  np.testing.assert_allclose(got, want, atol=2e-6)

  def advantage_fn(arm):  # maxk.testing passes each arm's "reward": here its index.
    arm = arm.astype(np.int32)
    return maxk.maj_at_k_advantages(arm_id[arm], truth[arm], k, tie=tie, baseline=baseline)

  expected = maxk.testing.expected_gradient(advantage_fn, p, np.arange(3.0), n)
  want_grad = exact_gradient_tuples(p, truth, k, tie, arm_id >= 0)
  np.testing.assert_allclose(expected, want_grad, atol=2e-6)
  # The exact value's autodiff gradient agrees with the enumeration.
  value = lambda logits: maxk.maj_at_k_exact(
    jax.nn.softmax(logits), truth, k, tie=tie, answered=arm_id >= 0
  )
  np.testing.assert_allclose(jax.grad(value)(jnp.log(jnp.asarray(p))), want_grad, atol=2e-6)


@pytest.mark.parametrize("baseline,n", [("loo_minus_one", 4), ("loo", 3), ("loo_centered", 3)])
def test_advantages_special_sizes(baseline, n):
  # k = 1 (loo_minus_one is loo_centered) and k = n (loo, loo_centered are "none").
  k = 1 if baseline == "loo_minus_one" else n
  rng = np.random.default_rng(n)
  groups = [random_group(rng, n) for _ in range(8)]
  ids, correct = np.stack([g[0] for g in groups]), np.stack([g[1] for g in groups])
  got = np.asarray(maxk.maj_at_k_advantages(ids, correct, k, baseline=baseline))
  want = [advantages_subsets(i, c, k, "uniform", baseline) for i, c in zip(ids, correct)]
  np.testing.assert_allclose(got, want, atol=2e-6)


@pytest.mark.parametrize("tie", TIES)
def test_exact_matches_draw_enumeration(tie):
  rng = np.random.default_rng(3)
  for num_answers, k in [(1, 3), (2, 5), (4, 3)]:
    p = rng.dirichlet(np.ones(num_answers))
    answered = np.arange(num_answers) != 1  # outcome 1 (if any) is "no answer"
    correct = (rng.random(num_answers) < 0.5) & answered
    got = maxk.maj_at_k_exact(p, correct, k, tie=tie, answered=answered)
    want = exact_tuples(p, correct, k, tie, answered)
    np.testing.assert_allclose(float(got), want, atol=1e-6, err_msg=f"A={num_answers} k={k}")
  # A batch of policies, correct broadcast from [A].
  p = rng.dirichlet(np.ones(4), size=(2, 2))
  truth = np.array([1, 0, 1, 0])
  got = maxk.maj_at_k_exact(p, truth.astype(bool), 3, tie=tie)
  want = [[exact_tuples(q, truth, 3, tie) for q in row] for row in p]
  np.testing.assert_allclose(got, want, atol=1e-6)


def exact_answered_tuples(p, correct, k, tie, answered):
  """Σ over all A^k draws and 2^k answer patterns (draw i answers with probability
  answered[d_i]) of their probability times h."""
  total = 0.0
  for draw in itertools.product(range(len(p)), repeat=k):
    for says in itertools.product([False, True], repeat=k):
      a = answered[list(draw)]
      prob = np.prod(p[list(draw)]) * np.prod(np.where(says, a, 1 - a))
      ids = np.where(says, np.array(draw), -1)
      total += prob * vote(ids, np.where(says, correct[list(draw)], False), tie)
  return total


@pytest.mark.parametrize("tie", TIES)
def test_exact_answered_is_validated_and_may_be_a_probability(tie):
  p, correct = np.array([0.5, 0.3, 0.2]), np.array([True, False, False])
  # The case: answered = [2, 1, 1] gave 2.24; now refused, naming the argument.
  for bad in ([2, 1, 1], [1.0, -0.5, 1.0], [1.0, np.nan, 1.0]):
    with pytest.raises(ValueError, match="answered"):
      maxk.maj_at_k_exact(p, correct, 3, tie=tie, answered=np.array(bad))
  with pytest.raises(ValueError, match="answered"):
    maxk.maj_at_k_exact(p, correct, 3, tie=tie, answered=[True, False])
  # Under jit the values cannot be checked: clipped to [0, 1], so still a probability.
  jitted = jax.jit(lambda a: maxk.maj_at_k_exact(p, correct, 3, tie=tie, answered=a))
  got = float(jitted(jnp.array([2.0, 1.0, 1.0])))
  assert got == pytest.approx(exact_tuples(p, correct, 3, tie), abs=1e-6)
  # Probabilities of answering, and booleans given as a list, against enumeration.
  rng = np.random.default_rng(11)
  for num_answers, k in [(2, 4), (3, 3), (4, 2)]:
    q = rng.dirichlet(np.ones(num_answers))
    truth = rng.random(num_answers) < 0.5
    frac = rng.random(num_answers)
    got = float(maxk.maj_at_k_exact(q, truth, k, tie=tie, answered=frac))
    assert got == pytest.approx(exact_answered_tuples(q, truth, k, tie, frac), abs=1e-6)
    flags = [True] + [False] * (num_answers - 1)
    got = float(maxk.maj_at_k_exact(q, truth & np.array(flags), k, tie=tie, answered=flags))
    want = exact_tuples(q, truth & np.array(flags), k, tie, answered=np.array(flags))
    assert got == pytest.approx(want, abs=1e-6)


def test_exact_unanswered_outcome_flagged_correct_is_nan_as_in_maj_at_k():
  # maj_at_k: an abstention (-1) flagged correct makes its group NaN.
  assert np.isnan(maxk.maj_at_k(np.array([-1, 0, 0]), np.array([True, False, False]), 2))
  # maj_at_k_exact: the same outcome as a never-answering one flagged correct; only
  # that distribution is NaN.  Answering with any probability > 0 is not.
  p = np.array([[0.2, 0.5, 0.3], [0.2, 0.5, 0.3]])
  correct = np.array([True, False, False])
  got = np.asarray(maxk.maj_at_k_exact(p, correct, 2, answered=[[0, 1, 1], [1, 1, 1]]))
  assert np.isnan(got[0])
  assert got[1] == pytest.approx(exact_tuples(p[1], correct, 2, "uniform"), abs=1e-6)
  half = maxk.maj_at_k_exact(p[0], correct, 2, answered=[0.5, 1, 1])
  assert np.isfinite(half)


def test_jit_vmap_and_gradients():
  rng = np.random.default_rng(5)
  ids = rng.integers(-1, 3, size=(4, 6))
  correct = (ids == 1) | (ids == 2)
  want = [maj_subsets(i, c, 3, "uniform") for i, c in zip(ids, correct)]
  # maj_at_k and its advantages under jit in one program (one compilation, not two).
  jitted, adv_jit = jax.jit(
    lambda i, c: (maxk.maj_at_k(i, c, 3), maxk.maj_at_k_advantages(i, c, 3))
  )(ids, correct)
  mapped = jax.vmap(lambda i, c: maxk.maj_at_k(i, c, 3))(ids, correct)
  np.testing.assert_allclose(jitted, want, atol=2e-6)
  np.testing.assert_allclose(mapped, want, atol=2e-6)
  want_adv = [advantages_subsets(i, c, 3, "uniform", "loo_minus_one") for i, c in zip(ids, correct)]
  np.testing.assert_allclose(adv_jit, want_adv, atol=2e-6)
  # Gradient of the exact value: finite at a zero probability; matches central
  # differences along directions that keep p on the simplex.
  p = jnp.array([0.5, 0.0, 0.3, 0.2])
  truth = jnp.array([False, True, True, False])
  f = lambda q: maxk.maj_at_k_exact(q, truth, 4)
  g = np.asarray(jax.grad(f)(p))
  assert np.all(np.isfinite(g))
  eps = 1e-3
  for a, b in [(0, 2), (2, 3), (3, 0)]:
    e = (np.eye(4)[a] - np.eye(4)[b]) * eps
    fd = (float(f(p + e)) - float(f(p - e))) / (2 * eps)
    assert g[a] - g[b] == pytest.approx(fd, abs=2e-3)
  vmapped = jax.vmap(f)(jnp.stack([p, p[::-1]]))
  np.testing.assert_allclose(vmapped, [f(p), f(p[::-1])], atol=1e-7)


def test_bad_groups_are_nan_alone():
  ids = np.array([[0, 0, 1, 2], [0, 0, 1, 2], [0, -1, 1, 1], [0, 0, 1, 2]])
  correct = np.array(
    [
      [1.0, 0.0, 0.0, 0.0],  # id 0 is both correct and wrong
      [1.0, 1.0, 0.0, 0.0],
      [0.0, 1.0, 0.0, 0.0],  # an abstention flagged correct
      [np.nan, np.nan, 0.0, 0.0],
    ]
  )
  got = np.asarray(maxk.maj_at_k(ids, correct, 2))
  assert np.isnan(got[[0, 2, 3]]).all()
  assert got[1] == pytest.approx(maj_subsets(ids[1], correct[1], 2, "uniform"), abs=1e-6)
  adv = np.asarray(maxk.maj_at_k_advantages(ids, correct, 2))
  assert np.isnan(adv[[0, 2, 3]]).all() and np.all(np.isfinite(adv[1]))


def test_bad_input_raises():
  ids, correct = np.array([0, 1, 1]), np.array([True, False, False])
  with pytest.raises(ValueError, match="k"):
    maxk.maj_at_k(ids, correct, 4)
  with pytest.raises(ValueError, match="k"):
    maxk.maj_at_k(ids, correct, 0)
  with pytest.raises(ValueError, match="answer_ids"):
    maxk.maj_at_k(ids.astype(float), correct, 2)
  with pytest.raises(ValueError, match="correct"):
    maxk.maj_at_k(ids, correct[:2], 2)
  with pytest.raises(ValueError, match="correct"):
    maxk.maj_at_k(ids, [0.5, 0.0, 1.0], 2)
  with pytest.raises(ValueError, match="tie"):
    maxk.maj_at_k(ids, correct, 2, tie="random")
  with pytest.raises(ValueError, match="baseline"):
    maxk.maj_at_k_advantages(ids, correct, 2, baseline="mean")
  with pytest.raises(ValueError, match="probs"):
    maxk.maj_at_k_exact([0.5, 0.6], [True, False], 2)
  with pytest.raises(ValueError, match="k"):
    maxk.maj_at_k_exact([0.5, 0.5], [True, False], 0)
  with pytest.raises(ValueError, match="k=200"):
    maxk.maj_at_k_exact(np.float32([0.5, 0.5]), [True, False], 200)


@pytest.mark.parametrize("x64", [False, True])
def test_64_bit_and_python_int_ids_are_compared_exactly(x64):
  # The case: 2**32 + 1 is not answer 1 (int32 truncation merged them: 0.5).
  ids = np.array([[2**32 + 1, 1, 2, 2]], np.int64)
  correct = np.array([[False, False, True, True]])
  with jax.enable_x64(x64):
    assert float(maxk.maj_at_k(ids, correct, 3)[0]) == pytest.approx(2 / 3, abs=1e-6)
    # Closed over under jit the ids are still concrete, so still factorised.
    jitted = jax.jit(lambda c: maxk.maj_at_k(ids, c, 3))(correct)
    assert float(jitted[0]) == pytest.approx(2 / 3, abs=1e-6)
  # Ids that agree modulo 2^32, wrap negative in int32, span int64 and uint64, Python
  # ints beyond 64 bits, and hash() ids made non-negative; each against brute force.
  words = ["12", "7", "12", "x", "7", "12"]
  groups = [
    np.array([2**32 + 5, 5, 2**33 + 5, 5, -1, 2**32 + 5], np.int64),
    np.array([2**31, 2**31, 7, -(2**40), 7, 2**31 + 1], np.int64),
    np.array([2**63 - 1, -(2**63), 2**63 - 1, 0, 0, 2**62], np.int64),
    np.array([2**64 - 1, 2**64 - 1, 1, 2**63, 1, 2**63], np.uint64),
    np.array([2**70, 2**70 + 1, 2**70, 3, -(2**80), 2**70 + 1], object),
    np.array([hash(w) % 2**63 for w in words], np.int64),
  ]
  rng = np.random.default_rng(7)
  for ids in groups:
    distinct = sorted({int(a) for a in ids if a >= 0})
    truth = dict(zip(distinct, rng.random(len(distinct)) < 0.5))
    correct = np.array([int(a) >= 0 and truth[int(a)] for a in ids])
    exact_ids = np.array([int(a) for a in ids], object)  # the brute force's own ids
    for k, tie in [(2, "uniform"), (3, "wrong")]:
      with jax.enable_x64(x64):
        got = float(maxk.maj_at_k(ids, correct, k, tie=tie))
        adv = np.asarray(maxk.maj_at_k_advantages(ids, correct, k, tie=tie))
      want = maj_subsets(exact_ids, correct, k, tie)
      assert got == pytest.approx(want, abs=1e-6), (ids, k, tie)
      want_adv = advantages_subsets(exact_ids, correct, k, tie, "loo_minus_one")
      np.testing.assert_allclose(adv, want_adv, atol=2e-6, err_msg=f"{ids} k={k} {tie}")
  with pytest.raises(ValueError, match="answer_ids"):
    maxk.maj_at_k(np.array([1, "a", 2], object), [False] * 3, 2)


@pytest.mark.parametrize("tie,baseline", [("uniform", "loo_minus_one"), ("wrong", "loo")])
def test_many_answers_fill_the_slots_of_every_top_count(tie, baseline):
  # n = 12: all answers distinct (12 slots at t = 1), one answer everywhere, counts
  # 4, 3, 3, 1, 1 (ties between slots; answers below t pool), and abstentions.
  ids = np.array(
    [
      np.arange(12),
      np.full(12, 7),
      [0, 0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 4],
      [5, -1, 5, 6, -1, 6, 5, 8, 8, -1, 6, 9],
    ]
  )
  truth = np.array([1, 0, 1, 0, 1, 1, 0, 1, 0, 1, 0, 1], bool)
  correct = np.where(ids >= 0, truth[np.maximum(ids, 0) % 12], False)
  k = 5
  got = np.asarray(maxk.maj_at_k(ids, correct, k, tie=tie))
  want = [maj_subsets(i, c, k, tie) for i, c in zip(ids, correct)]
  np.testing.assert_allclose(got, want, atol=2e-6)
  got = np.asarray(maxk.maj_at_k_advantages(ids, correct, k, tie=tie, baseline=baseline))
  want = [advantages_subsets(i, c, k, tie, baseline) for i, c in zip(ids, correct)]
  np.testing.assert_allclose(got, want, atol=2e-6)
