"""The study's README (``report_markdown``): rendering only, from the tables of
:mod:`experiments.lm_study.evaluation_tables` and
:mod:`experiments.lm_study.training_tables`. This module holds the title, the
runs, the declared contrasts, the warm start and the training dynamics; the runs'
provenance is :mod:`experiments.lm_study.commits`'s, the other sections are in
:mod:`experiments.lm_study.summary_sections`."""

from __future__ import annotations

from collections.abc import Sequence
import math
from typing import Any

from experiments.lm_study import commits
from experiments.lm_study import config as config_lib
from experiments.lm_study import frontier
from experiments.lm_study import loading
from experiments.lm_study import markdown as md
from experiments.lm_study import methods as methods_lib
from experiments.lm_study import runs as runs_lib
from experiments.lm_study import summary_sections as sections
from experiments.lm_study import training_tables

_REPORT_HEADER = """\
Written by `python -m experiments.lm_study.summary` from the run folders of
`python -m launch.local --sweep={sweep} --out_root=out/lm_{stem}`
(config `{path}`), or from their committed copies in
`runs/` (`python -m experiments.lm_study.archive_runs`); each run folder holds its own
per-problem file `prompts.csv`. Each seed draws its own held-out problems, warm
start, training problems and samples. The module docstrings of
`experiments/lm_study/summary.py` and `experiments/lm_study/significance.py` define every
column and the statistics.

Only the declared contrasts test anything; every other section is exploratory: no
correction for the number of comparisons, and no claim about error rates. Cells:
mean over seeds [95% interval over seeds: the floored Student-t interval for a
difference paired within seeds, the plain Student-t interval otherwise].
"""


_DECLARED_NOTE = """\
The comparisons fixed before the runs (`CONTRASTS` of `{short_path}`; a − b,
paired on the same problems within each seed; `contrasts.csv`). The interval over
seeds is the Student-t interval with the between-seed variance floored at the
within-seed one (the mean over seeds of each difference's squared standard error
over problems), as seeds that agree by chance would otherwise give a narrow
interval. Holm's correction runs within each family of declared contrasts over
every task ({m} tests in all), and a contrast is `better` or `worse` when its
Holm-adjusted p-value is below 0.05 (the uncorrected p-value is beside it);
`equivalent within ±m` when it declares a margin m and the Holm-adjusted p-value of
the two one-sided tests of equivalence is below 0.05; otherwise `not detected`, with
the power its test had against a difference of that size (`contrasts.csv`'s
`power`): no claim that there is no difference.
"""


_EXPLORATORY_NOTE = """\
Comparisons not declared in advance, with no correction for their number (about 45
per task). Their verdict says only whether the floored interval over seeds excludes
0; across many such comparisons some will by chance. The per-seed intervals over
problems are in the CSV files.
"""


_NUMBER_WORDS = ("no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")


def _count_of(count: int, noun: str) -> str:
  """``three seeds``, ``one task``; digits from 10 on."""
  word = _NUMBER_WORDS[count] if count < len(_NUMBER_WORDS) else str(count)
  return f"{word} {noun}{'' if count == 1 else 's'}"


def _methods_phrase(runs: Sequence[runs_lib.Run]) -> str:
  """``base, GRPO and max@k``: the method families the runs evaluated, in order."""
  families = dict.fromkeys(
    methods_lib.method_of(e.run, e.method, e.k_opt).family_name for r in runs for e in r.evals
  )
  names = list(families)
  if len(names) <= 1:
    return "".join(names)
  return ", ".join(names[:-1]) + " and " + names[-1]


def report_title(runs: Sequence[runs_lib.Run]) -> str:
  """The README's title: the method families evaluated, and the counts of tasks and
  seeds summarised."""
  tasks, seeds = loading.tasks_of(runs), {r.seed for r in runs}
  counts = f"{_count_of(len(tasks), 'task')}, {_count_of(len(seeds), 'seed')}"
  methods = _methods_phrase(runs)
  return f"# LM study: {methods}, {counts}" if methods else f"# LM study: {counts}"


def _incomplete_note(missing: Sequence[str]) -> list[str]:
  """The README's warning that the study lacks runs (``--allow_incomplete``)."""
  if not missing:
    return []
  lines = [
    "**INCOMPLETE STUDY.** Summarised with `--allow_incomplete` without these runs of",
    "its design; its intervals and verdicts cover fewer seeds than designed, and the",
    "tasks may differ in their seeds:",
    "",
  ]
  return lines + [f"* {m}" for m in missing] + [""]


def _runs_section(runs: Sequence[runs_lib.Run]) -> list[str]:
  hours = sum(r.seconds for r in runs) / 3600
  lines = ["## Runs", ""]
  lines += md.table(
    ("task", "seed", "methods", "problems", "minutes"),
    (
      (r.task, str(r.seed), str(len(r.evals)), str(len(r.keys)), f"{r.seconds / 60:.1f}")
      for r in runs
    ),
  )
  return lines + [f"Total: {hours:.1f} hours of run time (the launcher's wall time).", ""]


def _warm_section(
  dynamics: Sequence[dict[str, Any]], results: Sequence[dict[str, Any]], tasks: Sequence[str]
) -> list[str]:
  lo, hi = training_tables.WARM_TARGET
  lines = [
    "## Warm start",
    "",
    "The SFT steps of each task were chosen so that the warm start's held-out pass@1",
    f"lies in [{lo:g}, {hi:g}]. Last point of each seed's warm-start curve (`steps.csv`:",
    "sampled pass@1 on the held-out problems at the last evaluated SFT step), beside the",
    "base model's pass@1 in the final evaluation (same problems, the evaluation's n):",
    "",
  ]
  for task in tasks:
    row = next(
      (r for r in dynamics if r["task"] == task and r["quantity"] == "warm_pass_at_1_final"), None
    )
    if row is None:
      continue
    values = md.seed_values(row)
    seeds = str(row["seeds"]).split()
    inside = sum(lo <= v <= hi for v in values)
    base = {
      str(r["seed"]): float(r["pass_at_k"])
      for r in results
      if r["task"] == task and r["rl_run"] == "base" and int(r["k_eval"]) == 1
    }
    lines += [
      f"**{task}**: {inside} of {len(values)} seeds in [{lo:g}, {hi:g}]; mean "
      f"{md.cell(row['mean'], row['lo'], row['hi'])} (t-interval over seeds).",
      "",
    ]
    lines += md.table(
      ("seed", "SFT step", "warm-start pass@1", "in target", "base pass@1 (final evaluation)"),
      (
        (s, step, f"{v:.3f}", "yes" if lo <= v <= hi else "**no**", f"{base.get(s, math.nan):.3f}")
        for s, step, v in zip(seeds, str(row["step_seeds"]).split(), values)
      ),
    )
    lines += md.figure(
      f"warm_start_{task}.png",
      f"{task} warm-start curve",
      "Held-out pass@1 of the warm start against the SFT step: each seed (grey), their "
      "mean (black), the target range shaded.",
    )
  return lines


# (dynamics.csv quantity, column header, number format) of the README's table.
_DYNAMICS_COLUMNS = (
  ("clip_frac_median", "median clip fraction", ".4f"),
  ("grad_clipped_share", "steps with gradient clipped", ".3f"),
  ("grad_norm_median", "median gradient norm", ".1f"),
  ("kl_to_warm_start_final", "final KL to warm start", ".3f"),
  ("entropy_final", "final entropy", ".3f"),
  ("ess_frac_mean", "mean ESS / n", ".3f"),
)


def _training_explanation(summary: Sequence[dict[str, Any]], task: str) -> str:
  """The training figure's line of explanation, naming the runs it draws on top of
  each other up to a step (:func:`experiments.lm_study.methods.coinciding_runs`)."""
  overall = [r for r in summary if r["task"] == task and r["scope"] == "all"]
  methods = methods_lib.methods_of_rows(overall)
  text = (
    "Reward, entropy, KL to the warm start and clip fraction against the RL step: mean "
    "over seeds with the pointwise 95% t-interval band, one colour per method."
  )
  for a, b, last in methods_lib.coinciding_runs(methods.values()):
    names = [methods_lib.short_label(methods[x], methods.values()) for x in (a, b)]
    text += (
      f" Up to step {last} (dotted line) {names[0]} and {names[1]} are identical by "
      "construction (same k, prompts and sampling keys): one curve hides the other."
    )
  return text


def _dynamics_section(
  dynamics: Sequence[dict[str, Any]], summary: Sequence[dict[str, Any]], tasks: Sequence[str]
) -> list[str]:
  lines = [
    "## Training dynamics",
    "",
    "Per RL run, over its RL steps: the median share of samples that PPO-style clipping",
    "zeroed at the last inner epoch, the share of steps whose gradient norm exceeded",
    "`rl.max_grad_norm` (clipped update), the median gradient norm, the KL to the warm",
    "start and the token entropy at the last step, and the mean effective sample size",
    "of the importance ratios over n (`dynamics.csv` has each seed's value). Mean over",
    "seeds [t-interval]. The figure shows the mean over seeds with the pointwise 95%",
    "t-interval over seeds as band.",
    "",
  ]
  for task in tasks:
    rows = [r for r in dynamics if r["task"] == task and r["rl_run"] != "warm_start"]
    if not rows:
      continue
    cells = {(r["rl_run"], r["quantity"]): r for r in rows}
    runs = list(dict.fromkeys(r["rl_run"] for r in rows))
    lines += [f"**{task}**:", ""]
    lines += md.table(
      ("method", *[h for _, h, _ in _DYNAMICS_COLUMNS]),
      (
        (
          md.run_label(cells[run, "clip_frac_median"]),
          *[
            md.cell(cells[run, q]["mean"], cells[run, q]["lo"], cells[run, q]["hi"], fmt)
            for q, _, fmt in _DYNAMICS_COLUMNS
          ],
        )
        for run in runs
      ),
    )
    lines += md.figure(
      f"training_{task}.png", f"{task} training curves", _training_explanation(summary, task)
    )
  return lines


_FRONTIER_NOTE = """\
Where each run stands against how far it moved from its warm start: held-out pass@k
against the mean held-out KL to the warm start, at every evaluated checkpoint of
every seed (`frontier.csv`; experiments/lm_study/frontier.py). A declared contrast
with a KL level compares two runs where each first reaches it, interpolated between
its checkpoints in each seed (experiments/lm_study/matched_kl.py), over the seeds in
which both did (`contrasts.csv`'s `at_kl` and `num_seeds_reached`).
"""


def frontier_section(rows: Sequence[dict[str, Any]], tasks: Sequence[str]) -> list[str]:
  """The frontiers: per task with frontier.csv rows, its figure and one line; none
  without checkpoints."""
  mine = [t for t in tasks if any(r["task"] == t for r in rows)]
  if not mine:
    return []
  lines = ["## Frontiers", "", _FRONTIER_NOTE]
  for task in mine:
    ks = sorted({int(r["k"]) for r in rows if r["task"] == task})
    lines += md.figure(
      f"frontier_{task}.png",
      f"{task} pass@k against KL to the warm start",
      f"{task}: held-out pass@k (k = {', '.join(str(k) for k in ks)}) against the held-out KL "
      "to the warm start, mean over seeds with the pointwise 95% t-interval band up to the "
      "largest KL every seed reached; markers: the checkpoints, mean over seeds.",
    )
  return lines


def report_markdown(
  runs: Sequence[runs_lib.Run],
  tables: dict[str, list[dict[str, Any]]],
  config: config_lib.StudyConfig,
  missing: Sequence[str] = (),
  audit: Sequence[str] = (),
) -> str:
  """README.md of the summary folder from the computed ``tables``
  (:func:`experiments.lm_study.summarize.compute_tables`) of the study of ``config``:
  (first, an archived study's ``audit`` lines, then the runs ``missing`` from an
  incomplete study) the runs, their provenance, the declared contrasts, the frontiers
  (only where the runs hold checkpoints), then the exploratory sections in the order
  of the module docstring of :mod:`experiments.lm_study.summary`."""
  tasks = loading.tasks_of(runs)
  declared = tables["contrasts.csv"]
  lines = [report_title(runs), ""]
  lines += list(audit)
  lines += _incomplete_note(missing)
  lines += [_REPORT_HEADER.format(sweep=config.sweep, stem=config.stem, path=config.path)]
  lines += _runs_section(runs)
  lines += commits.provenance_section(tables.get("provenance.csv", []), len(runs))
  note = _DECLARED_NOTE.format(m=len(declared), short_path=config.short_path)
  lines += ["## Declared contrasts", "", note]
  lines += md.declared_table(declared)
  lines += frontier_section(tables.get(frontier.FILE, []), tasks)
  if tables["dynamics.csv"]:
    lines += _warm_section(tables["dynamics.csv"], tables["results.csv"], tasks)
    lines += _dynamics_section(tables["dynamics.csv"], tables["summary.csv"], tasks)
  lines += sections.pass_at_k_section(tables["summary.csv"], tasks)
  lines += sections.crossings_section(tables["crossings.csv"], tasks)
  lines += sections.own_k_section(tables["summary.csv"], tables["paired_summary.csv"], tasks)
  lines += sections.unsolved_section(runs, tables["unsolved_summary.csv"], tasks)
  lines += sections.solved_training_section(tables["solved_training.csv"])
  lines += sections.reward_section(tables["reward_hist.csv"], tasks)
  lines += sections.splits_section(tables["splits.csv"], tasks)
  lines += ["## Exploratory", "", _EXPLORATORY_NOTE]
  lines += sections.exploratory_section(
    tables["summary.csv"], tables["paired_summary.csv"], tasks, declared
  )
  return "\n".join(lines).rstrip("\n") + "\n"
