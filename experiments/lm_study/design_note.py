"""The design note of an LM study, written before its runs from its config module, its
pilot and the finished study whose variances it plans with.

:func:`compute` runs the declared rules of :mod:`experiments.lm_study.design_rules` on the
files the config names and returns every number the note states; :func:`write`
writes ``power.csv``, ``pilot.csv``, ``design.json`` and ``DESIGN.md`` (every number in
the note formatted from those). The config module declares (names as attributes):
``TASK``, ``RUNS`` (the arms), ``PRIMARY`` (arm a, arm b, the k of the primary
contrasts), ``MARGIN``, ``FAMILY_SIZE`` (primary tests), ``BUDGET_HOURS``,
``SEEDS_GRID``, ``PROBLEMS_GRID``, ``TARGET_POWER``, ``INFLATION``, ``VARIANCE_SOURCE``
(a ``paired_summary.csv``) with ``VARIANCE_PROBLEMS``, ``PILOT_DIR`` (the pilot's
run folders), ``PILOT_TARGET_RUN`` and ``PILOT_MATCHED_RUN`` (the run max@k is matched
by, trained at several rates), ``KL_FRACTION`` and ``KL_STEP``, ``RL_STEPS``,
``EVAL_EVERY`` and the values the config uses (``MATCHED_LEARNING_RATE``,
``KL_LEVEL``, ``NUM_SEEDS``, ``NUM_PROBLEMS``), which must equal the computed ones.
"""

from __future__ import annotations

import csv
import glob
import json
import os
import types
from typing import Any

import numpy as np

from experiments import outputs
from experiments.lm_study import design_rules
from experiments.lm_study import files
from experiments.lm_study import pilot as pilot_lib
from experiments.lm_study import power as power_lib


def _pilot_folders(study: types.ModuleType) -> list[str]:
  folders = sorted(
    os.path.dirname(p) for p in glob.glob(os.path.join(study.PILOT_DIR, "*", "config.json"))
  )
  if not folders:
    raise files.StudyError(f"{study.PILOT_DIR} holds no pilot run folder (config.json).")
  return folders


def cost_model(
  study: types.ModuleType, timing: pilot_lib.Timing, sft_steps: int
) -> power_lib.CostModel:
  """Single-core seconds of one seed of the study from the pilot's timing: the warm
  start and the RL steps of every arm (fixed), and per problem the evaluations (the
  base's two, then every arm at every ``EVAL_EVERY`` steps), each costing the pilot's
  per-problem evaluation time times ``1 + KL_OVERHEAD`` (the held-out KL)."""
  arms = len(study.RUNS)
  fixed = sft_steps * timing.sft_step + arms * study.RL_STEPS * timing.rl_step
  evaluations = 2 + arms * (study.RL_STEPS // study.EVAL_EVERY)
  per_problem = evaluations * timing.eval_per_problem * (1 + study.KL_OVERHEAD)
  return power_lib.CostModel(fixed, per_problem)


def _median_timing(folders: list[str]) -> pilot_lib.Timing:
  """The pilot runs' costs: the median over the runs of each (robust to one run
  slowed by other work)."""
  timings = [pilot_lib.timing(f) for f in folders]

  def median(field: str) -> float:
    return float(np.median([getattr(t, field) for t in timings]))

  return pilot_lib.Timing(
    sft_step=median("sft_step"),
    rl_step=median("rl_step"),
    eval_per_problem=median("eval_per_problem"),
    eval_n=timings[0].eval_n,
    cores=timings[0].cores,
  )


def _earlier_primary(study: types.ModuleType) -> dict[str, str]:
  """The earlier study's contrasts.csv row of the first primary contrast (a − b at
  pass@k of ``study.PRIMARY``'s first k), beside ``study.VARIANCE_SOURCE``.

  Raises:
    StudyError: unless exactly one row matches.
  """
  a, b, ks = study.PRIMARY
  earlier = os.path.join(os.path.dirname(study.VARIANCE_SOURCE), "contrasts.csv")
  with open(earlier, newline="") as f:
    declared = [
      r
      for r in csv.DictReader(f)
      if (r["task"], r["a"], r["b"], r["measure"], r["k"]) == (study.TASK, a, b, "pass", str(ks[0]))
    ]
  if len(declared) != 1:
    raise files.StudyError(f"{earlier} has {len(declared)} rows of {a} − {b} at pass@{ks[0]}.")
  return declared[0]


def compute(study: types.ModuleType, *, draws: int = 20000) -> dict[str, Any]:
  """Every number of the design (module docstring): ``arms`` (pilot rows),
  ``timing``, ``matched_learning_rate``, ``kl_level``, ``components``, ``power_rows``,
  ``design`` (the chosen seeds x problems), ``cost``.

  Raises:
    StudyError: a missing file, or a config value that disagrees with its rule.
  """
  folders = _pilot_folders(study)
  arms = pilot_lib.arm_rows(folders)
  timing = _median_timing(folders)
  target = [r for r in arms if r["run"] == study.PILOT_TARGET_RUN]
  matched = [
    (r["learning_rate"], r["final_kl"]) for r in arms if r["run"] == study.PILOT_MATCHED_RUN
  ]
  if len(target) != 1:
    raise files.StudyError(f"The pilot has {len(target)} runs named {study.PILOT_TARGET_RUN}.")
  lr = design_rules.matched_learning_rate(matched, target[0]["final_kl"])
  study_rate = target[0]["learning_rate"]
  at_rate = [r["final_kl"] for r in arms if r["learning_rate"] == study_rate]
  kl_level = design_rules.matched_kl_level(at_rate, fraction=study.KL_FRACTION, step=study.KL_STEP)
  with open(study.VARIANCE_SOURCE, newline="") as f:
    summary = list(csv.DictReader(f))
  a, b, ks = study.PRIMARY
  components = design_rules.primary_components(
    summary, task=study.TASK, a=a, b=b, ks=ks, num_problems=study.VARIANCE_PROBLEMS
  )
  sft_steps = int(pilot_lib.read_config(folders[0])["sft"]["steps"])
  cost = cost_model(study, timing, sft_steps)
  rows = power_lib.design_rows(
    components,
    margin=study.MARGIN,
    family=study.FAMILY_SIZE,
    seeds=study.SEEDS_GRID,
    problems=study.PROBLEMS_GRID,
    cost=cost,
    inflation=study.INFLATION,
    draws=draws,
  )
  chosen = design_rules.choose_design(
    rows, budget_hours=study.BUDGET_HOURS, target=study.TARGET_POWER
  )
  declared = _earlier_primary(study)
  return {
    "earlier_power": float(declared["power"]),
    "earlier_margin": float(declared["margin"]),
    "arms": arms,
    "timing": timing,
    "matched_learning_rate": lr,
    "kl_level": kl_level,
    "components": components,
    "power_rows": rows,
    "design": chosen,
    "cost": cost,
  }


def check_config(study: types.ModuleType, result: dict[str, Any]) -> list[str]:
  """The config values that differ from what the rules computed (empty: none)."""
  problems = []
  declared = {
    "MATCHED_LEARNING_RATE": result["matched_learning_rate"],
    "KL_LEVEL": result["kl_level"],
    "NUM_SEEDS": result["design"]["seeds"],
    "NUM_PROBLEMS": result["design"]["problems"],
  }
  for name, value in declared.items():
    if abs(float(getattr(study, name)) - float(value)) > 1e-12 * max(1.0, abs(float(value))):
      problems.append(f"{name} = {getattr(study, name)!r}, but the design computes {value!r}")
  return problems


def write(workdir: str, study: types.ModuleType, result: dict[str, Any], note: str) -> None:
  """Writes ``power.csv``, ``pilot.csv``, ``design.json`` and ``DESIGN.md`` (``note``)."""
  os.makedirs(workdir, exist_ok=True)
  outputs.write_results_csv(workdir, result["power_rows"], filename="power.csv")
  pilot_rows = [{k: v for k, v in r.items() if k != "kl_at"} for r in result["arms"]]
  outputs.write_results_csv(workdir, pilot_rows, filename="pilot.csv")
  summary = {
    "matched_learning_rate": result["matched_learning_rate"],
    "kl_level": result["kl_level"],
    "design": result["design"],
    "timing": vars(result["timing"]),
    "cost": vars(result["cost"]),
    "components": {k: vars(v) for k, v in result["components"].items()},
  }
  with open(os.path.join(workdir, "design.json"), "w") as f:
    json.dump(summary, f, indent=1, sort_keys=True)
    f.write("\n")
  with open(os.path.join(workdir, "DESIGN.md"), "w") as f:
    f.write(note)
