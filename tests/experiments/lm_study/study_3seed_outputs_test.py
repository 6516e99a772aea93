"""The committed first LM study (docs/lm_study_3seed) holds what it claims.

Its results recompute from its per-prompt file, it covers every method, task and
seed it was run with (its config's runs, frozen here: configs/study.py now defines
the 8-seed study), and every interval and verdict agrees with its numbers.  The
8-seed study and the README's claims about it are checked in
study_8seed_outputs_test.py.
"""

import csv
import math
import os

import pytest

from experiments.lm import report_rows
from experiments.lm.configs import study_8seed as study_config
from experiments.lm_study import config as config_lib
from experiments.lm_study import contrast_table
from experiments.lm_study import runs as runs_lib
from experiments.lm_study import significance
from tests.experiments.lm.run_outputs_test import CONTRACT_COLUMNS
from tests.experiments.lm_study.study_8seed_outputs_test import figure_embeds

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
DOCS = os.path.join(_ROOT, "docs", "lm_study_3seed")
# The 3-seed study's RL runs (its configs/study.py at the time).
RUNS_3SEED = (
  "grpo,rloo,max_at_k@1,max_at_k@4,max_at_k@8,max_at_k@8:60:1,max_at_k@4/first_order,"
  "max_at_k@4/ppo_clip"
).split(",")


def _read(name):
  with open(os.path.join(DOCS, name), newline="") as f:
    return list(csv.DictReader(f))


@pytest.fixture(name="results", scope="module")
def _results():
  return _read("results.csv")


def test_every_task_seed_and_method_of_the_study_config(results):
  assert list(results[0])[: len(CONTRACT_COLUMNS)] == CONTRACT_COLUMNS
  for task in study_config.TASKS:
    mine = [r for r in results if r["task"] == task]
    assert len({r["seed"] for r in mine}) >= 3, task
    methods = {r["method"] for r in mine}
    for label in ("grpo", "rloo", "anneal", "exact", "first_order", "ppo_clip"):
      assert any(label in m for m in methods), (task, label)
    k_opts = {r["k_opt"] for r in mine if r["method"].startswith("max_at_k")}
    assert {"1", "4", "8"} <= k_opts
    for seed in {r["seed"] for r in mine}:
      assert len({r["rl_run"] for r in mine if r["seed"] == seed}) == 1 + len(RUNS_3SEED)


def test_results_recompute_from_the_per_prompt_file(results):
  prompts = _read("prompts.csv")
  groups = {}
  for row in prompts:
    groups.setdefault((row["task"], int(row["seed"])), []).append(row)
  assert len(groups) == len({(r["task"], r["seed"]) for r in results})
  for (task, seed), rows in groups.items():
    run = runs_lib.run_from_prompt_rows(rows, task=task, seed=seed)
    written = [r for r in results if (r["task"], int(r["seed"])) == (task, seed)]
    runs_lib.check_results(written, report_rows.result_rows(run.evals, seed), f"{task}/{seed}")


def test_intervals_contain_their_estimates(results):
  for r in results:
    for metric in ("pass_at_k", "max_at_k"):
      lo, mid, hi = (float(r[c]) for c in (f"{metric}_lo", metric, f"{metric}_hi"))
      assert 0.0 <= lo <= mid + 1e-12 and mid <= hi + 1e-12 and hi <= 1.0, r
  for r in _read("summary.csv"):
    if int(r["num_seeds"]) >= 2:
      lo, mid, hi = (float(r[c]) for c in ("pass_at_k_lo", "pass_at_k", "pass_at_k_hi"))
      assert lo <= mid <= hi, r


def test_contrasts_recompute_from_the_paired_file():
  """contrasts.csv holds what study_summary computes from the committed paired.csv.

  The file predates the equivalence and power columns and the verdict words
  better / worse / not detected: its columns must be the leading ones of today's,
  and its verdict "significant" today's better or worse, "not significant" today's
  not detected."""
  written = _read("contrasts.csv")
  recomputed = contrast_table.contrast_rows(
    _read("paired.csv"), config_lib.from_module(study_config)
  )
  assert len(written) == len(recomputed) == len(study_config.TASKS) * 8
  renamed = {"better": "significant", "worse": "significant", "not detected": "not significant"}
  for old, new in zip(written, recomputed):
    assert set(old) <= set(new)
    for column in old:
      value = new[column]
      if column == "verdict":
        assert old[column] == renamed[value], column
      elif isinstance(value, float):
        assert math.isclose(float(old[column]), value, rel_tol=1e-9, abs_tol=1e-12), column
      else:
        assert old[column] == str(value), column
  assert {r["k"] for r in written if r["question"].endswith("pass@n")} == {"32"}


def test_paired_summary_verdicts_follow_their_rule():
  """A summary written by the current code: every verdict is a declared contrast's
  (as in contrasts.csv) or exploratory by its floored interval. The committed 3-seed
  summary predates that rule; its README must then say its verdicts are superseded."""
  rows = _read("paired_summary.csv")
  assert rows
  if "p_value" not in rows[0]:
    with open(os.path.join(DOCS, "README.md")) as f:
      report = " ".join(f.read().split())
    assert "were written by an earlier rule of the summary and are superseded" in report
    assert "The declared contrasts of `configs/study.py`" in report and "`contrasts.csv`" in report
    return
  declared = {(r["task"], r["question"]): r["verdict"] for r in _read("contrasts.csv")}
  for r in rows:
    if r["question"]:
      assert r["verdict"] == declared[r["task"], r["question"]], r
    else:
      verdict = significance.exploratory_verdict(float(r["diff_lo"]), float(r["diff_hi"]))
      assert r["verdict"] == verdict, r


def test_held_out_splits_do_not_overlap(results):
  splits = _read("splits.csv")
  assert {(s["task"], s["seed"]) for s in splits} == {(r["task"], r["seed"]) for r in results}
  assert all(s["overlap"] == "0" for s in splits)


def test_the_study_is_complete_and_its_title_counts_it(results):
  """Every task of the study config with the same 3 seeds, as the README's title says."""
  runs = {(r["task"], int(r["seed"])) for r in results}
  seeds = sorted({seed for _, seed in runs})
  assert runs == {(task, seed) for task in study_config.TASKS for seed in seeds}
  assert len(seeds) == 3
  with open(os.path.join(DOCS, "README.md")) as f:
    report = f.read()
  assert report.startswith("# LM study: every estimator, two tasks, three seeds\n")
  assert "INCOMPLETE" not in report


def test_the_readme_embeds_every_figure_with_a_line_of_explanation():
  assert figure_embeds(DOCS) == ([], [])
