"""Prints every maxk estimator on a small example batch.

Run as ``python -m experiments.demo``.  A quick way to see the transforms side by
side: two prompts with n = 8 samples each, k = 4.
"""

from __future__ import annotations

from collections.abc import Sequence

from absl import app
from absl import flags
import jax
import numpy as np

import maxk

_K = flags.DEFINE_integer("k", 4, "k of max@k / pass@k.")
_SEED = flags.DEFINE_integer("seed", 0, "Seed for the example rewards and log-ratios.")


def example_batch(seed: int):
  """Rewards [2, 8]: a continuous-reward prompt and a binary-reward prompt."""
  rng = np.random.default_rng(seed)
  continuous = np.round(rng.random(8), 2)
  binary = (rng.random(8) < 0.3).astype(np.float64)
  rewards = np.stack([continuous, binary]).astype(np.float32)
  log_ratio = (0.1 * rng.standard_normal(rewards.shape)).astype(np.float32)
  return rewards, log_ratio


def main(argv: Sequence[str]) -> None:
  del argv
  k = _K.value
  rewards, log_ratio = example_batch(_SEED.value)
  np.set_printoptions(precision=4, suppress=True, linewidth=120)
  print(f"jax {jax.__version__} on {jax.devices()[0].platform}; k = {k}, n = {rewards.shape[-1]}")
  print("rewards [prompts, n]:\n", rewards)
  print("max@k per prompt:", np.asarray(maxk.max_at_k(rewards, k)))
  print("pass@k of the binary prompt:", float(maxk.pass_at_k(rewards[1], k)))
  rows = {
    f"max_at_k_advantages[{b}]": maxk.max_at_k_advantages(rewards, k, baseline=b)
    for b in ("none", "loo", "loo_centered", "loo_minus_one", "mean_std")
  }
  rows["grpo_advantages"] = maxk.grpo_advantages(rewards)
  rows["rloo_advantages"] = maxk.rloo_advantages(rewards)
  rows["max_minus_second_advantages"] = maxk.max_minus_second_advantages(rewards)
  rows["pass_at_k_training_advantages (binary prompt)"] = maxk.pass_at_k_training_advantages(
    rewards[1:], k
  )
  for method in ("exact", "first_order"):
    rows[f"off_policy[{method}] (log_ratio ~ N(0, 0.1))"] = maxk.max_at_k_advantages_off_policy(
      rewards, log_ratio, k, method=method
    )
  for name, value in rows.items():
    print(f"\n{name}:\n{np.asarray(value)}")


if __name__ == "__main__":
  app.run(main)
