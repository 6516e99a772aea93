"""Tests of experiments.bandits.rank_objectives: weights, exact gradients, unbiasedness."""

import math

import jax
import numpy as np
import pytest

from experiments import estimators as estimators_lib
from experiments import objectives
from experiments.bandits import policies
from experiments.bandits import rank_objectives
from experiments.bandits import variance
import maxk


def test_objective_weights():
  np.testing.assert_allclose(objectives.objective_weights("top_m", 4, top_m=2), [0, 0, 0.5, 0.5])
  assert objectives.objective_weights("top_m", 1, top_m=2) is None
  np.testing.assert_allclose(objectives.objective_weights("min", 3, top_m=2), [1, 0, 0])
  # maxrl at k=2 over binary rewards: pass@1 + pass@2 / 2 = E[(X1 + X2) / 2] + E[X_(2:2)] / 2.
  np.testing.assert_allclose(objectives.objective_weights("maxrl", 2, top_m=2), [0.5, 1.0])
  with pytest.raises(ValueError, match="Unknown objective='mode'"):
    objectives.objective_weights("mode", 2, top_m=2)
  with pytest.raises(ValueError, match="must be one of"):
    rank_objectives.estimators_for("max")


def test_exact_gradient_of_max_matches_the_policy_and_maxrl_matches_pass_at_k():
  policy, logits = policies.random_bandit(5, seed=3)
  weights = objectives.objective_weights("max", 3, top_m=2)
  np.testing.assert_allclose(
    rank_objectives.exact_objective_gradient(logits, weights, policy.rewards),
    policy.exact_gradient(logits, 3),
    atol=1e-6,
  )
  # maxrl = sum_{j<=3} pass@j / j, pass@j from the policy's closed form.
  correct = objectives.objective_rewards("maxrl", policy.rewards, 0.5)
  weights = objectives.objective_weights("maxrl", 3, top_m=2)
  # Jitted: one compilation instead of one per eager op of the reference.
  expected = jax.jit(jax.grad(lambda p: sum(policy.pass_at_k(p, j, 0.5) / j for j in (1, 2, 3))))(
    logits
  )
  np.testing.assert_allclose(
    rank_objectives.exact_objective_gradient(logits, weights, correct), expected, atol=1e-6
  )


def test_maxrl_peer_is_rescaled_maxk_maxrl_advantages():
  est = estimators_lib.get("maxrl", objective="maxrl")
  assert est in rank_objectives.estimators_for("maxrl")
  rewards = np.array([0.1, 0.9, 0.7, 0.2], np.float32)
  # Jitted (one compilation, not one per eager op); the reference is divided in NumPy.
  np.testing.assert_allclose(
    jax.jit(lambda r: est(r, 2, pass_threshold=0.5))(rewards),
    np.asarray(maxk.maxrl_advantages(np.array([0.0, 1.0, 1.0, 0.0]))) / 4,
    rtol=1e-6,
  )


def test_rank_objectives_rows_are_unbiased_where_expected():
  setting = variance.categorical_setting(4, seed=0)
  rows = rank_objectives.run_objectives(
    [variance.gaussian_setting(), setting],
    objectives=["max", "top_m", "min", "maxrl"],
    ns=[3],
    ks=[1, 3],
    num_replicates=4000,
    seed=0,
    pass_threshold=0.5,
    top_m=2,
  )
  assert {r["policy"] for r in rows} == {"categorical"}  # The Gaussian toy keeps max@k only.
  assert {r["objective"] for r in rows} == {"top_m", "min", "maxrl"}
  assert not [r for r in rows if r["objective"] == "top_m" and r["k"] == 1]
  assert list(rows[0])[:3] == ["policy", "objective", "estimator"]
  checked = set()
  for r in rows:
    for c in ("mean", "exact_gradient", "bias", "variance", "stderr"):
      assert math.isfinite(r[c]), r
    assert r["exact_gradient"] > 0, r
    if r["expected_unbiased"]:
      assert r["bias"] < 4 * r["stderr"], r
      checked.add((r["objective"], r["estimator"], r["k"]))
  # The registry's baselines of each objective and cell (top_m needs k >= 2), and
  # maxrl_no_cv at n = k = 3.
  cells = [("top_m", 3), ("min", 1), ("min", 3), ("maxrl", 1), ("maxrl", 3)]
  baselines = {(o, e.name, k) for o, k in cells for e in estimators_lib.entries(o, kind="baseline")}
  assert checked == baselines | {("maxrl", "maxrl_no_cv", 3)}
  # The check can fail: MaxRL's peer targets sum_{j<n} pass@j / j, not sum_{j<=1}.
  (peer,) = [r for r in rows if (r["estimator"], r["n"], r["k"]) == ("maxrl", 3, 1)]
  assert not peer["expected_unbiased"] and peer["bias"] > 4 * peer["stderr"], peer
