"""A decoder-only transformer in Flax NNX with an explicit key/value cache.

Pre-norm blocks (Radford et al. 2019, GPT-2), learned absolute positions, causal
multi-head attention (Vaswani et al. 2017) and a GELU MLP. One forward pass serves
training, prefill and single-token decoding:

  logits_BxTxV, cache = model(tokens_BxT, cache=cache, start=start)

With ``cache=None`` the T tokens attend causally to each other. With a cache (from
``init_cache``) the T new keys/values are written at positions start..start+T-1
and the queries attend to every cached position <= their own, so prefill is
``start=0`` with the prompt and decoding is ``T=1`` at ``start=t``.

For jitted code the model is used functionally: ``graphdef, params = split(model)``
once, then ``apply(graphdef, params, tokens)``, where ``params`` is a plain nested
dict of arrays (checkpointable and shardable as any pytree).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from flax import nnx
import jax
import jax.numpy as jnp

# Per layer: {"k": [B, S, H, Dh], "v": [B, S, H, Dh]}.
Cache = list[dict[str, jax.Array]]


@dataclasses.dataclass(frozen=True)
class ModelConfig:
  vocab_size: int
  max_len: int
  d_model: int = 64
  num_heads: int = 4
  num_layers: int = 2
  d_ff: int = 256
  dtype: str = "float32"  # Activation dtype; parameters are float32.

  @property
  def head_dim(self) -> int:
    return self.d_model // self.num_heads


class Attention(nnx.Module):
  """Causal multi-head self-attention that can read and write a KV cache."""

  def __init__(self, cfg: ModelConfig, *, rngs: nnx.Rngs) -> None:
    if cfg.d_model % cfg.num_heads:
      raise ValueError(f"d_model={cfg.d_model} must be divisible by num_heads={cfg.num_heads}.")
    self.cfg = cfg
    dtype = jnp.dtype(cfg.dtype)
    init = nnx.initializers.normal(0.02)
    self.qkv = nnx.Linear(
      cfg.d_model, 3 * cfg.d_model, use_bias=False, dtype=dtype, kernel_init=init, rngs=rngs
    )
    self.out = nnx.Linear(
      cfg.d_model,
      cfg.d_model,
      use_bias=False,
      dtype=dtype,
      kernel_init=nnx.initializers.normal(0.02 / (2 * cfg.num_layers) ** 0.5),
      rngs=rngs,
    )

  def __call__(
    self, x_BxTxD: jax.Array, layer_cache: dict[str, jax.Array] | None, start: jax.Array | int
  ) -> tuple[jax.Array, dict[str, jax.Array] | None]:
    cfg = self.cfg
    batch, length, _ = x_BxTxD.shape
    qkv = self.qkv(x_BxTxD).reshape(batch, length, 3, cfg.num_heads, cfg.head_dim)
    q_BxTxHxK, k_BxTxHxK, v_BxTxHxK = qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2]
    q_pos_T = start + jnp.arange(length)
    if layer_cache is None:
      keys_BxSxHxK, values_BxSxHxK, k_pos_S = k_BxTxHxK, v_BxTxHxK, q_pos_T
      new_cache = None
    else:
      keys_BxSxHxK = jax.lax.dynamic_update_slice_in_dim(
        layer_cache["k"], k_BxTxHxK.astype(layer_cache["k"].dtype), start, axis=1
      )
      values_BxSxHxK = jax.lax.dynamic_update_slice_in_dim(
        layer_cache["v"], v_BxTxHxK.astype(layer_cache["v"].dtype), start, axis=1
      )
      k_pos_S = jnp.arange(keys_BxSxHxK.shape[1])
      new_cache = {"k": keys_BxSxHxK, "v": values_BxSxHxK}
    scores_BxHxTxS = jnp.einsum("bthk,bshk->bhts", q_BxTxHxK, keys_BxSxHxK.astype(q_BxTxHxK.dtype))
    scores_BxHxTxS = scores_BxHxTxS.astype(jnp.float32) / jnp.sqrt(cfg.head_dim).astype(jnp.float32)
    mask_TxS = k_pos_S[None, :] <= q_pos_T[:, None]
    scores_BxHxTxS = jnp.where(mask_TxS, scores_BxHxTxS, jnp.finfo(jnp.float32).min)
    probs_BxHxTxS = jax.nn.softmax(scores_BxHxTxS, axis=-1).astype(q_BxTxHxK.dtype)
    attn_BxTxHxK = jnp.einsum(
      "bhts,bshk->bthk", probs_BxHxTxS, values_BxSxHxK.astype(q_BxTxHxK.dtype)
    )
    return self.out(attn_BxTxHxK.reshape(batch, length, cfg.d_model)), new_cache


class Block(nnx.Module):
  """Pre-norm transformer block: x + attn(norm(x)), then x + mlp(norm(x))."""

  def __init__(self, cfg: ModelConfig, *, rngs: nnx.Rngs) -> None:
    dtype = jnp.dtype(cfg.dtype)
    self.norm1 = nnx.LayerNorm(cfg.d_model, dtype=dtype, rngs=rngs)
    self.attn = Attention(cfg, rngs=rngs)
    self.norm2 = nnx.LayerNorm(cfg.d_model, dtype=dtype, rngs=rngs)
    init = nnx.initializers.normal(0.02)
    self.up = nnx.Linear(cfg.d_model, cfg.d_ff, dtype=dtype, kernel_init=init, rngs=rngs)
    self.down = nnx.Linear(
      cfg.d_ff,
      cfg.d_model,
      dtype=dtype,
      kernel_init=nnx.initializers.normal(0.02 / (2 * cfg.num_layers) ** 0.5),
      rngs=rngs,
    )

  def __call__(
    self, x_BxTxD: jax.Array, layer_cache: dict[str, jax.Array] | None, start: jax.Array | int
  ) -> tuple[jax.Array, dict[str, jax.Array] | None]:
    h_BxTxD, layer_cache = self.attn(self.norm1(x_BxTxD), layer_cache, start)
    x_BxTxD = x_BxTxD + h_BxTxD
    x_BxTxD = x_BxTxD + self.down(jax.nn.gelu(self.up(self.norm2(x_BxTxD))))
    return x_BxTxD, layer_cache


class Transformer(nnx.Module):
  """Decoder-only language model: tokens_BxT -> logits_BxTxV (float32)."""

  def __init__(self, cfg: ModelConfig, *, rngs: nnx.Rngs) -> None:
    self.cfg = cfg
    dtype = jnp.dtype(cfg.dtype)
    init = nnx.initializers.normal(0.02)
    self.embed = nnx.Embed(cfg.vocab_size, cfg.d_model, dtype=dtype, embedding_init=init, rngs=rngs)
    self.pos_embed = nnx.Embed(
      cfg.max_len, cfg.d_model, dtype=dtype, embedding_init=init, rngs=rngs
    )
    self.blocks = nnx.List([Block(cfg, rngs=rngs) for _ in range(cfg.num_layers)])
    self.norm = nnx.LayerNorm(cfg.d_model, dtype=dtype, rngs=rngs)
    self.head = nnx.Linear(
      cfg.d_model, cfg.vocab_size, use_bias=False, dtype=dtype, kernel_init=init, rngs=rngs
    )

  def __call__(
    self, tokens_BxT: jax.Array, *, cache: Cache | None = None, start: jax.Array | int = 0
  ) -> tuple[jax.Array, Cache | None]:
    length = tokens_BxT.shape[1]
    positions_T = start + jnp.arange(length)
    x_BxTxD = self.embed(tokens_BxT) + self.pos_embed(positions_T)[None]
    new_cache: Cache = []
    for i, block in enumerate(self.blocks):
      x_BxTxD, layer_cache = block(x_BxTxD, None if cache is None else cache[i], start)
      if layer_cache is not None:  # A block returns a cache exactly when given one.
        new_cache.append(layer_cache)
    logits_BxTxV = self.head(self.norm(x_BxTxD)).astype(jnp.float32)
    return logits_BxTxV, (None if cache is None else new_cache)


def init_cache(cfg: ModelConfig, batch: int, length: int) -> Cache:
  """An empty KV cache for ``batch`` sequences of up to ``length`` tokens."""
  shape = (batch, length, cfg.num_heads, cfg.head_dim)
  dtype = jnp.dtype(cfg.dtype)
  return [
    {"k": jnp.zeros(shape, dtype), "v": jnp.zeros(shape, dtype)} for _ in range(cfg.num_layers)
  ]


def create(cfg: ModelConfig, seed: int) -> tuple[nnx.GraphDef, dict[str, Any]]:
  """Initialises a model; returns its graph definition and a pure-dict of parameters."""
  graphdef, _ = nnx.split(nnx.eval_shape(lambda: Transformer(cfg, rngs=nnx.Rngs(seed))))

  @jax.jit
  def init() -> dict[str, Any]:  # One compilation instead of one per initialiser call.
    return nnx.to_pure_dict(nnx.state(Transformer(cfg, rngs=nnx.Rngs(seed))))

  return graphdef, init()


def apply(
  graphdef: nnx.GraphDef,
  params: dict[str, Any],
  tokens_BxT: jax.Array,
  *,
  cache: Cache | None = None,
  start: jax.Array | int = 0,
) -> tuple[jax.Array, Cache | None]:
  """Functional forward pass (safe under jit/grad): see ``Transformer.__call__``."""
  return nnx.merge(graphdef, params)(tokens_BxT, cache=cache, start=start)


def token_logprobs(
  graphdef: nnx.GraphDef,
  params: dict[str, Any],
  tokens_BxT: jax.Array,
  prompt_len: int,
  temperature: float = 1.0,
) -> tuple[jax.Array, jax.Array]:
  """Teacher-forced log-probs and entropies of the completion tokens.

  Args:
    graphdef: model graph definition.
    params: parameters.
    tokens_BxT: prompt (``prompt_len`` tokens) followed by the completion.
    prompt_len: number of prompt tokens.
    temperature: the log-probs are those of softmax(logits / temperature), the
      distribution ``sampling.generate`` draws from at that temperature (top-p 1).

  Returns:
    ``(logp_BxC, entropy_BxC)`` for the C = T - prompt_len completion positions, both
    of the tempered distribution.
  """
  if not temperature > 0:
    raise ValueError(f"temperature={temperature} must be > 0.")
  logits_BxTxV, _ = apply(graphdef, params, tokens_BxT[:, :-1])
  logits_BxCxV = logits_BxTxV[:, prompt_len - 1 :]
  if temperature != 1.0:
    logits_BxCxV = logits_BxCxV / temperature
  logz_BxCxV = jax.nn.log_softmax(logits_BxCxV, axis=-1)
  targets_BxC = tokens_BxT[:, prompt_len:]
  logp_BxC = jnp.take_along_axis(logz_BxCxV, targets_BxC[..., None], axis=-1)[..., 0]
  entropy_BxC = -jnp.sum(jnp.exp(logz_BxCxV) * logz_BxCxV, axis=-1)
  return logp_BxC, entropy_BxC


def num_params(params: dict[str, Any]) -> int:
  return sum(x.size for x in jax.tree.leaves(params))


def flops_per_token(cfg: ModelConfig, context: int) -> float:
  """Forward-pass FLOPs per token: 2 * matmul params + attention (Kaplan et al. 2020)."""
  d, L = cfg.d_model, cfg.num_layers
  matmul = L * (4 * d * d + 2 * d * cfg.d_ff) + d * cfg.vocab_size
  return 2.0 * matmul + 2.0 * L * context * d
