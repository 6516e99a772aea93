r"""The audit at the top of an archived study's README: what its files show does not
hold (issue #30 on the 8-seed study), every number computed from the files
(:mod:`~experiments.lm_study.audit_measures` computes them; this module writes them).

A study config enables it with ``AUDIT = True`` (``experiments/lm/configs/study_8seed.py``);
:func:`audit_lines` then writes, from the summary's tables and the runs' training
curves:

1. **Counts.** How many declared contrasts pass Holm per task (contrasts.csv); the
   repository README's block is generated from it (``experiments.lm_study.readme``).
2. **Power.** For each max@k arm against GRPO at the k it optimises, the power of the
   declared test at the observed effect and at an effect of the margin (a two-sided
   t-test at level α/m, the first and most demanding step of Holm over the m declared
   contrasts, with S − 1 degrees of freedom and the floored standard error
   SE = √(max(s², mean(se²)) / S) of the row's per-seed differences and standard
   errors), the smallest effect with 80% power, and the seeds that 80% power at the
   margin needs at the same per-seed variance. contrasts.csv's ``power`` column is
   used where it has one.
3. **Distance from the warm start.** Per arm, the KL to the warm start at the last RL
   step (steps.csv; the base model is the warm start, KL 0), mean over seeds; and the
   share of the within-seed variation of final pass@n and pass@1 across arms that the
   final KL explains (the R² of per-seed-demeaned pass@k on per-seed-demeaned KL),
   with and without the base arm; the KL's rise over the last steps; and max@k at the
   largest k_opt minus GRPO at pass@n, raw and moved along the fitted slope to GRPO's
   KL.
4. **Training reward.** Mean reward over the first and the last ``WINDOW`` RL
   steps per task and arm (steps.csv), with t-intervals over seeds, the first step's
   clip fraction and the KL a few steps in.
5. **Provenance.** How many runs record the code version (a ``commit`` key in
   config.json or launch_status.json) and their start and end times.
6. **Held-out answers and sampling keys.** The share of held-out problems a
   warm-start solution string solves verbatim (``answer_shares``); the base arm's
   evaluation key (``experiments/lm/stages.py``:
   ``run_base_eval`` evaluates with the key of step 0, ``run_rl`` with that of its
   final step).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from experiments.lm_study import answer_shares
from experiments.lm_study import audit_measures as measures
from experiments.lm_study import markdown as md
from experiments.lm_study import readme_verdicts
from experiments.lm_study import runs as runs_lib
from experiments.lm_study import significance
from experiments.lm_study import steps as steps_lib

Row = Mapping[str, Any]
MAX_SEEDS, WINDOW, KL_STEPS_IN = measures.MAX_SEEDS, measures.WINDOW, measures.KL_STEPS_IN


def _percent(x: float) -> str:
  return "<1%" if x < 0.005 else f"{100 * x:.0f}%"


def _sign(x: float) -> str:
  return f"{x:+.3f}"


def audit_lines(
  runs: Sequence[runs_lib.Run],
  tables: Mapping[str, Sequence[Row]],
  steps: Mapping[tuple[str, int], steps_lib.Steps],
  *,
  margin: float,
) -> list[str]:
  """The README's "Audit" section (module docstring), as Markdown lines.

  Args:
    runs: the study's runs (their folders hold config.json and launch_status.json).
    tables: the summary's tables (contrasts.csv, results.csv, dynamics.csv).
    steps: (task, seed) -> the run's training curves.
    margin: keyword-only; the effect at which power is reported where contrasts.csv
      has no ``margin`` column.
  """
  rows = tables["contrasts.csv"]
  tasks = list(dict.fromkeys(str(r["task"]) for r in rows))
  labels = {str(r["rl_run"]): md.run_label(dict(r)) for r in tables["dynamics.csv"]}
  labels["base"] = "base"
  lines = [
    "## Audit",
    "",
    "This study is archived: a new one is being designed to answer its question. What its "
    "files show does not hold, each number computed from them by "
    "`experiments/lm_study/audit.py`:",
    "",
    _counts_item(rows, tasks),
  ]
  lines += _power_item(rows, margin)
  shortest = min((len(c["step"]) for s in steps.values() for c in s.rl.values()), default=0)
  if shortest >= 2 * WINDOW:
    lines += _kl_item(tables, steps, tasks, labels)
    lines += _reward_item(steps, tasks, labels)
  else:
    lines.append(
      f"3. and 4. (KL and training reward) need {2 * WINDOW} or more RL steps in every run's "
      f"`steps.csv`; the shortest has {shortest}."
    )
  return lines + _provenance_and_keys_items(runs, steps)


def _counts_item(rows: Sequence[Row], tasks: Sequence[str]) -> str:
  """Item 1: the declared contrasts that pass Holm, per task."""
  detected = {
    t: sum(
      readme_verdicts.verdict_of(r) in readme_verdicts.DETECTED for r in rows if r["task"] == t
    )
    for t in tasks
  }
  per_task = {t: sum(r["task"] == t for r in rows) for t in tasks}
  counts = ", ".join(f"{detected[t]} of {per_task[t]} on {t}" for t in tasks)
  return (
    f"1. **Counts.** The repository README miscounted the declared contrasts that pass "
    f"Holm's correction; `contrasts.csv` has {counts} ({sum(detected.values())} of "
    f"{len(rows)}). It also cited the null simulation with other constants than its test "
    "uses and described the program reward in an old form, and its test passed planted "
    "false statements. README's LM block is now generated from `contrasts.csv` "
    "(`python -m experiments.lm_study.readme`) and checked against planted falsehoods "
    "(`tests/experiments/lm_study/readme_8seed_test.py`)."
  )


def _power_item(rows: Sequence[Row], margin: float) -> list[str]:
  """Item 2: the power of max@k's declared tests against GRPO (none without such a
  contrast)."""
  power = measures.power_rows(rows, margin=margin)
  if not power:
    return []
  m = power[0]
  lines = [
    f"2. **Power.** Against GRPO at the k it optimises, max@k's declared test has little "
    f"power: a two-sided t-test at level {significance.ALPHA:g}/{len(rows)} (Holm's first "
    f"step over the {len(rows)} declared contrasts) with {m['num_seeds'] - 1} degrees of "
    "freedom and the floored standard error of the row:",
    "",
  ]
  lines += [
    "   " + line
    for line in md.table(
      (
        "task",
        "declared contrast",
        "a − b [floored interval]",
        "power at the observed effect",
        "power at ±margin",
        "effect with 80% power",
        "seeds for 80% power at ±margin",
      ),
      (
        (
          p["task"],
          p["question"],
          p["cell"],
          _percent(p["observed"]),
          f"{_percent(p['at_margin'])} at ±{p['margin']:g}",
          f"{p['mde']:.3f}",
          str(p["seeds"]) if p["seeds"] else f"> {MAX_SEEDS}",
        )
        for p in power
      ),
    )
  ]
  lines[-1:] = []  # md.table's blank line; the list continues.
  return lines + [
    "",
    "   The seeds assume each seed's variance stays what these 8 seeds show at 128 "
    "held-out problems. A difference that is not detected here is not evidence of no "
    "difference.",
  ]


def _provenance_and_keys_items(
  runs: Sequence[runs_lib.Run], steps: Mapping[tuple[str, int], steps_lib.Steps]
) -> list[str]:
  """Items 5 and 6: the runs' recorded code versions and times; the held-out answers
  and the sampling keys of the base and RL arms."""
  commits, times = measures.provenance_counts(runs)
  return [
    f"5. **Provenance.** {commits} of {len(runs)} runs record the code version they ran (a "
    f"commit in `config.json` or `launch_status.json`), and {times} of {len(runs)} their "
    "start and end times, so which code produced the results cannot be read from the files.",
    "6. **Held-out answers and sampling keys.** Problems are held out by problem key, not by "
    "answer. Replayed from each run's config (`experiments/lm_study/answer_shares.py`), the "
    "held-out problems one of whose correct answers is, verbatim, the solution string of a "
    f"warm-start example: {_answer_text(runs)}. The base arm's evaluation draws its samples with "
    "another key than the RL arms' (`experiments/lm/stages.py`: `run_base_eval` evaluates "
    "with the key of step 0, `run_rl` with that of its final step"
    + (f", step {_last_step(steps)}" if steps else "")
    + "), so base and RL arms do not share sampling keys.",
    "",
  ]


def _answer_text(runs: Sequence[runs_lib.Run]) -> str:
  """The answer-level overlap per task, in words (``answer_shares.task_shares``)."""
  shares = answer_shares.task_shares([r.folder for r in runs])
  if not shares:
    return "not replayable (no run's config.json holds the full config)"
  return "; ".join(
    f"{task} {seen} of {total} ({seen / total:.0%}; per seed {lo:.0%}-{hi:.0%})"
    for task, (total, seen, lo, hi) in shares.items()
  )


def _last_step(steps: Mapping[tuple[str, int], steps_lib.Steps]) -> int:
  first = next(iter(steps.values()))
  return int(next(iter(first.rl.values()))["step"][-1])


def _kl_item(
  tables: Mapping[str, Sequence[Row]],
  steps: Mapping[tuple[str, int], steps_lib.Steps],
  tasks: Sequence[str],
  labels: Mapping[str, str],
) -> list[str]:
  lines = [
    "3. **Arms differ in how far they move.** Only final checkpoints are evaluated. Final "
    "KL to the warm start (nats, mean over seeds; the base model is the warm start, 0), and "
    "the share of the within-seed variation of final pass@k across arms that it explains "
    "(R² of per-seed-demeaned pass@k on per-seed-demeaned KL):",
    "",
  ]
  for task in tasks:
    t = measures.kl_table(tables["results.csv"], steps, task)
    arms, kl, n = t["arms"], t["kl"], t["n"]
    order = np.argsort(kl.mean(axis=0))
    line = " < ".join(f"{labels.get(arms[i], arms[i])} {kl[:, i].mean():.2f}" for i in order)
    fits = {}
    for k in (n, 1):
      fits[k, True] = measures.within_seed_r2(kl, t["pass"][k])
      fits[k, False] = measures.within_seed_r2(kl[:, 1:], t["pass"][k][:, 1:])
    r2 = "; ".join(
      f"pass@{k}: {_percent(fits[k, True][1])} with the base arm, "
      f"{_percent(fits[k, False][1])} across the RL arms alone"
      for k in (n, 1)
    )
    lo, hi = min(t["rise"].values()), max(t["rise"].values())
    last = t["last_step"]
    change = (
      f"still rises in every arm, by {lo:.3f}-{hi:.3f} nats"
      if round(lo, 3) > 0
      else f"changes by {lo:+.3f} to {hi:+.3f} nats across arms"
    )
    text = (
      f"   - **{task}**: {line}. KL explains {r2}. From steps {last - 2 * WINDOW + 1}-"
      f"{last - WINDOW} to steps {last - WINDOW + 1}-{last} the mean KL {change} (mean over "
      "seeds)."
    )
    ks = [a for a in arms if a.startswith("max_at_k_k") and a[10:].isdigit()]
    if "grpo" in arms and ks:
      top = max(ks, key=lambda a: int(a[10:]))
      i, g = arms.index(top), arms.index("grpo")
      slope = fits[n, True][0]
      raw = float(np.mean(t["pass"][n][:, i] - t["pass"][n][:, g]))
      moved = raw - slope * float(np.mean(kl[:, i] - kl[:, g]))
      text += (
        f" {labels.get(top, top)} − GRPO at pass@{n} is {_sign(raw)}; moved along the fitted "
        f"slope ({slope:+.3f} per nat) to GRPO's KL it is {_sign(moved)}."
      )
    lines.append(text)
  lines += [
    "",
    "   Differences between arms at their final checkpoints may be what moving less or more "
    "gives, whatever the objective.",
  ]
  return lines


def _reward_item(
  steps: Mapping[tuple[str, int], steps_lib.Steps], tasks: Sequence[str], labels: Mapping[str, str]
) -> list[str]:
  lines = [
    f"4. **Does RL learn?** Mean training reward over the first and the last {WINDOW} RL "
    "steps (`steps.csv`; mean over seeds [t-interval]), the first step's clip fraction and "
    f"the KL to the warm start at step {KL_STEPS_IN}. Where the reward does not rise, the "
    "arm's declared contrasts measure drift, not learning.",
    "",
  ]
  for task in tasks:
    seeds = sorted(s for t, s in steps if t == task)
    first = steps[task, seeds[0]].rl
    n = len(next(iter(first.values()))["step"])
    lines += [f"   **{task}**:", ""]
    table = md.table(
      (
        "method",
        f"reward, steps 1-{WINDOW}",
        f"reward, steps {n - WINDOW + 1}-{n}",
        "last − first",
        "clip fraction, step 1",
        f"KL at step {KL_STEPS_IN}",
      ),
      measures.reward_rows(steps, task, labels),
    )
    lines += ["   " + line if line else line for line in table]
  return lines
