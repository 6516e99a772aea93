r"""What the audit of an archived study measures (:mod:`~experiments.lm_study.audit`
writes it), every number computed from the study's files.

* **Power** (item 2): the floored standard error of a contrasts.csv row
  (:func:`floored_se`), the power of the declared test (:func:`power`: two-sided
  t-test at level α/m, the first and most demanding step of Holm over the m declared
  contrasts, with S − 1 degrees of freedom), the smallest effect with 80% power
  (:func:`min_detectable`) and the seeds that 80% power at the margin needs at the
  same per-seed variance (:func:`seeds_for_power`); :func:`power_rows` per max@k arm
  against GRPO at the k it optimises.
* **Distance from the warm start** (item 3): :func:`kl_table` (final KL, pass@1 and
  pass@n per seed and arm, the KL's rise over the last steps) and
  :func:`within_seed_r2` (the R² of per-seed-demeaned pass@k on per-seed-demeaned KL).
* **Training reward** (item 4): :func:`reward_rows` (mean reward over the first and
  the last :data:`WINDOW` RL steps per arm) and :func:`reward_changes` (their change,
  per arm of a study folder's runs; the matched-KL README block cites it).
* **Provenance** (item 5): :func:`provenance_counts`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
import csv
import dataclasses
import glob
import json
import math
import os
from typing import Any

import numpy as np

from experiments.lm_study import markdown as md
from experiments.lm_study import power as power_lib
from experiments.lm_study import runs as runs_lib
from experiments.lm_study import significance
from experiments.lm_study import steps as steps_lib

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
  (:func:`experiments.lm_study.significance.power`), for a standard error the audit requires.

  Raises:
    ValueError: for se <= 0, df < 1 or alpha outside (0, 1).
  """
  if not se > 0 or df < 1 or not 0 < alpha < 1:
    raise ValueError(f"power needs se > 0, df >= 1, alpha in (0, 1): {se}, {df}, {alpha}.")
  return significance.power(effect, se, df, alpha=alpha)


def min_detectable(se: float, df: int, *, alpha: float, target: float = TARGET_POWER) -> float:
  """The smallest effect > 0 whose :func:`power` is ``target``
  (:func:`experiments.lm_study.power.detectable_effect`)."""
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
  alpha = significance.ALPHA / len(rows)
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
      i = significance.plain_interval(values)
      cells.append(md.cell(float(i.mean), float(i.lo), float(i.hi)))
    clip = np.mean([c["clip_frac"][0] for c in curves])
    kl = np.mean([c["kl_to_warm_start"][c["step"] == KL_STEPS_IN][0] for c in curves])
    out.append([labels.get(arm, arm), *cells, f"{clip:.2f}", f"{kl:.2f}"])
  return out


def _read_rows(path: str) -> list[dict[str, str]]:
  with open(path, newline="") as f:
    return list(csv.DictReader(f))


@dataclasses.dataclass(frozen=True)
class RewardChange:
  """One RL arm of the earlier study: mean training reward over its last ``window``
  RL steps minus its first ``window`` (mean over seeds, t-interval)."""

  task: str
  arm: str
  mean: float
  lo: float
  hi: float


def reward_changes(study: str) -> tuple[tuple[RewardChange, ...], int, int]:
  """(per task and RL arm the change of mean training reward from the first to the
  last :data:`WINDOW` RL steps, the window, the RL steps) of the study folder
  ``study``: its ``runs/*/steps.csv``, each run's task and seed from its
  ``config.json``, the RL arms of each task from its ``dynamics.csv``.

  Raises:
    ValueError: naming ``study`` if it has no run with a steps.csv, or its tasks'
      seeds ran different numbers of RL steps.
  """
  arms: dict[str, list[str]] = {}
  for r in _read_rows(os.path.join(study, "dynamics.csv")):
    if r["rl_run"] != "warm_start" and r["rl_run"] not in arms.setdefault(r["task"], []):
      arms[r["task"]].append(r["rl_run"])
  curves: dict[tuple[str, int], steps_lib.Steps] = {}
  for path in sorted(glob.glob(os.path.join(study, "runs", "*", "steps.csv"))):
    with open(os.path.join(os.path.dirname(path), "config.json")) as f:
      config = json.load(f)
    task = str(config["task"]["name"])
    curves[task, int(config["seed"])] = steps_lib.read_steps(path, arms[task])
  if not curves:
    raise ValueError(f"study={study!r}: no runs/*/steps.csv.")
  window = WINDOW
  lengths = {s.steps(a) for s in curves.values() for a in s.rl}
  if len(lengths) != 1:
    raise ValueError(f"study={study!r}: its runs ran {sorted(lengths)} RL steps.")
  out = []
  for task, names in arms.items():
    seeds = sorted(s for t, s in curves if t == task)
    for arm in names:
      reward = [curves[task, s].rl[arm]["reward"] for s in seeds]
      change = [c[-window:].mean() - c[:window].mean() for c in reward]
      i = significance.plain_interval(np.array(change))
      out.append(RewardChange(task, arm, float(i.mean), float(i.lo), float(i.hi)))
  return tuple(out), window, lengths.pop()


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
