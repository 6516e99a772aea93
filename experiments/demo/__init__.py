"""Prints every registered estimator on a small example batch.

Run as ``python -m experiments.demo [--k=4] [--seed=0]`` (``__main__`` holds the
flags). A quick way to see the transforms side by side: two prompts with n = 8
samples each (a continuous-reward prompt and a binary one), k = 4. Every entry of
:mod:`experiments.estimators` is printed, for max@k and the rank objectives (top-m,
min@k, MaxRL), with when it is unbiased.
"""

from __future__ import annotations

import jax
import numpy as np

from experiments import estimators as estimators_lib
import maxk

_PASS_THRESHOLD = 0.5
_TOP_M = 2


def example_batch(seed: int) -> tuple[np.ndarray, np.ndarray]:
  """Rewards [2, 8] (a continuous-reward prompt and a binary-reward prompt) and
  log-ratios [2, 8] ~ N(0, 0.1^2) for the off-policy estimators."""
  rng = np.random.default_rng(seed)
  continuous = np.round(rng.random(8), 2)
  binary = (rng.random(8) < 0.3).astype(np.float64)
  rewards = np.stack([continuous, binary]).astype(np.float32)
  log_ratio = (0.1 * rng.standard_normal(rewards.shape)).astype(np.float32)
  return rewards, log_ratio


def report(k: int, seed: int) -> str:
  """The demo's text: the batch, max@k and pass@k, then every registered estimator's
  advantages with its objective, label and unbiasedness rule."""
  if not _TOP_M <= k <= 8:
    raise ValueError(f"k={k} must satisfy {_TOP_M} <= k <= 8.")
  rewards, log_ratio = example_batch(seed)
  lines = [
    f"jax {jax.__version__} on {jax.devices()[0].platform}; k = {k}, n = {rewards.shape[-1]}",
    f"rewards [prompts, n]:\n{rewards}",
    f"max@k per prompt: {np.asarray(maxk.max_at_k(rewards, k))}",
    f"pass@k of the binary prompt: {float(maxk.pass_at_k(rewards[1], k))}",
  ]
  for e in estimators_lib.ESTIMATORS.values():
    a = e(
      rewards,
      k,
      log_ratio=log_ratio if e.off_policy else None,
      pass_threshold=_PASS_THRESHOLD,
      top_m=_TOP_M,
    )
    notes = ["log_ratio ~ N(0, 0.1)"] if e.off_policy else []
    if e.binary:
      notes.append(f"rewards >= {_PASS_THRESHOLD}")
    if e.objective == "top_m":
      notes.append(f"m = {_TOP_M}")
    header = f"{e.objective}/{e.name}: {e.label}; unbiased: {e.unbiased.rule}"
    if notes:
      header += f" ({', '.join(notes)})"
    lines.append(f"\n{header}\n{np.asarray(a)}")
  return "\n".join(lines)
