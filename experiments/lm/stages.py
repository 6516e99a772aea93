"""The stages of a run: the warm start (SFT), its held-out evaluation (base) and the
RL runs, each resumed from its checkpoint.

A trained stage starts afresh or resumes after a checkpointed step
(``resume.Progress.restore``); every step is a deterministic function of (config,
seed, step), its data and sampling keys drawn from the streams of ``streams``. After
each step the stage appends its record to the metrics log at the steps
``log_schedule`` picks (with the held-out evaluations of ``eval_records``), *then*
saves its state every ``checkpoint_every`` steps and at its last (the kill-safe
protocol of ``checkpointing``). Throughput goes to the throughput log (one record per
logged step: SFT ``train_tokens_per_s``; RL ``tokens_per_s``, ``sample_tokens_per_s``,
``train_tokens_per_s`` and, on a known accelerator, MFU; see
``mfu.rl_step_throughput``), not to the metrics log, which stays a deterministic
function of the config.
"""

from __future__ import annotations

import time
from typing import Any

from absl import logging
import jax
import jax.numpy as jnp
import ml_collections
import numpy as np

from experiments.lm import components as components_lib
from experiments.lm import eval_records
from experiments.lm import log_schedule
from experiments.lm import parallel
from experiments.lm import resume
from experiments.lm import rl_step
from experiments.lm import run_specs
from experiments.lm import sft
from experiments.lm import streams


def _json(metrics: dict[str, Any]) -> dict[str, Any]:
  return {name: float(value) for name, value in jax.device_get(metrics).items()}


def method_label(config: ml_collections.ConfigDict, spec: run_specs.RunSpec) -> str:
  """A run's ``method`` column: ``max_at_k/<baseline>`` or the estimator, then
  ``/anneal`` for a changing k schedule and ``/<off-policy method>`` when inner
  epochs > 1 (``run_specs.RunSpec.labels``, which derives every label of a run)."""
  return spec.labels(config.rl.baseline, config.rl.inner_epochs).method


class Stages:
  """The stages of one run's ``parts``, logged and checkpointed in ``progress``."""

  def __init__(self, parts: components_lib.Components, progress: resume.Progress) -> None:
    self.parts = parts
    self.progress = progress
    self.updates = rl_step.Updates(parts)  # Compiled once per spec and rate, shared by runs.

  def run_sft(self, todo: dict[str, int | None]) -> Any:
    """Runs (or resumes) the warm start when ``todo`` (``log_schedule.pending``) holds
    it, else restores its last checkpoint; returns its final parameters."""
    parts, progress = self.parts, self.progress
    c = parts.config.sft
    stage = log_schedule.SFT
    state = {"params": parts.init_params, "opt_state": parts.sft_opt.init(parts.init_params)}
    resume_step = todo[stage] if stage in todo else progress.finished_step(stage)
    start, state = progress.restore(stage, resume_step, parallel.replicate(state, parts.mesh))
    params, opt_state = state["params"], state["opt_state"]
    update = sft.make_update(
      parts.policy.graphdef, parts.sft_opt, parts.prompt_len, parallel.replicated(parts.mesh)
    )
    t0 = time.time()
    since_step, since = start, time.perf_counter()  # Throughput since the last record.
    for step in range(start + 1, c.steps + 1):
      problems = streams.sft_problems(
        parts.task, parts.config.seed, step, c.batch_size, parts.exclude, reject=parts.sft_reject
      )
      tokens, mask = sft.make_batch(parts.task, problems)
      params, opt_state, metrics = update(
        params,
        opt_state,
        parallel.put_rows(tokens, parts.mesh),
        parallel.put_rows(mask, parts.mesh),
      )
      if log_schedule.sft_logged(parts.config, step):
        record = {"stage": "sft", "step": step, **_json(metrics)}
        if log_schedule.sft_evaluated(parts.config, step):
          record.update(eval_records.warm_start_fields(parts, params, step))
        progress.log.append(record)
        now = time.perf_counter()  # Steps since the last record, checkpoints included.
        rate = (step - since_step) * c.batch_size * parts.model_cfg.max_len / (now - since)
        since_step, since = step, now
        progress.throughput_log.append({"stage": "sft", "step": step, "train_tokens_per_s": rate})
        logging.info(
          "sft step %d/%d loss %.4f (%.1fs, %.0f tokens/s)",
          step,
          c.steps,
          record["loss"],
          time.time() - t0,
          rate,
        )
      if step % parts.config.checkpoint_every == 0 or step == c.steps:
        progress.save(stage, step, {"params": params, "opt_state": opt_state})
    if not progress.has_checkpoint(stage):  # sft.steps == 0: record the initial parameters.
      progress.save(stage, 0, {"params": params, "opt_state": opt_state})
    return params

  def run_base_eval(self, params: Any) -> None:
    """Evaluates the warm start: its results, and an independent binning evaluation
    (``eval_records.base_fields``)."""
    parts = self.parts
    fields = eval_records.base_fields(parts, params)
    self.progress.log.append(
      {"stage": "base", "step": parts.config.sft.steps, "method": "base", **fields}
    )
    logging.info("base pass@k %s", np.round(fields["eval_pass_at_k"], 3).tolist())

  def run_rl(self, run: run_specs.RunSpec, sft_params: Any, resume_step: int | None) -> None:
    """Runs RL run ``run`` from the warm start ``sft_params``, or resumes it after its
    checkpointed ``resume_step`` (None: from the start)."""
    parts, progress = self.parts, self.progress
    c = parts.config.rl
    stage = log_schedule.rl_stage(run.name)
    params = jax.tree.map(jnp.copy, sft_params)
    state = parallel.replicate(
      {"params": params, "opt_state": parts.rl_optimizer(run).init(params)}, parts.mesh
    )
    start, state = progress.restore(stage, resume_step, state)
    params, opt_state = state["params"], state["opt_state"]
    method = method_label(parts.config, run)
    t0 = time.time()
    solved: set[int] = set()  # Since the last record.
    for step in range(start + 1, c.steps + 1):
      k = run.k_at(step)
      update = self.updates.get(rl_step.update_spec(parts.config, run, k), run)
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
      record = rl_step.record(
        parts.config,
        run,
        method=method,
        step=step,
        k=k,
        rollout=rollout,
        metrics=metrics,
        solved=solved,
      )
      if log_schedule.rl_evaluated(parts.config, step):
        record.update(eval_records.rl_fields(parts, params, sft_params, step))
      if log_schedule.rl_logged(parts.config, step):
        progress.log.append(record)
        solved = set()
        progress.throughput_log.append({"stage": "rl", "run": run.name, "step": step, **throughput})
        logging.info(
          "rl %s step %d/%d reward %.3f (%.1fs, %.0f tokens/s)",
          run.name,
          step,
          c.steps,
          record["reward"],
          time.time() - t0,
          throughput["tokens_per_s"],
        )
      if step % parts.config.checkpoint_every == 0 or step == c.steps:
        progress.save(stage, step, {"params": params, "opt_state": opt_state})
