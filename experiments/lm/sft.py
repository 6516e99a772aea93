"""Supervised warm start: teacher-forced cross-entropy on generated reference solutions.

Each batch is a fresh draw of task instances (none from the held-out set); the loss
is the mean negative log-likelihood of the solution tokens and the EOS, the prompt
is context only. A short warm start leaves a policy that often but not always
solves a prompt, so its pass@1 is well below its pass@16: the regime where
pass@k / max@k optimisation matters.
"""

from __future__ import annotations

from typing import Any

from flax import nnx
import jax
import jax.numpy as jnp
import numpy as np
import optax

from experiments.lm import model as model_lib
from experiments.lm import tasks as tasks_lib


def make_batch(task: tasks_lib.Task, problems: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
  """``(tokens_BxT, mask_BxC)`` of problem rows (``streams.sft_problems``): BOS + prompt
  + solution + EOS (+ PAD), and the completion mask."""
  examples = [task.example(row) for row in problems]
  prompts = tasks_lib.encode_prompts([e.prompt for e in examples])
  completions = tasks_lib.encode_completions([e.solution for e in examples], task.completion_len)
  mask = np.zeros(completions.shape, np.float32)
  for row, example in enumerate(examples):
    mask[row, : len(example.solution) + 1] = 1.0
  return np.concatenate([prompts, completions], axis=1), mask


def loss_fn(
  params: Any,
  graphdef: nnx.GraphDef[Any],
  tokens_BxT: jax.Array,
  mask_BxC: jax.Array,
  prompt_len: int,
) -> tuple[jax.Array, jax.Array]:
  """Mean token NLL of the completion tokens (mask), returned twice (value, aux)."""
  logp_BxC, _ = model_lib.token_logprobs(graphdef, params, tokens_BxT, prompt_len)
  num_tokens = jnp.maximum(jnp.sum(mask_BxC), 1.0)
  loss = -jnp.sum(logp_BxC * mask_BxC) / num_tokens
  return loss, loss


def make_update(
  graphdef: nnx.GraphDef[Any],
  optimizer: optax.GradientTransformation,
  prompt_len: int,
  state_sharding: jax.sharding.Sharding | None = None,
) -> Any:
  """A jitted SFT step: (params, opt_state, tokens, mask) -> (params, opt_state, metrics).

  ``state_sharding`` pins the sharding of the outputs (see ``rl.make_update``).
  """

  def update(
    params: Any, opt_state: Any, tokens_BxT: jax.Array, mask_BxC: jax.Array
  ) -> tuple[Any, Any, dict[str, jax.Array]]:
    (loss, _), grads = jax.value_and_grad(loss_fn, has_aux=True)(
      params, graphdef, tokens_BxT, mask_BxC, prompt_len
    )
    updates, opt_state = optimizer.update(grads, opt_state, params)
    params = optax.apply_updates(params, updates)
    return params, opt_state, {"loss": loss, "grad_norm": optax.global_norm(grads)}

  return jax.jit(
    update, donate_argnums=(0, 1), out_shardings=(state_sharding, state_sharding, state_sharding)
  )
