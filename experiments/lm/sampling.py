"""Jitted batched sampling with a KV cache, temperature and nucleus (top-p) filtering.

The whole decode loop is one ``jax.lax.scan`` inside ``jax.jit``. With the cache,
the prompt is prefilled once and every step runs the model on one new token
(O(T) attention per step); without it every step re-runs the full buffer (O(T^2)),
which is kept as the reference implementation and for the benchmark.

Rows are independent sequences: to draw n samples for each of P prompts, repeat
the prompts n times (``repeat_prompts``); rows shard over a data-parallel mesh.

At temperature tau > 0 and ``top_p = 1`` a token is drawn from softmax(logits / tau),
whose log-probs ``model.token_logprobs(..., temperature=tau)`` computes: the RL
update scores samples under exactly this distribution. With ``top_p < 1`` the
sampler draws from the renormalised nucleus, whose support depends on the
parameters; RL refuses it (``validation``), evaluation may use it.
"""

from __future__ import annotations

import functools
from typing import Any

from flax import nnx
import jax
import jax.numpy as jnp
import numpy as np

from experiments.lm import model as model_lib
from experiments.lm import tasks


def filter_logits(logits_BxV: jax.Array, temperature: float, top_p: float) -> jax.Array:
  """Sampling logits: divided by ``temperature``, then nucleus-filtered (Holtzman et al. 2020).

  Top-p keeps the smallest set of most likely tokens whose probability reaches
  ``top_p`` (always at least the most likely token); the others get -inf.
  """
  logits_BxV = logits_BxV / temperature
  if top_p >= 1.0:
    return logits_BxV
  sorted_BxV = jnp.sort(logits_BxV, axis=-1)[:, ::-1]
  probs_BxV = jax.nn.softmax(sorted_BxV, axis=-1)
  mass_before_BxV = jnp.cumsum(probs_BxV, axis=-1) - probs_BxV
  keep_BxV = mass_before_BxV < top_p
  threshold_B = jnp.min(jnp.where(keep_BxV, sorted_BxV, jnp.inf), axis=-1)
  return jnp.where(logits_BxV >= threshold_B[:, None], logits_BxV, -jnp.inf)


def _choose(logits_BxV: jax.Array, key: jax.Array, temperature: float, top_p: float) -> jax.Array:
  if temperature == 0.0:
    return jnp.argmax(logits_BxV, axis=-1).astype(jnp.int32)
  return jax.random.categorical(key, filter_logits(logits_BxV, temperature, top_p)).astype(
    jnp.int32
  )


def _entropy(logits_BxV: jax.Array) -> jax.Array:
  logz_BxV = jax.nn.log_softmax(logits_BxV, axis=-1)
  return -jnp.sum(jnp.exp(logz_BxV) * logz_BxV, axis=-1)


# The decoding state: (KV cache, logits at the last position) with the cache, else the
# token buffer [B, L + max_new] (PAD after the tokens so far).


def _prefill(
  model: Any, cfg: model_lib.ModelConfig, prompts_BxL: jax.Array, max_new: int, use_cache: bool
) -> Any:
  """The decoding state after the prompts."""
  batch, prompt_len = prompts_BxL.shape
  if use_cache:
    cache = model_lib.init_cache(cfg, batch, prompt_len + max_new)
    logits_BxLxV, cache = model(prompts_BxL, cache=cache, start=0)
    return (cache, logits_BxLxV[:, -1])
  return jnp.concatenate([prompts_BxL, jnp.full((batch, max_new), tasks.PAD_ID, jnp.int32)], axis=1)


def _current_logits(model: Any, state: Any, position: jax.Array, use_cache: bool) -> jax.Array:
  """``[B, V]``: the logits of the token at ``position``."""
  if use_cache:
    return state[1]
  logits_BxTxV, _ = model(state)
  return jax.lax.dynamic_index_in_dim(logits_BxTxV, position - 1, axis=1, keepdims=False)


def _append(
  model: Any, state: Any, token_B: jax.Array, position: jax.Array, use_cache: bool
) -> Any:
  """The decoding state after ``token_B`` is placed at ``position``."""
  if use_cache:
    next_logits_Bx1xV, cache = model(token_B[:, None], cache=state[0], start=position)
    return (cache, next_logits_Bx1xV[:, 0])
  return jax.lax.dynamic_update_index_in_dim(state, token_B, position, axis=1)


@functools.partial(
  jax.jit,
  static_argnames=(
    "graphdef",
    "cfg",
    "max_new",
    "temperature",
    "top_p",
    "use_cache",
    "return_logits",
  ),
)
def generate(
  graphdef: nnx.GraphDef,
  params: dict[str, Any],
  prompts_BxL: jax.Array,
  rng: jax.Array,
  *,
  cfg: model_lib.ModelConfig,
  max_new: int,
  temperature: float = 1.0,
  top_p: float = 1.0,
  use_cache: bool = True,
  return_logits: bool = False,
) -> dict[str, jax.Array]:
  """Samples ``max_new`` tokens after each prompt row.

  Args:
    graphdef: model graph definition (static).
    params: model parameters.
    prompts_BxL: int32 prompt ids, BOS first, all of length L.
    rng: PRNG key; step t uses ``fold_in(rng, t)``.
    cfg: model config (static).
    max_new: tokens to generate (static); ``L + max_new <= cfg.max_len``.
    temperature: sampling temperature; 0 means greedy.
    top_p: nucleus mass in (0, 1].
    use_cache: decode with the KV cache (else recompute the full prefix each step).
    return_logits: also return the raw logits of every step (for tests).

  Returns:
    A dict with ``tokens`` ``[B, max_new]`` int32 (PAD after the first EOS),
    ``mask`` ``[B, max_new]`` float32 (1 up to and including the first EOS),
    ``entropy`` ``[B, max_new]`` (at each step, the entropy of softmax(logits /
    temperature), before top-p; of the temperature-1 policy when greedy)
    and, if asked, ``logits`` ``[B, max_new, V]``.
  """
  batch, prompt_len = prompts_BxL.shape
  total = prompt_len + max_new
  if total > cfg.max_len:
    raise ValueError(f"prompt_len + max_new = {total} exceeds max_len={cfg.max_len}.")
  model = nnx.merge(graphdef, params)
  state = _prefill(model, cfg, prompts_BxL, max_new, use_cache)

  def step(carry: tuple[Any, jax.Array], t: jax.Array) -> tuple[Any, dict[str, jax.Array]]:
    state, done_B = carry
    logits_BxV = _current_logits(model, state, prompt_len + t, use_cache)
    token_B = _choose(logits_BxV, jax.random.fold_in(rng, t), temperature, top_p)
    token_B = jnp.where(done_B, tasks.PAD_ID, token_B)
    live_B = (~done_B).astype(jnp.float32)
    done_B = done_B | (token_B == tasks.EOS_ID)
    state = _append(model, state, token_B, prompt_len + t, use_cache)
    tempered_BxV = logits_BxV / temperature if temperature > 0 else logits_BxV
    out = {"tokens": token_B, "mask": live_B, "entropy": _entropy(tempered_BxV)}
    if return_logits:
      out["logits"] = logits_BxV
    return (state, done_B), out

  _, outs = jax.lax.scan(step, (state, jnp.zeros((batch,), bool)), jnp.arange(max_new))
  return {name: jnp.swapaxes(x, 0, 1) for name, x in outs.items()}


def repeat_prompts(prompts_PxL: np.ndarray, n: int) -> np.ndarray:
  """``[P * n, L]``: each prompt repeated n times (row p * n + i is sample i of prompt p)."""
  return np.repeat(prompts_PxL, n, axis=0)
