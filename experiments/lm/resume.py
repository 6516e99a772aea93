"""A run's progress on disk, and where it resumes.

The progress of a run in its workdir (:class:`Progress`): one Orbax checkpointer
per trained stage (``log_schedule.stages``: ``checkpoints/sft``, keeping its last
step; ``checkpoints/rl_<run>`` per RL run, keeping two; ``base`` only logs), the
metrics log ``metrics.jsonl`` (a deterministic function of the config) and the
throughput log :data:`THROUGHPUT_FILE` (wall-clock rates, appended, never trimmed).

The run resumes after its latest committed checkpoint (:meth:`Progress.position`):
the last stage in run order whose Orbax manager holds a step, keyed by that stage's
name and step (``log_schedule.Position``). The stages before it are finished; it
resumes after that step; the stages after it start afresh (``log_schedule.pending``).
The metrics log keeps exactly the records up to that position
(:meth:`Progress.records_to_keep`; the protocol of ``checkpointing``).
"""

from __future__ import annotations

from collections.abc import Sequence
import os
from typing import Any

import ml_collections

from experiments.lm import checkpointing
from experiments.lm import log_schedule
from experiments.lm import workdir as workdir_lib

METRICS_FILE = "metrics.jsonl"
THROUGHPUT_FILE = "throughput.jsonl"


class Progress:
  """The checkpoints and logs of one run's stages (module docstring)."""

  def __init__(
    self,
    config: ml_collections.ConfigDict,
    workdir: str,
    run_names: Sequence[str],
    *,
    writer: bool,
  ) -> None:
    """``run_names``: the RL runs in order; ``writer``: whether this process writes
    the logs (process 0)."""
    self.config = config
    self.workdir = workdir
    self.run_names = list(run_names)
    self.stages = log_schedule.stages(self.run_names)
    self.checkpoints_dir = os.path.join(workdir, "checkpoints")
    self.checkpointers = {
      log_schedule.SFT: checkpointing.Checkpointer(
        os.path.join(self.checkpoints_dir, "sft"), max_to_keep=1
      )
    }
    for name in self.run_names:
      self.checkpointers[log_schedule.rl_stage(name)] = checkpointing.Checkpointer(
        os.path.join(self.checkpoints_dir, f"rl_{name}")
      )
    self.log = checkpointing.MetricsLog(os.path.join(workdir, METRICS_FILE), writer=writer)
    # Wall-clock rates vary from run to run, so they stay out of metrics.jsonl (which a
    # resumed or re-sharded run reproduces exactly); appended, never truncated.
    self.throughput_log = checkpointing.MetricsLog(
      os.path.join(workdir, THROUGHPUT_FILE), writer=writer
    )

  def position(self) -> log_schedule.Position | None:
    """The latest committed checkpoint: the last stage, in run order, whose Orbax
    manager holds a step, and that step; None before the first checkpoint.

    Raises:
      workdir.WorkdirError: if a latest step's folder is damaged.
    """
    for stage in reversed(self.stages):
      ckpt = self.checkpointers.get(stage)
      step = None if ckpt is None else ckpt.latest_step()
      if step is not None:
        return log_schedule.Position(stage, step)
    return None

  def records_to_keep(self, position: log_schedule.Position | None) -> list[dict[str, Any]]:
    """The log's records up to ``position`` (``log_schedule.records_to_keep``)."""
    return log_schedule.records_to_keep(
      self.log,
      log_schedule.logged_keys(self.config, self.run_names, position),
      where=f"{position.stage} step {position.step}" if position else "",
      checkpoints=self.checkpoints_dir,
    )

  def restore(self, stage: str, step: int | None, state: Any) -> tuple[int, Any]:
    """The step ``stage`` resumes after and its state: 0 and ``state`` when ``step``
    is None (a fresh start), else ``step`` and its checkpoint of that step restored
    into the structure of ``state``."""
    if step is None:
      return 0, state
    return step, self.checkpointers[stage].restore(step, state)

  def finished_step(self, stage: str) -> int:
    """The last checkpointed step of ``stage``, which a later stage's checkpoint says
    is finished.

    Raises:
      workdir.WorkdirError: if its checkpoint folder holds none (only SFT can lack a
        checkpoint that later stages have).
    """
    ckpt = self.checkpointers[stage]
    latest = ckpt.latest_step()
    if latest is None:
      raise workdir_lib.WorkdirError(
        f"{ckpt.directory} holds no checkpoint, but the RL runs after it have some; "
        "use a new --workdir."
      )
    return latest

  def save(self, stage: str, step: int, state: Any) -> None:
    """Commits ``stage``'s ``state`` at ``step`` (after the step's record is logged)."""
    self.checkpointers[stage].save(step, state)

  def has_checkpoint(self, stage: str) -> bool:
    """Whether ``stage``'s manager holds a committed step."""
    return self.checkpointers[stage].latest_step() is not None

  def close(self) -> None:
    """Closes every checkpointer."""
    for ckpt in self.checkpointers.values():
      ckpt.close()
