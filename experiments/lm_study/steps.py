"""The runs' training curves (``steps.csv``, written by :mod:`experiments.lm.dynamics`),
read and checked: numbers where numbers belong, complete RL rows, no repeated step,
the RL runs of the run's prompts.csv, the same number of RL steps in every seed."""

from __future__ import annotations

from collections.abc import Sequence
import dataclasses

import numpy as np

from experiments.lm_study import files
from experiments.lm_study import loading
from experiments.lm_study import runs as runs_lib

# steps.csv columns of every RL row (experiments/lm/dynamics.py).
RL_STEP_FIELDS = (
  "reward",
  "entropy",
  "kl_to_warm_start",
  "clip_frac",
  "ess_frac",
  "grad_norm",
  "grad_clipped",
  "solved_cumulative",
)


STEPS_COLUMNS = ("stage", "run", "step", "warm_pass_at_1", *RL_STEP_FIELDS)


@dataclasses.dataclass(frozen=True)
class Steps:
  """One run's training curves (its ``steps.csv``).

  ``warm``: the warm-start curve, ``[E, 2]`` rows (SFT step, held-out pass@1) in
  step order; ``rl``: per RL run, ``step`` and each of :data:`RL_STEP_FIELDS` as
  float64 arrays in step order.
  """

  warm: np.ndarray
  rl: dict[str, dict[str, np.ndarray]]

  def steps(self, rl_run: str) -> int:
    """The number of RL steps of ``rl_run``."""
    return len(self.rl[rl_run]["step"])


def _number(text: str, path: str, line: int, column: str) -> float:
  try:
    return float(text)
  except ValueError:
    raise files.StudyError(f"{path}, line {line}: {column}={text!r} is not a number.") from None


def read_steps(path: str, rl_runs: Sequence[str]) -> Steps:
  """The training curves in ``path`` (a run's steps.csv) of a run whose RL runs are
  ``rl_runs``.

  Raises:
    StudyError: naming the file and line if a row's stage is not sft or rl, a value
      is not a number, an RL row lacks one of :data:`RL_STEP_FIELDS`, a step repeats,
      or the file's RL runs are not ``rl_runs``.
  """
  warm: list[tuple[float, float]] = []
  rl: dict[str, list[dict[str, float]]] = {}
  for line, row in enumerate(files.read_csv(path, STEPS_COLUMNS), start=2):
    stage = row["stage"]
    if stage not in ("sft", "rl"):
      raise files.StudyError(f"{path}, line {line}: stage={stage!r} is neither sft nor rl.")
    step = _number(row["step"], path, line, "step")
    if stage == "sft":
      if row["warm_pass_at_1"]:
        warm.append((step, _number(row["warm_pass_at_1"], path, line, "warm_pass_at_1")))
      continue
    absent = [c for c in RL_STEP_FIELDS if not row[c]]
    if absent:
      raise files.StudyError(f"{path}, line {line}: an RL row without {', '.join(absent)}.")
    values = {c: _number(row[c], path, line, c) for c in RL_STEP_FIELDS}
    rl.setdefault(row["run"], []).append({"step": step, **values})
  if sorted(rl) != sorted(rl_runs):
    raise files.StudyError(
      f"{path} holds the RL runs {sorted(rl)}, its prompts.csv {sorted(rl_runs)}: the "
      "files come from different runs."
    )
  curves = {}
  for name, rows in rl.items():
    rows.sort(key=lambda r: r["step"])
    steps = [r["step"] for r in rows]
    if len(set(steps)) != len(steps):
      raise files.StudyError(f"{path}: run {name} repeats an RL step (a log written twice).")
    columns = ("step", *RL_STEP_FIELDS)
    curves[name] = {c: np.array([r[c] for r in rows], np.float64) for c in columns}
  warm.sort()
  if len({s for s, _ in warm}) != len(warm):
    raise files.StudyError(f"{path}: the warm-start curve repeats an SFT step.")
  return Steps(warm=np.array(warm, np.float64).reshape(-1, 2), rl=curves)


def read_all_steps(runs: Sequence[runs_lib.Run]) -> dict[tuple[str, int], Steps]:
  """(task, seed) -> the run's :class:`Steps`; empty when no run has a steps.csv.

  Raises:
    StudyError: as :func:`read_steps`; also if only some runs have a steps.csv, or
      the seeds of a task ran an RL run for different numbers of steps.
  """
  out = {}
  for run, path in loading.every_or_no_run(runs, "steps.csv"):
    rl_runs = [e.run for e in run.evals if e.stage != "base"]
    out[run.task, run.seed] = read_steps(path, rl_runs)
  for task in loading.tasks_of(runs):
    mine = {seed: s for (t, seed), s in out.items() if t == task}
    for name in next(iter(mine.values())).rl if mine else ():
      lengths = {seed: s.steps(name) for seed, s in mine.items()}
      if len(set(lengths.values())) > 1:
        raise files.StudyError(
          f"The seeds of task {task} ran {name} for different numbers of RL steps "
          f"(steps.csv; by seed {lengths}): a log lacks rows."
        )
  return out
