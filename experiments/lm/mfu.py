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
