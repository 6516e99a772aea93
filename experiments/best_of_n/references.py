"""Reference policies of the best-of-n study: uniform, cherry-picked and Dirichlet.

A reference is a categorical policy pi over L outcomes (``probs [L]``, summing to 1)
with one reward per outcome (``rewards [L]``). The families follow Beirami et al.'s
numerical study: uniform references, where the analytical formula log(n) - (n-1)/n is
nearly exact; "cherry-picked" ones whose best outcome is rare, where it overshoots;
and random Dirichlet ones in between.

References:
  Beirami et al., "Theoretical guarantees on the best-of-n alignment policy",
  arXiv 2401.01879.
"""

from __future__ import annotations

from collections.abc import Sequence
import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np


class Reference(NamedTuple):
  """One reference policy.

  Attributes:
    name: unique label (a row key of ``results.csv``).
    family: ``"uniform"``, ``"cherry"`` or ``"dirichlet"``.
    probs: ``[L]`` float64 probabilities summing to 1.
    rewards: ``[L]`` float64 rewards.
  """

  name: str
  family: str
  probs: np.ndarray
  rewards: np.ndarray


def uniform(size: int) -> Reference:
  """Uniform over ``size`` outcomes with distinct rewards 0, ..., size-1.

  Raises:
    ValueError: if ``size`` is not an int >= 1.
  """
  if isinstance(size, bool) or not isinstance(size, int) or size < 1:
    raise ValueError(f"size={size!r} must be an int >= 1.")
  probs = np.full(size, 1.0 / size)
  return Reference(f"uniform_L{size}", "uniform", probs, np.arange(size, dtype=np.float64))


def cherry_top(size: int, eps: float) -> Reference:
  """The best of ``size`` outcomes has probability ``eps``; the others share the rest.

  Rewards are 0, ..., size-1, the last (reward size-1) being the rare best outcome.

  Raises:
    ValueError: if ``size < 2`` or ``eps`` is not in (0, 1).
  """
  if isinstance(size, bool) or not isinstance(size, int) or size < 2:
    raise ValueError(f"size={size!r} must be an int >= 2.")
  if not 0 < eps < 1:
    raise ValueError(f"eps={eps!r} must lie in (0, 1).")
  probs = np.full(size, (1 - eps) / (size - 1))
  probs[-1] = eps
  return Reference("cherry_top", "cherry", probs, np.arange(size, dtype=np.float64))


def staircase_probs(eps: float, step: float) -> np.ndarray:
  """``[levels]`` probabilities of :func:`cherry_staircase`, lowest reward first.

  Level j >= 1 has probability step^-j, the last level ``eps``; level 0 takes the
  rest. levels = max(2, round(log(1/eps) / log(step)) + 1).

  Raises:
    ValueError: if ``eps`` is not in (0, 1), ``step`` is not a finite number > 1, or
      the levels above 0 take all the mass (step too close to 1 for this eps).
  """
  if not 0 < eps < 1:
    raise ValueError(f"eps={eps!r} must lie in (0, 1).")
  if not (math.isfinite(step) and step > 1):
    raise ValueError(f"step={step!r} must be a finite number > 1.")
  levels = max(2, int(round(math.log(1 / eps) / math.log(step))) + 1)
  probs = step ** -np.arange(levels, dtype=np.float64)
  probs[-1] = eps
  probs[0] = 0.0
  probs[0] = 1.0 - probs.sum()
  if not probs[0] > 0:
    raise ValueError(
      f"step={step!r} with eps={eps!r}: the levels above the lowest take all the mass "
      f"({1.0 - probs[0]:.4g}); use a larger step."
    )
  return probs


def cherry_staircase(eps: float, step: float) -> Reference:
  """Rewards 0, 1, ... rise as probabilities fall by ``step`` per level, down to ``eps``.

  Best-of-n's KL then grows in steps: each plateau lasts until n reaches the inverse
  probability of the next level (larger steps: flatter plateaus).

  Raises:
    ValueError: as for :func:`staircase_probs`.
  """
  probs = staircase_probs(eps, step)
  rewards = np.arange(len(probs), dtype=np.float64)
  return Reference("cherry_staircase", "cherry", probs, rewards)


def dirichlet(rng: np.random.Generator, size: int, alpha: float) -> Reference:
  """Random probs ~ Dirichlet(alpha, ..., alpha) over ``size`` outcomes, rewards ~ N(0, 1).

  Draws the probabilities, then the rewards, from ``rng``. Every probability is kept
  at least 1e-12 (then renormalised) so that every outcome stays in the support.

  Raises:
    ValueError: if ``size`` is not an int >= 1 or ``alpha`` not a finite number > 0.
  """
  if isinstance(size, bool) or not isinstance(size, int) or size < 1:
    raise ValueError(f"size={size!r} must be an int >= 1.")
  if not (math.isfinite(alpha) and alpha > 0):
    raise ValueError(f"alpha={alpha!r} must be a finite number > 0.")
  probs = rng.dirichlet(np.full(size, alpha))
  probs = np.maximum(probs, 1e-12)
  probs /= probs.sum()
  return Reference(f"dirichlet_a{alpha:g}", "dirichlet", probs, rng.standard_normal(size))


def make_references(
  *,
  uniform_sizes: Sequence[int],
  cherry_eps: float,
  cherry_size: int,
  cherry_step: float,
  dirichlet_alphas: Sequence[float],
  dirichlet_size: int,
  rng: np.random.Generator,
) -> list[Reference]:
  """The study's references: one uniform per size, ``cherry_top``, ``cherry_staircase``,
  then one Dirichlet per alpha (drawn in that order from ``rng``).

  Raises:
    ValueError: from the builders above, or if two references share a name.
  """
  refs = [uniform(size) for size in uniform_sizes]
  refs.append(cherry_top(cherry_size, cherry_eps))
  refs.append(cherry_staircase(cherry_eps, cherry_step))
  refs += [dirichlet(rng, dirichlet_size, alpha) for alpha in dirichlet_alphas]
  names = [r.name for r in refs]
  if len(set(names)) != len(names):
    raise ValueError(f"reference names must be distinct, got {names}.")
  return refs


def pad(refs: Sequence[Reference], dtype: jnp.dtype) -> tuple[jax.Array, jax.Array]:
  """Stacks references into ``[R, L_max]`` (probs, rewards) arrays of ``dtype``.

  Padding outcomes have probability 0 and a reward below the reference's minimum, so
  they change no best-of-n quantity.
  """
  if not refs:
    raise ValueError("refs must hold at least one reference.")
  size = max(len(r.probs) for r in refs)
  probs = np.zeros((len(refs), size))
  rewards = np.zeros((len(refs), size))
  for i, ref in enumerate(refs):
    probs[i, : len(ref.probs)] = ref.probs
    rewards[i, :] = ref.rewards.min() - 1.0
    rewards[i, : len(ref.rewards)] = ref.rewards
  return jnp.asarray(probs, dtype), jnp.asarray(rewards, dtype)
