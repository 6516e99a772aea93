"""Orbax checkpoints and the append-only metrics log, with a kill-safe resume protocol.

Layout: ``DIR/checkpoints/<stage>/<step>/`` (one Orbax manager per stage: ``sft``
and one per RL run) and ``DIR/metrics.jsonl`` (one JSON object per logged step).

Every log record has a *position* (stage rank, step): ranks follow the run order
sft < base < rl runs, and records are appended in strictly increasing position.
The protocol, and why a ``kill -9`` at any instant loses no finished step and
logs none twice:

1. After step s: append its record (flush + fsync), *then* save the checkpoint of
   step s, if one is due. Orbax commits a checkpoint atomically (written to a
   temporary directory, renamed when complete; leftovers are cleaned up on start).
   Hence every committed checkpoint at position c has all records <= c on disk,
   complete, in order.
2. On start: find the latest committed checkpoint position c (none: c = -inf),
   check that the log's leading records are exactly the ones the config logs up
   to c, rewrite the log keeping those (to a temporary file, then ``os.replace``,
   which is atomic), restore the state at c and resume at the step after c.
   Dropped records (steps after c, a torn last line) are recomputed; since
   training is a deterministic function of (config, seed, step), they come out
   identical.

A log that lacks records up to c (deleted, truncated, a damaged line) cannot be
recomputed without redoing the checkpointed steps, so the run refuses to resume
rather than finish with partial results; so it does for a step folder without
Orbax's metadata (empty or damaged).

By induction the file is strictly increasing in position after every restart, so
no position appears twice; and every step <= c was logged before the checkpoint,
so none is lost.
"""

from __future__ import annotations

import json
import os
from typing import Any

import jax
import orbax.checkpoint as ocp

from experiments.lm import workdir as workdir_lib

# Orbax writes this file into every step folder it commits.
_METADATA_FILE = "_CHECKPOINT_METADATA"


class MetricsLog:
  """``metrics.jsonl``: append-only; truncated to a checkpoint position on resume."""

  def __init__(self, path: str, *, writer: bool = True):
    self.path = path
    self.writer = writer  # Only process 0 writes.

  def read(self) -> list[dict[str, Any]]:
    """All complete records (a torn last line is skipped)."""
    if not os.path.exists(self.path):
      return []
    records = []
    with open(self.path) as f:
      for line in f:
        try:
          records.append(json.loads(line))
        except json.JSONDecodeError:
          break  # Only the last line can be torn; nothing valid follows it.
    return records

  def rewrite(self, records: list[dict[str, Any]]) -> None:
    """Atomically replaces the log by ``records``."""
    if not self.writer:
      return
    tmp = self.path + ".tmp"
    with open(tmp, "w") as f:
      for record in records:
        f.write(json.dumps(record, sort_keys=True) + "\n")
      f.flush()
      os.fsync(f.fileno())
    os.replace(tmp, self.path)

  def append(self, record: dict[str, Any]) -> None:
    if not self.writer:
      return
    with open(self.path, "a") as f:
      f.write(json.dumps(record, sort_keys=True) + "\n")
      f.flush()
      os.fsync(f.fileno())


class Checkpointer:
  """One Orbax ``CheckpointManager`` per stage, synchronous saves."""

  def __init__(self, directory: str, *, max_to_keep: int = 2):
    self.directory = directory
    options = ocp.CheckpointManagerOptions(
      max_to_keep=max_to_keep,
      create=True,
      cleanup_tmp_directories=True,
      enable_async_checkpointing=False,
    )
    self.manager = ocp.CheckpointManager(directory, options=options)

  def step_dir(self, step: int) -> str:
    return os.path.join(self.directory, str(step))

  def latest_step(self) -> int | None:
    """The latest committed step, or None; ``WorkdirError`` if its folder is damaged."""
    step = self.manager.latest_step()
    if step is not None and not os.path.isfile(os.path.join(self.step_dir(step), _METADATA_FILE)):
      raise workdir_lib.WorkdirError(
        f"Checkpoint folder {self.step_dir(step)} is empty or lacks Orbax's {_METADATA_FILE}; "
        "it was not written by a finished save. Delete that folder to resume from the "
        "previous checkpoint (or use a new --workdir)."
      )
    return step

  def save(self, step: int, state: Any) -> None:
    self.manager.save(step, args=ocp.args.StandardSave(state))
    self.manager.wait_until_finished()

  def restore(self, step: int, like: Any) -> Any:
    """Restores ``step`` into the structure, shapes and shardings of ``like``."""
    abstract = jax.tree.map(
      lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=x.sharding), like
    )
    try:
      return self.manager.restore(step, args=ocp.args.StandardRestore(abstract))
    except (OSError, ValueError, KeyError) as e:
      raise workdir_lib.WorkdirError(
        f"Checkpoint folder {self.step_dir(step)} cannot be restored ({type(e).__name__}: "
        f"{str(e)[:200]}); delete it to resume from the previous checkpoint (or use a new "
        "--workdir)."
      ) from e

  def close(self) -> None:
    self.manager.close()
