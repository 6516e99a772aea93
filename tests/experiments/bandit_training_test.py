"""Tests for experiments.bandits.training and the bandit_training binary."""

import csv
import json
import os
import subprocess
import sys

import jax
import numpy as np
import pytest

from experiments.bandits import policies
from experiments.bandits import training
from tests import REPO_ROOT

REPO = REPO_ROOT


def test_parse_schedule():
  s = training.parse_schedule("4", 10)
  assert s.segments == ((4, 10),) and s.spec == "4" and s.max_k == 4
  s = training.parse_schedule("8:6:1", 10)
  assert s.segments == ((8, 6), (1, 4)) and s.max_k == 8
  assert [s.k_at(t) for t in (0, 5, 6, 9)] == [8, 8, 1, 1]
  s = training.parse_schedule("8:2:4:5:1", 10)
  assert s.segments == ((8, 2), (4, 3), (1, 5))
  for bad in ("0", "8:6", "a", "8:0:1", "8:10:1", "8:6:4:6:1", "4:x:1"):
    with pytest.raises(ValueError, match="schedule|k="):
      training.parse_schedule(bad, 10)
  with pytest.raises(ValueError, match="num_steps"):
    training.parse_schedule("4", 0)


def test_train_shapes_initial_metrics_and_reproducibility():
  policy, logits = policies.hard_bandit(6, best_arm_prob=0.05)
  schedule = training.parse_schedule("4:3:1", 5)
  kwargs = dict(
    estimator="loo_minus_one",
    schedule=schedule,
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
    schedule=training.parse_schedule("2", 60),
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
    schedule=training.parse_schedule("4", 40),
    n=8,
    num_seeds=2,
    k_evals=[4],
    pass_threshold=0.5,
    learning_rate=0.02,
    inner_steps=2,
  )
  assert np.all(np.isfinite(curves["max_at_k"]))
  assert np.all(curves["max_at_k"][:, -1, 0] > curves["max_at_k"][:, 0, 0])


def test_train_validates_arguments():
  policy, logits = policies.easy_bandit(4)
  kwargs = dict(estimator="loo", n=4, num_seeds=1, k_evals=[1], pass_threshold=0.9)
  with pytest.raises(ValueError, match="k=8 must satisfy 1 <= k <= n=4"):
    training.train(
      policy, logits, jax.random.key(0), schedule=training.parse_schedule("8", 5), **kwargs
    )
  with pytest.raises(ValueError, match="valid options"):
    training.train(
      policy,
      logits,
      jax.random.key(0),
      schedule=training.parse_schedule("2", 5),
      **{**kwargs, "estimator": "x"},
    )
  with pytest.raises(ValueError, match="optimizer"):
    training.train(
      policy,
      logits,
      jax.random.key(0),
      schedule=training.parse_schedule("2", 5),
      optimizer="lion",
      **kwargs,
    )


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


def test_binary_end_to_end(tmp_path):
  env = {
    **os.environ,
    "PYTHONPATH": REPO + os.pathsep + os.environ.get("PYTHONPATH", ""),
    "JAX_PLATFORMS": "cpu",
  }
  subprocess.run(
    [
      sys.executable,
      "-m",
      "experiments.bandit_training",
      f"--out_dir={tmp_path}",
      "--bandits=hard,gaussian",
      "--estimators=loo_minus_one,grpo",
      "--k_schedules=1,2:3:1",
      "--num_steps=5",
      "--num_seeds=2",
      "--n=4",
      "--k_evals=1,2",
      "--num_arms=4",
    ],
    cwd=REPO,
    env=env,
    check=True,
    capture_output=True,
    timeout=300,
  )
  with open(tmp_path / "results.csv") as f:
    rows = list(csv.DictReader(f))
  # 2 bandits x (2 schedules of loo_minus_one + 1 grpo run) x 2 k_evals.
  assert len(rows) == 2 * 3 * 2
  assert {(r["estimator"], r["schedule"]) for r in rows} == {
    ("loo_minus_one", "1"),
    ("loo_minus_one", "2:3:1"),
    ("grpo", "n/a"),
  }
  for r in rows:
    assert 0.0 <= float(r["final_pass_at_k_mean"]) <= 1.0
    assert 0.0 <= float(r["final_max_at_k_mean"]) <= 1.0
    assert r["num_steps"] == "5" and r["num_seeds"] == "2"
  config = json.loads((tmp_path / "config.json").read_text())
  assert config["k_schedules"] == ["1", "2:3:1"] and config["seed"] == 0
  curves = np.load(tmp_path / "curves.npz")
  assert curves["hard/loo_minus_one/2:3:1/pass_at_k"].shape == (2, 6, 2)
  for bandit in ("hard", "gaussian"):
    assert (tmp_path / f"curves_{bandit}.png").stat().st_size > 0
