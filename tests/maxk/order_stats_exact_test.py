"""Tests for maxk.order_stat_exact: exact rank objectives of categorical policies."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import maxk
from tests.maxk import enumeration
from tests.maxk.variants import VARIANTS


def _weights(k):
  rng = np.random.default_rng(k)
  return {
    "random": rng.normal(size=k),
    "min": maxk.rank_weights("min", k),
    "median": maxk.rank_weights("median", k),
    "top_m": maxk.rank_weights("top_m", k, m=(k + 1) // 2),
  }


def test_matches_enumeration_over_draws():
  """Every case of ties and zero probabilities, k = 1..4, against all L^k draws."""
  for probs, values in enumeration.BON_CASES:
    for k in range(1, 5):
      for name in ("random", ("min", "median", "top_m")[k % 3]):
        w = _weights(k)[name]
        got = maxk.order_stat_exact(probs, values, w)
        want = enumeration.exact_order_stat(probs / probs.sum(), values, w)
        np.testing.assert_allclose(got, want, rtol=2e-6, atol=2e-6, err_msg=f"{name} k={k}")


def test_batch_axes_and_max_identity():
  rng = np.random.default_rng(0)
  probs = rng.dirichlet(np.ones(4), size=(2, 3)).astype(np.float32)
  values = rng.integers(0, 3, size=(2, 3, 4)).astype(np.float32)
  w = rng.normal(size=3)
  got = maxk.order_stat_exact(probs, values, w)
  assert got.shape == (2, 3)
  want = [
    [enumeration.exact_order_stat(p, v, w) for p, v in zip(pr, vr)] for pr, vr in zip(probs, values)
  ]
  np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
  for k in (1, 2, 5, 40):
    np.testing.assert_allclose(
      maxk.order_stat_exact(probs, values, maxk.rank_weights("max", k)),
      maxk.max_at_k_exact(probs, values, k),
      rtol=2e-6,
      atol=1e-6,
    )


def test_grad_is_exact_including_zero_probabilities():
  """jax.grad w.r.t. probs equals the derivative of the enumerated polynomial,
  also at outcomes of zero probability (at the bottom, middle and top)."""
  cases = [
    (np.array([0.6, 0.0, 0.4]), np.array([1.0, -1.0, 2.0])),
    (np.array([0.5, 0.0, 0.5]), np.array([0.0, 0.5, 1.0])),
    (np.array([0.7, 0.3, 0.0]), np.array([0.0, 1.0, 3.0])),
    (np.array([0.2, 0.3, 0.5]), np.array([1.0, 1.0, 0.0])),
  ]
  for k in (1, 2, 3):
    w = np.random.default_rng(k).normal(size=k)
    # One compiled program per k (probs and rewards are its arguments), not op by op.
    grad = jax.jit(jax.grad(lambda p, v, w=w: maxk.order_stat_exact(p, v, w)))
    for probs, values in cases:
      g = grad(jnp.asarray(probs, jnp.float32), jnp.asarray(values, jnp.float32))
      want = enumeration.exact_order_stat_grad_probs(probs, values, w)
      np.testing.assert_allclose(g, want, rtol=1e-5, atol=2e-5, err_msg=f"{probs} k={k}")


def test_policy_gradient_through_softmax():
  logits = np.array([0.3, -0.5, 0.1, 0.7])
  values = np.array([0.0, 1.0, 1.0, -2.0])
  values32 = values.astype(np.float32)
  for k in (1, 2, 4):
    w = np.random.default_rng(k).normal(size=k)
    objective = lambda z, w=w: maxk.order_stat_exact(jax.nn.softmax(z), values32, w)
    g = jax.jit(jax.grad(objective))(jnp.asarray(logits, jnp.float32))  # One program per k.
    np.testing.assert_allclose(g, enumeration.exact_order_stat_grad(logits, values, w), atol=3e-6)


def test_large_k_identities():
  """For large k (no enumeration): the mean weights give E[r] for every k, lifting
  keeps the value, mixtures add, and max weights are max@k."""
  rng = np.random.default_rng(1)
  probs = rng.dirichlet(np.ones(50) * 0.3, size=2).astype(np.float32)
  values = rng.normal(size=(2, 50)).astype(np.float32)
  values[:, :10] = values[:, 10:20]  # ties
  mean_r = np.sum(probs.astype(np.float64) * values, -1) / probs.sum(-1)
  for k in (1000,):
    np.testing.assert_allclose(
      maxk.order_stat_exact(probs, values, maxk.rank_weights("mean", k)), mean_r, atol=2e-5
    )
    np.testing.assert_allclose(
      maxk.order_stat_exact(probs, values, maxk.rank_weights("max", k)),
      maxk.max_at_k_exact(probs, values, k),
      rtol=1e-5,
    )
  w = maxk.rank_weights("upper_tail_mean", 30, alpha=0.2)
  j = np.asarray(maxk.order_stat_exact(probs, values, w))
  assert np.all(np.isfinite(j))
  np.testing.assert_allclose(
    maxk.order_stat_exact(probs, values, maxk.lift_rank_weights(w, 300)), j, rtol=1e-5
  )
  w2 = maxk.rank_weights("bottom_m", 30, m=4)
  np.testing.assert_allclose(
    maxk.order_stat_exact(probs, values, w - 2 * w2),
    j - 2 * np.asarray(maxk.order_stat_exact(probs, values, w2)),
    atol=2e-5,
  )
  lifted = maxk.lift_rank_weights(w, 300)
  g = jax.jit(jax.grad(lambda p: jnp.sum(maxk.order_stat_exact(p, values, lifted))))(probs)
  assert np.all(np.isfinite(g))


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("k", [1, 3])
def test_jit_and_vmap(variant, k):
  probs, values = enumeration.BON_CASES[2]
  w = np.random.default_rng(k).normal(size=k)
  want = enumeration.exact_order_stat(probs / probs.sum(), values, w)
  f = lambda p, v: maxk.order_stat_exact(p, v, w)
  np.testing.assert_allclose(variant(f)(probs, values), want, rtol=1e-5, atol=1e-6)
  batch_p, batch_v = np.stack([probs] * 3), np.stack([values] * 3)
  np.testing.assert_allclose(
    variant(jax.vmap(f))(batch_p, batch_v), [want] * 3, rtol=1e-5, atol=1e-6
  )


# ±inf rewards, with zero-probability outcomes among them: [B, 4] probs and rewards.
INF_PROBS = np.array(
  [
    [0.5, 0.5, 0.0, 0.0],
    [0.0, 0.6, 0.4, 0.0],  # both infinities unreachable
    [0.3, 0.3, 0.4, 0.0],  # both reachable
    [0.2, 0.0, 0.8, 0.0],
    [0.5, 0.5, 0.0, 0.0],
    [0.25, 0.0, 0.75, 0.0],  # zero probability between ties
  ]
)
INF_REWARDS = np.array(
  [
    [-np.inf, 1.0, np.inf, 0.0],
    [-np.inf, 2.0, -1.0, np.inf],
    [-np.inf, np.inf, 0.0, 5.0],
    [np.inf, 3.0, np.inf, -np.inf],
    [-np.inf, -np.inf, 1.0, 1.0],
    [1.0, -np.inf, 1.0, 2.0],
  ]
)


@pytest.mark.parametrize("x64", [False, True])
def test_infinite_rewards_match_draws(x64):
  """E[Σ_{j: w_j != 0} w_j X_(j:k)] over all k-tuples of draws in IEEE arithmetic:
  zero-probability outcomes contribute nothing, ±inf of positive probability
  gives ±inf by the signs of the weights, and inf − inf NaN."""
  dtype = np.float64 if x64 else np.float32
  with jax.enable_x64(x64):
    # The reported cases, under jit: max@2 is 1 (not NaN) and inf (not NaN).
    f = jax.jit(lambda p, v: maxk.order_stat_exact(p, v, maxk.rank_weights("max", 2)))
    reported = [([0.0, 1.0], [-np.inf, 1.0]), ([0.5, 0.5], [1.0, np.inf])]
    got = [f(np.array(p, dtype), np.array(v, dtype)) for p, v in reported]
    np.testing.assert_array_equal(got, [1.0, np.inf])
    probs, values = INF_PROBS.astype(dtype), INF_REWARDS.astype(dtype)
    for k in (2, 3):
      rng = np.random.default_rng(k)
      weights = {
        "max": maxk.rank_weights("max", k),
        "min": maxk.rank_weights("min", k),
        "median": maxk.rank_weights("median", k),
        "signed": rng.normal(size=k),
        "zeros": np.where(np.arange(k) == k // 2, -1.0, 0.0),
      }
      for name, w in weights.items():
        want = [enumeration.exact_order_stat(p, v, w) for p, v in zip(probs, values)]
        got = maxk.order_stat_exact(probs, values, w)
        assert got.dtype == dtype
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6, err_msg=f"{name} k={k}")
      np.testing.assert_allclose(
        maxk.order_stat_exact(probs, values, weights["max"]),
        maxk.max_at_k_exact(probs, values, k),
        rtol=1e-6,
      )


def test_grad_with_a_zero_probability_infinite_reward_is_finite():
  """The value does not depend on a zero-probability ±inf reward; its gradient is
  that of the nearest finite reward in its place (documented)."""
  w = np.random.default_rng(0).normal(size=3)
  grad = jax.jit(jax.grad(lambda p, v: maxk.order_stat_exact(p, v, w)))  # One program.
  probs = jnp.array([0.0, 0.6, 0.4, 0.0])
  g = grad(probs, jnp.array([-np.inf, 2.0, -1.0, np.inf]))
  np.testing.assert_allclose(g, grad(probs, jnp.array([-1.0, 2.0, -1.0, 2.0])), rtol=1e-6)
  np.testing.assert_allclose(
    g, enumeration.exact_order_stat_grad_probs(probs, [-1.0, 2.0, -1.0, 2.0], w), atol=2e-5
  )


def test_nan_reward_only_affects_its_row_under_jit():
  probs = np.full((3, 4), 0.25, np.float32)
  values = np.arange(12, dtype=np.float32).reshape(3, 4)
  bad = values.copy()
  bad[1, 2] = np.nan
  f = jax.jit(lambda p, v: maxk.order_stat_exact(p, v, [0.2, 0.8]))
  out, clean = np.asarray(f(probs, bad)), np.asarray(f(probs, values))
  np.testing.assert_array_equal(out[[0, 2]], clean[[0, 2]])
  assert np.isnan(out[1])


def test_bad_input():
  p = np.full(3, 1 / 3, np.float32)
  v = np.arange(3.0)
  with pytest.raises(ValueError, match="weights must not be empty"):
    maxk.order_stat_exact(p, v, [])
  with pytest.raises(ValueError, match="weights must be 1-D"):
    maxk.order_stat_exact(p, v, [[1.0]])
  with pytest.raises(ValueError, match="weights must be finite"):
    maxk.order_stat_exact(p, v, [np.inf])
  with pytest.raises(ValueError, match="weights must be static"):
    jax.jit(lambda w: maxk.order_stat_exact(p, v, w))(jnp.ones(2))
  with pytest.raises(ValueError, match="probs must sum to 1"):
    maxk.order_stat_exact(np.ones(3), v, [1.0])
  with pytest.raises(ValueError, match="rewards must not contain NaN"):
    maxk.order_stat_exact(p, [0.0, np.nan, 1.0], [1.0])
  with pytest.raises(ValueError, match="shape"):
    maxk.order_stat_exact(p, np.arange(4.0), [1.0])
