"""Orbax checkpoints and the append-only metrics log, with a kill-safe resume protocol.

Layout: ``DIR/checkpoints/<stage>/<step>/`` (one Orbax manager per stage: ``sft``
and one per RL run) and ``DIR/metrics.jsonl`` (one JSON object per logged step).

Every log record has a *position* (stage, step): stages follow the run order
sft < base < rl runs (``log_schedule.stages``), steps their own order within a
stage, and records are appended in strictly increasing position. The position of a
checkpoint is the stage whose Orbax manager holds it and its step
(``log_schedule.Position``). The protocol, and why a ``kill -9`` at any instant loses
no finished step and logs none twice:

1. After step s: append its record (flush + fsync), *then* save the checkpoint of
   step s, if one is due. Orbax commits a checkpoint atomically (written to a
   temporary directory, renamed when complete; leftovers are cleaned up on start).
   Hence every committed checkpoint at position c has all records <= c on disk,
   complete, in order.
2. On start: find the latest committed checkpoint position c, the last stage in
   run order whose manager holds a step (none: c = -inf),
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

Each line also carries a CRC-32 of its record's values (field ``crc32``), checked
whenever the log is read (on resume, for the final results, by the study summary):
a value edited after it was written stops the run, naming the line, instead of
entering the results. Chosen because it is cheap (one CRC of a line the writer
already serialises) and the positions alone miss edited values. It guards against
accidental edits only (a hand-edited number, a tool that rewrote the floats), not
deliberate ones: anyone can recompute a CRC. A log written before the checksums
(no line has one) is read unchecked and gains them when a resume rewrites it; a
log in which only some lines have one is refused.
"""

from __future__ import annotations

from collections.abc import Iterable
import json
import os
from typing import Any
import zlib

import jax
import orbax.checkpoint as ocp

from experiments.lm import workdir as workdir_lib

# Orbax writes this file into every step folder it commits.
_METADATA_FILE = "_CHECKPOINT_METADATA"
# The field of a metrics.jsonl line that holds the CRC-32 of the record's other fields.
CHECKSUM_FIELD = "crc32"


def _checksum(record: dict[str, Any]) -> str:
  return f"{zlib.crc32(json.dumps(record, sort_keys=True).encode()):08x}"


def encode_record(record: dict[str, Any]) -> str:
  """One line of a metrics log (no newline): ``record`` as JSON with its checksum."""
  if CHECKSUM_FIELD in record:
    raise ValueError(f"record must not hold the field {CHECKSUM_FIELD!r}; got {sorted(record)}.")
  return json.dumps({**record, CHECKSUM_FIELD: _checksum(record)}, sort_keys=True)


def decode_records(lines: Iterable[str], path: str) -> list[dict[str, Any]]:
  """The records of a metrics log's ``lines``, checksums checked and removed.

  Reading stops at the first line that is not JSON (a torn last line: nothing valid
  follows it). Raises ``WorkdirError`` naming ``path`` and the line when a line is
  not a JSON object, its values do not match its checksum, or only some lines carry
  one (see the module docstring).
  """
  records, with_checksum = [], set()
  for number, line in enumerate(lines, start=1):
    try:
      record = json.loads(line)
    except json.JSONDecodeError:
      break
    if not isinstance(record, dict):
      raise workdir_lib.WorkdirError(f"{path}, line {number}: not a JSON object.")
    stored = record.pop(CHECKSUM_FIELD, None)
    with_checksum.add(stored is not None)
    if len(with_checksum) > 1:
      raise workdir_lib.WorkdirError(
        f"{path}, line {number}: some records carry a {CHECKSUM_FIELD} checksum and some "
        "do not, so the file was edited."
      )
    if stored is not None and stored != _checksum(record):
      raise workdir_lib.WorkdirError(
        f"{path}, line {number}: the record's values do not match its {CHECKSUM_FIELD} "
        "checksum (edited after it was written)."
      )
    records.append(record)
  return records


class MetricsLog:
  """``metrics.jsonl``: append-only; truncated to a checkpoint position on resume.

  Every line carries its record's checksum (:func:`encode_record`), checked by
  :meth:`read`.
  """

  def __init__(self, path: str, *, writer: bool = True) -> None:
    self.path = path
    self.writer = writer  # Only process 0 writes.

  def read(self) -> list[dict[str, Any]]:
    """All complete records (a torn last line is skipped); ``WorkdirError`` for an
    edited one (:func:`decode_records`)."""
    if not os.path.exists(self.path):
      return []
    with open(self.path) as f:
      try:
        return decode_records(f, self.path)
      except workdir_lib.WorkdirError as e:
        raise workdir_lib.WorkdirError(
          f"{e} Its results cannot be trusted; use a new --workdir."
        ) from None

  def rewrite(self, records: list[dict[str, Any]]) -> None:
    """Atomically replaces the log by ``records``."""
    if not self.writer:
      return
    tmp = self.path + ".tmp"
    with open(tmp, "w") as f:
      for record in records:
        f.write(encode_record(record) + "\n")
      f.flush()
      os.fsync(f.fileno())
    os.replace(tmp, self.path)

  def append(self, record: dict[str, Any]) -> None:
    if not self.writer:
      return
    with open(self.path, "a") as f:
      f.write(encode_record(record) + "\n")
      f.flush()
      os.fsync(f.fileno())


class Checkpointer:
  """One Orbax ``CheckpointManager`` per stage, synchronous saves."""

  def __init__(self, directory: str, *, max_to_keep: int = 2) -> None:
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
