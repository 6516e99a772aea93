"""How many held-out problems of a finished study's runs were solved, verbatim, by a
solution string of their warm-start data: the answer-level overlap of
``experiments.lm.answer_overlap``, replayed without a model from each run's
``config.json`` (its task, seed, held-out problems and SFT draws are deterministic
functions of the config), for runs written before ``split.json`` recorded it."""

from __future__ import annotations

from collections.abc import Sequence
import json
import os
from typing import Any

import ml_collections
import numpy as np

from experiments.lm import splits
from experiments.lm import tasks as tasks_lib
from experiments.lm_study import files


def replay_share(folder: str) -> dict[str, Any]:
  """``{"task", "seed", "problems", "answer_seen", "share"}`` of the run in ``folder``:
  the held-out problems one of whose correct answers is the exact solution string of
  one of the run's SFT examples (``splits.make_split``'s ``answer_seen``).

  Raises:
    StudyError: if ``folder`` has no readable ``config.json``.
  """
  path = os.path.join(folder, "config.json")
  try:
    with open(path) as f:
      config = ml_collections.ConfigDict(json.load(f))
  except (OSError, ValueError) as e:
    raise files.StudyError(f"{path}: {e}") from None
  try:
    task = tasks_lib.make_task(config.task.name, **dict(config.task.kwargs))
    rows = tasks_lib.heldout_problems(task, config.seed, config.eval.num_prompts)
    split = splits.make_split(task, config, task.problem_keys(rows))
  except (KeyError, AttributeError, TypeError, ValueError) as e:
    raise files.StudyError(f"{path} cannot be replayed: {e}") from None
  seen = int(np.sum(split["answer_seen"]))
  return {
    "task": config.task.name,
    "seed": int(config.seed),
    "problems": len(split["answer_seen"]),
    "answer_seen": seen,
    "share": seen / max(1, len(split["answer_seen"])),
  }


def task_shares(folders: Sequence[str]) -> dict[str, tuple[int, int, float, float]]:
  """task -> (held-out problems, of them answer-seen, smallest and largest per-seed
  share), over the runs in ``folders`` whose config can be replayed (a run folder
  written by hand, without a full config, is left out)."""
  out: dict[str, list[dict[str, Any]]] = {}
  for folder in folders:
    try:
      row = replay_share(folder)
    except files.StudyError:
      continue
    out.setdefault(row["task"], []).append(row)
  return {
    task: (
      sum(r["problems"] for r in rows),
      sum(r["answer_seen"] for r in rows),
      min(r["share"] for r in rows),
      max(r["share"] for r in rows),
    )
    for task, rows in out.items()
  }
