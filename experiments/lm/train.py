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

Before anything is written the whole config is validated once (``validation``,
which also builds the task and parses the runs) and the workdir is claimed
(``workdir``): one writer at a time, and a workdir resumes only
with the config it was started with. A run that cannot finish with complete
results (a missing or damaged ``metrics.jsonl``, a damaged checkpoint folder)
stops with a message instead.

Throughput goes to ``throughput.jsonl`` (one record per logged step: SFT
``train_tokens_per_s``; RL ``tokens_per_s``, ``sample_tokens_per_s``,
``train_tokens_per_s`` and, on a known accelerator, MFU; see
``mfu.rl_step_throughput``), not to ``metrics.jsonl``, which stays a deterministic
function of the config.

Evaluation problems are held out by problem key (``splits``): no SFT batch or RL
prompt poses one of them in any form. The base model is evaluated twice, on
independent samples: once for its results, once (``bin_correct``) to bin the
problems by difficulty (``reporting``). Each RL run is evaluated every ``eval.every``
steps and at its last (``eval_records``); with ``eval.kl`` every evaluation also logs
the KL to the warm start on the held-out prompts and its per-prompt counts, the
checkpoint frontier of ``checkpoints.csv``, and with ``eval.common_keys`` all of them
share one sampling key (``streams.eval_key``).

Outputs in ``workdir``: ``config.json``, ``run.json`` (each invocation's commit,
machine and times: ``provenance``), ``metrics.jsonl``, ``throughput.jsonl``,
``split.json`` (the evaluation problems, the distinct training problems drawn,
``overlap`` = 0) and, once every stage is done, the tables and figures of
``final_outputs``.
"""

from __future__ import annotations

import os
import time
from typing import Any

from absl import logging
import jax
import jax.numpy as jnp
import ml_collections
import numpy as np

from experiments.lm import checkpointing
from experiments.lm import components as components_lib
from experiments.lm import eval_records
from experiments.lm import final_outputs
from experiments.lm import log_schedule
from experiments.lm import parallel
from experiments.lm import provenance
from experiments.lm import rl
from experiments.lm import rl_step
from experiments.lm import runs as runs_lib
from experiments.lm import sft
from experiments.lm import splits
from experiments.lm import streams
from experiments.lm import validation
from experiments.lm import workdir as workdir_lib

THROUGHPUT_FILE = "throughput.jsonl"
Position = tuple[int, int] | None  # (stage rank, step) of a checkpoint; see log_schedule.


def _json(metrics: dict[str, Any]) -> dict[str, Any]:
  return {name: float(value) for name, value in jax.device_get(metrics).items()}


def method_label(config: ml_collections.ConfigDict, spec: runs_lib.RunSpec) -> str:
  """A run's ``method`` column: ``max_at_k/<baseline>`` or the estimator, then
  ``/anneal`` for a changing k schedule and ``/<off-policy method>`` when inner
  epochs > 1 (``runs.RunSpec.labels``, which derives every label of a run)."""
  return spec.labels(config.rl.baseline, config.rl.inner_epochs).method


class Experiment:
  """The training loop of one run: its stages, checkpoints and logs."""

  def __init__(self, parts: components_lib.Components, workdir: str) -> None:
    """``parts`` come from a validated config; ``workdir`` is claimed by ``run``."""
    self.parts = parts
    self.config = parts.config
    self.workdir = workdir
    self.is_main = jax.process_index() == 0
    self.stages = ["sft", "base"] + [f"rl/{r.name}" for r in parts.runs]
    ckpt_dir = os.path.join(workdir, "checkpoints")
    self.checkpointers = {
      "sft": checkpointing.Checkpointer(os.path.join(ckpt_dir, "sft"), max_to_keep=1)
    }
    for r in parts.runs:
      self.checkpointers[f"rl/{r.name}"] = checkpointing.Checkpointer(
        os.path.join(ckpt_dir, f"rl_{r.name}")
      )
    self.log = checkpointing.MetricsLog(os.path.join(workdir, "metrics.jsonl"), writer=self.is_main)
    # Wall-clock rates vary from run to run, so they stay out of metrics.jsonl (which a
    # resumed or re-sharded run reproduces exactly); appended, never truncated.
    self.throughput_log = checkpointing.MetricsLog(
      os.path.join(workdir, THROUGHPUT_FILE), writer=self.is_main
    )
    # Jitted updates by spec and learning rate, shared by runs.
    self.rl_updates: dict[tuple[rl.UpdateSpec, float], Any] = {}

  # ------------------------------------------------------------------ positions

  def resume_position(self) -> Position:
    """(stage rank, step) of the latest committed checkpoint, or None."""
    for rank in reversed(range(len(self.stages))):
      ckpt = self.checkpointers.get(self.stages[rank])
      step = None if ckpt is None else ckpt.latest_step()
      if step is not None:
        return rank, step
    return None

  def records_to_keep(self, position: Position) -> list[dict[str, Any]]:
    """The log's records up to ``position`` (``log_schedule.records_to_keep``)."""
    names = [r.name for r in self.parts.runs]
    return log_schedule.records_to_keep(
      self.log,
      log_schedule.logged_keys(self.config, names, position),
      where=f"{self.stages[position[0]]} step {position[1]}" if position else "",
      checkpoints=os.path.join(self.workdir, "checkpoints"),
    )

  def _start(self, rank: int, position: Position, state: Any) -> tuple[int, Any]:
    """The step a stage resumes after and its state (0 and ``state`` when fresh)."""
    ckpt = self.checkpointers[self.stages[rank]]
    if position is None or position[0] < rank:
      return 0, state
    latest = position[1] if position[0] == rank else ckpt.latest_step()
    if latest is None:  # Only SFT can lack a checkpoint that later stages have.
      raise workdir_lib.WorkdirError(
        f"{ckpt.directory} holds no checkpoint, but the RL runs after it have some; "
        "use a new --workdir."
      )
    return latest, ckpt.restore(latest, state)

  # --------------------------------------------------------------------- stages

  def run_sft(self, position: Position) -> Any:
    """Runs (or resumes) the warm start; returns its final parameters."""
    c, parts = self.config.sft, self.parts
    ckpt = self.checkpointers["sft"]
    state = {"params": parts.init_params, "opt_state": parts.sft_opt.init(parts.init_params)}
    start, state = self._start(0, position, parallel.replicate(state, parts.mesh))
    params, opt_state = state["params"], state["opt_state"]
    update = sft.make_update(
      parts.policy.graphdef, parts.sft_opt, parts.prompt_len, parallel.replicated(parts.mesh)
    )
    t0 = time.time()
    since_step, since = start, time.perf_counter()  # Throughput since the last record.
    for step in range(start + 1, c.steps + 1):
      problems = streams.sft_problems(
        parts.task, self.config.seed, step, c.batch_size, parts.exclude, reject=parts.sft_reject
      )
      tokens, mask = sft.make_batch(parts.task, problems)
      params, opt_state, metrics = update(
        params,
        opt_state,
        parallel.put_rows(tokens, parts.mesh),
        parallel.put_rows(mask, parts.mesh),
      )
      if log_schedule.sft_logged(self.config, step):
        record = {"stage": "sft", "step": step, **_json(metrics)}
        if log_schedule.sft_evaluated(self.config, step):
          record.update(eval_records.warm_start_fields(parts, params, step))
        self.log.append(record)
        now = time.perf_counter()  # Steps since the last record, checkpoints included.
        rate = (step - since_step) * c.batch_size * parts.model_cfg.max_len / (now - since)
        since_step, since = step, now
        self.throughput_log.append({"stage": "sft", "step": step, "train_tokens_per_s": rate})
        logging.info(
          "sft step %d/%d loss %.4f (%.1fs, %.0f tokens/s)",
          step,
          c.steps,
          record["loss"],
          time.time() - t0,
          rate,
        )
      if step % self.config.checkpoint_every == 0 or step == c.steps:
        ckpt.save(step, {"params": params, "opt_state": opt_state})
    if ckpt.latest_step() is None:  # sft.steps == 0: record the initial parameters.
      ckpt.save(0, {"params": params, "opt_state": opt_state})
    return params

  def run_base_eval(self, params: Any) -> None:
    """Evaluates the warm start: its results, and an independent binning evaluation
    (``eval_records.base_fields``)."""
    fields = eval_records.base_fields(self.parts, params)
    self.log.append({"stage": "base", "step": self.config.sft.steps, "method": "base", **fields})
    logging.info("base pass@k %s", np.round(fields["eval_pass_at_k"], 3).tolist())

  def rl_update(self, spec: rl.UpdateSpec, run: runs_lib.RunSpec) -> Any:
    """The jitted update of ``spec`` with ``run``'s optimiser (compiled once per spec
    and learning rate, shared by the runs)."""
    key = (spec, self.parts.rl_learning_rate(run))
    if key not in self.rl_updates:
      self.rl_updates[key] = rl.make_update(
        self.parts.policy, self.parts.rl_optimizer(run), spec, parallel.replicated(self.parts.mesh)
      )
    return self.rl_updates[key]

  def run_rl(self, index: int, run: runs_lib.RunSpec, sft_params: Any, position: Position) -> None:
    """Runs (or resumes) RL run ``index`` from the warm start ``sft_params``."""
    c, parts = self.config.rl, self.parts
    rank = 2 + index
    params = jax.tree.map(jnp.copy, sft_params)
    state = parallel.replicate(
      {"params": params, "opt_state": parts.rl_optimizer(run).init(params)}, parts.mesh
    )
    own = position if position is not None and position[0] == rank else None
    start, state = self._start(rank, own, state)
    params, opt_state = state["params"], state["opt_state"]
    t0 = time.time()
    solved: set[int] = set()  # Since the last record.
    for step in range(start + 1, c.steps + 1):
      k = run.k_at(step)
      update = self.rl_update(rl_step.update_spec(self.config, run, k), run)
      step_start = time.perf_counter()
      rollout = rl_step.sample(parts, params, step)
      sampled_at = time.perf_counter()
      solved |= rl_step.solved_keys(parts, rollout)
      batch = rl_step.device_batch(rollout, c.reward, parts.mesh)
      params, opt_state, metrics = update(params, opt_state, sft_params, batch)
      metrics = _json(metrics)  # Waits for the update.
      throughput = rl_step.throughput(
        parts, sampled_at - step_start, time.perf_counter() - sampled_at
      )
      method = method_label(self.config, run)
      record = rl_step.record(
        self.config,
        run,
        method=method,
        step=step,
        k=k,
        rollout=rollout,
        metrics=metrics,
        solved=solved,
      )
      if log_schedule.rl_evaluated(self.config, step):
        record.update(eval_records.rl_fields(parts, params, sft_params, step))
      if log_schedule.rl_logged(self.config, step):
        self.log.append(record)
        solved = set()
        self.throughput_log.append({"stage": "rl", "run": run.name, "step": step, **throughput})
        logging.info(
          "rl %s step %d/%d reward %.3f (%.1fs, %.0f tokens/s)",
          run.name,
          step,
          c.steps,
          record["reward"],
          time.time() - t0,
          throughput["tokens_per_s"],
        )
      if step % self.config.checkpoint_every == 0 or step == c.steps:
        self.checkpointers[self.stages[rank]].save(step, {"params": params, "opt_state": opt_state})

  # ---------------------------------------------------------------------- all

  def run(self) -> list[dict[str, Any]]:
    """Runs (or resumes) every stage and writes the outputs; returns the result rows."""
    try:
      return self._run()
    finally:
      for ckpt in self.checkpointers.values():
        ckpt.close()

  def _prepare(self, position: Position) -> None:
    """Trims the log to ``position`` and writes ``split.json`` (process 0 only)."""
    kept = self.records_to_keep(position)
    self.log.rewrite(kept)
    if position is not None:
      logging.info(
        "Resuming after %s step %d (%d metric records kept).",
        self.stages[position[0]],
        position[1],
        len(kept),
      )
    # What the run trains on, replayed without the model (deterministic).
    parts = self.parts
    split = splits.make_split(parts.task, self.config, parts.eval_set.keys)
    splits.write_split(self.workdir, split)
    if split["overlap"]:
      raise RuntimeError(f"{split['overlap']} training problems are evaluation problems.")

  def _run(self) -> list[dict[str, Any]]:
    position = self.resume_position()
    if self.is_main:  # The only writer; other processes never read the log to resume.
      self._prepare(position)
    sft_params = self.run_sft(position)
    if position is None or position[0] < 1:
      self.run_base_eval(sft_params)
    for index, run in enumerate(self.parts.runs):
      if position is not None and position[0] > 2 + index:
        continue
      self.run_rl(index, run, sft_params, position)
    if not self.is_main:
      return []  # Process 0 owns the log and writes the results.
    return final_outputs.write(self.workdir, self.log.read(), self.parts)


def run(config: ml_collections.ConfigDict, workdir: str) -> list[dict[str, Any]]:
  """Runs (or resumes) the experiment of ``config`` in ``workdir``; returns the result
  rows (process 0; the other processes of a multi-host run return none).

  Raises:
    config_checks.ConfigError: a bad config value or design note (before any write).
    workdir_lib.WorkdirError: the workdir is in use, holds another config, or its log
      or a checkpoint (or ``run.json``) is damaged.
  """
  valid = validation.validate_config(config, device_count=jax.device_count())
  design = provenance.design_note(config.study_design)
  mesh = parallel.make_mesh(config.num_devices)
  record = {
    **config.to_dict(),
    "workdir": os.path.abspath(workdir),
    "num_devices_used": int(mesh.size),
  }
  writer = jax.process_index() == 0
  with workdir_lib.claim(workdir, record, writer=writer) as path:
    with provenance.recorded(path, design, writer=writer):  # run.json's session.
      return Experiment(components_lib.build(valid, mesh), path).run()


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
