"""Held-out evaluation: unbiased pass@k and max@k for k = 1..n_eval, entropy, length.

The evaluation set holds ``eval.num_prompts`` problems with distinct problem keys
(``tasks.heldout_problems``), drawn from their own random stream; training never
sees a problem with one of their keys (see ``splits``). For each we draw n_eval
completions and score them; pass@k uses the binary reward and the unbiased
estimator of Chen et al. 2021 (``maxk.pass_at_k``), max@k the continuous reward
and the U-statistic of PKPO Eq. 12-14 (``maxk.max_at_k``), both averaged over
prompts. ``evaluate`` also returns the per-prompt rewards, from which
``report_rows`` derives intervals, difficulty bins and paired differences, and, given
the warm start's parameters, the KL of the evaluated policy to it on the held-out
prompts (``held_out_kl``), from the same samples.

Sampling keys: the caller passes the evaluation's key (``eval_records`` takes it from
``streams.eval_key``: by default each RL step's evaluation has its own, and with
``eval.common_keys`` every evaluation of the run, base model and every RL run at
every step, shares one, so checkpoints and arms are compared on common random
numbers).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from experiments.lm import held_out_kl
from experiments.lm import policy as policy_lib
from experiments.lm import rollouts
from experiments.lm import tasks as tasks_lib
import maxk


@dataclasses.dataclass(frozen=True)
class EvalSet:
  """The held-out problems, in evaluation order."""

  prompts: list[str]
  prompt_ids: np.ndarray  # [P, L] int32.
  keys: np.ndarray  # [P] int64 problem keys, distinct.


def make_eval_set(task: tasks_lib.Task, seed: int, num_prompts: int) -> EvalSet:
  """``num_prompts`` problems with distinct keys (``tasks.heldout_problems``)."""
  problems = tasks_lib.heldout_problems(task, seed, num_prompts)
  prompts = [task.example(row).prompt for row in problems]
  return EvalSet(prompts, tasks_lib.encode_prompts(prompts), task.problem_keys(problems))


@jax.jit
def per_prompt_all_k(
  binary_Pxn: jax.Array, continuous_Pxn: jax.Array
) -> tuple[jax.Array, jax.Array]:
  """Per-prompt pass@k (binary) and max@k (continuous) for k = 1..n: ``[n, P]`` each."""
  n = binary_Pxn.shape[-1]
  pass_at_k = jnp.stack([maxk.pass_at_k(binary_Pxn, k) for k in range(1, n + 1)])
  max_at_k = jnp.stack([maxk.max_at_k(continuous_Pxn, k) for k in range(1, n + 1)])
  return pass_at_k, max_at_k


@jax.jit
def all_k_metrics(binary_Pxn: jax.Array, continuous_Pxn: jax.Array) -> tuple[jax.Array, jax.Array]:
  """Mean over prompts of pass@k (binary) and max@k (continuous) for k = 1..n: ``[n]`` each."""
  pass_at_k, max_at_k = per_prompt_all_k(binary_Pxn, continuous_Pxn)
  return jnp.mean(pass_at_k, axis=-1), jnp.mean(max_at_k, axis=-1)


def evaluate(
  policy: policy_lib.Policy,
  params: Any,
  task: tasks_lib.Task,
  eval_set: EvalSet,
  key: jax.Array,
  *,
  n: int,
  mesh: jax.sharding.Mesh,
  chunk_prompts: int = 0,
  curves: bool = True,
  ref_params: Any = None,
  kl_samples: int = 0,
) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
  """Evaluation metrics (JSON-ready) and the per-prompt rewards.

  Args:
    policy: the model and the sampling distribution evaluated (``eval.temperature``,
      ``eval.top_p``).
    params: its parameters.
    task: scores the completions.
    eval_set: the held-out problems.
    key: chunk c of the prompts samples with ``fold_in(key, c)``.
    n: samples per problem.
    mesh: the data-parallel mesh the sample rows shard over.
    chunk_prompts: sample at most this many prompts at a time (0: all at once).
    curves: compute ``pass_at_k`` and ``max_at_k`` for every k (the binning
      evaluation, which only counts correct samples, skips them: with its 1024
      samples per problem they would cost more than the sampling).
    ref_params: the warm start's parameters: also estimate each prompt's
      KL(pi || pi_warm) from the first ``kl_samples`` samples (0: all n) of each
      prompt (``held_out_kl.prompt_kl``, chunk by chunk; ``policy.top_p`` must be 1).
    kl_samples: see ``ref_params``.

  Returns:
    ``(metrics, rewards)``: metrics hold ``pass_at_k`` and ``max_at_k`` lists over
    k = 1..n (with ``curves``), the mean token ``entropy`` of the policy along the samples and the
    mean completion ``length``, and with ``ref_params`` the per-prompt ``kl`` (a list
    over prompts) and its mean ``kl_to_warm_start``; ``rewards`` the ``binary`` and
    ``continuous`` rewards, float32 host arrays ``[P, n]`` in the order of ``eval_set``.
  """
  if ref_params is not None and policy.top_p < 1:
    raise ValueError(f"The held-out KL needs policy.top_p = 1, got {policy.top_p}.")
  rollout, kl_parts = _sample(
    policy,
    params,
    task,
    eval_set,
    key,
    n=n,
    mesh=mesh,
    chunk_prompts=chunk_prompts,
    ref_params=ref_params,
    kl_samples=kl_samples,
  )
  metrics = _metrics(rollout, kl_parts, curves=curves)
  return metrics, {"binary": rollout.binary, "continuous": rollout.continuous}


def _sample(
  policy: policy_lib.Policy,
  params: Any,
  task: tasks_lib.Task,
  eval_set: EvalSet,
  key: jax.Array,
  *,
  n: int,
  mesh: jax.sharding.Mesh,
  chunk_prompts: int,
  ref_params: Any,
  kl_samples: int,
) -> tuple[rollouts.Rollout, list[np.ndarray]]:
  """The evaluation's rollout, sampled chunk by chunk (:func:`evaluate`'s arguments),
  and with ``ref_params`` each chunk's per-prompt KL to the warm start."""
  num_prompts = len(eval_set.prompts)
  chunk = chunk_prompts or num_prompts
  parts, kl_parts = [], []
  for c, start in enumerate(range(0, num_prompts, chunk)):
    part = rollouts.sample_rollout(
      policy,
      params,
      task,
      eval_set.prompts[start : start + chunk],
      jax.random.fold_in(key, c),
      n=n,
      mesh=mesh,
    )
    parts.append(part)
    if ref_params is not None:
      kl_parts.append(
        held_out_kl.prompt_kl(policy, params, ref_params, part, samples=kl_samples, mesh=mesh)
      )
  return rollouts.concatenate(parts), kl_parts


def _metrics(
  rollout: rollouts.Rollout, kl_parts: list[np.ndarray], *, curves: bool
) -> dict[str, Any]:
  """:func:`evaluate`'s metrics of ``rollout`` (module docstring)."""
  metrics: dict[str, Any] = {}
  if curves:
    pass_at_k, max_at_k = (
      np.asarray(x).tolist()
      for x in all_k_metrics(jnp.asarray(rollout.binary), jnp.asarray(rollout.continuous))
    )
    metrics.update(pass_at_k=pass_at_k, max_at_k=max_at_k)
  mask = rollout.mask
  metrics |= {
    "entropy": float(np.sum(rollout.entropy * mask) / max(np.sum(mask), 1.0)),
    "length": float(np.mean(np.sum(mask, axis=-1))),
  }
  if kl_parts:
    kl_P = np.concatenate(kl_parts)
    metrics |= {"kl_to_warm_start": float(np.mean(kl_P)), "kl": [float(x) for x in kl_P]}
  return metrics
