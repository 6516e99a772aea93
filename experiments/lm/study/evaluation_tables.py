"""The study's evaluation tables across seeds (computing only; rendering is in
:mod:`experiments.lm.study.report`): every run's own tables gathered with a ``task``
column, ``summary.csv``, ``contrasts.csv``, ``paired_summary.csv``,
``unsolved_summary.csv`` and ``reward_hist.csv`` (columns: the module docstring of
:mod:`experiments.lm.study_summary`), the declared contrasts at matched KL included
(:func:`matched_kl_contrasts`)."""

from __future__ import annotations

from collections.abc import Sequence
import math
import os
from typing import Any

from experiments.lm import contrasts
from experiments.lm import intervals
from experiments.lm import report_rows
from experiments.lm.study import config as config_lib
from experiments.lm.study import files
from experiments.lm.study import matched_kl
from experiments.lm.study import runs as runs_lib
from experiments.lm.study import seeds as seeds_lib
from experiments.lm.study.checkpoints import Arm

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


# contrasts.csv's columns after verdict when the study declares contrasts at matched KL:
# the KL level in nats ("final" for a final-step contrast) and the seeds in which both
# arms reached it (every seed for a final-step contrast).
MATCHED_COLUMNS = ("at_kl", "num_seeds_reached")


def _declared_row(
  task: str,
  c: contrasts.Contrast,
  k: int,
  seeds: Sequence[int],
  diffs: Sequence[float],
  ses: Sequence[float],
) -> dict[str, Any]:
  """contrasts.csv's row of contrast ``c`` on ``task`` (Holm's columns still absent)
  from its per-seed differences a − b and their standard errors over problems."""
  iv = seeds_lib.seed_interval(diffs, ses)
  t_lo, t_hi = seeds_lib.plain_bounds(diffs)
  return {
    "task": task,
    "question": c.question,
    "a": c.a,
    "b": c.b,
    "measure": c.measure,
    "k": k,
    "num_seeds": len(seeds),
    "seeds": " ".join(str(s) for s in seeds),
    "diff_seeds": seeds_lib.fmt_seeds(diffs),
    "se_seeds": seeds_lib.fmt_seeds(ses),
    "diff": float(iv.mean),
    "lo": float(iv.lo),
    "hi": float(iv.hi),
    "p_value": float(iv.p_value),
    "floored": bool(iv.floored),
    "t_lo": t_lo,
    "t_hi": t_hi,
    "family": c.family,
    "stderr": float(iv.stderr),
  }


def _paired_row(
  task: str, c: contrasts.Contrast, k: int, sign: float, by_seed: dict[int, dict[str, Any]]
) -> dict[str, Any]:
  """:func:`_declared_row` from the contrast's paired rows per seed, ``sign`` = -1
  where they hold b − a."""
  seeds = sorted(by_seed)
  diffs = [sign * float(by_seed[s]["diff"]) for s in seeds]
  ses = [float(by_seed[s]["diff_se"]) for s in seeds]
  return _declared_row(task, c, k, seeds, diffs, ses)


def matched_kl_contrasts(
  arms: dict[str, dict[int, dict[str, Arm]]], config: config_lib.StudyConfig
) -> dict[tuple[str, str], dict[str, Any]]:
  """(task, question) -> contrasts.csv's row (Holm's columns still absent) of every
  declared contrast with ``at_kl``, per task of ``arms`` (task -> seed -> run ->
  :class:`~experiments.lm.study.checkpoints.Arm`, the runs' checkpoints.csv).

  Each seed's difference and standard error is
  :func:`experiments.lm.study.matched_kl.seed_difference` at the contrast's KL
  (``matched_kl.matched_kl_rows``'s numbers: each arm's per-prompt pass@k where its
  mean held-out KL first reaches ``at_kl``, paired over prompts); the interval runs
  over the seeds in which both arms reached it (``seeds``; ``num_seeds_reached``),
  while ``num_seeds`` counts the task's seeds with checkpoints. Where fewer than two
  seeds reached it the row has no interval and a NaN p-value, which Holm counts in its
  family.

  Raises:
    StudyError: for a matched-KL contrast in max@k (checkpoints hold pass@k), seeds
      evaluated with different n, or a k above n.
  """
  out: dict[tuple[str, str], dict[str, Any]] = {}
  for task, by_seed in arms.items():
    ns = {arm.n for seed_arms in by_seed.values() for arm in seed_arms.values()}
    for c in config.matched_kl:
      if c.measure != "pass" or len(ns) != 1:
        raise files.StudyError(
          f"Task {task}: the contrast {c.question!r} at matched KL needs pass@k and one n "
          f"in every checkpoints.csv (measure {c.measure!r}, n in {sorted(ns)})."
        )
      try:
        k = c.resolve_k(next(iter(ns)))
      except ValueError as e:
        raise files.StudyError(f"Task {task}: {e}") from None
      assert c.at_kl is not None
      per_seed = {
        s: matched_kl.seed_difference(seed_arms[c.a], seed_arms[c.b], k, c.at_kl)
        if c.a in seed_arms and c.b in seed_arms
        else None
        for s, seed_arms in sorted(by_seed.items())
      }
      reached = [(s, v) for s, v in per_seed.items() if v is not None]
      row = _declared_row(
        task,
        c,
        k,
        [s for s, _ in reached],
        [d for _, (d, _) in reached],
        [se for _, (_, se) in reached],
      )
      row["num_seeds"] = len(per_seed)
      out[task, c.question] = row | {"at_kl": c.at_kl, "num_seeds_reached": len(reached)}
  return out


def contrast_rows(
  paired: Sequence[dict[str, Any]],
  config: config_lib.StudyConfig,
  *,
  matched: dict[tuple[str, str], dict[str, Any]] | None = None,
) -> list[dict[str, Any]]:
  """contrasts.csv: every declared contrast (``config.contrasts``) of every task in
  ``paired`` (paired.csv rows), in declared order per task, with the floored interval
  over seeds, its p-value, the Holm-adjusted one within its family over every task,
  the verdict (:func:`decide`), and the plain t-interval beside (``t_lo``, ``t_hi``).

  A final-step contrast comes from ``paired``: a contrast whose runs it holds as
  b − a is negated; k = "n" is the task's largest k_eval (its evaluation's n). A
  contrast with ``at_kl`` is not in paired.csv: its row comes from ``matched``
  (:func:`matched_kl_contrasts`), and every row then carries :data:`MATCHED_COLUMNS`
  after ``verdict`` (a final-step row: ``at_kl`` = ``final``, ``num_seeds_reached`` =
  ``num_seeds``); Holm's families span final-step and matched-KL rows alike. A study
  without ``at_kl`` contrasts keeps the columns it always had.

  Raises:
    StudyError: if a task lacks the runs or the k of a declared contrast, or a
      contrast with ``at_kl`` has no row in ``matched`` (no checkpoints.csv).
  """
  groups = paired_groups(paired)
  has_matched = bool(config.matched_kl)
  out = []
  for task in dict.fromkeys(r["task"] for r in paired):
    n = max(int(r["k_eval"]) for r in paired if r["task"] == task)
    for c in config.contrasts:
      if c.at_kl is not None:
        row = (matched or {}).get((task, c.question))
        if row is None:
          raise files.StudyError(
            f"Task {task}: the declared contrast {c.question!r} at KL {c.at_kl:g} needs the "
            "runs' checkpoints.csv, which this summary did not read."
          )
        out.append(dict(row))
        continue
      try:
        k = c.resolve_k(n)
      except ValueError as e:
        raise files.StudyError(f"Task {task}: {e}") from None
      sign, by_seed = 1.0, groups.get((task, c.a, c.b, c.metric, k))
      if by_seed is None:
        sign, by_seed = -1.0, groups.get((task, c.b, c.a, c.metric, k))
      if by_seed is None:
        raise files.StudyError(
          f"Task {task} has no paired difference {c.a} − {c.b} in {c.metric} at k={k}, "
          f"which the declared contrast {c.question!r} needs ({config.path})."
        )
      row = _paired_row(task, c, k, sign, by_seed)
      if has_matched:
        row |= {"at_kl": matched_kl.FINAL, "num_seeds_reached": row["num_seeds"]}
      out.append(row)
  margins = {c.question: c.margin for c in config.contrasts}
  rows = decide(out, margins, power_effect=config.power_effect)
  if has_matched:  # The matched-KL columns after every other, in every row.
    rows = [
      {c: v for c, v in r.items() if c not in MATCHED_COLUMNS} | {c: r[c] for c in MATCHED_COLUMNS}
      for r in rows
    ]
  return rows


def decide(
  rows: list[dict[str, Any]],
  margins: dict[str, float | None],
  *,
  power_effect: float | None = None,
) -> list[dict[str, Any]]:
  """Adds to each declared contrast's row (``family``, ``diff``, ``stderr``,
  ``p_value``, ``num_seeds``) its Holm-adjusted p-value within its family
  (``p_holm``), the equivalence columns (``margin``, ``p_equivalence`` and its Holm
  adjustment within the family's contrasts that declare a margin), the ``power`` of
  its test at an effect of ``margin`` (at α / family size, ``contrasts.power``; with
  the seeds that reached a matched KL, ``num_seeds_reached``, where a row has them)
  and the ``verdict`` (``contrasts.declared_verdict``). ``margins`` maps a question to its
  declared margin; a contrast without one gets ``power_effect`` as ``margin`` for its
  power alone (``p_equivalence`` NaN), or NaN."""
  families: dict[str, list[int]] = {}
  for i, row in enumerate(rows):
    families.setdefault(row["family"], []).append(i)
  for members in families.values():
    p_holm = contrasts.holm([rows[i]["p_value"] for i in members])
    for i, p in zip(members, p_holm.tolist()):
      rows[i]["p_holm"] = float(p)
    equivalence = []
    for i in members:
      row, declared_margin = rows[i], margins.get(rows[i]["question"])
      margin = declared_margin if declared_margin is not None else power_effect
      row["margin"] = float("nan") if margin is None else float(margin)
      row["p_equivalence"] = float("nan")
      df = int(row.get("num_seeds_reached", row["num_seeds"])) - 1
      if declared_margin is not None and df >= 1:
        row["p_equivalence"] = float(
          contrasts.equivalence_p_value(row["diff"], row["stderr"], df, declared_margin)
        )
        equivalence.append(i)
      alpha = contrasts.ALPHA / len(members)
      row["power"] = (
        contrasts.power(margin, row["stderr"], df, alpha=alpha)
        if margin is not None and df >= 1
        else float("nan")
      )
      row["p_equivalence_holm"] = float("nan")
    if equivalence:
      p_eq_holm = contrasts.holm([rows[i]["p_equivalence"] for i in equivalence])
      for i, p in zip(equivalence, p_eq_holm.tolist()):
        rows[i]["p_equivalence_holm"] = float(p)
  for row in rows:
    row["verdict"] = contrasts.declared_verdict(
      row["p_holm"], row["diff"], row["p_equivalence_holm"]
    )
  return rows


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
        else contrasts.exploratory_verdict(float(iv.lo), float(iv.hi)),
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
      diff_verdict = contrasts.exploratory_verdict(*diff[1:])
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
