"""maxk.testing.gradient_moments: count-vector moments against tuple enumeration, closed
forms and Monte Carlo."""

import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import maxk
from maxk import testing
from maxk._src import gradient_moments as gradient_moments_lib


def _rloo(r):
  n = r.shape[-1]
  return r - (r.sum(axis=-1, keepdims=True) - r) / (n - 1)


def _z_score(r):  # GRPO's advantage, in float64.
  return (r - r.mean(axis=-1, keepdims=True)) / (r.std(axis=-1, keepdims=True) + 1e-6)


def _signed_rank(r):  # Rank-dependent: (# samples below) − (# above), ties count as neither.
  return np.sign(r[..., :, None] - r[..., None, :]).sum(axis=-1)


def _max_at_2_loo_minus_one(r):
  with jax.enable_x64(True):
    return np.asarray(maxk.max_at_k_advantages(jnp.asarray(r), 2, baseline="loo_minus_one"))


_ADVANTAGES = {
  "rloo": _rloo,
  "z_score": _z_score,
  "signed_rank": _signed_rank,
  "max@2 loo_minus_one": _max_at_2_loo_minus_one,
}


def _brute_moments(advantage_fn, probs, rewards, n, batched):
  """Mean [P·A], covariance and E‖ĝ‖² over all (A^n)^P outcome tuples, from the definition."""
  p, r = np.atleast_2d(probs), np.atleast_2d(rewards)
  num_prompts, num_arms = p.shape
  y = np.array(list(itertools.product(range(num_arms), repeat=num_prompts * n)))
  y = y.reshape(-1, num_prompts, n)
  prob = np.prod(p[np.arange(num_prompts)[:, None], y], axis=(1, 2))
  r_tuples = r[np.arange(num_prompts)[:, None], y]
  a = np.asarray(advantage_fn(r_tuples if batched else r_tuples[:, 0]), np.float64)
  a = a.reshape(r_tuples.shape)
  score = np.eye(num_arms)[y] - p[None, :, None, :]  # e_{y_i} − π_p: [T, P, n, A]
  g = np.einsum("tpn,tpna->tpa", a, score).reshape(len(y), -1)
  mean = prob @ g
  return mean, (g - mean).T @ (prob[:, None] * (g - mean)), prob, g


_CASES = [  # probs, rewards (ties; an arm of probability 0), n
  ([0.5, 0.3, 0.2], [0.0, 1.0, 1.0], 5),
  ([0.45, 0.3, 0.15, 0.1], [0.0, 1.0, 1.0, 2.5], 4),
  ([0.6, 0.4], [0.0, 1.0], 8),
  ([0.3, 0.0, 0.2, 0.1, 0.4], [1.0, 5.0, -1.0, 0.5, -1.0], 3),
]


@pytest.mark.parametrize("name", list(_ADVANTAGES))
@pytest.mark.parametrize("probs, rewards, n", _CASES)
def test_count_vectors_agree_with_every_outcome_tuple(name, probs, rewards, n):
  fn = _ADVANTAGES[name]
  got = testing.gradient_moments(fn, probs, rewards, n)
  mean, cov, _, _ = _brute_moments(fn, np.array(probs), np.array(rewards), n, batched=False)
  assert got.method == "exact" and got.mean.shape == (len(probs),)
  np.testing.assert_allclose(got.mean, mean, rtol=0, atol=1e-12)
  np.testing.assert_allclose(got.covariance, cov, rtol=0, atol=1e-12)
  assert got.trace == pytest.approx(np.trace(cov), abs=1e-12)
  np.testing.assert_array_equal(got.mean_se, 0.0)
  assert got.exact is None and got.bias is None and got.mse is None


def test_mse_and_bias_against_the_objective_by_tuples():
  probs, rewards, n = np.array([0.45, 0.3, 0.15, 0.1]), np.array([0.0, 1.0, 1.0, 2.5]), 4
  weights = maxk.rank_weights("max", 2)
  got = testing.gradient_moments(_max_at_2_loo_minus_one, probs, rewards, n, weights=weights)
  _, _, prob, g = _brute_moments(_max_at_2_loo_minus_one, probs, rewards, n, batched=False)
  exact = testing.exact_gradient(probs, rewards, weights)
  np.testing.assert_allclose(got.exact, exact, rtol=0, atol=0)
  assert got.mse == pytest.approx(prob @ np.sum((g - exact) ** 2, axis=1), abs=1e-12)
  # loo_minus_one is unbiased for max@2: the error is all variance.
  np.testing.assert_allclose(got.bias, 0.0, atol=1e-12)
  # A biased one: the z-score's error is variance plus its squared bias.
  z = testing.gradient_moments(_z_score, probs, rewards, n, weights=[1.0])
  _, _, prob, g = _brute_moments(_z_score, probs, rewards, n, batched=False)
  exact = testing.exact_gradient(probs, rewards, [1.0])
  assert z.mse == pytest.approx(prob @ np.sum((g - exact) ** 2, axis=1), abs=1e-12)
  assert np.linalg.norm(z.bias) > 0.1


def _per_arm_moments(probs, values):
  """E[v(y) s] and E[v(y) s sᵀ] of one draw y ~ π, s = e_y − π, written out over arms."""
  p, v = np.asarray(probs), np.asarray(values)
  first = p * v - (p @ v) * p
  second = np.diag(p * v) - np.outer(p * v, p) - np.outer(p, p * v) + (p @ v) * np.outer(p, p)
  return first, second


@pytest.mark.parametrize(
  "probs, rewards, n",
  [
    ([0.5, 0.3, 0.2], [0.0, 1.0, 1.0], 2),
    ([0.45, 0.3, 0.15, 0.1], [0.0, 1.0, 1.0, 2.5], 7),
    ([0.1, 0.2, 0.3, 0.4], [-1.0, 0.5, 2.0, 0.25], 64),
    ([0.2, 0.1, 0.05, 0.15, 0.1, 0.2, 0.1, 0.1], [3.0, 1, 0, 0, 2, 1, 5, -1], 16),
  ],
)
def test_reinforce_and_rloo_match_their_closed_forms(probs, rewards, n):
  """For i.i.d. samples with scores s_i = e_{y_i} − π (E s = 0) and m = E r:

  * REINFORCE, a_i = r_i: ĝ = Σ_i r_i s_i is a sum of n i.i.d. terms, so
    E ĝ = n V and Cov ĝ = n (E[r² s sᵀ] − V Vᵀ), V = E[r s].
  * RLOO, a_i = r_i − mean_{j≠i} r_j: ĝ = (1/(n−1)) Σ_{i<j} h_ij with the symmetric
    kernel h_ij = (r_i − r_j)(s_i − s_j), i.e. (n/2) times a U-statistic of order 2.
    Hoeffding's decomposition, Var U = (2(n−2) ζ1 + ζ2) / C(n, 2), with (r̃ = r − m,
    C = E[r̃² s sᵀ], σ² = E r̃², M = E[s sᵀ] = diag π − π πᵀ)
      ζ1 = Cov(E[h_12 | 1]) = Cov(r̃_1 s_1 + V) = C − V Vᵀ,
      ζ2 = Cov(h_12) = 2 C + 2 σ² M + 4 V Vᵀ − 4 V Vᵀ,
    gives E ĝ = n V and Cov ĝ = n C − n(n−2)/(n−1) V Vᵀ + n/(n−1) σ² M.
  """
  p, r = np.array(probs), np.array(rewards)
  v, r2_ssT = _per_arm_moments(p, r)[0], _per_arm_moments(p, r**2)[1]
  scale = np.max(np.abs(r)) ** 2 * n
  reinforce = testing.gradient_moments(lambda x: x, p, r, n)
  np.testing.assert_allclose(reinforce.mean, n * v, rtol=0, atol=1e-12 * scale)
  np.testing.assert_allclose(
    reinforce.covariance, n * (r2_ssT - np.outer(v, v)), rtol=0, atol=1e-12 * scale
  )
  centred = r - p @ r
  c = _per_arm_moments(p, centred**2)[1]
  sigma2, m = p @ centred**2, np.diag(p) - np.outer(p, p)
  want = n * c - n * (n - 2) / (n - 1) * np.outer(v, v) + n / (n - 1) * sigma2 * m
  rloo = testing.gradient_moments(_rloo, p, r, n)
  assert rloo.method == "exact"
  np.testing.assert_allclose(rloo.mean, n * v, rtol=0, atol=1e-12 * scale)
  np.testing.assert_allclose(rloo.covariance, want, rtol=0, atol=1e-12 * scale)


def _shared_baseline(r):
  """A cross-prompt estimator: rewards minus the batch mean, over each prompt's std."""
  batch_mean = r.mean(axis=(-2, -1), keepdims=True)
  return (r - batch_mean) / (r.std(axis=-1, keepdims=True) + 0.5)


@pytest.mark.parametrize(
  "probs, rewards, n",
  [
    ([[0.5, 0.3, 0.2], [0.2, 0.2, 0.6]], [[0.0, 1.0, 1.0], [2.0, -1.0, 0.5]], 3),
    ([[0.7, 0.3], [0.5, 0.5], [0.0, 1.0]], [[0.0, 1.0], [1.0, 1.0], [0.0, 2.0]], 3),
    ([[0.7, 0.3], [0.4, 0.6], [0.25, 0.75]], [[0.0, 1.0], [1.0, -1.0], [0.0, 2.0]], 2),
  ],
)
@pytest.mark.parametrize("name", ["shared_baseline", "rloo", "signed_rank"])
def test_a_batch_agrees_with_every_outcome_tuple_of_all_prompts(probs, rewards, n, name):
  fn = _shared_baseline if name == "shared_baseline" else _ADVANTAGES[name]
  p, r = np.array(probs), np.array(rewards)
  got = testing.gradient_moments(fn, p, r, n, weights=[float(n)])
  mean, cov, prob, g = _brute_moments(fn, p, r, n, batched=True)
  assert got.method == "exact" and got.mean.shape == p.shape
  assert got.covariance.shape == (p.size, p.size)
  np.testing.assert_allclose(got.mean, mean.reshape(p.shape), rtol=0, atol=1e-12)
  np.testing.assert_allclose(got.covariance, cov, rtol=0, atol=1e-12)
  # The objective is the sum over prompts: its gradient is each prompt's own.
  exact = np.stack([testing.exact_gradient(pp, rr, [float(n)]) for pp, rr in zip(p, r)])
  np.testing.assert_allclose(got.exact, exact)
  assert got.mse == pytest.approx(prob @ np.sum((g - exact.reshape(-1)) ** 2, axis=1), abs=1e-12)


def test_a_per_prompt_estimator_on_a_batch_has_the_single_prompt_blocks():
  p = np.array([[0.5, 0.3, 0.2], [0.1, 0.6, 0.3]])
  r = np.array([[0.0, 1.0, 1.0], [2.0, -1.0, 0.5]])
  batch = testing.gradient_moments(_rloo, p, r, 6)
  for i in range(2):
    one = testing.gradient_moments(_rloo, p[i], r[i], 6)
    np.testing.assert_allclose(batch.mean[i], one.mean, rtol=0, atol=1e-12)
    block = batch.covariance[3 * i : 3 * i + 3, 3 * i : 3 * i + 3]
    np.testing.assert_allclose(block, one.covariance, rtol=0, atol=1e-12)
  # Independent prompts: no covariance between them.
  np.testing.assert_allclose(batch.covariance[:3, 3:], 0.0, atol=1e-12)


@pytest.mark.parametrize("name", ["max@2 loo_minus_one", "z_score"])
def test_monte_carlo_agrees_with_the_count_vectors_beyond_tuples(name):
  fn = _ADVANTAGES[name]
  probs, rewards, n = [0.45, 0.3, 0.15, 0.1], [0.0, 1.0, 1.0, 2.5], 12  # 4^12 = 2^24 tuples
  exact = testing.gradient_moments(fn, probs, rewards, n, weights=maxk.rank_weights("max", 2))
  assert exact.method == "exact" and 4**n > testing.MAX_TUPLES
  mc = testing.gradient_moments(
    fn, probs, rewards, n, weights=maxk.rank_weights("max", 2), max_count_vectors=0,
    num_samples=50_000, seed=1,
  )  # fmt: skip
  assert mc.method == "monte carlo (50000 groups)"
  assert np.all(mc.mean_se > 0)
  assert np.all(np.abs(mc.mean - exact.mean) <= 3 * mc.mean_se), (mc.mean, exact.mean)
  # The sample covariance's diagonal within 3% (its relative error is ~√(2/m)·kurtosis).
  np.testing.assert_allclose(np.diag(mc.covariance), np.diag(exact.covariance), rtol=0.03)
  assert mc.mse == pytest.approx(exact.mse, rel=0.03)
  again = testing.gradient_moments(
    fn, probs, rewards, n, max_count_vectors=0, num_samples=50_000, seed=1
  )
  np.testing.assert_array_equal(again.mean, mc.mean)  # The same seed, the same answer.


def test_monte_carlo_on_a_batch():
  p = np.array([[0.5, 0.3, 0.2], [0.2, 0.2, 0.6]])
  r = np.array([[0.0, 1.0, 1.0], [2.0, -1.0, 0.5]])
  exact = testing.gradient_moments(_shared_baseline, p, r, 4)
  mc = testing.gradient_moments(_shared_baseline, p, r, 4, max_count_vectors=10, num_samples=40_000)
  assert exact.method == "exact" and mc.method.startswith("monte carlo")
  assert mc.mean.shape == (2, 3) and mc.covariance.shape == (6, 6)
  assert np.all(np.abs(mc.mean - exact.mean) <= 3 * mc.mean_se)
  np.testing.assert_allclose(np.diag(mc.covariance), np.diag(exact.covariance), rtol=0.05)


def test_the_cap_counts_count_vectors_of_the_support():
  # 3 arms, one never drawn: C(6 + 1, 1) = 7 count vectors, not C(8, 2) = 28.
  probs, rewards = [0.5, 0.0, 0.5], [0.0, 1.0, 2.0]
  assert testing.gradient_moments(_rloo, probs, rewards, 6, max_count_vectors=7).method == "exact"
  capped = testing.gradient_moments(_rloo, probs, rewards, 6, max_count_vectors=6, num_samples=100)
  assert capped.method == "monte carlo (100 groups)"
  # A batch: the product of the prompts' counts, 7 · 7.
  batch = [probs, probs], [rewards, rewards], 6
  assert testing.gradient_moments(_rloo, *batch, max_count_vectors=49).method == "exact"
  over = testing.gradient_moments(_rloo, *batch, max_count_vectors=48, num_samples=100)
  assert over.method == "monte carlo (100 groups)"


@pytest.mark.parametrize("num_arms, n", [(1, 5), (2, 1), (3, 4), (4, 6), (5, 3)])
def test_count_vectors_are_every_multiset_once(num_arms, n):
  got = gradient_moments_lib.count_vectors(num_arms, n)
  want = sorted(
    tuple(np.bincount(m, minlength=num_arms))
    for m in itertools.combinations_with_replacement(range(num_arms), n)
  )
  assert got.shape == (math.comb(n + num_arms - 1, num_arms - 1), num_arms)
  assert sorted(map(tuple, got.tolist())) == want


def test_a_float32_jax_estimator_is_accepted_and_agrees_to_its_precision():
  probs, rewards = [0.45, 0.3, 0.15, 0.1], [0.0, 1.0, 1.0, 2.5]
  f32 = testing.gradient_moments(
    lambda r: maxk.max_at_k_advantages(r, 2, baseline="loo_minus_one"), probs, rewards, 10
  )
  f64 = testing.gradient_moments(_max_at_2_loo_minus_one, probs, rewards, 10)
  np.testing.assert_allclose(f32.mean, f64.mean, rtol=0, atol=1e-6)
  np.testing.assert_allclose(f32.covariance, f64.covariance, rtol=0, atol=1e-5)


def test_a_non_equivariant_function_is_refused():
  def by_position(r):
    return r + 0.1 * np.arange(r.shape[-1])

  with pytest.raises(ValueError, match="advantage_fn must be permutation equivariant"):
    testing.gradient_moments(by_position, [0.5, 0.5], [0.0, 1.0], 4)

  def over_prompts(r):  # Normalising over the prompt axis instead of the samples'.
    return r - r.mean(axis=-2, keepdims=True)

  with pytest.raises(ValueError, match="advantage_fn must be permutation equivariant"):
    testing.gradient_moments(over_prompts, [[0.5, 0.5]] * 2, [[0.0, 1.0]] * 2, 4)
  # Also where the moments would be Monte Carlo.
  with pytest.raises(ValueError, match="advantage_fn"):
    testing.gradient_moments(by_position, [0.5, 0.5], [0.0, 1.0], 4, max_count_vectors=0)


def test_bad_input_is_named():
  fn = _rloo
  cases = [
    (([[[0.5, 0.5]]], [[[0.0, 1.0]]], 3), {}, "probs"),
    (([], [], 3), {}, "probs"),
    (([0.5, 0.6], [0.0, 1.0], 3), {}, "probs"),
    (([[0.5, 0.5], [0.9, 0.2]], [[0.0, 1.0]] * 2, 3), {}, "probs"),
    (([0.5, 0.5], [0.0, 1.0, 2.0], 3), {}, "rewards"),
    (([[0.5, 0.5]] * 2, [0.0, 1.0], 3), {}, "rewards"),
    (([0.5, 0.5], [0.0, np.inf], 3), {}, "rewards"),
    (([0.5, 0.5], [0.0, 1.0], 0), {}, "n must"),
    (([0.5, 0.5], [0.0, 1.0], 2.0), {}, "n must"),
    (([0.5, 0.5], [0.0, 1.0], True), {}, "n must"),
    (([0.5, 0.5], [0.0, 1.0], 3), {"weights": []}, "weights"),
    (([0.5, 0.5], [0.0, 1.0], 3), {"num_samples": 1}, "num_samples"),
    (([0.5, 0.5], [0.0, 1.0], 3), {"max_count_vectors": -1}, "max_count_vectors"),
  ]
  for args, kwargs, match in cases:
    with pytest.raises(ValueError, match=match):
      testing.gradient_moments(fn, *args, **kwargs)
  with pytest.raises(ValueError, match="advantage_fn must return"):
    testing.gradient_moments(lambda r: r[..., :1], [0.5, 0.5], [0.0, 1.0], 3)
  with pytest.raises(ValueError, match="non-finite"):
    testing.gradient_moments(lambda r: np.where(r > 0, np.nan, r), [0.5, 0.5], [0.0, 1.0], 3)
