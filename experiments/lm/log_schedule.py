"""Which steps of a run log a metrics record or evaluate, and the check of a log on resume.

Every record of ``metrics.jsonl`` is keyed by (stage, run, step); a config fixes the
keys in order (``logged_keys``), so a resumed run can check that its log holds
exactly the records up to its checkpoint (``log_problem``) before appending more.
"""

from __future__ import annotations

from collections.abc import Sequence
import os
from typing import Any

import ml_collections

from experiments.lm import checkpointing
from experiments.lm import workdir as workdir_lib


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


def logged_keys(
  config: ml_collections.ConfigDict,
  run_names: Sequence[str],
  position: tuple[int, int] | None,
) -> list[tuple[str, str, int]]:
  """(stage, run, step) of every record the config logs up to ``position``, in order.

  Positions are (stage rank, step) with ranks sft = 0, base = 1, RL run i = 2 + i;
  None (no checkpoint yet) gives no records.
  """
  if position is None:
    return []
  c = config
  keyed = [(("sft", "", s), (0, s)) for s in range(1, c.sft.steps + 1) if sft_logged(c, s)]
  keyed.append((("base", "", c.sft.steps), (1, c.sft.steps)))
  for index, name in enumerate(run_names):
    keyed.extend(
      (("rl", name, s), (2 + index, s)) for s in range(1, c.rl.steps + 1) if rl_logged(c, s)
    )
  return [key for key, at in keyed if at <= position]


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
