"""maxk.unlikeliness_advantages: the authors' formula, and what its expected gradient
follows on softmax bandits (a frozen reshaped reward; no objective)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import maxk
from maxk import testing


def _reference(r, lp, beta=0.25, baseline="grpo", eps=1e-6, ddof=1):
  """The released trainer's recipe: argsort(argsort(log p)) / n ranks, r·(1 − β rank),
  then (r' − mean) / (std + eps) per group (distinct log-probabilities)."""
  r, lp = np.asarray(r, np.float64), np.asarray(lp, np.float64)
  rank = np.argsort(np.argsort(lp, axis=-1), axis=-1) / r.shape[-1]
  scaled = r * (1 - rank * beta)
  if baseline == "none":
    return scaled
  mean = scaled.mean(axis=-1, keepdims=True)
  return (scaled - mean) / (scaled.std(axis=-1, ddof=ddof, keepdims=True) + eps)


def _x64(fn, *args, **kwargs):
  with jax.enable_x64(True):
    return np.asarray(fn(*(jnp.asarray(a) for a in args), **kwargs))


@pytest.mark.parametrize("baseline", ["grpo", "none"])
@pytest.mark.parametrize("beta", [0.0, 0.25, 1.0])
def test_matches_the_released_formula(baseline, beta):
  rng = np.random.default_rng(0)
  r = (rng.random((6, 8)) < 0.6).astype(float)
  r[0] = 1.0  # All correct: only the ranks tell the samples apart.
  lp = rng.normal(size=(6, 8)) - 5.0
  got = _x64(maxk.unlikeliness_advantages, r, lp, beta=beta, baseline=baseline)
  np.testing.assert_allclose(got, _reference(r, lp, beta, baseline), rtol=1e-10, atol=1e-10)
  got32 = maxk.unlikeliness_advantages(r, lp, beta=beta, baseline=baseline)
  np.testing.assert_allclose(got32, _reference(r, lp, beta, baseline), atol=2e-5)


def test_ties_share_the_lower_rank_so_the_function_is_equivariant():
  r = np.array([1.0, 1.0, 1.0, 0.0, 1.0])
  lp = np.array([-2.0, -1.0, -2.0, -3.0, -1.0])  # Ranks: 1, 3, 1, 0, 3 (of 5).
  want = r * (1 - 0.5 * np.array([1, 3, 1, 0, 3]) / 5)
  got = _x64(maxk.unlikeliness_advantages, r, lp, beta=0.5, baseline="none")
  np.testing.assert_allclose(got, want, atol=1e-15)
  perm = np.random.default_rng(1).permutation(5)
  got_perm = _x64(maxk.unlikeliness_advantages, r[perm], lp[perm], beta=0.5)
  np.testing.assert_allclose(got_perm, _x64(maxk.unlikeliness_advantages, r, lp, beta=0.5)[perm])


def test_where_ranks_only_the_valid_samples():
  rng = np.random.default_rng(2)
  r, lp = rng.random((5, 6)), rng.normal(size=(5, 6))
  valid = rng.random((5, 6)) < 0.7
  valid[0] = False
  valid[1] = [True] + [False] * 5
  lp[~valid] = np.nan
  got = _x64(maxk.unlikeliness_advantages, r, lp, baseline="grpo", where=valid)
  for g in range(5):
    want = np.zeros(6)
    if valid[g].sum() >= 2:
      want[valid[g]] = _reference(r[g, valid[g]], lp[g, valid[g]])
    np.testing.assert_allclose(got[g], want, atol=1e-10)


def test_bad_input():
  with pytest.raises(ValueError, match="log_probs"):
    maxk.unlikeliness_advantages([1.0, 0.0], [1.0, 2.0, 3.0])
  with pytest.raises(ValueError, match="beta"):
    maxk.unlikeliness_advantages([1.0, 0.0], [1.0, 2.0], beta=-0.1)
  with pytest.raises(ValueError, match="baseline"):
    maxk.unlikeliness_advantages([1.0, 0.0], [1.0, 2.0], baseline="loo")


# Bandits with a distinct reward per arm (so the advantage function, which sees rewards
# only, recovers each sample's arm and log-probability) and distinct arm probabilities.
_BANDITS = [
  ([0.5, 0.3, 0.2], [1.0, 0.0, 0.5], 3),
  ([0.45, 0.3, 0.15, 0.1], [1.0, 0.9, 0.0, 0.8], 4),
]


def _softmax(logits):
  z = np.exp(logits - np.max(logits))
  return z / z.sum()


def _advantage_fn(probs, rewards, beta, baseline, fn=maxk.unlikeliness_advantages):
  log_p, values = np.log(probs), np.asarray(rewards)

  def advantages(r):
    arm = np.argmin(np.abs(np.asarray(r)[..., None] - values), axis=-1)
    if fn is maxk.rloo_advantages:
      return _x64(fn, r)
    return _x64(fn, r, log_p[arm], beta=beta, baseline=baseline)

  return advantages


def _expected_gradient(logits, rewards, n, beta, baseline, fn=maxk.unlikeliness_advantages):
  probs = _softmax(logits)
  moments = testing.gradient_moments(
    _advantage_fn(probs, rewards, beta, baseline, fn), probs, rewards, n
  )
  assert moments.method == "exact"
  return moments.mean


@pytest.mark.parametrize("probs,rewards,n", _BANDITS)
@pytest.mark.parametrize("beta", [0.25, 1.0])
def test_expected_gradient_is_reinforce_on_the_frozen_reshaped_reward(probs, rewards, n, beta):
  p, r = np.asarray(probs), np.asarray(rewards)
  below = np.array([p[p < p[a]].sum() for a in range(p.size)])  # F(y).
  frozen = r * (1 - beta * (n - 1) / n * below)
  want = n * sum(p[a] * frozen[a] * (np.eye(p.size)[a] - p) for a in range(p.size))
  got = _expected_gradient(np.log(p), r, n, beta, "none")
  np.testing.assert_allclose(got, want, atol=1e-13)
  # Biased for E[r] (REINFORCE's n ∇E[r]) at beta > 0.
  exact = testing.exact_gradient(p, r, [float(n)])
  assert np.max(np.abs(got - exact)) > 1e-3


def _jacobian_asymmetry(probs, rewards, n, beta, baseline, fn=maxk.unlikeliness_advantages):
  """max |J − Jᵀ| of the expected gradient's Jacobian w.r.t. the logits, by central
  differences of exact means (a gradient field has a symmetric Jacobian)."""
  logits, h = np.log(probs), 1e-5
  cols = []
  for j in range(len(probs)):
    e = np.eye(len(probs))[j] * h
    plus = _expected_gradient(logits + e, rewards, n, beta, baseline, fn)
    minus = _expected_gradient(logits - e, rewards, n, beta, baseline, fn)
    cols.append((plus - minus) / (2 * h))
  jac = np.stack(cols, axis=1)
  return np.max(np.abs(jac - jac.T)), np.max(np.abs(jac))


_CURLED = [
  ([0.5, 0.3, 0.2], [1.0, 0.5, 0.0], 3),
  ([0.45, 0.3, 0.15, 0.1], [1.0, 0.9, 0.0, 0.8], 4),
]


@pytest.mark.parametrize("probs,rewards,n", _CURLED)
def test_expected_gradient_is_not_a_gradient(probs, rewards, n):
  # The control: RLOO follows n ∇E[r], whose Jacobian (a Hessian) is symmetric.
  asym, scale = _jacobian_asymmetry(probs, rewards, n, 0.0, "none", fn=maxk.rloo_advantages)
  assert asym < 1e-7 * max(scale, 1.0)
  for baseline in ("none", "grpo"):
    asym, scale = _jacobian_asymmetry(probs, rewards, n, 0.25, baseline)
    assert asym > 1e-3 * scale, baseline


def test_expected_gradient_is_a_gradient_when_only_the_extreme_arms_earn():
  # Arms by probability 0.5 > 0.3 > 0.2: the middle one earns 0, so the curl vanishes.
  asym, scale = _jacobian_asymmetry([0.5, 0.3, 0.2], [1.0, 0.0, 0.5], 3, 0.25, "none")
  assert asym < 1e-7 * max(scale, 1.0)
