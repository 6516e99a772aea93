"""Tests of the bandit_variance binary: outputs, reproducibility and flag validation."""

import csv
import json
import math

from experiments import estimators as estimators_lib
from tests import binaries

MAIN = "experiments.bandit_variance.main"


def _run(out_dir, *extra):
  binaries.run(
    "experiments.bandit_variance",
    f"--out_dir={out_dir}",
    "--num_replicates=256",
    "--num_arms=3",
    *extra,
  )
  with open(out_dir / "results.csv") as f:
    return list(csv.DictReader(f))


def test_binary_end_to_end(tmp_path):
  out = tmp_path / "run"
  rows = _run(out, "--ns=2,4", "--ks=2")
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
  assert config["out_dir"] == str(out)
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
  # Same seed and flags: identical results (a cell's draws do not depend on which
  # other estimators or cells run, so a sub-run reproduces its rows).
  rows_again = _run(
    tmp_path / "again",
    "--ns=2",
    "--ks=2",
    "--policies=gaussian",
    "--estimators=loo_minus_one",
    "--objectives=max",
  )
  assert rows_again == [
    r
    for r in rows
    if r["policy"] == "gaussian" and r["n"] == "2" and r["estimator"] == "loo_minus_one"
  ]


def test_bad_flag_exits_nonzero_with_one_line_naming_it(tmp_path):
  proc = binaries.run(
    "experiments.bandit_variance", f"--out_dir={tmp_path / 'out'}", "--sigma=nan", check=False
  )
  assert proc.returncode != 0
  errors = [line for line in proc.stderr.splitlines() if "--sigma" in line]
  assert len(errors) == 1 and "finite" in errors[0], proc.stderr
  assert not (tmp_path / "out").exists()


def test_flag_validation():
  cases = {
    "--num_replicates=0": "--num_replicates",
    "--num_replicates=1": "--num_replicates",
    "--ns=0": "--ns",
    "--ns=4,x": "--ns",
    "--ns=": "--ns",
    "--ks=0,1": "--ks",
    "--ks=1.5": "--ks",
    "--sigma=-0.1": "--sigma",
    "--sigma=0": "--sigma",
    "--sigma=inf": "--sigma",
    "--theta=nan": "--theta",
    "--gaussian_shift=inf": "--gaussian_shift",
    "--categorical_shift=nan": "--categorical_shift",
    "--pass_threshold=nan": "--pass_threshold",
    "--logit_scale=-1": "--logit_scale",
    "--num_arms=1": "--num_arms",
    "--seed=-1": "--seed",
    "--policies=gaussian,uniform": "--policies",
    "--estimators=loo,magic": "magic",
    "--estimators=loo,loo": "repeat",
    "--objectives=max,median": "--objectives",
    "--objectives=min,min": "--objectives",
    "--objectives=": "--objectives",
    "--top_m=0": "--top_m",
    # The output folder: a file of the repository, a path below it, no path at all.
    "--out_dir=README.md": "--out_dir",
    "--out_dir=README.md/sub": "--out_dir",
    "--out_dir=": "--out_dir",
  }
  argvs = [["--out_dir=unused", arg] for arg in cases]
  argvs.append(["--out_dir=unused", "--objectives=min,maxrl", "--policies=gaussian"])
  argvs.append(["--out_dir=unused", "--ns=2", "--ks=4"])
  argvs.append(
    [
      "--out_dir=unused",
      "--ns=2,4",
      "--ks=1,8",
      "--sigma=0.5",
      "--estimators=all",
      "--objectives=min,maxrl",
      "--top_m=3",
    ]
  )
  # Every objective asked for gives rows. Once the first died after writing
  # config.json, and the second exited 0 without top_m.
  objectives = [
    ["--objectives=top_m", "--top_m=99"],
    ["--objectives=max,top_m", "--policies=gaussian"],
    ["--objectives=max,top_m", "--top_m=9", "--ks=1,4,8", "--ns=4,8,16"],
    ["--objectives=max,top_m", "--top_m=9", "--ks=1,4,8", "--ns=4,8,16", "--policies=gaussian"],
    ["--objectives=top_m", "--top_m=8", "--ks=8", "--ns=8"],
    ["--objectives=max,min", "--top_m=99"],  # top_m is not asked for.
  ]
  argvs += [["--out_dir=unused", *argv] for argv in objectives]
  errors = binaries.flag_errors(MAIN, argvs)
  for (arg, name), error in zip(cases.items(), errors):
    assert error is not None and name in error, (arg, error)
  errors, objective_errors = errors[: -len(objectives)], errors[-len(objectives) :]
  assert "--objectives" in errors[-3] and "categorical" in errors[-3]
  assert "k <= n" in errors[-2]
  assert errors[-1] is None
  for error in objective_errors[0], objective_errors[2]:
    assert error is not None and "--top_m <= k <= n" in error, error
  for error in objective_errors[1], objective_errors[3]:
    assert error is not None and "categorical bandit only" in error, error
  assert objective_errors[4:] == [None, None]
