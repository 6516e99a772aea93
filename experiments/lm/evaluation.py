"""Held-out evaluation: unbiased pass@k and max@k for k = 1..n_eval, entropy, length.

The evaluation set holds ``eval.num_prompts`` problems with distinct problem keys
(``tasks.heldout_problems``), drawn from their own random stream; training never
sees a problem with one of their keys (see ``splits``). For each we draw n_eval
completions and score them; pass@k uses the binary reward and the unbiased
estimator of Chen et al. 2021 (``maxk.pass_at_k``), max@k the continuous reward
and the U-statistic of PKPO Eq. 12-14 (``maxk.max_at_k``), both averaged over
prompts. ``evaluate`` also returns the per-prompt rewards, from which
``reporting`` derives intervals, difficulty bins and paired differences.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from flax import nnx
import jax
import jax.numpy as jnp
import numpy as np

from experiments.lm import model as model_lib
from experiments.lm import parallel
from experiments.lm import sampling
from experiments.lm import tasks as tasks_lib
import maxk


@dataclasses.dataclass(frozen=True)
class EvalSet:
  prompts: list[str]
  prompt_ids: np.ndarray  # [P, L] int32.
  keys: np.ndarray  # [P] int64 problem keys, distinct.


def make_eval_set(task: tasks_lib.Task, seed: int, num_prompts: int) -> EvalSet:
  problems = tasks_lib.heldout_problems(task, seed, num_prompts)
  prompts = [task.example(row).prompt for row in problems]
  return EvalSet(prompts, tasks_lib.encode_prompts(prompts), task.problem_keys(problems))


def sample_and_score(
  graphdef: nnx.GraphDef,
  params: Any,
  cfg: model_lib.ModelConfig,
  task: tasks_lib.Task,
  prompts: list[str],
  prompt_ids: np.ndarray,
  rng: jax.Array,
  n: int,
  mesh,
  *,
  temperature: float,
  top_p: float,
) -> dict[str, np.ndarray]:
  """Samples n completions per prompt and scores them.

  Returns:
    dict with ``tokens [P, n, C]``, ``mask [P, n, C]``, ``entropy [P, n, C]`` (host
    arrays) and ``binary``, ``continuous`` rewards ``[P, n]``.
  """
  num_prompts = len(prompts)
  rows = parallel.put_rows(sampling.repeat_prompts(prompt_ids, n), mesh)
  out = sampling.generate(
    graphdef,
    params,
    rows,
    rng,
    cfg=cfg,
    max_new=task.completion_len,
    temperature=temperature,
    top_p=top_p,
  )
  host = {name: parallel.to_host(x).reshape(num_prompts, n, -1) for name, x in out.items()}
  host["binary"], host["continuous"] = tasks_lib.score_batch(task, prompts, host["tokens"])
  return host


@jax.jit
def per_prompt_all_k(binary_Pxn: jax.Array, continuous_Pxn: jax.Array):
  """Per-prompt pass@k (binary) and max@k (continuous) for k = 1..n: ``[n, P]`` each."""
  n = binary_Pxn.shape[-1]
  pass_at_k = jnp.stack([maxk.pass_at_k(binary_Pxn, k) for k in range(1, n + 1)])
  max_at_k = jnp.stack([maxk.max_at_k(continuous_Pxn, k) for k in range(1, n + 1)])
  return pass_at_k, max_at_k


@jax.jit
def all_k_metrics(binary_Pxn: jax.Array, continuous_Pxn: jax.Array):
  """Mean over prompts of pass@k (binary) and max@k (continuous) for k = 1..n: ``[n]`` each."""
  pass_at_k, max_at_k = per_prompt_all_k(binary_Pxn, continuous_Pxn)
  return jnp.mean(pass_at_k, axis=-1), jnp.mean(max_at_k, axis=-1)


def evaluate(
  graphdef,
  params,
  cfg,
  task,
  eval_set: EvalSet,
  rng: jax.Array,
  n: int,
  mesh,
  *,
  temperature: float = 1.0,
  top_p: float = 1.0,
  chunk_prompts: int = 0,
  curves: bool = True,
) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
  """Evaluation metrics (JSON-ready) and the per-prompt rewards.

  Args:
    chunk_prompts: sample at most this many prompts at a time (0: all at once).
    curves: compute ``pass_at_k`` and ``max_at_k`` for every k (the binning
      evaluation, which only counts correct samples, skips them: with its 1024
      samples per problem they would cost more than the sampling).

  Returns:
    ``(metrics, rewards)``: metrics hold ``pass_at_k`` and ``max_at_k`` lists over
    k = 1..n (with ``curves``), the mean token ``entropy`` of the policy along the samples and the
    mean completion ``length``; ``rewards`` the ``binary`` and ``continuous``
    rewards, float32 host arrays ``[P, n]`` in the order of ``eval_set``.
  """
  num_prompts = len(eval_set.prompts)
  chunk = chunk_prompts or num_prompts
  parts = []
  for c, start in enumerate(range(0, num_prompts, chunk)):
    sl = slice(start, start + chunk)
    parts.append(
      sample_and_score(
        graphdef,
        params,
        cfg,
        task,
        eval_set.prompts[sl],
        eval_set.prompt_ids[sl],
        jax.random.fold_in(rng, c),
        n,
        mesh,
        temperature=temperature,
        top_p=top_p,
      )
    )
  cat = {name: np.concatenate([p[name] for p in parts]) for name in parts[0]}
  metrics: dict[str, Any] = {}
  if curves:
    pass_at_k, max_at_k = (
      np.asarray(x).tolist()
      for x in all_k_metrics(jnp.asarray(cat["binary"]), jnp.asarray(cat["continuous"]))
    )
    metrics.update(pass_at_k=pass_at_k, max_at_k=max_at_k)
  mask = cat["mask"]
  metrics |= {
    "entropy": float(np.sum(cat["entropy"] * mask) / max(np.sum(mask), 1.0)),
    "length": float(np.mean(np.sum(mask, axis=-1))),
  }
  return metrics, {"binary": cat["binary"], "continuous": cat["continuous"]}
