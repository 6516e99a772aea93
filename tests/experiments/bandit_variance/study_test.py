"""Tests of experiments.bandit_variance.study: settings and the outputs of one run."""

import numpy as np
import pytest

from experiments.bandit_variance import study


def _settings(policies, **overrides):
  kwargs = dict(
    seed=0,
    theta=1.0,
    sigma=0.1,
    gaussian_shift=0.05,
    num_arms=3,
    logit_scale=1.0,
    categorical_shift=0.5,
  )
  return study.make_settings(policies, **{**kwargs, **overrides})


def test_make_settings():
  gaussian, categorical = _settings(["gaussian", "categorical"])
  assert gaussian.name == "gaussian" and float(gaussian.target) == 1.0
  np.testing.assert_allclose(float(gaussian.old), 0.95, rtol=1e-6)
  assert categorical.name == "categorical" and categorical.policy.num_arms == 3
  with pytest.raises(ValueError, match="Unknown policy='uniform'"):
    _settings(["uniform"])
  with pytest.raises(ValueError, match="sigma"):
    _settings(["gaussian"], sigma=-1.0)


def test_run_writes_results_and_figures(tmp_path):
  rows = study.run(
    str(tmp_path),
    policies=["gaussian"],
    estimators=["loo_minus_one", "grpo"],
    ns=[2, 3],
    ks=[2],
    num_replicates=32,
    seed=0,
    theta=1.0,
    sigma=0.1,
    gaussian_shift=0.05,
    num_arms=3,
    logit_scale=1.0,
    categorical_shift=0.5,
    pass_threshold=0.5,
    show_progress=False,
  )
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


def test_run_rejects_unknown_or_empty_objectives(tmp_path):
  kwargs = dict(
    policies=["gaussian"],
    estimators=["loo"],
    ns=[2],
    ks=[1],
    num_replicates=2,
    seed=0,
    theta=1.0,
    sigma=0.1,
    gaussian_shift=0.05,
    num_arms=3,
    logit_scale=1.0,
    categorical_shift=0.5,
    pass_threshold=0.5,
    show_progress=False,
  )
  with pytest.raises(ValueError, match="must name some of"):
    study.run(str(tmp_path), objectives=["median"], **kwargs)
  with pytest.raises(ValueError, match="give no row"):
    study.run(str(tmp_path), objectives=["min"], **kwargs)
