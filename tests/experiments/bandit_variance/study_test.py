"""Tests of experiments.bandit_variance.study: settings and the outputs of one run."""

import json

import numpy as np
import pytest

from experiments import config_checks
from experiments.bandit_variance import study
from experiments.bandit_variance.configs import default


def _config(**fields):
  config = default.get_config()
  config.update(num_arms=3, atlas_bandits=())  # The atlas: atlas_test.py and the smoke run.
  config.update(fields)
  return config


def test_make_settings():
  gaussian, categorical = study.make_settings(_config(), ("gaussian", "categorical"))
  assert gaussian.name == "gaussian" and float(gaussian.target) == 1.0
  np.testing.assert_allclose(float(gaussian.old), 0.95, rtol=1e-6)
  assert categorical.name == "categorical" and categorical.policy.num_arms == 3
  with pytest.raises(ValueError, match="Unknown policy='uniform'"):
    study.make_settings(_config(), ("uniform",))
  with pytest.raises(ValueError, match="sigma"):
    study.make_settings(_config(sigma=-1.0), ("gaussian",))


def test_run_writes_results_and_figures(tmp_path):
  config = _config(
    policies=("gaussian",),
    estimators=("loo_minus_one", "grpo"),
    ns=(2, 3),
    ks=(2,),
    num_replicates=32,
  )
  config.objectives = ("max",)
  rows = study.run(config, str(tmp_path), show_progress=False)
  assert [(r["n"], r["estimator"]) for r in rows] == [
    (2, "loo_minus_one"),
    (2, "grpo"),
    (3, "loo_minus_one"),
    (3, "grpo"),
  ]
  header = (tmp_path / "results.csv").read_text().splitlines()[0].split(",")
  assert header[:5] == ["policy", "objective", "estimator", "n", "k"]
  assert {r["objective"] for r in rows} == {"max"}  # The Gaussian toy keeps max@k only.
  assert not (tmp_path / "variance_check.csv").exists()  # No cell with n >= 2k.
  assert (tmp_path / "variance_gaussian.png").stat().st_size > 0
  assert (tmp_path / "bias_gaussian.png").stat().st_size > 0
  written = {**config.to_dict(), "workdir": str(tmp_path)}
  # The config as JSON holds it: its tuples are lists.
  assert json.loads((tmp_path / "config.json").read_text()) == json.loads(json.dumps(written))
  assert json.loads((tmp_path / "config.json").read_text())["ns"] == [2, 3]


def test_run_checks_the_config_before_writing_anything(tmp_path):
  # Unknown objectives, and rank objectives without the categorical bandit (no row).
  for fields in dict(objectives=("median",)), dict(objectives=("min",), policies=("gaussian",)):
    with pytest.raises(config_checks.ConfigError, match="config.objectives="):
      study.run(_config(**fields), str(tmp_path / "out"), show_progress=False)
  assert not (tmp_path / "out").exists()
