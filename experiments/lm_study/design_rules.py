"""The declared design of an LM study, computed from files: the KL-matched learning
rate and the matched-KL level from the pilot, and the seeds x problems chosen by the
power analysis within the budget. ``python -m experiments.lm_study.design`` writes
them (``power.csv``, ``pilot.csv``, ``design.json``) and the design note that cites
them; every number in the note comes from these computations.

Rules, fixed before the pilot's numbers were read:

* **KL-matched learning rate** (:func:`matched_learning_rate`): the pilot trains GRPO
  at several learning rates and max@k at the study's rate; log(final KL) is
  interpolated linearly in log(learning rate) between the two GRPO rates whose final
  KL brackets max@k's (extrapolated from the nearest two when none does), and
  rounded to two significant digits.
* **Matched-KL level** (:func:`matched_kl_level`): ``fraction`` of the smallest final
  KL among the pilot's arms at the study's rates, rounded down to a multiple of
  ``step``, so that every arm of every seed is likely to pass it.
* **Seeds x problems** (:func:`choose_design`): the cheapest design of the grid whose
  difference and equivalence tests at the margin both have at least the target power
  for every primary contrast; when none does within the budget, the most powerful
  design within it, and the note says so.
"""

from __future__ import annotations

from collections.abc import Sequence
import math
from typing import Any

import numpy as np

from experiments.lm_study import files
from experiments.lm_study import power as power_lib


def _round_significant(x: float, digits: int = 2) -> float:
  return float(f"{x:.{digits - 1}e}")


def matched_learning_rate(candidates: Sequence[tuple[float, float]], target_kl: float) -> float:
  """The learning rate whose final KL would equal ``target_kl``, from
  ``candidates`` (learning rate, final KL) of one estimator (module docstring).

  Raises:
    StudyError: for fewer than two candidates or a non-positive rate or KL.
  """
  points = sorted(candidates)
  if len(points) < 2 or any(lr <= 0 or kl <= 0 for lr, kl in points) or target_kl <= 0:
    raise files.StudyError(
      f"matched_learning_rate needs 2 or more (rate, KL) > 0 and a target > 0; got {points}."
    )
  x = np.log([lr for lr, _ in points])
  y = np.log([kl for _, kl in points])
  t = math.log(target_kl)
  i = 0
  for j in range(len(points) - 1):
    if min(y[j], y[j + 1]) <= t <= max(y[j], y[j + 1]):
      i = j
      break
  else:  # No bracket: extrapolate from the nearest end.
    i = 0 if abs(t - y[0]) < abs(t - y[-1]) else len(points) - 2
  if y[i + 1] == y[i]:
    raise files.StudyError(f"Two learning rates end at the same KL: {points}.")
  w = (t - y[i]) / (y[i + 1] - y[i])
  return _round_significant(math.exp(x[i] + w * (x[i + 1] - x[i])))


def matched_kl_level(final_kls: Sequence[float], *, fraction: float, step: float) -> float:
  """``fraction`` of the smallest of ``final_kls``, rounded down to a multiple of
  ``step`` (at least ``step``)."""
  if not final_kls or not 0 < fraction <= 1 or step <= 0:
    raise files.StudyError(f"matched_kl_level: final_kls={final_kls}, fraction={fraction}.")
  level = math.floor(fraction * min(final_kls) / step + 1e-9) * step
  return round(max(step, level), 10)


def choose_design(
  rows: Sequence[dict[str, Any]], *, budget_hours: float, target: float = 0.8
) -> dict[str, Any]:
  """The design (``seeds``, ``problems``, ``hours``, ``meets_target``, and the
  smallest power over the primary contrasts of each test) that the rules of the
  module docstring pick from :func:`power.design_rows` rows.

  Raises:
    StudyError: when no design of the grid fits the budget.
  """
  designs: dict[tuple[int, int], dict[str, Any]] = {}
  for r in rows:
    d = designs.setdefault(
      (r["seeds"], r["problems"]),
      {
        "seeds": r["seeds"],
        "problems": r["problems"],
        "hours": r["hours"],
        "power_difference": 1.0,
        "power_equivalence": 1.0,
      },
    )
    d["power_difference"] = min(d["power_difference"], r["power_difference"])
    d["power_equivalence"] = min(d["power_equivalence"], r["power_equivalence"])
  affordable = [d for d in designs.values() if d["hours"] <= budget_hours]
  if not affordable:
    raise files.StudyError(f"No design of the grid fits the budget of {budget_hours} hours.")
  for d in affordable:
    d["meets_target"] = min(d["power_difference"], d["power_equivalence"]) >= target
  meeting = [d for d in affordable if d["meets_target"]]
  if meeting:
    return min(meeting, key=lambda d: (d["hours"], -d["power_difference"]))
  return max(
    affordable, key=lambda d: (min(d["power_difference"], d["power_equivalence"]), -d["hours"])
  )


def primary_components(
  paired_summary: Sequence[dict[str, Any]],
  *,
  task: str,
  a: str,
  b: str,
  ks: Sequence[int],
  num_problems: int,
) -> dict[str, power_lib.VarianceComponents]:
  """Variance components of a − b in pass@k at each k of ``ks`` on ``task``, from a
  finished study's ``paired_summary.csv`` rows (either order of a and b).

  Raises:
    StudyError: if a row is missing.
  """
  out = {}
  for k in ks:
    match = [
      r
      for r in paired_summary
      if r["task"] == task
      and r["metric"] == "pass_at_k"
      and int(r["k_eval"]) == k
      and {r["a_run"], r["b_run"]} == {a, b}
    ]
    if len(match) != 1:
      raise files.StudyError(f"paired_summary.csv has {len(match)} rows of {a} vs {b} at pass@{k}.")
    diffs = [float(x) for x in match[0]["diff_seeds"].split()]
    ses = [float(x) for x in match[0]["diff_se_seeds"].split()]
    out[f"pass@{k}"] = power_lib.variance_components(diffs, ses, num_problems=num_problems)
  return out
