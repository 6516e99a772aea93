"""The study's evaluation tables across seeds (computing only; rendering is in
:mod:`experiments.lm_study.summary_readme`): every run's own tables gathered with a
``task`` column, ``summary.csv``, ``paired_summary.csv``, ``unsolved_summary.csv`` and
``reward_hist.csv`` (columns: the module docstring of
:mod:`experiments.lm_study.summary`). ``contrasts.csv``, the declared contrasts, is
:mod:`~experiments.lm_study.contrast_table`'s."""

from __future__ import annotations

from collections.abc import Sequence
import math
import os
from typing import Any

from experiments.lm import contrasts
from experiments.lm import intervals
from experiments.lm import report_rows
from experiments.lm_study import files
from experiments.lm_study import matched_kl
from experiments.lm_study import runs as runs_lib
from experiments.lm_study import seeds as seeds_lib
from experiments.lm_study import significance

SCOPES = ("all", *report_rows.BINS)


# The gathered per-seed tables written to --workdir (the runs hold their prompts.csv).
GATHERED = ("results.csv", "bins.csv", "unsolved.csv", "paired.csv")


def per_seed_tables(runs: Sequence[runs_lib.Run]) -> dict[str, list[dict[str, Any]]]:
  """The report tables of every run (:data:`GATHERED`, and each seed's reward
  histogram under ``reward_hist_seeds``), recomputed, with a ``task`` column."""
  tables: dict[str, list[dict[str, Any]]] = {name: [] for name in GATHERED}
  tables["reward_hist_seeds"] = []
  for run in runs:
    mine = report_rows.report_tables(
      run.evals,
      run.bin_correct,
      seed=run.seed,
      prompts=run.prompts,
      keys=run.keys,
      bin_n=run.bin_n or None,
    )
    written = files.read_csv(os.path.join(run.folder, "results.csv"), runs_lib.RESULT_COLUMNS)
    runs_lib.check_results(written, mine["results.csv"], run.folder)
    mine["reward_hist_seeds"] = report_rows.reward_histogram_rows(run.evals, run.seed)
    path = os.path.join(run.folder, "reward_hist.csv")
    if os.path.exists(path):  # Runs written before reward_hist.csv existed have none.
      written = files.read_csv(path, ("rl_run", "bin", "count"))
      runs_lib.check_reward_hist(written, mine["reward_hist_seeds"], run.folder)
    for name in tables:
      tables[name].extend({**row, "task": run.task} for row in mine[name])
  return tables


def summary_rows(tables: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
  """summary.csv from the gathered results.csv and bins.csv rows."""
  groups: dict[tuple, dict[int, dict[str, Any]]] = {}
  for scope_rows, scope_of in (
    (tables["results.csv"], lambda r: "all"),
    (tables["bins.csv"], lambda r: r["bin"]),
  ):
    for r in scope_rows:
      key = (r["task"], r["stage"], r["method"], r["k_opt"], r["rl_run"], scope_of(r), r["k_eval"])
      groups.setdefault(key, {})[r["seed"]] = r
  out = []
  pending: list[tuple[dict[str, Any], str, list[float]]] = []  # Rows awaiting intervals.
  order = {scope: i for i, scope in enumerate(SCOPES)}
  # By task and scope; the sort is stable, so runs and k keep their order within.
  for key in sorted(groups, key=lambda k: (k[0], order[k[5]])):
    task, stage, method, k_opt, rl_run, scope, k = key
    by_seed = groups[key]
    seeds = sorted(by_seed)
    row: dict[str, Any] = {
      "task": task,
      "stage": stage,
      "method": method,
      "k_opt": k_opt,
      "k_eval": k,
      "scope": scope,
      "num_seeds": len(seeds),
      "seeds": " ".join(str(s) for s in seeds),
    }
    for metric in ("pass_at_k", "max_at_k"):
      values = [float(by_seed[s][metric]) for s in seeds]
      row.update(dict.fromkeys((metric, f"{metric}_lo", f"{metric}_hi"), math.nan))
      row[f"{metric}_seeds"] = seeds_lib.fmt_seeds(values)
      pending.append((row, metric, values))
    row["num_problems_seeds"] = " ".join(
      str(by_seed[s].get("num_problems", by_seed[s].get("num_prompts"))) for s in seeds
    )
    row["rl_run"] = rl_run
    out.append(row)
  across = seeds_lib.across_seeds_many([values for _, _, values in pending], (0.0, 1.0))
  for (row, metric, _), (mean, lo, hi) in zip(pending, across):
    row.update({metric: mean, f"{metric}_lo": lo, f"{metric}_hi": hi})
  return out


def paired_groups(paired: Sequence[dict[str, Any]]) -> dict[tuple, dict[int, dict[str, Any]]]:
  """(task, a_run, b_run, metric, k_eval) -> seed -> its paired.csv row."""
  groups: dict[tuple, dict[int, dict[str, Any]]] = {}
  for r in paired:
    key = (r["task"], r["a_run"], r["b_run"], r["metric"], int(r["k_eval"]))
    groups.setdefault(key, {})[int(r["seed"])] = r
  return groups


def paired_summary_rows(
  paired: Sequence[dict[str, Any]], declared: Sequence[dict[str, Any]] = ()
) -> list[dict[str, Any]]:
  """paired_summary.csv from the gathered paired.csv rows: every pair, metric and k,
  with the floored interval over seeds and its p-value. A row that is a declared
  contrast at the final step (one of ``declared``, :func:`contrast_rows`, either
  sign) carries its ``question``, ``p_holm`` and verdict; every other row is
  exploratory (a contrast at matched KL is not a row of paired.csv)."""
  index: dict[tuple, dict[str, Any]] = {}
  for c in declared:
    if c.get("at_kl", matched_kl.FINAL) != matched_kl.FINAL:
      continue
    metric = contrasts.MEASURES[c["measure"]]
    index[c["task"], c["a"], c["b"], metric, int(c["k"])] = c
    index[c["task"], c["b"], c["a"], metric, int(c["k"])] = c
  out = []
  for key, by_seed in paired_groups(paired).items():
    task, a_run, b_run, metric, k = key
    seeds = sorted(by_seed)
    diffs = [float(by_seed[s]["diff"]) for s in seeds]
    ses = [float(by_seed[s]["diff_se"]) for s in seeds]
    iv = seeds_lib.seed_interval(diffs, ses)
    first = by_seed[seeds[0]]
    declared_row = index.get(key)
    out.append(
      {
        "task": task,
        "a_run": a_run,
        "a_method": first["a_method"],
        "a_k_opt": first["a_k_opt"],
        "b_run": b_run,
        "b_method": first["b_method"],
        "b_k_opt": first["b_k_opt"],
        "metric": metric,
        "k_eval": k,
        "num_seeds": len(seeds),
        "diff": float(iv.mean),
        "diff_lo": float(iv.lo),
        "diff_hi": float(iv.hi),
        "p_value": float(iv.p_value),
        "question": declared_row["question"] if declared_row else "",
        "p_holm": declared_row["p_holm"] if declared_row else float("nan"),
        "verdict": declared_row["verdict"]
        if declared_row
        else significance.exploratory_verdict(float(iv.lo), float(iv.hi)),
        "seeds": " ".join(str(s) for s in seeds),
        "diff_seeds": seeds_lib.fmt_seeds(diffs),
        "diff_se_seeds": seeds_lib.fmt_seeds(ses),
        "diff_lo_seeds": seeds_lib.fmt_seeds(float(by_seed[s]["diff_lo"]) for s in seeds),
        "diff_hi_seeds": seeds_lib.fmt_seeds(float(by_seed[s]["diff_hi"]) for s in seeds),
      }
    )
  return out


def unsolved_summary_rows(unsolved: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
  """unsolved_summary.csv: base-unsolved problems solved, pooled over seeds (Wilson's
  interval), and each RL run's paired difference to the base model's own fresh
  evaluation of the same problems, averaged over seeds with the floored interval and
  an exploratory verdict (as for :func:`paired_summary_rows`)."""
  groups: dict[tuple, list[dict[str, Any]]] = {}
  for r in unsolved:
    groups.setdefault((r["task"], r["stage"], r["method"], r["k_opt"], r["rl_run"]), []).append(r)
  out = []
  for (task, stage, method, k_opt, rl_run), rows in groups.items():
    solved = sum(int(r["solved"]) for r in rows)
    total = sum(int(r["num_base_unsolved"]) for r in rows)
    mean, se, lo, hi = intervals.wilson_interval(solved, total)
    diff = (float("nan"),) * 3
    diff_verdict = ""
    with_problems = [r for r in rows if int(r["num_base_unsolved"]) > 0]
    if stage != "base" and with_problems:  # A seed without such problems has no difference.
      iv = seeds_lib.seed_interval(
        [float(r["diff_vs_base"]) for r in with_problems],
        [float(r["diff_vs_base_se"]) for r in with_problems],
      )
      diff = (float(iv.mean), float(iv.lo), float(iv.hi))
      diff_verdict = significance.exploratory_verdict(*diff[1:])
    out.append(
      {
        "task": task,
        "stage": stage,
        "method": method,
        "k_opt": k_opt,
        "num_seeds": len(rows),
        "num_base_unsolved": total,
        "solved": solved,
        "solved_fraction": mean,
        "solved_fraction_lo": lo,
        "solved_fraction_hi": hi,
        "solved_fraction_se": se,
        "solved_seeds": " ".join(f"{r['solved']}/{r['num_base_unsolved']}" for r in rows),
        "diff_vs_base": diff[0],
        "diff_vs_base_lo": diff[1],
        "diff_vs_base_hi": diff[2],
        "diff_vs_base_verdict": diff_verdict,
        "rl_run": rl_run,
      }
    )
  return out


def reward_hist_rows(per_seed: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
  """reward_hist.csv: per task, evaluation and reward bin, the samples' counts summed
  over seeds and their fraction of all samples (P x n per seed, summed), with each
  seed's fraction (``fraction_seeds``)."""
  groups: dict[tuple, list[dict[str, Any]]] = {}
  for r in per_seed:
    key = (r["task"], r["stage"], r["method"], r["k_opt"], r["rl_run"], r["bin"])
    groups.setdefault(key, []).append(r)
  totals: dict[tuple, int] = {}
  for key, rows in groups.items():
    totals[key[:5]] = totals.get(key[:5], 0) + sum(int(r["count"]) for r in rows)
  out = []
  for (task, stage, method, k_opt, rl_run, name), rows in groups.items():
    count = sum(int(r["count"]) for r in rows)
    total = totals[task, stage, method, k_opt, rl_run]
    out.append(
      {
        "task": task,
        "stage": stage,
        "method": method,
        "k_opt": k_opt,
        "rl_run": rl_run,
        "bin": name,
        "bin_lo": rows[0]["bin_lo"],
        "bin_hi": rows[0]["bin_hi"],
        "num_seeds": len(rows),
        "count": count,
        "fraction": count / total if total else float("nan"),
        "fraction_seeds": seeds_lib.fmt_seeds(float(r["fraction"]) for r in rows),
      }
    )
  return out
