"""What the held-out evaluations of a run write into its metrics records.

Three kinds of evaluation sample the evaluation problems (``evaluation.evaluate``):

* the **base** model's (the warm start, RL step 0), with its per-prompt data and the
  independent binning counts (:func:`base_fields`);
* each **RL** run's at the steps ``log_schedule.rl_evaluated`` picks (every
  ``eval.every`` steps and the last), with per-prompt data at the last
  (:func:`rl_fields`);
* the **warm-start curve**'s during SFT (:func:`warm_start_fields`).

With ``eval.kl`` the base and RL evaluations also log the KL of the evaluated policy
to the warm start on the held-out prompts (``held_out_kl``, from the first
``eval.kl_samples`` samples of each prompt): ``eval_kl`` per prompt and its mean
``eval_kl_to_warm_start`` (exactly 0 for the base model), and every RL evaluation
carries its per-prompt counts ``eval_correct`` (and with ``eval.checkpoint_rewards``
its rewards ``eval_rewards``), so that ``run_outputs`` writes the checkpoint
frontier ``checkpoints.csv`` from the log alone. Sampling keys come from
``streams.eval_key`` (shared by every evaluation with ``eval.common_keys``).
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np

from experiments.lm import components as components_lib
from experiments.lm import evaluation
from experiments.lm import prompt_records
from experiments.lm import streams


def evaluate(
  parts: components_lib.Components,
  params: Any,
  key: jax.Array,
  *,
  n: int | None = None,
  curves: bool = True,
  ref_params: Any = None,
) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
  """``(metrics, rewards)`` of ``evaluation.evaluate`` with ``key`` and ``n`` samples per
  problem (default ``eval.n``), with the KL to ``ref_params`` when given and
  ``eval.kl`` is on."""
  c = parts.config.eval
  return evaluation.evaluate(
    parts.eval_policy,
    params,
    parts.task,
    parts.eval_set,
    key,
    n=n or c.n,
    mesh=parts.mesh,
    chunk_prompts=c.chunk_prompts,
    curves=curves,
    ref_params=ref_params if c.kl else None,
    kl_samples=c.kl_samples,
  )


def _eval_fields(metrics: dict[str, Any]) -> dict[str, Any]:
  return {f"eval_{name}": value for name, value in metrics.items()}


def base_fields(parts: components_lib.Components, params: Any) -> dict[str, Any]:
  """The base record's evaluation fields: ``eval_*`` metrics, per-prompt data and the
  binning evaluation's counts (``bin_correct`` of ``bin_n`` samples per problem)."""
  c = parts.config
  metrics, rewards = evaluate(parts, params, streams.eval_key(c, 0), ref_params=params)
  bin_n = c.eval.bin_n or c.eval.n
  bin_key = streams.sampling_key(c.seed, streams.BIN_STREAM, 0)
  _, bin_rewards = evaluate(parts, params, bin_key, n=bin_n, curves=False)
  return {
    **_eval_fields(metrics),
    **prompt_records.prompt_fields(rewards),
    "bin_correct": prompt_records.prompt_fields(bin_rewards)["eval_correct"],
    "bin_n": bin_n,
  }


def rl_fields(
  parts: components_lib.Components, params: Any, ref_params: Any, step: int
) -> dict[str, Any]:
  """The fields of RL step ``step``'s evaluation (``ref_params``: the warm start):
  ``eval_*`` metrics; per-prompt counts and rewards at the last step; with
  ``eval.kl`` the counts at every evaluation, and the rewards too with
  ``eval.checkpoint_rewards``."""
  c = parts.config
  metrics, rewards = evaluate(parts, params, streams.eval_key(c, step), ref_params=ref_params)
  fields = _eval_fields(metrics)
  per_prompt = prompt_records.prompt_fields(rewards)
  if step == c.rl.steps or c.eval.checkpoint_rewards:
    fields.update(per_prompt)
  elif c.eval.kl:
    fields["eval_correct"] = per_prompt["eval_correct"]
  return fields


def warm_start_fields(parts: components_lib.Components, params: Any, step: int) -> dict[str, Any]:
  """The warm-start curve's point at SFT step ``step``: held-out pass@1, pass@n and
  max@1 from ``sft.eval_n`` fresh samples per evaluation problem."""
  c = parts.config
  n = c.sft.eval_n
  key = streams.sampling_key(c.seed, streams.WARM_STREAM, step)
  metrics, _ = evaluate(parts, params, key, n=n)
  return {
    "warm_pass_at_1": metrics["pass_at_k"][0],
    "warm_pass_at_n": metrics["pass_at_k"][n - 1],
    "warm_max_at_1": metrics["max_at_k"][0],
    "warm_n": n,
  }
