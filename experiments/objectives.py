"""The objectives the estimators target, as rank weights over k draws.

A rank objective of k draws is ``J = E[sum_j w_j X_(j:k)]`` over the ascending order
statistics of k i.i.d. rewards (:func:`maxk.rank_weights`). The objectives:

* ``max``: max@k, the expected best of k rewards.
* ``top_m``: the mean of the top ``m`` of k rewards (undefined for ``k < m``).
* ``min``: min@k, the expected worst of k rewards (pass^k on {0, 1} rewards).
* ``maxrl``: MaxRL's mixture ``sum_{j<=k} pass@j / j`` (arXiv 2602.02710) on the
  binarised reward ``correct = reward >= pass_threshold``, written as one weight
  vector over k draws, ``sum_j lift_rank_weights(rank_weights("max", j), k) / j``.

References: MaxRL, arXiv 2602.02710.
"""

from __future__ import annotations

from typing import TypeVar

import jax
import jax.numpy as jnp
import numpy as np

import maxk

# JAX inside the estimators, NumPy for the exact gradients' reward tables.
Rewards = TypeVar("Rewards", jax.Array, np.ndarray)

OBJECTIVES = ("max", "top_m", "min", "maxrl")
# Objectives of binarised rewards (``reward >= pass_threshold``).
BINARY_OBJECTIVES = ("maxrl",)


def objective_weights(objective: str, k: int, *, top_m: int) -> np.ndarray | None:
  """The ``[k]`` rank weights of ``objective`` over k draws, or None if undefined at k.

  ``top_m`` is undefined for ``k < top_m``; ``maxrl`` weighs the binarised rewards.

  Raises:
    ValueError: on an unknown objective.
  """
  if objective == "max":
    return maxk.rank_weights("max", k)
  if objective == "top_m":
    return maxk.rank_weights("top_m", k, m=top_m) if k >= top_m else None
  if objective == "min":
    return maxk.rank_weights("min", k)
  if objective == "maxrl":
    total = np.zeros(k)
    for j in range(1, k + 1):
      total = total + maxk.lift_rank_weights(maxk.rank_weights("max", j), k) / j
    return total
  raise ValueError(f"Unknown objective={objective!r}; valid options are {list(OBJECTIVES)}.")


def binarize(rewards: Rewards, pass_threshold: float) -> Rewards:
  """``correct = rewards >= pass_threshold`` as float32 {0, 1}."""
  return (rewards >= pass_threshold).astype(jnp.float32)


def objective_rewards(objective: str, rewards: Rewards, pass_threshold: float) -> Rewards:
  """The rewards the objective weighs: binarised for ``maxrl``, else unchanged."""
  if objective in BINARY_OBJECTIVES:
    return binarize(rewards, pass_threshold)
  return rewards
