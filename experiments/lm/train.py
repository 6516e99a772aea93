"""The experiment driver: supervised warm start, base evaluation, then RL runs.

``run(config, workdir)`` executes the stages in order

  sft (steps 1..S) -> base (held-out evaluation of the warm start) -> rl runs

where each RL run (``config.rl.runs``) starts from the warm-start parameters with
its own estimator and k_opt schedule. Runs share their prompts and sampling keys
step for step (common random numbers), so differences between them come from the
estimator. Every step is a deterministic function of (config, seed, step): data
and sampling keys come from the streams of ``streams``; with checkpoints holding
parameters and optimiser state, a resumed run reproduces an uninterrupted one
exactly. See ``checkpointing`` for the kill-safe resume protocol.

Before anything is written the whole config is validated once and the workdir is
claimed (``session``): one writer at a time, and a workdir resumes only with the
config it was started with. The run resumes after its latest checkpoint, keyed by
the checkpointed stage's name and step (``resume``); the stages themselves are in
``stages``. A run that cannot finish with complete results (a missing or damaged
``metrics.jsonl``, a damaged checkpoint folder) stops with a message instead.

Throughput goes to ``throughput.jsonl`` (see ``stages``), not to ``metrics.jsonl``,
which stays a deterministic function of the config.

Evaluation problems are held out by problem key (``splits``): no SFT batch or RL
prompt poses one of them in any form. The base model is evaluated twice, on
independent samples: once for its results, once (``bin_correct``) to bin the
problems by difficulty (``report_rows``). Each RL run is evaluated every ``eval.every``
steps and at its last (``eval_records``); with ``eval.kl`` every evaluation also logs
the KL to the warm start on the held-out prompts and its per-prompt counts, the
checkpoint frontier of ``checkpoints.csv``, and with ``eval.common_keys`` all of them
share one sampling key (``streams.eval_key``).

Outputs in ``workdir``: ``config.json``, ``run.json`` (each invocation's commit,
machine and times: ``provenance``), ``metrics.jsonl``, ``throughput.jsonl``,
``split.json`` (the evaluation problems, the distinct training problems drawn,
``overlap`` = 0) and, once every stage is done, the tables and figures of
``run_outputs``.
"""

from __future__ import annotations

from typing import Any

from absl import logging
import jax
import ml_collections

from experiments.lm import components as components_lib
from experiments.lm import log_schedule
from experiments.lm import resume
from experiments.lm import run_outputs
from experiments.lm import session
from experiments.lm import stages


class Experiment:
  """The training loop of one run: its stages, checkpoints and logs."""

  def __init__(self, parts: components_lib.Components, workdir: str) -> None:
    """``parts`` come from a validated config; ``workdir`` is claimed by ``run``."""
    self.parts = parts
    self.config = parts.config
    self.workdir = workdir
    self.is_main = jax.process_index() == 0
    self.progress = resume.Progress(
      self.config, workdir, [r.name for r in parts.runs], writer=self.is_main
    )
    self.stages = stages.Stages(parts, self.progress)

  def run(self) -> list[dict[str, Any]]:
    """Runs (or resumes) every stage and writes the outputs; returns the result rows."""
    try:
      return self._run()
    finally:
      self.progress.close()

  def _prepare(self, position: log_schedule.Position | None) -> None:
    """Trims the log to ``position`` and writes ``split.json`` (process 0 only)."""
    kept = self.progress.records_to_keep(position)
    self.progress.log.rewrite(kept)
    if position is not None:
      logging.info(
        "Resuming after %s step %d (%d metric records kept).",
        position.stage,
        position.step,
        len(kept),
      )
    run_outputs.write_split(self.workdir, self.parts)

  def _run(self) -> list[dict[str, Any]]:
    position = self.progress.position()
    if self.is_main:  # The only writer; other processes never read the log to resume.
      self._prepare(position)
    todo = log_schedule.pending(self.progress.stages, position)  # Earlier ones are done.
    sft_params = self.stages.run_sft(todo)
    if log_schedule.BASE in todo:
      self.stages.run_base_eval(sft_params)
    for run in self.parts.runs:
      stage = log_schedule.rl_stage(run.name)
      if stage in todo:
        self.stages.run_rl(run, sft_params, todo[stage])
    if not self.is_main:
      return []  # Process 0 owns the log and writes the results.
    return run_outputs.write(self.workdir, self.progress.log.read(), self.parts)


def run(config: ml_collections.ConfigDict, workdir: str) -> list[dict[str, Any]]:
  """Runs (or resumes) the experiment of ``config`` in ``workdir``; returns the result
  rows (process 0; the other processes of a multi-host run return none).

  Raises:
    config_checks.ConfigError: a bad config value or design note (before any write).
    workdir_lib.WorkdirError: the workdir is in use, holds another config, or its log
      or a checkpoint (or ``run.json``) is damaged.
  """
  with session.opened(config, workdir) as (parts, path):
    return Experiment(parts, path).run()


def initialize_distributed(enabled: bool) -> None:
  """``jax.distributed.initialize()`` unless disabled or already done.

  ``python -m launch.distributed experiments.lm.main --distributed ...`` initialises
  before this binary starts; a second call would raise.
  """
  if enabled and not jax.distributed.is_initialized():
    jax.distributed.initialize()


def main(config: ml_collections.ConfigDict, workdir: str, *, distributed: bool = False) -> None:
  """The binary's body: ``run``, then its rows logged. A refused run (bad config, busy or
  mismatched workdir, damaged log or checkpoint) raises
  :class:`experiments.config_checks.ConfigError` (``WorkdirError`` is one), which
  ``experiments.lm.main`` turns into one error line and exit code 1."""
  initialize_distributed(distributed)
  logging.info(
    "JAX devices: %s (process %d of %d)", jax.devices(), jax.process_index(), jax.process_count()
  )
  rows = run(config, workdir)
  for row in rows:
    logging.info("%s", row)
