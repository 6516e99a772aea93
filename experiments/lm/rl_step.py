"""The pieces of one RL step: its update, its rollout, the batch, the record.

Step s of every run draws the same prompts (``streams.rl_problems``) and sampling
key (``streams.RL_STREAM``), samples n completions per prompt from the run's current
policy (``sample``), turns them into the update's batch (``device_batch``), applies
the run's update at that step's k (``update_spec``, compiled once per spec and
learning rate by :class:`Updates`) and reports the step (``record``,
``throughput``); ``stages.run_rl`` runs the loop.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np

from experiments.lm import components as components_lib
from experiments.lm import mfu as mfu_lib
from experiments.lm import model as model_lib
from experiments.lm import parallel
from experiments.lm import rl
from experiments.lm import rollouts
from experiments.lm import run_specs
from experiments.lm import streams
import maxk


def update_spec(config: ml_collections.ConfigDict, run: run_specs.RunSpec, k: int) -> rl.UpdateSpec:
  """The update of ``run`` at k_opt = ``k`` (the run's own KL coefficient, if it sets
  one, else ``rl.kl_coef``)."""
  c = config.rl
  return rl.UpdateSpec(
    estimator=run.estimator,
    k=k,
    baseline=c.baseline,
    off_policy=run.off_policy,
    inner_epochs=c.inner_epochs,
    clip_eps=c.clip_eps,
    kl_coef=c.kl_coef if run.kl_coef is None else run.kl_coef,
  )


class Updates:
  """The jitted RL updates of a run's parts by spec and learning rate, each compiled
  once and shared by the RL runs."""

  def __init__(self, parts: components_lib.Components) -> None:
    self.parts = parts
    self.compiled: dict[tuple[rl.UpdateSpec, float], Any] = {}

  def get(self, spec: rl.UpdateSpec, run: run_specs.RunSpec) -> Any:
    """The jitted update of ``spec`` with ``run``'s optimiser."""
    parts = self.parts
    key = (spec, parts.rl_learning_rate(run))
    if key not in self.compiled:
      self.compiled[key] = rl.make_update(
        parts.policy, parts.rl_optimizer(run), spec, parallel.replicated(parts.mesh)
      )
    return self.compiled[key]


def sample(parts: components_lib.Components, params: Any, step: int) -> rollouts.Rollout:
  """Step ``step``'s prompts, n completions of each from ``parts.policy`` at ``params``,
  scored."""
  c = parts.config
  problems = streams.rl_problems(parts.task, c.seed, step, c.rl.prompts_per_step, parts.exclude)
  prompts = [parts.task.example(row).prompt for row in problems]
  key = streams.sampling_key(c.seed, streams.RL_STREAM, step)
  return rollouts.sample_rollout(
    parts.policy, params, parts.task, prompts, key, n=c.rl.n, mesh=parts.mesh
  )


def device_batch(rollout: rollouts.Rollout, reward: str, mesh: jax.sharding.Mesh) -> rollouts.Batch:
  """The update's batch on ``mesh``: rows sharded, rewards replicated."""
  batch = rollout.batch(reward)
  return rollouts.Batch(
    parallel.put_rows(batch.tokens_BxT, mesh),
    parallel.put_rows(batch.mask_BxC, mesh),
    parallel.replicate(jnp.asarray(batch.rewards_Pxn), mesh),
  )


def solved_keys(parts: components_lib.Components, rollout: rollouts.Rollout) -> set[int]:
  """Problem keys of the prompts with at least one correct sample (PKPO's measure of
  harder problems: distinct training problems solved, accumulated by ``dynamics``)."""
  hits = rollout.binary.max(-1)
  return {parts.task.prompt_key(p) for p, hit in zip(rollout.prompts, hits) if hit > 0}


def throughput(
  parts: components_lib.Components, sample_seconds: float, update_seconds: float
) -> dict[str, float]:
  """Tokens/s and, on a known accelerator, MFU of one step (``mfu.rl_step_throughput``)."""
  c, cfg = parts.config.rl, parts.model_cfg
  return mfu_lib.rl_step_throughput(
    rows=c.prompts_per_step * c.n,
    prompt_len=parts.prompt_len,
    completion_len=parts.policy.completion_len,
    inner_epochs=c.inner_epochs,
    sample_seconds=sample_seconds,
    update_seconds=update_seconds,
    forward_flops_per_token=model_lib.flops_per_token(cfg, cfg.max_len),
    peak=parts.peak_flops,
    num_devices=parts.mesh.size,
  )


def record(
  config: ml_collections.ConfigDict,
  run: run_specs.RunSpec,
  *,
  method: str,
  step: int,
  k: int,
  rollout: rollouts.Rollout,
  metrics: dict[str, float],
  solved: set[int],
) -> dict[str, Any]:
  """The step's metrics record: rewards, train pass@k_opt, entropy, length, the problems
  solved since the last record, the update's ``metrics`` and whether it clipped."""
  rewards = rollout.rewards(config.rl.reward)
  mask = rollout.mask
  return {
    "stage": "rl",
    "run": run.name,
    "method": method,
    "k_opt": k,
    "step": step,
    "reward": float(rewards.mean()),
    "binary_reward": float(rollout.binary.mean()),
    "continuous_reward": float(rollout.continuous.mean()),
    "train_pass_at_k_opt": float(jnp.mean(maxk.pass_at_k(rollout.binary, k))),
    "entropy": float(np.sum(rollout.entropy * mask) / max(mask.sum(), 1)),
    "length": float(mask.sum(-1).mean()),
    "train_solved_keys": sorted(solved),
    **metrics,
    "grad_clipped": float(metrics["grad_norm_max"] > config.rl.max_grad_norm),
  }
