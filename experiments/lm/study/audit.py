r"""The audit at the top of an archived study's README: what its files show does not
hold (issue #30 on the 8-seed study), every number computed from the files.

A study config enables it with ``AUDIT = True`` (``experiments/lm/configs/study_8seed.py``);
:func:`audit_lines` then writes, from the summary's tables and the runs' training
curves:

1. **Counts.** How many declared contrasts pass Holm per task (contrasts.csv); the
   repository README's block is generated from it (``experiments.lm.study_readme``).
2. **Power.** For each max@k arm against GRPO at the k it optimises, the power of the
   declared test at the observed effect and at an effect of the margin
   (:func:`power`: two-sided t-test at level α/m, the first and most demanding step
   of Holm over the m declared contrasts, with S − 1 degrees of freedom and the
   floored standard error SE = √(max(s², mean(se²)) / S) of the row's per-seed
   differences and standard errors), the smallest effect with 80% power
   (:func:`min_detectable`), and the seeds that 80% power at the margin needs at
   the same per-seed variance (:func:`seeds_for_power`). contrasts.csv's ``power``
   column is used where it has one.
3. **Distance from the warm start.** Per arm, the KL to the warm start at the last RL
   step (steps.csv; the base model is the warm start, KL 0), mean over seeds; and the
   share of the within-seed variation of final pass@n and pass@1 across arms that the
   final KL explains (:func:`within_seed_r2`: the R² of per-seed-demeaned pass@k on
   per-seed-demeaned KL), with and without the base arm; the KL's rise over the last
   steps; and max@k at the largest k_opt minus GRPO at pass@n, raw and moved along
   the fitted slope to GRPO's KL.
4. **Training reward.** Mean reward over the first and the last :data:`WINDOW` RL
   steps per task and arm (steps.csv), with t-intervals over seeds, the first step's
   clip fraction and the KL a few steps in.
5. **Provenance.** How many runs record the code version (a ``commit`` key in
   config.json or launch_status.json) and their start and end times.
6. **Held-out answers and sampling keys.** The share of held-out problems a
   warm-start solution string solves verbatim (``answer_shares``); the base arm's
   evaluation key (``experiments/lm/train.py``:
   ``run_base_eval`` evaluates with the key of step 0, ``run_rl`` with that of its
   final step).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
import json
import math
import os
from typing import Any

import numpy as np

from experiments.lm import contrasts
from experiments.lm.study import answer_shares
from experiments.lm.study import markdown as md
from experiments.lm.study import power as power_lib
from experiments.lm.study import readme_section
from experiments.lm.study import runs as runs_lib
from experiments.lm.study import steps as steps_lib

TARGET_POWER = 0.8
WINDOW = 10  # RL steps averaged at the start and at the end of training.
KL_STEPS_IN = 5  # The RL step at which the early KL is read.
MAX_SEEDS = 1000

Row = Mapping[str, Any]


# ------------------------------------------------------------------------ power


def floored_se(row: Row) -> tuple[float, int, float]:
  """(floored SE, degrees of freedom S − 1, floored per-seed variance v) of a
  contrasts.csv row: v = max(s², mean(se²)) over its ``diff_seeds`` / ``se_seeds``,
  SE = √(v / S).

  Raises:
    ValueError: for fewer than 2 seeds or mismatched columns.
  """
  d = np.array(str(row["diff_seeds"]).split(), np.float64)
  se = np.array(str(row["se_seeds"]).split(), np.float64)
  if d.size < 2 or d.shape != se.shape:
    raise ValueError(f"row diff_seeds/se_seeds must hold S >= 2 matching values: {row}.")
  v = max(float(np.var(d, ddof=1)), float(np.mean(se**2)))
  return math.sqrt(v / d.size), d.size - 1, v


def power(effect: float, se: float, df: int, *, alpha: float) -> float:
  """Power of the two-sided t-test at level ``alpha`` with ``df`` degrees of freedom
  against a true effect ``effect`` with standard error ``se``
  (:func:`experiments.lm.contrasts.power`), for a standard error the audit requires.

  Raises:
    ValueError: for se <= 0, df < 1 or alpha outside (0, 1).
  """
  if not se > 0 or df < 1 or not 0 < alpha < 1:
    raise ValueError(f"power needs se > 0, df >= 1, alpha in (0, 1): {se}, {df}, {alpha}.")
  return contrasts.power(effect, se, df, alpha=alpha)


def min_detectable(se: float, df: int, *, alpha: float, target: float = TARGET_POWER) -> float:
  """The smallest effect > 0 whose :func:`power` is ``target``
  (:func:`experiments.lm.study.power.detectable_effect`)."""
  return power_lib.detectable_effect(se, df, alpha=alpha, power=target)


def seeds_for_power(
  effect: float, var: float, *, alpha: float, target: float = TARGET_POWER
) -> int | None:
  """The fewest seeds S whose test (SE = √(var / S), S − 1 degrees of freedom) has
  :func:`power` >= ``target`` at ``effect``; None beyond :data:`MAX_SEEDS`."""
  for s in range(2, MAX_SEEDS + 1):
    if power(effect, math.sqrt(var / s), s - 1, alpha=alpha) >= target:
      return s
  return None


def _column(row: Row, name: str) -> float:
  value = row.get(name, "")
  return float(value) if value not in ("", None) else math.nan


def power_rows(rows: Sequence[Row], *, margin: float) -> list[dict[str, Any]]:
  """Per max@k-against-GRPO contrast at the k it optimises (a ``max_at_k_k<K>`` run
  against ``grpo`` at k = K): diff and interval, power at the observed effect and at
  the margin (contrasts.csv's ``margin``/``power`` where present), the effect with 80%
  power, and the seeds for 80% power at the margin."""
  alpha = contrasts.ALPHA / len(rows)
  out = []
  for r in rows:
    a = str(r["a"])
    if r["b"] != "grpo" or not a.startswith("max_at_k_k") or a[10:] != str(int(float(r["k"]))):
      continue
    se, df, var = floored_se(r)
    row_margin = _column(r, "margin")
    m = row_margin if math.isfinite(row_margin) else margin
    at_margin = _column(r, "power")
    if not math.isfinite(at_margin):
      at_margin = power(m, se, df, alpha=alpha)
    out.append(
      {
        "task": r["task"],
        "question": r["question"],
        "cell": md.cell(r["diff"], r["lo"], r["hi"]),
        "observed": power(abs(float(r["diff"])), se, df, alpha=alpha),
        "margin": m,
        "at_margin": at_margin,
        "mde": min_detectable(se, df, alpha=alpha),
        "seeds": seeds_for_power(m, var, alpha=alpha),
        "num_seeds": df + 1,
      }
    )
  return out


# ------------------------------------------------------------- KL confounding


def within_seed_r2(kl: np.ndarray, y: np.ndarray) -> tuple[float, float]:
  """(slope, R²) of per-seed-demeaned ``y`` on per-seed-demeaned ``kl``, both
  ``[S, A]`` (seeds, arms): the share of the within-seed variance of y across arms
  that a common linear effect of KL explains.

  Raises:
    ValueError: for mismatched shapes or no within-seed variation in kl.
  """
  kl, y = np.asarray(kl, np.float64), np.asarray(y, np.float64)
  if kl.shape != y.shape or kl.ndim != 2:
    raise ValueError(f"kl and y must be matching [S, A] arrays: {kl.shape}, {y.shape}.")
  x = kl - kl.mean(axis=1, keepdims=True)
  z = y - y.mean(axis=1, keepdims=True)
  if not np.any(x):
    raise ValueError("kl does not vary within any seed.")
  slope = float((x * z).sum() / (x * x).sum())
  total = float((z * z).sum())
  return slope, 1 - float(((z - slope * x) ** 2).sum()) / total if total else math.nan


def _pass_at(
  results: Sequence[Row], task: str, arms: Sequence[str], seeds: Sequence[int], k: int
) -> np.ndarray:
  value = {
    (str(r["rl_run"]), int(r["seed"])): float(r["pass_at_k"])
    for r in results
    if r["task"] == task and int(r["k_eval"]) == k
  }
  return np.array([[value[a, s] for a in arms] for s in seeds])


def kl_table(
  results: Sequence[Row], steps: Mapping[tuple[str, int], steps_lib.Steps], task: str
) -> dict[str, Any]:
  """Final KL per arm (``[S, A]``, base 0), pass@1 and pass@n ``[S, A]``, the arms,
  seeds and n, and per arm the KL's rise from the :data:`WINDOW` RL steps before the
  last ones to the last :data:`WINDOW` (means over those steps, then over seeds)."""
  seeds = sorted(s for t, s in steps if t == task)
  rl_arms = list(steps[task, seeds[0]].rl)
  arms = ["base", *rl_arms]
  kl = np.array(
    [[0.0] + [steps[task, s].rl[a]["kl_to_warm_start"][-1] for a in rl_arms] for s in seeds]
  )
  rise = {
    a: float(
      np.mean(
        [
          steps[task, s].rl[a]["kl_to_warm_start"][-WINDOW:].mean()
          - steps[task, s].rl[a]["kl_to_warm_start"][-2 * WINDOW : -WINDOW].mean()
          for s in seeds
        ]
      )
    )
    for a in rl_arms
  }
  n = max(int(r["k_eval"]) for r in results if r["task"] == task)
  return {
    "arms": arms,
    "seeds": seeds,
    "n": n,
    "kl": kl,
    "pass": {k: _pass_at(results, task, arms, seeds, k) for k in (1, n)},
    "rise": rise,
    "last_step": int(steps[task, seeds[0]].rl[rl_arms[0]]["step"][-1]),
  }


# ------------------------------------------------------------- training reward


def reward_rows(
  steps: Mapping[tuple[str, int], steps_lib.Steps], task: str, labels: Mapping[str, str]
) -> list[list[str]]:
  """Per RL arm: mean reward over the first and the last :data:`WINDOW` RL steps
  (t-interval over seeds), their difference (paired t-interval), the clip fraction at
  the first step and the KL at step :data:`KL_STEPS_IN` (means over seeds)."""
  seeds = sorted(s for t, s in steps if t == task)
  out = []
  for arm in steps[task, seeds[0]].rl:
    curves = [steps[task, s].rl[arm] for s in seeds]
    early = np.array([c["reward"][:WINDOW].mean() for c in curves])
    late = np.array([c["reward"][-WINDOW:].mean() for c in curves])
    cells = []
    for values in (early, late, late - early):
      i = contrasts.plain_interval(values)
      cells.append(md.cell(float(i.mean), float(i.lo), float(i.hi)))
    clip = np.mean([c["clip_frac"][0] for c in curves])
    kl = np.mean([c["kl_to_warm_start"][c["step"] == KL_STEPS_IN][0] for c in curves])
    out.append([labels.get(arm, arm), *cells, f"{clip:.2f}", f"{kl:.2f}"])
  return out


# ------------------------------------------------------------------ provenance


def _keys(value: Any) -> list[str]:
  """Every key of a JSON value, nested ones included, lower-cased."""
  if isinstance(value, dict):
    return [str(k).lower() for k in value] + [k for v in value.values() for k in _keys(v)]
  if isinstance(value, list):
    return [k for v in value for k in _keys(v)]
  return []


def provenance_counts(runs: Sequence[runs_lib.Run]) -> tuple[int, int]:
  """(runs that record a code version, runs that record start and end times): a key
  naming a ``commit``, and keys naming a ``start`` and an ``end``, anywhere in their
  config.json or launch_status.json."""
  commits = times = 0
  for run in runs:
    keys: list[str] = []
    for name in ("config.json", "launch_status.json"):
      path = os.path.join(run.folder, name)
      if os.path.exists(path):
        with open(path) as f:
          keys += _keys(json.load(f))
    commits += any("commit" in k for k in keys)
    times += any("start" in k for k in keys) and any("end" in k for k in keys)
  return commits, times


# ------------------------------------------------------------------- the audit


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
  detected = {
    t: sum(readme_section.verdict_of(r) in readme_section.DETECTED for r in rows if r["task"] == t)
    for t in tasks
  }
  per_task = {t: sum(r["task"] == t for r in rows) for t in tasks}
  counts = ", ".join(f"{detected[t]} of {per_task[t]} on {t}" for t in tasks)
  lines = [
    "## Audit",
    "",
    "This study is archived: a new one is being designed to answer its question. What its "
    "files show does not hold, each number computed from them by "
    "`experiments/lm/study/audit.py`:",
    "",
    f"1. **Counts.** The repository README miscounted the declared contrasts that pass "
    f"Holm's correction; `contrasts.csv` has {counts} ({sum(detected.values())} of "
    f"{len(rows)}). It also cited the null simulation with other constants than its test "
    "uses and described the program reward in an old form, and its test passed planted "
    "false statements. README's LM block is now generated from `contrasts.csv` "
    "(`python -m experiments.lm.study_readme`) and checked against planted falsehoods "
    "(`tests/experiments/lm/study_readme_test.py`).",
  ]
  power = power_rows(rows, margin=margin)
  if power:
    m = power[0]
    lines += [
      f"2. **Power.** Against GRPO at the k it optimises, max@k's declared test has little "
      f"power: a two-sided t-test at level {contrasts.ALPHA:g}/{len(rows)} (Holm's first "
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
    lines += [
      "",
      "   The seeds assume each seed's variance stays what these 8 seeds show at 128 "
      "held-out problems. A difference that is not detected here is not evidence of no "
      "difference.",
    ]
  shortest = min((len(c["step"]) for s in steps.values() for c in s.rl.values()), default=0)
  if shortest >= 2 * WINDOW:
    lines += _kl_item(tables, steps, tasks, labels)
    lines += _reward_item(steps, tasks, labels)
  else:
    lines.append(
      f"3. and 4. (KL and training reward) need {2 * WINDOW} or more RL steps in every run's "
      f"`steps.csv`; the shortest has {shortest}."
    )
  commits, times = provenance_counts(runs)
  lines += [
    f"5. **Provenance.** {commits} of {len(runs)} runs record the code version they ran (a "
    f"commit in `config.json` or `launch_status.json`), and {times} of {len(runs)} their "
    "start and end times, so which code produced the results cannot be read from the files.",
    "6. **Held-out answers and sampling keys.** Problems are held out by problem key, not by "
    "answer. Replayed from each run's config (`experiments/lm/study/answer_shares.py`), the "
    "held-out problems one of whose correct answers is, verbatim, the solution string of a "
    f"warm-start example: {_answer_text(runs)}. The base arm's evaluation draws its samples with "
    "another key than the RL arms' (`experiments/lm/train.py`: `run_base_eval` evaluates "
    "with the key of step 0, `run_rl` with that of its final step"
    + (f", step {_last_step(steps)}" if steps else "")
    + "), so base and RL arms do not share sampling keys.",
    "",
  ]
  return lines


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
    t = kl_table(tables["results.csv"], steps, task)
    arms, kl, n = t["arms"], t["kl"], t["n"]
    order = np.argsort(kl.mean(axis=0))
    line = " < ".join(f"{labels.get(arms[i], arms[i])} {kl[:, i].mean():.2f}" for i in order)
    fits = {}
    for k in (n, 1):
      fits[k, True] = within_seed_r2(kl, t["pass"][k])
      fits[k, False] = within_seed_r2(kl[:, 1:], t["pass"][k][:, 1:])
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
      reward_rows(steps, task, labels),
    )
    lines += ["   " + line if line else line for line in table]
  return lines
