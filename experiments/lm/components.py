"""What a run is built from: task, runs, model, policies, held-out set and optimisers.

``build`` turns a validated config (``validation.ValidConfig``) into these parts once;
the training loop (``train``), the RL step (``rl_step``) and the final outputs
(``run_outputs``) read them.
"""

from __future__ import annotations

from collections.abc import Callable
import dataclasses
from typing import Any

import jax
import ml_collections
import numpy as np
import optax

from experiments.lm import answer_overlap
from experiments.lm import evaluation
from experiments.lm import mfu as mfu_lib
from experiments.lm import model as model_lib
from experiments.lm import optimizer as optimizer_lib
from experiments.lm import parallel
from experiments.lm import policy as policy_lib
from experiments.lm import run_specs
from experiments.lm import tasks as tasks_lib
from experiments.lm import validation


@dataclasses.dataclass(frozen=True)
class Components:
  """The parts of one run.

  Attributes:
    config: the validated config.
    task: its task.
    runs: its RL runs, in order.
    mesh: the data-parallel mesh.
    policy: the model and the RL sampling distribution (``rl.temperature``,
      ``rl.top_p``), shared by the sampler and the update.
    eval_policy: the same model with the evaluation's (``eval.temperature``,
      ``eval.top_p``).
    eval_set: the held-out problems.
    exclude: their keys, which no training batch poses.
    sft_reject: with ``config.task.novel_answers``, rejects the SFT problems whose
      reference solution solves a held-out problem (``answer_overlap.sft_reject``);
      else None.
    init_params: the initial parameters (replicated over the mesh).
    sft_opt: the warm start's optimiser.
    rl_opts: the RL runs' optimisers by learning rate: ``rl.learning_rate``'s and
      that of every run with its own (``run_specs.RunSpec.learning_rate``); all share
      one state layout, so checkpoints restore alike. See :meth:`rl_optimizer`.
    peak_flops: the accelerator's peak FLOP/s (None when unknown: no MFU).
  """

  config: ml_collections.ConfigDict
  task: tasks_lib.Task
  runs: tuple[run_specs.RunSpec, ...]
  mesh: jax.sharding.Mesh
  policy: policy_lib.Policy
  eval_policy: policy_lib.Policy
  eval_set: evaluation.EvalSet
  exclude: frozenset[int]
  sft_reject: Callable[[np.ndarray], np.ndarray] | None
  init_params: Any
  sft_opt: optax.GradientTransformation
  rl_opts: dict[float, optax.GradientTransformation]
  peak_flops: float | None

  def rl_learning_rate(self, run: run_specs.RunSpec) -> float:
    """The RL learning rate of ``run``: its own, else ``rl.learning_rate``."""
    own = run.learning_rate
    return float(self.config.rl.learning_rate) if own is None else own

  def rl_optimizer(self, run: run_specs.RunSpec) -> optax.GradientTransformation:
    """The optimiser of RL run ``run`` (at :meth:`rl_learning_rate`)."""
    return self.rl_opts[self.rl_learning_rate(run)]

  @property
  def model_cfg(self) -> model_lib.ModelConfig:
    """The model config."""
    return self.policy.cfg

  @property
  def prompt_len(self) -> int:
    """Tokens before each completion (BOS + prompt)."""
    return self.policy.prompt_len


def _model_config(config: ml_collections.ConfigDict, task: tasks_lib.Task) -> model_lib.ModelConfig:
  return model_lib.ModelConfig(
    vocab_size=tasks_lib.VOCAB_SIZE,
    max_len=1 + task.prompt_len + task.completion_len,  # BOS + prompt + completion.
    d_model=config.model.d_model,
    num_heads=config.model.num_heads,
    num_layers=config.model.num_layers,
    d_ff=config.model.d_ff,
    dtype=config.model.dtype,
  )


def _optimizers(
  config: ml_collections.ConfigDict, runs: tuple[run_specs.RunSpec, ...]
) -> tuple[optax.GradientTransformation, dict[float, optax.GradientTransformation]]:
  """The warm start's optimiser and the RL ones by learning rate (``Components.rl_opts``)."""
  s, r = config.sft, config.rl
  sft_opt = optimizer_lib.make_optimizer(
    s.learning_rate,
    s.warmup_steps,
    s.max_grad_norm,
    s.weight_decay,
    decay_steps=s.steps if s.schedule == "cosine" else 0,
    final_lr_fraction=s.final_lr_fraction,
    b2=s.adam_b2,
  )
  own = [run.learning_rate for run in runs if run.learning_rate is not None]
  rates = [float(r.learning_rate), *own]
  rl_opts = {
    rate: optimizer_lib.make_optimizer(rate, r.warmup_steps, r.max_grad_norm, b2=r.adam_b2)
    for rate in rates
  }
  return sft_opt, rl_opts


def build(valid: validation.ValidConfig, mesh: jax.sharding.Mesh) -> Components:
  """The parts of the run of ``valid`` on ``mesh``."""
  config, task = valid.config, valid.task
  cfg = _model_config(config, task)
  graphdef, params = model_lib.create(cfg, config.seed)
  policy = policy_lib.Policy(
    graphdef, cfg, 1 + task.prompt_len, temperature=config.rl.temperature, top_p=config.rl.top_p
  )
  eval_policy = dataclasses.replace(
    policy, temperature=config.eval.temperature, top_p=config.eval.top_p
  )
  eval_set = evaluation.make_eval_set(task, config.seed, config.eval.num_prompts)
  sft_opt, rl_opts = _optimizers(config, valid.runs)
  return Components(
    config=config,
    task=task,
    runs=valid.runs,
    mesh=mesh,
    policy=policy,
    eval_policy=eval_policy,
    eval_set=eval_set,
    exclude=frozenset(eval_set.keys.tolist()),  # Held out by problem key.
    sft_reject=answer_overlap.sft_reject(task, config, eval_set.prompts),
    init_params=parallel.replicate(params, mesh),
    sft_opt=sft_opt,
    rl_opts=rl_opts,
    peak_flops=mfu_lib.peak_flops(jax.devices()[0].device_kind),
  )
