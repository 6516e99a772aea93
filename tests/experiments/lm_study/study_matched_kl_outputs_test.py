"""The committed matched-KL LM study (docs/lm_study) holds what it claims.

It covers every seed of configs/study.py, complete; every run was made from the design
note's commit, unmodified, after that commit; each run's results recompute from its
committed per-prompt file; every declared contrast's p-values recompute from its
difference and standard error (scipy's t distribution, Holm within its family) and its
verdict follows the declared rule. The repository README's block, generated from these
files, is checked in readme_matched_kl_test.py.
"""

import csv
import datetime
import filecmp
import glob
import json
import math
import os
import subprocess

import numpy as np
import pytest
from scipy import stats

from experiments.lm import report_rows
from experiments.lm import workdir
from experiments.lm.configs import study as study_config
from experiments.lm_study import runs as runs_lib
from tests import binaries

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
DOCS = os.path.join(_ROOT, "docs", "lm_study")
ALPHA = 0.05


def _read(name):
  with open(os.path.join(DOCS, name), newline="") as f:
    return list(csv.DictReader(f))


def _seeds():
  return {(t, s) for t in study_config.TASKS for s in study_config.SEEDS}


def test_every_run_recorded_the_study_config_of_its_seed():
  # Field by field as a resume compares them (experiments.lm.workdir), so a run's
  # rl.runs recorded as "grpo,max_at_k@8,grpo[lr=3e-05]" (list fields were strings
  # then) is the config's tuple; only the run's facts (its path, its mesh) are not
  # the config's.
  paths = sorted(glob.glob(os.path.join(DOCS, "runs", "*", "config.json")))
  assert len(paths) == len(_seeds())
  for path in paths:
    with open(path) as f:
      recorded = json.load(f)
    assert isinstance(recorded["rl"]["runs"], str)  # The committed form, kept.
    config = study_config.get_config()
    config.seed = recorded["seed"]
    current = {**config.to_dict(), "num_devices_used": recorded["num_devices_used"]}
    assert workdir.config_differences(recorded, json.loads(json.dumps(current))) == [], path


def test_every_seed_of_the_design_is_summarised_and_the_study_is_complete():
  assert {(r["task"], int(r["seed"])) for r in _read("provenance.csv")} == _seeds()
  assert {(r["task"], int(r["seed"])) for r in _read("results.csv")} == _seeds()
  with open(os.path.join(DOCS, "README.md")) as f:
    report = f.read()
  assert "INCOMPLETE" not in report
  assert f"{len(study_config.SEEDS)} seeds" in report.splitlines()[0]
  assert {int(r["num_seeds"]) for r in _read("contrasts.csv")} == {study_config.NUM_SEEDS}


def test_every_run_is_of_the_design_commit_unmodified_and_started_after_it():
  rows = _read("provenance.csv")
  (design_commit,) = {r["design_commit"] for r in rows}
  assert {r["commit"] for r in rows} == {design_commit}
  assert {r["dirty"] for r in rows} == {"False"}
  assert all(r["device_kind"] for r in rows)
  for r in rows:
    start = datetime.datetime.fromisoformat(r["started_utc"])
    end = datetime.datetime.fromisoformat(r["ended_utc"])
    assert start < end, r
    assert float(r["hours"]) > 0, r
  try:
    committed = subprocess.run(
      ["git", "show", "-s", "--format=%cI", design_commit],
      cwd=_ROOT,
      capture_output=True,
      text=True,
      check=True,
    ).stdout.strip()
  except (OSError, subprocess.CalledProcessError):
    pytest.skip("the design commit is not in this checkout's history (a shallow clone)")
  design_time = datetime.datetime.fromisoformat(committed)
  assert all(datetime.datetime.fromisoformat(r["started_utc"]) >= design_time for r in rows)


def test_each_runs_results_recompute_from_its_per_prompt_file():
  results = _read("results.csv")
  paths = sorted(glob.glob(os.path.join(DOCS, "runs", "*", "prompts.csv")))
  assert len(paths) == len(_seeds())
  for path in paths:
    with open(path, newline="") as f:
      rows = list(csv.DictReader(f))
    (task,) = study_config.TASKS
    seed = int(rows[0]["seed"])
    run = runs_lib.run_from_prompt_rows(rows, task=task, seed=seed)
    written = [r for r in results if (r["task"], int(r["seed"])) == (task, seed)]
    runs_lib.check_results(written, report_rows.result_rows(run.evals, seed), path)


def _holm(p):
  """Holm's adjusted p-values, written out independently of experiments.lm_study.significance."""
  order = np.argsort(p, kind="stable")
  adjusted = np.empty(len(p))
  running = 0.0
  for rank, i in enumerate(order):
    running = max(running, min(1.0, (len(p) - rank) * p[i]))
    adjusted[i] = running
  return adjusted


def test_p_values_recompute_and_every_verdict_follows_the_declared_rule():
  rows = _read("contrasts.csv")
  assert {r["family"] for r in rows} == {"primary", "secondary"}
  for family in ("primary", "secondary"):
    members = [r for r in rows if r["family"] == family]
    p, p_eq = [], []
    for r in members:
      diff, se, margin = float(r["diff"]), float(r["stderr"]), float(r["margin"])
      df = int(r["num_seeds_reached"]) - 1
      p.append(2 * stats.t.sf(abs(diff) / se, df))
      p_eq.append(max(stats.t.sf((diff + margin) / se, df), stats.t.cdf((diff - margin) / se, df)))
      assert math.isclose(float(r["p_value"]), p[-1], rel_tol=1e-6, abs_tol=1e-12), r["question"]
      assert math.isclose(float(r["p_equivalence"]), p_eq[-1], rel_tol=1e-6, abs_tol=1e-12)
    holm, holm_eq = _holm(np.array(p)), _holm(np.array(p_eq))
    for r, h, h_eq in zip(members, holm, holm_eq):
      assert math.isclose(float(r["p_holm"]), h, rel_tol=1e-6, abs_tol=1e-12), r["question"]
      assert math.isclose(float(r["p_equivalence_holm"]), h_eq, rel_tol=1e-6, abs_tol=1e-12)
      if h < ALPHA:
        expected = "better" if float(r["diff"]) > 0 else "worse"
      elif h_eq < ALPHA:
        expected = "equivalent"
      else:
        expected = "not detected"
      assert r["verdict"] == expected, r["question"]
      if expected == "equivalent":  # TOST at 5%: the 90% interval inside the margin.
        df = int(r["num_seeds_reached"]) - 1
        half = stats.t.ppf(1 - ALPHA, df) * float(r["stderr"])
        margin = float(r["margin"])
        assert -margin < float(r["diff"]) - half and float(r["diff"]) + half < margin


def test_every_committed_figure_is_embedded_and_at_least_900_px_wide():
  from tests.experiments.lm_study import study_8seed_outputs_test  # pylint: disable=g-import-not-at-top

  assert study_8seed_outputs_test.figure_embeds(DOCS) == ([], [])
  paths = sorted(glob.glob(os.path.join(DOCS, "*.png")))
  assert paths
  for path in paths:
    with open(path, "rb") as f:
      header = f.read(24)
    assert header[:8] == b"\x89PNG\r\n\x1a\n", path
    assert int.from_bytes(header[16:20], "big") >= 900, path


@pytest.mark.slow  # Integration: the summary binary over every committed run (minutes).
def test_the_summary_regenerates_byte_for_byte(tmp_path):
  """Every file of docs/lm_study the summary writes is what it writes today; the design
  note's files (DESIGN.md, design.json, power.csv, pilot.csv, pilot/) are not its."""
  binaries.run(
    "experiments.lm_study.summary",
    "--study_config=experiments.lm.configs.study",
    f"--study_dir={os.path.join(DOCS, 'runs')}",
    f"--workdir={tmp_path}",
  )
  written = sorted(os.listdir(tmp_path))
  assert written and set(written) <= set(os.listdir(DOCS))
  differ = [n for n in written if not filecmp.cmp(tmp_path / n, os.path.join(DOCS, n), False)]
  assert differ == []
