"""Which steps of a run log a metrics record or evaluate, and the check of a log on resume.

A run's stages are ``sft``, ``base`` and one ``rl/<name>`` per RL run, run in that
order (:func:`stages`). It resumes after its latest checkpoint, a :class:`Position`:
the name of the checkpointed stage and the step its Orbax manager holds; every stage
before it is finished, every stage after it not begun (:func:`pending`).

Every record of ``metrics.jsonl`` is keyed by (stage, run, step); a config fixes the
keys of each stage in order (``stage_keys``), so a resumed run can check that its log
holds exactly the records up to its checkpoint (``logged_keys``, ``log_problem``)
before appending more.
"""

from __future__ import annotations

from collections.abc import Sequence
import os
from typing import Any, NamedTuple

import ml_collections

from experiments.lm import checkpointing
from experiments.lm import workdir as workdir_lib

SFT = "sft"  # The warm start's stage (checkpointed).
BASE = "base"  # The warm start's held-out evaluation (logged, not checkpointed).


class Position(NamedTuple):
  """Where a run resumes: a checkpointed stage's name (``sft`` or ``rl/<run>``) and
  the step of its latest checkpoint."""

  stage: str
  step: int


def rl_stage(run_name: str) -> str:
  """The stage of the RL run named ``run_name``: ``rl/<run_name>``."""
  return f"rl/{run_name}"


def stages(run_names: Sequence[str]) -> list[str]:
  """The stages of a run with RL runs ``run_names``, in the order they run."""
  return [SFT, BASE, *(rl_stage(name) for name in run_names)]


def pending(stage_names: Sequence[str], position: Position | None) -> dict[str, int | None]:
  """The stages left to run from ``position``, in order, each with the checkpointed
  step it resumes after (None: from the start): every stage when ``position`` is None,
  else the position's stage from its step and every later stage from the start. The
  stages before the position's are finished."""
  if position is None:
    return dict.fromkeys(stage_names, None)
  todo: dict[str, int | None] = {}
  for stage in stage_names:
    if stage == position.stage:
      todo[stage] = position.step
    elif todo:
      todo[stage] = None
  if not todo:
    raise ValueError(f"position={position!r} names no stage of {list(stage_names)}.")
  return todo


def sft_evaluated(config: ml_collections.ConfigDict, step: int) -> bool:
  """Whether SFT step ``step`` evaluates the warm start on the held-out problems
  (``sft.eval_every`` > 0: every that many steps and at the last)."""
  every = config.sft.eval_every
  return every > 0 and (step % every == 0 or step == config.sft.steps)


def sft_logged(config: ml_collections.ConfigDict, step: int) -> bool:
  """Whether SFT step ``step`` appends a metrics record (every evaluated step does)."""
  return step % config.log_every == 0 or step == config.sft.steps or sft_evaluated(config, step)


def rl_evaluated(config: ml_collections.ConfigDict, step: int) -> bool:
  """Whether RL step ``step`` runs the held-out evaluation (always the last step)."""
  return step % config.eval.every == 0 or step == config.rl.steps


def rl_logged(config: ml_collections.ConfigDict, step: int) -> bool:
  """Whether RL step ``step`` appends a metrics record: every ``log_every`` steps, every
  evaluated step, and every checkpointed one (so that ``train_solved_keys``, gathered
  since the previous record, survives a resume)."""
  return (
    step % config.log_every == 0
    or step % config.checkpoint_every == 0
    or step == config.rl.steps
    or rl_evaluated(config, step)
  )


def _key(record: dict[str, Any]) -> tuple[Any, Any, Any]:
  return record.get("stage"), record.get("run", ""), record.get("step")


def stage_keys(
  config: ml_collections.ConfigDict, run_names: Sequence[str]
) -> dict[str, list[tuple[str, str, int]]]:
  """Per stage (:func:`stages`, in order), the (stage, run, step) keys of the records
  it logs, in order."""
  c = config
  keys = {
    SFT: [("sft", "", s) for s in range(1, c.sft.steps + 1) if sft_logged(c, s)],
    BASE: [("base", "", c.sft.steps)],
  }
  for name in run_names:
    keys[rl_stage(name)] = [("rl", name, s) for s in range(1, c.rl.steps + 1) if rl_logged(c, s)]
  return keys


def logged_keys(
  config: ml_collections.ConfigDict,
  run_names: Sequence[str],
  position: tuple[str, int] | None,
) -> list[tuple[str, str, int]]:
  """(stage, run, step) of every record the config logs up to ``position``, in order:
  every record of the stages before the position's stage (a :class:`Position` or a
  (stage name, step) pair) and that stage's records up to its step. None (no
  checkpoint yet) gives no records.

  Raises:
    ValueError: if ``position`` names no stage of the run.
  """
  if position is None:
    return []
  stage, step = position
  keys: list[tuple[str, str, int]] = []
  for name, logged in stage_keys(config, run_names).items():
    if name == stage:
      return keys + [key for key in logged if key[2] <= step]
    keys += logged
  raise ValueError(f"position={position!r} names no stage of {stages(run_names)}.")


def log_problem(
  records: Sequence[dict[str, Any]], expected: Sequence[tuple[str, str, int]]
) -> str | None:
  """Why the leading records of a log are not exactly ``expected``; None if they are."""
  found = [_key(r) for r in records[: len(expected)]]
  if found == list(expected):
    return None
  bad = next((i for i, (f, e) in enumerate(zip(found, expected)) if f != e), len(found))
  if bad == len(found):
    return f"holds {len(found)} readable records where {len(expected)} were expected"
  return f"has record {bad + 1} = {found[bad]}, expected {expected[bad]}"


def records_to_keep(
  log: checkpointing.MetricsLog,
  expected: Sequence[tuple[str, str, int]],
  *,
  where: str,
  checkpoints: str,
) -> list[dict[str, Any]]:
  """The leading records of ``log``, which must be exactly ``expected`` (the keys up to
  the latest checkpoint, at ``where``); records after them are dropped (recomputed).

  Raises:
    workdir.WorkdirError: if the log lacks a record up to the checkpoint: completing it
      would redo checkpointed steps. The message says to delete ``checkpoints`` and
      the log to recompute everything.
  """
  records = log.read()
  problem = log_problem(records, expected)
  if problem is None:
    return records[: len(expected)]
  if not os.path.exists(log.path):
    problem = "is missing"
  raise workdir_lib.WorkdirError(
    f"{log.path} {problem} (records up to the latest checkpoint, {where}), so the "
    f"results would be partial. To recompute everything, delete {checkpoints} and the "
    "log (or use a new --workdir)."
  )
