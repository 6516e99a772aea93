"""The README's sections after the training dynamics (rendering only): pass@k and
max@k, crossings, each method at its own k_opt, base-unsolved problems, training
problems solved, reward histograms, split closeness and the exploratory tables."""

from __future__ import annotations

from collections.abc import Sequence
import math
from typing import Any

import numpy as np

from experiments.lm import report_rows
from experiments.lm_study import markdown as md
from experiments.lm_study import methods as methods_lib
from experiments.lm_study import runs as runs_lib

TABLE_KS = (1, 4, 16)  # The k of the pass@k / max@k tables, besides n.


def overall_tables(summary: Sequence[dict[str, Any]], n: int) -> list[str]:
  """pass@k and max@k over all problems at k = 1, 4, 16 and n, a row per run."""
  rows = [r for r in summary if r["scope"] == "all"]
  cells = {(md.label(r), int(r["k_eval"])): r for r in rows}
  labels = list(dict.fromkeys(md.label(r) for r in rows))
  ks = sorted({k for k in TABLE_KS if k <= n} | {n})
  lines = []
  for metric, short in (("pass_at_k", "pass"), ("max_at_k", "max")):
    lines += [f"Held-out {short}@k, all problems:", ""]
    lines += md.table(
      ("method", *[f"{short}@{k}" for k in ks]),
      ((lab, *[md.estimate(cells[lab, k], metric) for k in ks]) for lab in labels),
    )
  return lines


def bin_table(summary: Sequence[dict[str, Any]], k: int) -> list[str]:
  """pass@k per base-difficulty bin, a row per run."""
  rows = [r for r in summary if r["scope"] != "all" and int(r["k_eval"]) == k]
  scopes = [s for s in report_rows.BINS if any(r["scope"] == s for r in rows)]
  counts = {r["scope"]: r["num_problems_seeds"].replace(" ", "+") for r in rows}
  cells = {(md.label(r), r["scope"]): r for r in rows}
  labels = list(dict.fromkeys(md.label(r) for r in rows))
  lines = [f"pass@{k} by the base model's difficulty bin (problems per seed in the header):", ""]
  return lines + md.table(
    ("method", *[f"{s} ({counts[s]})" for s in scopes]),
    (
      (
        lab,
        *[md.estimate(cells[lab, s], "pass_at_k") if (lab, s) in cells else "–" for s in scopes],
      )
      for lab in labels
    ),
  )


def unsolved_table(unsolved_summary: Sequence[dict[str, Any]]) -> list[str]:
  lines = [
    "Base-unsolved problems solved (>= 1 of n correct): pooled over seeds with Wilson's",
    "interval, and the difference to the base model's own fresh evaluation of the same",
    "problems (paired within each seed, mean over seeds, floored interval):",
    "",
  ]
  return lines + md.table(
    (
      "method",
      "solved (per seed)",
      "fraction [Wilson]",
      "minus base [floored interval]",
      "verdict",
    ),
    (
      (
        md.label(r),
        f"{r['solved']}/{r['num_base_unsolved']} ({r['solved_seeds']})",
        md.estimate(r, "solved_fraction"),
        "" if r["stage"] == "base" else md.estimate(r, "diff_vs_base"),
        r["diff_vs_base_verdict"],
      )
      for r in unsolved_summary
    ),
  )


def key_differences(
  paired_summary: Sequence[dict[str, Any]],
  summary: Sequence[dict[str, Any]],
  n: int,
  declared: Sequence[tuple[str, str]] = (),
) -> list[str]:
  """The key differences of one task (:func:`experiments.lm_study.methods.key_pairs`
  of its runs in ``summary``, the ``declared`` contrasts' pairs first) in pass@k and
  max@k at k = 1 and n (exploratory)."""
  methods = methods_lib.methods_of_rows(r for r in summary if r["scope"] == "all")
  pairs = methods_lib.key_pairs(
    methods, {(r["a_run"], r["b_run"]) for r in paired_summary}, declared
  )
  index = {(r["a_run"], r["b_run"], r["metric"], int(r["k_eval"])): r for r in paired_summary}
  rows = []
  for a, b, label in pairs:
    for metric, short in (("pass_at_k", "pass"), ("max_at_k", "max")):
      for k in (1, n):
        r = index.get((a, b, metric, k))
        if r is not None:
          per_seed = ", ".join(f"{float(d):+.3f}" for d in r["diff_seeds"].split())
          rows.append(
            (
              label,
              f"{short}@{k}",
              md.estimate(r, "diff"),
              md.p_text(r["p_value"]),
              per_seed,
              r["verdict"],
            )
          )
  lines = [
    "Key differences (a − b, paired on the same problems within each seed; a declared",
    "contrast's row carries its Holm verdict):",
    "",
  ]
  return lines + md.table(
    ("a vs b", "metric", "mean over seeds [floored interval]", "p", "per seed", "verdict"), rows
  )


def pass_at_k_section(summary: Sequence[dict[str, Any]], tasks: Sequence[str]) -> list[str]:
  lines = ["## pass@k and max@k", ""]
  for task in tasks:
    mine = [r for r in summary if r["task"] == task]
    n = md.n_of(summary, task)
    lines += [f"### {task}", ""]
    lines += overall_tables(mine, n)
    lines += md.figure(
      f"pass_at_k_{task}.png",
      f"{task} pass@k and max@k, k = 1..{n}",
      "pass@k (top) and max@k (bottom) against k on a log axis: mean over seeds with the "
      "95% t-interval band, a panel per question, one colour per method in every panel.",
    )
  return lines


def crossings_section(crossings: Sequence[dict[str, Any]], tasks: Sequence[str]) -> list[str]:
  lines = [
    "## Crossings: where RL falls below the base model",
    "",
    "The smallest k at which a method's pass@k (max@k) falls below the base model's:",
    "from the means over seeds, and from each seed's own curves (`none`: never, up to n;",
    "`crossings.csv`). Exploratory.",
    "",
  ]
  index = {(r["task"], r["rl_run"], r["metric"]): r for r in crossings}
  rows = []
  for task in tasks:
    for run in dict.fromkeys(r["rl_run"] for r in crossings if r["task"] == task):
      p, m = index[task, run, "pass_at_k"], index[task, run, "max_at_k"]
      rows.append(
        (
          task,
          md.run_label(p),
          f"{p['crossing_k']} (n = {p['n']})",
          str(p["crossing_k_seeds"]),
          str(m["crossing_k"]),
          str(m["crossing_k_seeds"]),
        )
      )
  return lines + md.table(
    ("task", "method", "pass@k: k (mean)", "per seed", "max@k: k (mean)", "per seed"), rows
  )


def paired_lookup(
  paired_summary: Sequence[dict[str, Any]], task: str, a: str, b: str, metric: str, k: int
) -> tuple[str, str] | None:
  """(a − b [floored interval], verdict) from paired_summary rows, either order."""
  for x, y, sign in ((a, b, 1.0), (b, a, -1.0)):
    r = next(
      (
        r
        for r in paired_summary
        if (r["task"], r["a_run"], r["b_run"], r["metric"], int(r["k_eval"]))
        == (task, x, y, metric, k)
      ),
      None,
    )
    if r is not None:
      lo, hi = sorted((sign * float(r["diff_lo"]), sign * float(r["diff_hi"])))
      return md.cell(sign * float(r["diff"]), lo, hi), str(r["verdict"])
  return None


def _own_k_rows(
  summary: Sequence[dict[str, Any]], paired_summary: Sequence[dict[str, Any]], task: str
) -> list[tuple[str, ...]]:
  """One task's rows of :func:`own_k_section`."""
  runs = {r["rl_run"]: r for r in summary if r["task"] == task and r["scope"] == "all"}
  methods = methods_lib.methods_of_rows(runs.values())
  reference = methods_lib.reference_run(methods.values())
  rows = []
  for name, r in runs.items():
    k = None if methods[name].is_base else methods_lib.own_k(methods[name])
    if k is None:
      continue
    for metric, short in (("pass_at_k", "pass"), ("max_at_k", "max")):
      cells: list[str] = []
      for b in (methods_lib.BASE, reference):
        found = None
        if b is not None and b != name:
          found = paired_lookup(paired_summary, task, name, b, metric, k)
        cells += list(found or ("–", ""))
      rows.append((task, md.run_label(r), f"{short}@{k}", *cells))
  return rows


def own_k_section(
  summary: Sequence[dict[str, Any]], paired_summary: Sequence[dict[str, Any]], tasks: Sequence[str]
) -> list[str]:
  """Each RL method against the base model and GRPO at the k it optimises
  (:func:`experiments.lm_study.methods.own_k`)."""
  lines = [
    "## Each method at its own k_opt",
    "",
    "Each RL method against the base model and against GRPO in pass@k and max@k at the",
    "k it optimises (GRPO: 1; an annealed schedule: its last k), paired within seeds,",
    "floored interval over seeds. Exploratory, except the rows that are declared",
    "contrasts (their verdict is Holm's).",
    "",
  ]
  rows = [row for task in tasks for row in _own_k_rows(summary, paired_summary, task)]
  reference = methods_lib.FAMILY_NAMES[methods_lib.REFERENCE_FAMILY]
  return lines + md.table(
    ("task", "method", "at", "minus base", "verdict", f"minus {reference}", "verdict"), rows
  )


def unsolved_section(
  runs: Sequence[runs_lib.Run], unsolved_summary: Sequence[dict[str, Any]], tasks: Sequence[str]
) -> list[str]:
  bin_ns = sorted({r.bin_n for r in runs})
  n_eval = sorted({r.evals[0].n for r in runs})
  lines = [
    "## Base-unsolved problems",
    "",
    "A held-out problem is base-unsolved when none of the base model's "
    f"{' / '.join(map(str, bin_ns))} samples",
    "in its binning evaluation is correct (`bin_n` of the runs' prompts.csv; these",
    "samples are independent of the evaluations, which draw "
    f"{' / '.join(map(str, n_eval))} per problem). Exploratory.",
    "",
  ]
  for task in tasks:
    lines += [f"**{task}**:", ""]
    lines += unsolved_table([r for r in unsolved_summary if r["task"] == task])
    lines += md.figure(
      f"bins_{task}.png",
      f"{task} by base difficulty",
      "pass@1 and pass@n per base-difficulty bin (mean over seeds, t-interval) and the "
      "base-unsolved problems each method solves (pooled over seeds, Wilson's interval).",
    )
  return lines


def solved_training_section(solved: Sequence[dict[str, Any]]) -> list[str]:
  if not solved:
    return []
  lines = [
    "## Training problems solved (PKPO's measure)",
    "",
    "Distinct training problems with at least one correct sample in any RL step up to",
    "the last (`solved_cumulative` of `steps.csv`; PKPO's measure of solving harder",
    "problems), mean over seeds [t-interval], and the difference to GRPO within each",
    "seed (the runs of a seed share their training prompts) [plain t-interval: a count",
    "has no within-seed standard error]. Exploratory.",
    "",
  ]
  return lines + md.table(
    ("task", "method", "solved [t-interval]", "per seed", "minus GRPO [t-interval]", "verdict"),
    (
      (
        r["task"],
        md.run_label(r),
        md.cell(r["solved"], r["solved_lo"], r["solved_hi"], ".1f"),
        str(r["solved_seeds"]),
        ""
        if not math.isfinite(float(r["diff_vs_grpo"]))
        else md.cell(r["diff_vs_grpo"], r["diff_vs_grpo_lo"], r["diff_vs_grpo_hi"], "+.1f"),
        str(r["diff_vs_grpo_verdict"]),
      )
      for r in solved
    ),
  )


def reward_section(reward_hist: Sequence[dict[str, Any]], tasks: Sequence[str]) -> list[str]:
  lines = [
    "## Reward histograms",
    "",
    "The continuous rewards of the final evaluations' samples, each bin's fraction of",
    "all samples of all seeds (`reward_hist.csv`).",
    "",
  ]
  for task in tasks:
    rows = [r for r in reward_hist if r["task"] == task]
    bins = list(dict.fromkeys(r["bin"] for r in rows))
    index = {(r["rl_run"], r["bin"]): r for r in rows}
    runs = list(dict.fromkeys(r["rl_run"] for r in rows))
    lines += [f"**{task}**:", ""]
    lines += md.table(
      ("method", *bins),
      (
        (
          md.run_label(index[run, bins[0]]),
          *[f"{float(index[run, b]['fraction']):.3f}" for b in bins],
        )
        for run in runs
      ),
    )
    lines += md.figure(
      f"rewards_{task}.png",
      f"{task} reward histograms",
      "The fraction of the final evaluations' samples in each reward bin, all seeds "
      "pooled, on a log axis so that small bins show.",
    )
  return lines


def splits_section(splits: Sequence[dict[str, Any]], tasks: Sequence[str]) -> list[str]:
  if not splits:
    return []
  lines = [
    "## Split closeness",
    "",
    "Held-out problems share no key with a training problem (`overlap` 0, checked);",
    "the near share is the fraction of held-out problems with a training problem close",
    "to it (the definition below; `splits.csv`).",
    "",
  ]
  rows = []
  for task in tasks:
    mine = [s for s in splits if s["task"] == task]
    shares = [float(s["near_eval_share"]) for s in mine if s["near_eval_share"] != ""]
    definition = next((s["near_definition"] for s in mine if s["near_definition"]), "")
    rows.append(
      (
        task,
        " ".join(str(s["num_eval_problems"]) for s in mine),
        " ".join(str(s["near_eval_problems"]) or "–" for s in mine),
        f"{np.mean(shares):.3f}" if shares else "–",
        definition or "–",
      )
    )
  return lines + md.table(
    ("task", "eval problems per seed", "near per seed", "mean near share", "near means"), rows
  )


def exploratory_section(
  summary: Sequence[dict[str, Any]],
  paired_summary: Sequence[dict[str, Any]],
  tasks: Sequence[str],
  declared: Sequence[dict[str, Any]] = (),
) -> list[str]:
  """Per task, pass@1 and pass@n by difficulty bin and the key differences (the
  ``declared`` contrasts' pairs, contrasts.csv rows, first), with the contrasts
  figure."""
  lines = []
  for task in tasks:
    mine = [r for r in summary if r["task"] == task]
    n = md.n_of(summary, task)
    lines += [f"### {task}", ""]
    lines += bin_table(mine, 1) + bin_table(mine, n)
    lines += key_differences(
      [r for r in paired_summary if r["task"] == task],
      mine,
      n,
      methods_lib.declared_pairs(declared, task),
    )
    lines += md.figure(
      f"contrasts_{task}.png",
      f"{task} paired differences",
      "The key differences a − b at k = 1 and n: mean over seeds with the floored "
      "interval coloured by verdict, and each seed with its interval over problems (grey).",
    )
  return lines
