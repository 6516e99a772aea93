"""What a study's pilot measured, read from its run folders: how far each arm moved
from the warm start (the training-sample KL of ``metrics.jsonl``) and the wall time of
each part of a run (from the trainer's ``log.txt``), for the design of the study.

A pilot run folder is one config (``config.json``) with the trainer's log (``log.txt``,
absl lines ``I1203 17:01:20.990303 ... train.py:203] sft step 5/4000 ...``) and its
metrics. :func:`arm_rows` gives one row per RL run: learning rate, the mean training
KL over its last ``tail`` steps, and the final held-out pass@k; :func:`timing` the
seconds of one SFT step, one RL step and one held-out evaluation per problem.
"""

from __future__ import annotations

from collections.abc import Sequence
import dataclasses
import datetime
import json
import os
import re
from typing import Any

import numpy as np

from experiments.lm_study import files

_LINE = re.compile(r"^I(\d{4}) (\d\d:\d\d:\d\d\.\d+) .*\] (sft|rl) (.*)$")
_RL = re.compile(r"^(\S+) step (\d+)/(\d+) ")
_SFT = re.compile(r"^step (\d+)/(\d+) ")


def _read_json_lines(path: str) -> list[dict[str, Any]]:
  with open(path) as f:
    return [json.loads(line) for line in f if line.strip()]


def read_config(folder: str) -> dict[str, Any]:
  """The run folder's config.json (StudyError when it has none)."""
  path = os.path.join(folder, "config.json")
  if not os.path.exists(path):
    raise files.StudyError(f"{folder} has no config.json: not a run folder.")
  with open(path) as f:
    config: dict[str, Any] = json.load(f)
  return config


def arm_rows(
  folders: Sequence[str], *, tail: int = 20, ks: Sequence[int] = (1, 8, 128)
) -> list[dict[str, Any]]:
  """One row per RL run of the pilot folders: ``variant`` (the folder's name),
  ``run``, ``learning_rate``, ``steps``, ``final_kl`` (mean training KL to the warm
  start over the last ``tail`` steps), ``kl_at`` (a dict step -> training KL) and the
  final held-out ``pass@k`` for each k of ``ks`` (NaN when k exceeds the evaluation's n).

  Raises:
    StudyError: a folder without config.json or metrics.jsonl, or a run without
      its steps.
  """
  rows = []
  for folder in folders:
    config = read_config(folder)
    records = _read_json_lines(os.path.join(folder, "metrics.jsonl"))
    runs = dict.fromkeys(r["run"] for r in records if r.get("stage") == "rl")
    for run in runs:
      mine = [r for r in records if r.get("stage") == "rl" and r["run"] == run]
      kl = np.array([r["kl_to_warm_start"] for r in mine], np.float64)
      if kl.size < tail:
        raise files.StudyError(f"{folder}: run {run} has {kl.size} steps, fewer than {tail}.")
      final = [r for r in mine if "eval_pass_at_k" in r][-1]
      curve = final["eval_pass_at_k"]
      row: dict[str, Any] = {
        "variant": os.path.basename(os.path.normpath(folder)),
        "run": run,
        "learning_rate": float(config["rl"]["learning_rate"]),
        "steps": len(mine),
        "final_kl": float(np.mean(kl[-tail:])),
        "kl_at": {int(r["step"]): float(r["kl_to_warm_start"]) for r in mine},
      }
      for k in ks:
        row[f"pass@{k}"] = float(curve[k - 1]) if k <= len(curve) else float("nan")
      rows.append(row)
  return rows


@dataclasses.dataclass(frozen=True)
class Timing:
  """Seconds, as measured in one pilot folder: ``sft_step``, ``rl_step`` (median over
  steps without an evaluation) and ``eval_per_problem`` (one held-out evaluation of
  ``eval_n`` samples, per problem)."""

  sft_step: float
  rl_step: float
  eval_per_problem: float
  eval_n: int
  cores: str


def _times(log: str) -> list[tuple[float, str, str]]:
  """(seconds since the log's first line, stage, message) of the trainer's lines."""
  out = []
  for line in log.splitlines():
    m = _LINE.match(line)
    if m:
      day, clock, stage, message = m.groups()
      t = datetime.datetime.strptime(f"2000{day} {clock}", "%Y%m%d %H:%M:%S.%f")
      out.append((t.timestamp(), stage, message))
  if not out:
    raise files.StudyError("the log holds no trainer step lines.")
  first = out[0][0]
  return [(t - first, stage, message) for t, stage, message in out]


def timing(folder: str) -> Timing:
  """The pilot folder's :class:`Timing` from its ``log.txt`` (module docstring).

  The evaluation's cost is the last RL step's duration (the step that evaluates)
  minus the median duration of the steps that do not, divided by the problems.
  """
  config = read_config(folder)
  with open(os.path.join(folder, "log.txt")) as f:
    lines = _times(f.read())
  sft = [(t, int(m.group(1))) for t, s, msg in lines if s == "sft" and (m := _SFT.match(msg))]
  rl: dict[str, list[tuple[float, int]]] = {}
  for t, s, msg in lines:
    if s == "rl" and (m := _RL.match(msg)):
      rl.setdefault(m.group(1), []).append((t, int(m.group(2))))
  if len(sft) < 2 or not rl:
    raise files.StudyError(f"{folder}/log.txt lacks SFT or RL step lines.")
  sft_step = (sft[-1][0] - sft[0][0]) / (sft[-1][1] - sft[0][1])
  evaluated: list[float] = []
  plain: list[float] = []
  every = int(config["eval"]["every"])
  for steps in rl.values():
    for (t0, _), (t1, step) in zip(steps, steps[1:]):
      (evaluated if step % every == 0 else plain).append(t1 - t0)
  rl_step = float(np.median(plain))
  eval_s = float(np.median(evaluated)) - rl_step
  problems = int(config["eval"]["num_prompts"])
  return Timing(sft_step, rl_step, eval_s / problems, int(config["eval"]["n"]), "1 per run")
