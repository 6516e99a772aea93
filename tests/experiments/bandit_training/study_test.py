"""Tests of experiments.bandit_training.study: bandits, runs and one run's outputs."""

import json

import pytest

from experiments import config_checks
from experiments import schedules
from experiments.bandit_training import study
from experiments.bandit_training.configs import default

BANDIT_KWARGS = dict(num_arms=4, best_arm_prob=0.05, decoy_reward=0.6, theta0=0.3, sigma=0.2)


def test_make_bandit():
  policy, logits = study.make_bandit("hard", **BANDIT_KWARGS)
  assert policy.num_arms == 4 and logits.shape == (4,)
  toy, theta = study.make_bandit("gaussian", **BANDIT_KWARGS)
  assert toy.sigma == 0.2 and float(theta) == pytest.approx(0.3)
  with pytest.raises(ValueError, match="Unknown bandit='medium'"):
    study.make_bandit("medium", **BANDIT_KWARGS)


def test_make_runs():
  runs = study.make_runs(["grpo", "loo", "rloo"], ["1", "4:3:2"], num_steps=5, n=4)
  assert [(e, s.spec) for e, s in runs] == [
    ("grpo", "n/a"),
    ("loo", "1"),
    ("loo", "4:3:2"),
    ("rloo", "n/a"),
  ]
  assert runs[2][1] == schedules.Schedule("4:3:2", (4, 2), (3,))
  with pytest.raises(ValueError, match="k=8 must satisfy 1 <= k <= n=4"):
    study.make_runs(["loo"], ["8"], num_steps=5, n=4)
  with pytest.raises(ValueError, match="smaller than num_steps=5"):
    study.make_runs(["loo"], ["2:5:1"], num_steps=5, n=4)
  with pytest.raises(ValueError, match="at least one schedule"):
    study.make_runs(["loo"], [], num_steps=5, n=4)
  with pytest.raises(ValueError, match="valid options"):
    study.make_runs(["magic"], ["1"], num_steps=5, n=4)


def test_run_writes_results_curves_and_figures(tmp_path):
  config = default.get_config()
  config.update(
    bandits=("easy",),
    estimators=("loo_minus_one", "grpo"),
    k_schedules=("2:2:1",),
    n=3,
    num_steps=3,
    num_seeds=2,
    k_evals=(1, 3),
    optimizer="sgd",
    learning_rate=0.1,
    **BANDIT_KWARGS,
  )
  rows = study.run(config, str(tmp_path), show_progress=False)
  assert [(r["estimator"], r["schedule"], r["k_eval"]) for r in rows] == [
    ("loo_minus_one", "2:2:1", 1),
    ("loo_minus_one", "2:2:1", 3),
    ("grpo", "n/a", 1),
    ("grpo", "n/a", 3),
  ]
  assert all(r["num_steps"] == 3 and r["optimizer"] == "sgd" for r in rows)
  assert (tmp_path / "results.csv").exists() and (tmp_path / "curves.npz").exists()
  assert (tmp_path / "curves_easy.png").stat().st_size > 0
  assert json.loads((tmp_path / "config.json").read_text())["k_evals"] == [1, 3]


def test_run_checks_the_config_before_writing_anything(tmp_path):
  config = default.get_config()
  config.num_seeds = 0
  with pytest.raises(config_checks.ConfigError, match="config.num_seeds=0"):
    study.run(config, str(tmp_path / "out"), show_progress=False)
  assert not (tmp_path / "out").exists()
