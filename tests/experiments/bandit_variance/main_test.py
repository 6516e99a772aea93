"""Tests of the bandit_variance binary: outputs, reproducibility, flags and bad values."""

import csv
import json
import math

import pytest

from experiments import estimators as estimators_lib
from tests import binaries

MAIN = "experiments.bandit_variance.main"


def _run(workdir, *extra, out_flag="workdir"):
  binaries.run(
    "experiments.bandit_variance",
    f"--{out_flag}={workdir}",
    "--config.num_replicates=256",
    "--config.num_arms=3",
    "--config.atlas_bandits=",
    *extra,
  )
  with open(workdir / "results.csv") as f:
    return list(csv.DictReader(f))


@pytest.mark.slow  # Integration: the binary end to end (README's second test step).
def test_binary_end_to_end(tmp_path):
  out = tmp_path / "run"
  rows = _run(out, "--config.ns=2,4", "--config.ks=2")
  for column in (
    "policy",
    "objective",
    "estimator",
    "n",
    "k",
    "mean",
    "bias",
    "variance",
    "stderr",
    "exact_gradient",
    "bias_z",
    "expected_unbiased",
  ):
    assert column in rows[0]
  max_rows = [r for r in rows if r["objective"] == "max"]
  # Every registered estimator of each objective, once per (policy, n, k) cell.
  max_names = estimators_lib.names("max")
  assert [r["estimator"] for r in max_rows] == list(max_names) * 2 * 2
  assert {r["policy"] for r in max_rows} == {"gaussian", "categorical"}
  # Rank objectives on the categorical bandit only, 2 (n, k) cells each.
  rank_rows = [r for r in rows if r["objective"] != "max"]
  assert {r["policy"] for r in rank_rows} == {"categorical"}
  expected = [(o, e) for o in ("top_m", "min", "maxrl") for e in estimators_lib.names(o)]
  assert sorted((r["objective"], r["estimator"]) for r in rank_rows) == sorted(expected * 2)
  assert {"maxrl", "maxrl_no_cv"} <= set(estimators_lib.names("maxrl"))
  for r in rows:
    values = {c: float(r[c]) for c in ("mean", "bias", "variance", "stderr", "exact_gradient")}
    assert all(math.isfinite(v) for v in values.values()), r
    assert values["variance"] >= 0
    assert math.isclose(
      values["stderr"], math.sqrt(values["variance"] / 256), rel_tol=1e-9, abs_tol=1e-300
    )
    if r["policy"] == "gaussian":  # Scalar gradient: the bias is signed, mean - exact.
      assert math.isclose(
        values["bias"], values["mean"] - values["exact_gradient"], rel_tol=1e-6, abs_tol=1e-9
      )
  config = json.loads((out / "config.json").read_text())
  assert config["num_replicates"] == 256 and config["theta"] == 1.0
  assert config["workdir"] == str(out) and config["ns"] == [2, 4]
  for policy in ("gaussian", "categorical"):
    assert (out / f"variance_{policy}.png").stat().st_size > 0
    assert (out / f"bias_{policy}.png").stat().st_size > 0
  for objective in ("top_m", "min", "maxrl"):
    assert (out / f"objective_{objective}.png").stat().st_size > 0
  # The variance check: cells with n >= 2k only, i.e. (n, k) = (4, 2), per policy and statistic.
  with open(out / "variance_check.csv") as f:
    check = list(csv.DictReader(f))
  assert [(r["policy"], r["statistic"], r["n"], r["k"]) for r in check] == [
    (p, s, "4", "2") for p in ("gaussian", "categorical") for s in ("max_at_k", "pass_at_k")
  ]
  for r in check:
    assert all(
      math.isfinite(float(r[c])) for c in ("empirical_variance", "mean_estimated_variance")
    )
  assert (out / "variance_check.png").stat().st_size > 0
  # Same seed and config: identical results (a cell's draws do not depend on which
  # other estimators or cells run, so a sub-run reproduces its rows). The old output
  # flag --out_dir still names the workdir.
  rows_again = _run(
    tmp_path / "again",
    "--config.ns=2",
    "--config.ks=2",
    "--config.policies=gaussian",
    "--config.estimators=loo_minus_one",
    "--config.objectives=max",
    out_flag="out_dir",
  )
  assert rows_again == [
    r
    for r in rows
    if r["policy"] == "gaussian" and r["n"] == "2" and r["estimator"] == "loo_minus_one"
  ]


@pytest.mark.slow  # Integration: a binary in a subprocess (README's second test step).
def test_bad_config_value_exits_1_with_one_line_naming_it(tmp_path):
  proc = binaries.run(
    "experiments.bandit_variance",
    f"--workdir={tmp_path / 'out'}",
    "--config.sigma=nan",
    check=False,
  )
  assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
  assert proc.stderr.strip().splitlines()[-1] == (
    "experiments.bandit_variance: config.sigma=nan must be a finite number and > 0."
  )
  assert not (tmp_path / "out").exists()


@pytest.mark.slow  # Integration: a binary in a subprocess (README's second test step).
def test_workdir_validation():
  # The output folder: a file of the repository, a path below it, no path at all; the
  # same through the alias --out_dir. Each config field's checks: validation_test.py.
  argvs = [
    ["--workdir=README.md"],
    ["--workdir=README.md/sub"],
    ["--workdir="],
    ["--out_dir=README.md"],
    [],
    ["--workdir=unused"],
  ]
  errors = binaries.flag_errors(MAIN, argvs)
  for error in errors[:4]:
    assert error is not None and "--workdir" in error, error
  assert "--workdir" in errors[4]  # Required.
  assert errors[5] is None
