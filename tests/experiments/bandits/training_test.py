"""Tests of experiments.bandits.training: vmapped policy-gradient training loops."""

import jax
import numpy as np
import pytest

from experiments import schedules
from experiments.bandits import policies
from experiments.bandits import training


def test_train_shapes_initial_metrics_and_reproducibility():
  policy, logits = policies.hard_bandit(6, best_arm_prob=0.05)
  kwargs = dict(
    estimator="loo_minus_one",
    schedule=schedules.parse_schedule("4:3:1"),
    num_steps=5,
    n=4,
    num_seeds=3,
    k_evals=[1, 4],
    pass_threshold=0.9,
    learning_rate=0.1,
  )
  curves = training.train(policy, logits, jax.random.key(0), **kwargs)
  assert curves["max_at_k"].shape == (3, 6, 2) and curves["pass_at_k"].shape == (3, 6, 2)
  np.testing.assert_array_equal(curves["k_opt"], [4, 4, 4, 1, 1])
  np.testing.assert_allclose(curves["max_at_k"][:, 0, 0], policy.max_at_k(logits, 1), rtol=1e-6)
  np.testing.assert_allclose(curves["pass_at_k"][:, 0, :], [[0.05, 1 - 0.95**4]] * 3, rtol=1e-5)
  # Seeds differ; the same key reproduces the run exactly.
  assert not np.allclose(curves["max_at_k"][0], curves["max_at_k"][1])
  again = training.train(policy, logits, jax.random.key(0), **kwargs)
  np.testing.assert_array_equal(curves["max_at_k"], again["max_at_k"])


def test_train_improves_the_objective():
  policy, logits = policies.easy_bandit(5)
  curves = training.train(
    policy,
    logits,
    jax.random.key(1),
    estimator="loo_minus_one",
    schedule=schedules.parse_schedule("2"),
    num_steps=60,
    n=8,
    num_seeds=4,
    k_evals=[1, 2],
    pass_threshold=0.9,
    learning_rate=0.1,
  )
  initial, final = curves["max_at_k"][:, 0, 1], curves["max_at_k"][:, -1, 1]
  assert np.all(final > initial + 0.2), (initial, final)


def test_train_gaussian_and_off_policy_inner_steps():
  toy = policies.GaussianToy(sigma=0.1)
  curves = training.train(
    toy,
    toy.init_params(0.5),
    jax.random.key(2),
    estimator="off_policy_exact",
    schedule=schedules.parse_schedule("4"),
    num_steps=40,
    n=8,
    num_seeds=2,
    k_evals=[4],
    pass_threshold=0.5,
    learning_rate=0.02,
    inner_steps=2,
  )
  assert np.all(np.isfinite(curves["max_at_k"]))
  assert np.all(curves["max_at_k"][:, -1, 0] > curves["max_at_k"][:, 0, 0])


@pytest.mark.parametrize(
  "overrides, match",
  [
    ({"schedule": schedules.parse_schedule("8")}, "k=8 must satisfy 1 <= k <= n=4"),
    ({"schedule": schedules.parse_schedule("2:5:1")}, "smaller than num_steps=5"),
    ({"num_steps": 0}, "num_steps=0 must satisfy num_steps >= 1"),
    ({"estimator": "x"}, "valid options"),
    ({"optimizer": "lion"}, "optimizer"),
    ({"learning_rate": float("nan")}, "learning_rate=nan must be finite and > 0"),
    ({"learning_rate": 0.0}, "learning_rate=0.0 must be finite and > 0"),
    ({"pass_threshold": float("inf")}, "pass_threshold=inf must be finite"),
    ({"num_seeds": 0}, "num_seeds=0"),
    ({"inner_steps": 0}, "inner_steps=0"),
    ({"n": 1, "schedule": schedules.parse_schedule("1")}, "n=1 must satisfy n >= 2"),
    ({"k_evals": [0]}, "k_evals"),
  ],
)
def test_train_validates_arguments(overrides, match):
  policy, logits = policies.easy_bandit(4)
  kwargs = dict(
    estimator="loo",
    schedule=schedules.parse_schedule("2"),
    num_steps=5,
    n=4,
    num_seeds=1,
    k_evals=[1],
    pass_threshold=0.9,
  )
  with pytest.raises(ValueError, match=match):
    training.train(policy, logits, jax.random.key(0), **{**kwargs, **overrides})


def test_summarize_rows():
  curves = {
    "max_at_k": np.array([[[0.1, 0.2], [0.5, 0.9]], [[0.1, 0.2], [0.3, 0.4]]]),
    "pass_at_k": np.array([[[0.0, 0.1], [0.6, 0.7]], [[0.0, 0.1], [0.2, 0.55]]]),
  }
  rows = training.summarize(curves, labels={"bandit": "b"}, k_evals=[1, 4])
  assert [r["k_eval"] for r in rows] == [1, 4]
  assert rows[0]["final_max_at_k_mean"] == pytest.approx(0.4)
  assert rows[0]["solved_fraction"] == 0.5 and rows[1]["solved_fraction"] == 1.0
  assert rows[1]["auc_pass_at_k"] == pytest.approx(np.mean([0.1, 0.7, 0.1, 0.55]))
  assert rows[0]["bandit"] == "b" and rows[0]["num_seeds"] == 2 and rows[0]["num_steps"] == 1
