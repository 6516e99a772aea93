"""Throughput of the small-LM experiment: training and sampling tokens/s, KV cache on/off.

Run as ``python -m benchmarks.lm`` (``--d_model=512 --num_layers=8`` etc. for bigger
models). For each setting the jitted function is run once (compile + warm-up) and
then timed with ``block_until_ready``; the table reports the median of
``--repeats`` calls.

* ``train``: one SFT update (forward + backward + AdamW) on ``batch`` sequences of
  ``prompt_len + gen_len`` tokens; tokens/s counts every position.
* ``sample``: ``experiments.lm.sampling.generate`` of ``gen_len`` new tokens after a
  ``prompt_len``-token prompt, with the KV cache (prefill once, one token per step)
  and without it (the full prefix recomputed every step); tokens/s counts generated
  tokens. ``speedup`` is cached over uncached.

Everything runs on one device (the default one: the jitted functions get no
sharding), so tokens/s are per device. On a GPU the table also gives the model FLOP
utilisation (MFU): achieved FLOP/s (``model.flops_per_token``: 6 N + attention per
trained token, 2 N + attention per sampled one; Kaplan et al. 2020) over one chip's
peak (``--peak_tflops`` or a known device's bf16 dense peak), whatever the number of
devices attached.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
import time
from typing import Any

from absl import flags
import jax
import jax.numpy as jnp
import numpy as np

from experiments import command_line
from experiments.lm import mfu as mfu_lib
from experiments.lm import model as model_lib
from experiments.lm import optimizer as optimizer_lib
from experiments.lm import sampling
from experiments.lm import sft
from experiments.lm import tasks

_D_MODEL = flags.DEFINE_integer("d_model", 128, "Model width.")
_NUM_LAYERS = flags.DEFINE_integer("num_layers", 4, "Transformer blocks.")
_NUM_HEADS = flags.DEFINE_integer("num_heads", 4, "Attention heads.")
_DTYPE = flags.DEFINE_string("dtype", "float32", "Activation dtype.")
_BATCH = flags.DEFINE_integer("batch", 64, "Sequences per call.")
_PROMPT_LEN = flags.DEFINE_integer("prompt_len", 16, "Prompt tokens.")
_GEN_LENS = flags.DEFINE_list("gen_lens", ["16", "64"], "Generation lengths.")
_REPEATS = flags.DEFINE_integer("repeats", 3, "Timed calls per cell (median reported).")
_UNCACHED = flags.DEFINE_bool("uncached", True, "Also time sampling without the KV cache.")
_PEAK_TFLOPS = flags.DEFINE_float("peak_tflops", 0.0, "Peak TFLOP/s for MFU (0: by device).")


def _time(fn: Callable[[], Any], repeats: int) -> float:
  jax.block_until_ready(fn())  # Compile and warm up.
  times = []
  for _ in range(repeats):
    start = time.perf_counter()
    jax.block_until_ready(fn())
    times.append(time.perf_counter() - start)
  return float(np.median(times))


def _row(
  name: str, gen_len: int, seconds: float, rate: float, speedup: str, mfu: float | None
) -> str:
  """One table row; the MFU column only where a peak is known."""
  row = f"{name:<16}{gen_len:>8}{seconds:>10.4f}{rate:>12,.0f}{speedup}"
  return row + (f"{mfu:>8.1%}" if mfu is not None else "")


def _time_training(
  cfg: model_lib.ModelConfig,
  graphdef: Any,
  params: Any,
  tokens: jax.Array,
  prompt_len: int,
  peak: float | None,
) -> str:
  """The ``train`` row: one SFT update on ``tokens [B, prompt_len + gen_len]``."""
  batch, seq = tokens.shape
  mask = jnp.ones((batch, seq - prompt_len), jnp.float32)
  optimizer = optimizer_lib.make_optimizer(1e-4, 1, 1.0)
  update = sft.make_update(graphdef, optimizer, prompt_len)
  state = {"params": jax.tree.map(jnp.copy, params)}
  state["opt"] = optimizer.init(state["params"])

  def train_step() -> Any:
    state["params"], state["opt"], metrics = update(state["params"], state["opt"], tokens, mask)
    return metrics

  seconds = _time(train_step, _REPEATS.value)
  rate = batch * seq / seconds
  mfu = mfu_lib.mfu(model_lib.flops_per_token(cfg, seq), rate, peak, train=True) if peak else None
  return _row("train", seq - prompt_len, seconds, rate, f"{'':>9}", mfu)


def _time_sampling(
  cfg: model_lib.ModelConfig,
  graphdef: Any,
  params: Any,
  prompts: jax.Array,
  gen_len: int,
  peak: float | None,
) -> list[str]:
  """The ``sample`` rows: ``gen_len`` tokens after ``prompts``, with (and without) the cache."""
  batch, prompt_len = prompts.shape
  seq = prompt_len + gen_len
  rows, rates = [], {}
  for use_cache in (True, False) if _UNCACHED.value else (True,):
    fn = lambda: sampling.generate(
      graphdef, params, prompts, jax.random.key(0), cfg=cfg, max_new=gen_len, use_cache=use_cache
    )["tokens"]
    seconds = _time(fn, _REPEATS.value)
    rates[use_cache] = batch * gen_len / seconds
    name = "sample (cache)" if use_cache else "sample (no cache)"
    speedup = f"{rates[True] / rates[False]:>8.1f}x" if not use_cache else f"{'':>9}"
    flops = model_lib.flops_per_token(cfg, seq)
    mfu = mfu_lib.mfu(flops, rates[use_cache], peak, train=False) if peak else None
    rows.append(_row(name, gen_len, seconds, rates[use_cache], speedup, mfu))
  return rows


def main(argv: Sequence[str]) -> None:
  del argv
  batch, prompt_len = _BATCH.value, _PROMPT_LEN.value
  gen_lens = [int(g) for g in _GEN_LENS.value]
  cfg = model_lib.ModelConfig(
    vocab_size=tasks.VOCAB_SIZE,
    max_len=prompt_len + max(gen_lens),
    d_model=_D_MODEL.value,
    num_heads=_NUM_HEADS.value,
    num_layers=_NUM_LAYERS.value,
    d_ff=4 * _D_MODEL.value,
    dtype=_DTYPE.value,
  )
  graphdef, params = model_lib.create(cfg, seed=0)
  peak = mfu_lib.peak_flops(jax.devices()[0].device_kind, peak_tflops=_PEAK_TFLOPS.value)
  rng = np.random.default_rng(0)
  print(
    f"devices: {jax.devices()}  params: {model_lib.num_params(params):,}  batch: {batch}"
    f"  prompt_len: {prompt_len}"
  )
  header = f"{'what':<16}{'gen_len':>8}{'seconds':>10}{'tokens/s':>12}{'speedup':>9}"
  print(header + (f"{'MFU':>8}" if peak else ""))
  for gen_len in gen_lens:
    seq = prompt_len + gen_len
    tokens = jnp.asarray(rng.integers(3, tasks.VOCAB_SIZE, size=(batch, seq)), jnp.int32)
    print(_time_training(cfg, graphdef, params, tokens, prompt_len, peak))
    for row in _time_sampling(cfg, graphdef, params, tokens[:, :prompt_len], gen_len, peak):
      print(row)


if __name__ == "__main__":
  command_line.run(main)
