"""Tests of the bandit_training binary: outputs, flags and bad values."""

import csv
import json

import numpy as np
import pytest

from tests import binaries

MAIN = "experiments.bandit_training.main"


@pytest.mark.slow  # Integration: the binary end to end (README's second test step).
def test_binary_end_to_end(tmp_path):
  binaries.run(
    "experiments.bandit_training",
    f"--out_dir={tmp_path}",  # The old name of --workdir.
    "--config.bandits=hard,gaussian",
    "--config.estimators=loo_minus_one,grpo",
    "--config.k_schedules=1,2:3:1",
    "--config.num_steps=5",
    "--config.num_seeds=2",
    "--config.n=4",
    "--config.k_evals=1,2",
    "--config.num_arms=4",
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
  # --config.k_schedules=1,2:3:1: the integer 1 (fixed k) and the schedule's text.
  assert config["k_schedules"] == [1, "2:3:1"] and config["seed"] == 0
  assert config["workdir"] == str(tmp_path)
  curves = np.load(tmp_path / "curves.npz")
  assert curves["hard/loo_minus_one/2:3:1/pass_at_k"].shape == (2, 6, 2)
  for bandit in ("hard", "gaussian"):
    assert (tmp_path / f"curves_{bandit}.png").stat().st_size > 0


@pytest.mark.slow  # Integration: a binary in a subprocess (README's second test step).
def test_nan_learning_rate_exits_1_with_one_line_naming_it(tmp_path):
  # A NaN learning rate would train on NaN and write all-NaN curves: rejected first.
  proc = binaries.run(
    "experiments.bandit_training",
    f"--workdir={tmp_path / 'out'}",
    "--config.learning_rate=nan",
    check=False,
  )
  assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
  assert proc.stderr.strip().splitlines()[-1] == (
    "experiments.bandit_training: config.learning_rate=nan must be a finite number and > 0."
  )
  assert not (tmp_path / "out").exists()


@pytest.mark.slow  # Integration: a binary in a subprocess (README's second test step).
def test_workdir_validation():
  # The output folder: a file of the repository, a path below it, no path at all.
  # Each config field's checks: validation_test.py.
  argvs = [["--workdir=README.md"], ["--out_dir=README.md/sub"], ["--workdir="]]
  argvs.append(["--workdir=unused"])
  errors = binaries.flag_errors(MAIN, argvs)
  for error in errors[:3]:
    assert error is not None and "--workdir" in error, error
  assert errors[3] is None
