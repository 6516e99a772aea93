"""95% intervals of the report's estimates over prompts.

Intervals are normal intervals over prompts: ``maxk.mean_with_interval`` of the
per-prompt unbiased estimates, which covers both the choice of prompts and the
sampling noise, and ``maxk.paired_difference`` for two methods on the same prompts,
which removes the shared prompt difficulty. A set of fewer than two prompts gets no
interval (NaN). Every task's rewards lie in [0, 1], so every estimate here does too
(differences in [-1, 1]); the normal intervals are intersected with that range,
which cannot lower their coverage. A binomial proportion over a handful of problems
gets Wilson's score interval (Wilson 1927), which stays in [0, 1] and keeps its
coverage for small counts, instead of the normal one.
"""

from __future__ import annotations

import math
import statistics

import jax.numpy as jnp
import numpy as np

import maxk

CONFIDENCE = 0.95
# (mean, standard error, lo, hi), each an array over the leading axes.
Interval = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def mean_interval(values_xP: np.ndarray, bounds: tuple[float, float] = (0.0, 1.0)) -> Interval:
  """(mean, se, lo, hi) over the last (prompt) axis, the interval intersected with
  ``bounds``; NaN se and bounds for fewer than 2 prompts."""
  values_xP = np.asarray(values_xP, np.float64)
  if values_xP.shape[-1] >= 2:
    iv = maxk.mean_with_interval(jnp.asarray(values_xP), confidence=CONFIDENCE)
    mean, se, lo, hi = (np.asarray(x, np.float64) for x in (iv.mean, iv.stderr, iv.lo, iv.hi))
    return mean, se, np.clip(lo, *bounds), np.clip(hi, *bounds)
  nan = np.full(values_xP.shape[:-1], np.nan)
  mean = np.mean(values_xP, axis=-1) if values_xP.shape[-1] else nan
  return mean, nan, nan, nan


def paired_interval(a_xP: np.ndarray, b_xP: np.ndarray) -> Interval:
  """(mean, se, lo, hi) of a - b over prompts (``maxk.paired_difference``), in [-1, 1]."""
  a_xP, b_xP = np.asarray(a_xP, np.float64), np.asarray(b_xP, np.float64)
  if a_xP.shape[-1] >= 2:
    iv = maxk.paired_difference(jnp.asarray(a_xP), jnp.asarray(b_xP), confidence=CONFIDENCE)
    mean, se, lo, hi = (np.asarray(x, np.float64) for x in (iv.mean, iv.stderr, iv.lo, iv.hi))
    return mean, se, np.clip(lo, -1.0, 1.0), np.clip(hi, -1.0, 1.0)
  return mean_interval(a_xP - b_xP, (-1.0, 1.0))


def wilson_interval(successes: int, trials: int) -> tuple[float, float, float, float]:
  """(p̂, se, lo, hi) of a binomial proportion: p̂ = successes / trials, se =
  √(p̂(1 − p̂)/trials) and Wilson's score interval at ``CONFIDENCE``,
  (p̂ + z²/2m ± z √(p̂(1 − p̂)/m + z²/4m²)) / (1 + z²/m) with m = trials; all NaN
  for ``trials < 1``.

  References: Wilson (1927), "Probable inference, the law of succession, and
  statistical inference".
  """
  if trials < 1:
    return (np.nan,) * 4
  z = float(statistics.NormalDist().inv_cdf((1 + CONFIDENCE) / 2))
  p = successes / trials
  center = (p + z * z / (2 * trials)) / (1 + z * z / trials)
  half = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / (1 + z * z / trials)
  # The interval holds p̂ (at 0 and 1 successes-to-trials it ends there exactly, where
  # center ∓ half would leave a rounding error of ~1e-17).
  lo = 0.0 if successes == 0 else min(p, max(0.0, center - half))
  hi = 1.0 if successes == trials else max(p, min(1.0, center + half))
  return p, math.sqrt(p * (1 - p) / trials), lo, hi
