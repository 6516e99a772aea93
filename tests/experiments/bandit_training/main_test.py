"""Tests of the bandit_training binary: outputs and flag validation."""

import csv
import json

import numpy as np

from tests import binaries

MAIN = "experiments.bandit_training.main"


def test_binary_end_to_end(tmp_path):
  binaries.run(
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


def test_nan_learning_rate_exits_nonzero_with_one_line_naming_it(tmp_path):
  # A NaN learning rate would train on NaN and write all-NaN curves: rejected first.
  proc = binaries.run(
    "experiments.bandit_training",
    f"--out_dir={tmp_path / 'out'}",
    "--learning_rate=nan",
    check=False,
  )
  assert proc.returncode != 0
  errors = [line for line in proc.stderr.splitlines() if "--learning_rate" in line]
  assert len(errors) == 1 and "finite" in errors[0], proc.stderr
  assert not (tmp_path / "out").exists()


def test_flag_validation():
  cases = {
    "--learning_rate=inf": "--learning_rate",
    "--learning_rate=0": "--learning_rate",
    "--gaussian_learning_rate=nan": "--gaussian_learning_rate",
    "--num_steps=0": "--num_steps",
    "--num_steps=-3": "--num_steps",
    "--num_seeds=0": "--num_seeds",
    "--n=0": "--n",
    "--n=1": "--n",
    "--inner_steps=0": "--inner_steps",
    "--k_evals=0": "--k_evals",
    "--k_evals=2,x": "--k_evals",
    "--k_schedules=": "--k_schedules",
    "--k_schedules=8:0:1": "--k_schedules",
    "--k_schedules=8:400:1": "--k_schedules",
    "--k_schedules=4:100:2:50:1": "--k_schedules",
    "--k_schedules=16": "--k_schedules",
    "--k_schedules=8:100": "--k_schedules",
    "--pass_threshold=nan": "--pass_threshold",
    "--best_arm_prob=1": "--best_arm_prob",
    "--decoy_reward=0": "--decoy_reward",
    "--theta0=inf": "--theta0",
    "--sigma=-0.1": "--sigma",
    "--num_arms=2": "--num_arms",
    "--seed=-1": "--seed",
    "--bandits=easy,medium": "--bandits",
    "--estimators=magic": "magic",
    # The output folder: a file of the repository, a path below it, no path at all.
    "--out_dir=README.md": "--out_dir",
    "--out_dir=README.md/sub": "--out_dir",
    "--out_dir=": "--out_dir",
  }
  argvs = [["--out_dir=unused", arg] for arg in cases]
  argvs.append(["--out_dir=unused", "--bandits=easy", "--num_arms=2"])
  argvs.append(["--out_dir=unused", "--k_schedules=2:10:1", "--num_steps=11", "--n=2"])
  errors = binaries.flag_errors(MAIN, argvs)
  for (arg, name), error in zip(cases.items(), errors):
    assert error is not None and name in error, (arg, error)
  assert errors[-2] is None  # Only the hard bandit needs 3 arms.
  assert errors[-1] is None
