"""The committed 8-seed LM study (docs/lm_study_8seed) holds what it claims.

It covers every task, seed and run of configs/study_8seed.py; each run's results recompute
from its committed per-prompt file; its declared contrasts recompute from its paired
file; every verdict follows its rule. The repository README's LM-study block, generated from
these files, is checked in study_readme_test.py.
"""

import csv
import filecmp
import glob
import math
import os
import re

import pytest

from experiments.lm import report_rows
from experiments.lm.configs import study_8seed as study_config
from experiments.lm_study import config as config_lib
from experiments.lm_study import contrast_table
from experiments.lm_study import runs as runs_lib
from experiments.lm_study import significance
from tests import binaries

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
DOCS = os.path.join(_ROOT, "docs", "lm_study_8seed")


def _read(path):
  with open(os.path.join(DOCS, path), newline="") as f:
    return list(csv.DictReader(f))


@pytest.fixture(name="results", scope="module")
def _results():
  return _read("results.csv")


def test_every_task_seed_and_run_of_the_study_config(results):
  runs = {(r["task"], int(r["seed"])) for r in results}
  assert runs == {(t, s) for t in study_config.TASKS for s in study_config.SEEDS}
  for task, seed in runs:
    rl_runs = {r["rl_run"] for r in results if (r["task"], int(r["seed"])) == (task, seed)}
    assert len(rl_runs) == 1 + len(study_config.RUNS), (task, seed, rl_runs)
  with open(os.path.join(DOCS, "README.md")) as f:
    report = f.read()
  assert report.startswith("# LM study: base, GRPO and max@k, two tasks, eight seeds\n")
  assert "INCOMPLETE" not in report


def test_each_runs_results_recompute_from_its_per_prompt_file(results):
  folders = sorted(glob.glob(os.path.join(DOCS, "runs", "*", "prompts.csv")))
  assert len(folders) == len(study_config.TASKS) * len(study_config.SEEDS)
  for path in folders:
    with open(path, newline="") as f:
      rows = list(csv.DictReader(f))
    (task,) = [t for t in study_config.TASKS if f"{t}_config.seed" in path]
    seed = int(rows[0]["seed"])
    run = runs_lib.run_from_prompt_rows(rows, task=task, seed=seed)
    written = [r for r in results if (r["task"], int(r["seed"])) == (task, seed)]
    runs_lib.check_results(written, report_rows.result_rows(run.evals, seed), path)


def test_declared_contrasts_recompute_from_the_paired_file():
  written = _read("contrasts.csv")
  recomputed = contrast_table.contrast_rows(
    _read("paired.csv"), config_lib.from_module(study_config)
  )
  assert len(written) == len(recomputed) == len(study_config.CONTRASTS) * len(study_config.TASKS)
  for old, new in zip(written, recomputed):
    assert list(old) == list(new)
    for column, value in new.items():
      if isinstance(value, float):
        if math.isnan(value):
          assert math.isnan(float(old[column])), column
        else:
          assert math.isclose(float(old[column]), value, rel_tol=1e-9, abs_tol=1e-12), column
      else:
        assert old[column] == str(value), column
  assert {int(r["num_seeds"]) for r in written} == {len(study_config.SEEDS)}


def test_every_verdict_follows_its_rule():
  declared = {(r["task"], r["question"]): r for r in _read("contrasts.csv")}
  for r in declared.values():
    holm = float(r["p_holm"])
    # No margin was declared: a difference is better, worse or not detected.
    expected = ("better" if float(r["diff"]) > 0 else "worse") if holm < 0.05 else "not detected"
    assert r["verdict"] == expected, r
    assert math.isnan(float(r["p_equivalence"])) and float(r["margin"]) == 0.02, r
  for r in _read("paired_summary.csv"):
    if r["question"]:
      assert r["verdict"] == declared[r["task"], r["question"]]["verdict"], r
    else:
      assert r["verdict"] == significance.exploratory_verdict(
        float(r["diff_lo"]), float(r["diff_hi"])
      )


def figure_embeds(folder):
  """(figures of ``folder`` the README does not embed, embeds without a line of
  explanation below them): every PNG must appear as ``![alt](name.png)`` followed by
  a blank line and one italic line."""
  with open(os.path.join(folder, "README.md")) as f:
    lines = f.read().splitlines()
  embedded = {}
  for i, line in enumerate(lines):
    match = re.fullmatch(r"!\[[^\]]+\]\(([\w.]+\.png)\)", line)
    if match:
      below = lines[i + 1 : i + 3]
      explained = below[:1] == [""] and len(below) == 2 and re.fullmatch(r"\*[^*]+\*", below[1])
      embedded[match.group(1)] = bool(explained)
  pngs = {n for n in os.listdir(folder) if n.endswith(".png")}
  return sorted(pngs - set(embedded)), sorted(n for n, ok in embedded.items() if not ok)


def test_the_readme_embeds_every_figure_with_a_line_of_explanation():
  assert figure_embeds(DOCS) == ([], [])


def test_annealed_and_constant_k_train_alike_up_to_the_switch():
  """The training figure's claim: within a seed, max@k annealed 8 -> 1 (k = 8 for the
  first 60 RL steps) and max@k at k_opt = 8 log the same steps up to step 60, since
  they share k, prompts and sampling keys; they part after it."""
  paths = sorted(glob.glob(os.path.join(DOCS, "runs", "*", "steps.csv")))
  assert len(paths) == len(study_config.TASKS) * len(study_config.SEEDS)
  for path in paths:
    with open(path, newline="") as f:
      rows = [r for r in csv.DictReader(f) if r["stage"] == "rl"]
    columns = ("reward", "entropy", "kl_to_warm_start", "clip_frac", "grad_norm")
    curves = {
      run: {int(float(r["step"])): tuple(r[c] for c in columns) for r in rows if r["run"] == run}
      for run in ("max_at_k_k8", "max_at_k_k8-60-1")
    }
    a, b = curves.values()
    assert all(a[s] == b[s] for s in range(1, 61)), path
    assert any(a[s] != b[s] for s in a if s > 61), path


@pytest.mark.parametrize("folder", ["lm_study_8seed", "lm_study_3seed"])
def test_every_committed_figure_is_at_least_900_px_wide(folder):
  paths = sorted(glob.glob(os.path.join(_ROOT, "docs", folder, "*.png")))
  assert paths
  for path in paths:
    with open(path, "rb") as f:
      header = f.read(24)
    assert header[:8] == b"\x89PNG\r\n\x1a\n", path
    assert int.from_bytes(header[16:20], "big") >= 900, path


# The command that wrote docs/lm_study_8seed (README's Small-LM RL block), minus its --workdir.
STUDY_8SEED = "--study_config=experiments.lm.configs.study_8seed"


@pytest.mark.slow  # Integration: a binary in a subprocess (README's second test step).
def test_contrasts_regenerate_byte_for_byte_from_the_paired_file(tmp_path):
  binaries.run(
    "experiments.lm_study.summary",
    STUDY_8SEED,
    f"--from_paired={os.path.join(DOCS, 'paired.csv')}",
    f"--workdir={tmp_path}",
  )
  assert filecmp.cmp(tmp_path / "contrasts.csv", os.path.join(DOCS, "contrasts.csv"), shallow=False)


@pytest.mark.slow  # About a minute; the test above covers the contrasts.
def test_the_summary_regenerates_byte_for_byte(tmp_path):
  """Every file of docs/lm_study_8seed but its runs/ is what the summary writes today."""
  binaries.run(
    "experiments.lm_study.summary",
    STUDY_8SEED,
    f"--study_dir={os.path.join(DOCS, 'runs')}",
    f"--workdir={tmp_path}",
  )
  committed = sorted(n for n in os.listdir(DOCS) if n != "runs")
  assert sorted(os.listdir(tmp_path)) == committed
  differ = [n for n in committed if not filecmp.cmp(tmp_path / n, os.path.join(DOCS, n), False)]
  assert differ == []
