"""Model FLOP utilisation (MFU) of one device: its peak FLOP/s and the achieved fraction.

The forward FLOPs per token come from :func:`experiments.lm.model.flops_per_token`
(6 N + attention per trained token, 2 N + attention per sampled one; Kaplan et al.
2020). MFU is always per device: the timed functions run on one device, so the peak
is one chip's, whatever the number of devices attached.
"""

from __future__ import annotations

import re

# bf16 dense peak TFLOP/s per chip, by a whole word of jax's ``device_kind``.
_KNOWN_PEAK_TFLOPS = {
  "h100": 989.0,
  "h200": 989.0,
  "a100": 312.0,
  "l4": 121.0,
  "v100": 125.0,
  "tpu v4": 275.0,
  "tpu v5 lite": 197.0,
  "tpu v5p": 459.0,
}


def peak_flops(device_kind: str, *, peak_tflops: float = 0.0) -> float | None:
  """Peak FLOP/s of ONE device: ``peak_tflops`` if set, else the known bf16 dense peak
  of ``device_kind`` (e.g. ``"NVIDIA H100 80GB HBM3"``), else None (unknown, CPU)."""
  if peak_tflops:
    return peak_tflops * 1e12
  kind = device_kind.lower()
  for name, tflops in _KNOWN_PEAK_TFLOPS.items():
    if re.search(rf"\b{name}\b", kind):  # Whole words: "l4" is not "L40S".
      return tflops * 1e12
  return None


def mfu(
  forward_flops_per_token: float, tokens_per_second: float, peak: float, *, train: bool
) -> float:
  """Model FLOP utilisation of one device: achieved FLOP/s over its ``peak``.

  A trained token costs 3x its forward FLOPs (forward + backward), a sampled one 1x.
  """
  return (3.0 if train else 1.0) * forward_flops_per_token * tokens_per_second / peak


def rl_step_throughput(
  *,
  rows: int,
  prompt_len: int,
  completion_len: int,
  inner_epochs: int,
  sample_seconds: float,
  update_seconds: float,
  forward_flops_per_token: float,
  peak: float | None,
  num_devices: int,
) -> dict[str, float]:
  """Tokens/s of one RL step (all devices together) and, if ``peak`` is known, MFU.

  Args:
    rows: sampled sequences (prompts x samples per prompt).
    prompt_len: prompt tokens per row (BOS included).
    completion_len: generated positions per row (the decode loop runs them all).
    inner_epochs: full-batch updates on the sample.
    sample_seconds: wall time of sampling and scoring.
    update_seconds: wall time of the update (all inner epochs).
    forward_flops_per_token: :func:`experiments.lm.model.flops_per_token`.
    peak: one device's peak FLOP/s (:func:`peak_flops`), or None.
    num_devices: devices sharing the work (MFU is per device).

  Returns:
    ``tokens_per_s``: generated tokens over the step's time (sampling + update);
    ``sample_tokens_per_s``: generated tokens over the sampling time;
    ``train_tokens_per_s``: trained positions (rows x (prompt + completion) x
    inner_epochs) over the update time; with a peak, ``sample_mfu`` and ``train_mfu``
    per device (the update's extra forward passes, for the old and reference
    log-probs, are not counted, so ``train_mfu`` is a lower bound).
  """
  if sample_seconds <= 0 or update_seconds <= 0:
    raise ValueError(
      f"sample_seconds={sample_seconds} and update_seconds={update_seconds} must be > 0."
    )
  sampled = rows * completion_len
  trained = rows * (prompt_len + completion_len) * inner_epochs
  out = {
    "tokens_per_s": sampled / (sample_seconds + update_seconds),
    "sample_tokens_per_s": sampled / sample_seconds,
    "train_tokens_per_s": trained / update_seconds,
  }
  if peak:
    per_device = 1.0 / max(num_devices, 1)
    out["sample_mfu"] = mfu(
      forward_flops_per_token, out["sample_tokens_per_s"] * per_device, peak, train=False
    )
    out["train_mfu"] = mfu(
      forward_flops_per_token, out["train_tokens_per_s"] * per_device, peak, train=True
    )
  return out
