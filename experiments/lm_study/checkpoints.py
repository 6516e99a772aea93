"""The runs' held-out evaluations at checkpoints: ``checkpoints.csv`` of a run folder
(one task and seed, every arm) read into one :class:`Arm` per run.

The file has one row per (run, evaluated step, held-out prompt) with the columns of
:data:`COLUMNS` (and optionally ``rewards``, not read here): ``run`` is ``base`` for
the warm start, whose only step is 0, else the RL run's name; ``prompt`` indexes the
run's held-out set (0..P−1); ``correct`` counts the correct samples of that prompt
among ``n``; ``kl`` is the prompt's held-out KL of the evaluated policy to the warm
start (nats per sequence, mean over its samples; 0 for the base). Every RL arm's step
0 is the base: its :class:`Arm` starts with the base's rows, so that the frontier of
every arm starts at KL 0 from the same point.
"""

from __future__ import annotations

from collections.abc import Sequence
import dataclasses
import math

import numpy as np

from experiments.lm_study import files
from experiments.lm_study import loading
from experiments.lm_study import runs as runs_lib

FILE = "checkpoints.csv"
COLUMNS = ("run", "method", "k_opt", "seed", "step", "prompt", "n", "correct", "kl")
BASE = "base"

# run -> step -> prompt -> (correct, kl)
_Cells = dict[str, dict[int, dict[int, tuple[int, float]]]]


@dataclasses.dataclass(frozen=True)
class Arm:
  """One run of one seed at its evaluated steps.

  ``steps`` ``[T]`` increasing from 0 (the warm start; the base's own arm has T = 1);
  ``correct`` ``[T, P]`` correct samples among ``n`` per step and held-out prompt;
  ``kl`` ``[T, P]`` float64 held-out KL to the warm start (nats per sequence).
  """

  run: str
  method: str
  k_opt: str
  n: int
  steps: np.ndarray
  correct: np.ndarray
  kl: np.ndarray


def _number(row: dict[str, str], column: str, integer: bool, where: str) -> float:
  """``row[column]`` as an int (``integer``) or a finite float; StudyError otherwise."""
  try:
    value = int(row[column]) if integer else float(row[column])
  except ValueError:
    value = math.nan
  if not math.isfinite(value):
    kind = "an integer" if integer else "a finite number"
    raise files.StudyError(f"{where}: {column}={row[column]!r} is not {kind}.")
  return value


def _cells(rows: Sequence[dict[str, str]], where: str) -> tuple[int, int, _Cells]:
  """(seed, n, run -> step -> prompt -> (correct, kl)) of the rows, checked."""
  if not rows:
    raise files.StudyError(f"{where} holds no rows.")
  seed, n = (int(_number(rows[0], c, True, f"{where}, line 2")) for c in ("seed", "n"))
  cells: _Cells = {}
  for line, row in enumerate(rows, start=2):
    at = f"{where}, line {line}"
    step, prompt, correct, row_seed, row_n = (
      int(_number(row, c, True, at)) for c in ("step", "prompt", "correct", "seed", "n")
    )
    if (row_seed, row_n) != (seed, n) or n < 1:
      raise files.StudyError(f"{at}: seed and n must be line 2's ({seed}, {n} >= 1).")
    if step < 0 or prompt < 0 or not 0 <= correct <= n:
      raise files.StudyError(f"{at}: step and prompt must be >= 0 and correct in [0, {n}].")
    mine = cells.setdefault(row["run"], {}).setdefault(step, {})
    if prompt in mine:
      raise files.StudyError(f"{at}: run {row['run']} has step {step}, prompt {prompt} twice.")
    mine[prompt] = (correct, _number(row, "kl", False, at))
  return seed, n, cells


def _arrays(
  by_step: dict[int, dict[int, tuple[int, float]]], P: int, where: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
  """(steps [T], correct [T, P], kl [T, P]) of one run, every step on prompts 0..P−1."""
  steps = np.array(sorted(by_step), np.int64)
  for step in steps:
    if sorted(by_step[step]) != list(range(P)):
      raise files.StudyError(f"{where}: step {step} does not cover prompts 0..{P - 1}.")
  correct = np.array([[by_step[s][p][0] for p in range(P)] for s in steps], np.int64)
  kl = np.array([[by_step[s][p][1] for p in range(P)] for s in steps], np.float64)
  return steps, correct.reshape(len(steps), P), kl.reshape(len(steps), P)


def arms_from_rows(rows: Sequence[dict[str, str]], where: str) -> tuple[int, dict[str, Arm]]:
  """(seed, run -> its :class:`Arm`) from checkpoints.csv's rows, runs in file order.

  An RL run's own step-0 rows, if written, must repeat the base's counts and are
  replaced by them.

  Raises:
    StudyError: naming ``where`` and the line: a malformed value, another seed or n
      than line 2's, a duplicate (run, step, prompt), no base run or a base step
      other than 0, a step not covering the base's prompts, or an RL run's step 0
      that differs from the base.
  """
  seed, n, cells = _cells(rows, where)
  first = {r["run"]: (r["method"], r["k_opt"]) for r in reversed(rows)}
  if BASE not in cells or set(cells[BASE]) != {0}:
    raise files.StudyError(f"{where}: needs run {BASE!r} at step 0, and only there.")
  P = len(cells[BASE][0])
  _, base_correct, base_kl = _arrays(cells[BASE], P, f"{where}, run {BASE}")
  arms: dict[str, Arm] = {}
  for run, by_step in cells.items():
    steps, correct, kl = _arrays(by_step, P, f"{where}, run {run}")
    if run != BASE and steps[0] == 0:
      if not np.array_equal(correct[0], base_correct[0]):
        raise files.StudyError(f"{where}: run {run}'s step 0 differs from the base's.")
      steps, correct, kl = steps[1:], correct[1:], kl[1:]
    if run != BASE:
      steps = np.concatenate([[0], steps])
      correct = np.concatenate([base_correct, correct])
      kl = np.concatenate([base_kl, kl])
    arms[run] = Arm(run, *first[run], n=n, steps=steps, correct=correct, kl=kl)
  return seed, {r: arms[r] for r in dict.fromkeys(r["run"] for r in rows)}


def read_checkpoints(path: str) -> tuple[int, dict[str, Arm]]:
  """(seed, run -> :class:`Arm`) of a run folder's checkpoints.csv at ``path``."""
  return arms_from_rows(files.read_csv(path, COLUMNS), path)


def task_checkpoints(runs: Sequence[runs_lib.Run]) -> dict[str, dict[int, dict[str, Arm]]]:
  """task -> seed -> run -> :class:`Arm`, from the :data:`FILE` of each of ``runs``
  (a study's finished runs); empty when no run has one.

  Raises:
    StudyError: when only some runs have the file, a file is malformed, or its seed
      is not its run folder's.
  """
  out: dict[str, dict[int, dict[str, Arm]]] = {}
  for run, path in loading.every_or_no_run(runs, FILE):
    seed, arms = read_checkpoints(path)
    if seed != run.seed:
      raise files.StudyError(f"{path}: seed {seed}, but its run folder is seed {run.seed}.")
    out.setdefault(run.task, {})[seed] = arms
  return out
