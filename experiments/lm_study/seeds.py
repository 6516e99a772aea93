"""Means over a study's seeds with their intervals: the Student-t interval of
:mod:`maxk` for per-seed estimates, the floored interval of
:mod:`experiments.lm_study.significance` for paired differences, and the plain t-interval of
training quantities (which have no within-seed standard error)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
import math
from typing import Any

import jax.numpy as jnp
import numpy as np

from experiments.lm import intervals
from experiments.lm_study import significance
import maxk


def across_seeds(values_S: Sequence[float], bounds: tuple[float, float]) -> tuple[float, ...]:
  """(mean, lo, hi): the mean of per-seed values and its Student-t interval (S − 1
  degrees of freedom) intersected with ``bounds``; NaN bounds for fewer than 2."""
  values = np.asarray(values_S, np.float64)
  if values.size < 2 or not np.all(np.isfinite(values)):
    mean = float(np.mean(values)) if values.size else float("nan")
    return mean, float("nan"), float("nan")
  iv = maxk.mean_with_interval(
    jnp.asarray(values), confidence=intervals.CONFIDENCE, distribution="t"
  )
  lo, hi = float(iv.lo), float(iv.hi)
  return float(iv.mean), max(bounds[0], lo), min(bounds[1], hi)


def across_seeds_many(
  values: Sequence[Sequence[float]], bounds: tuple[float, float]
) -> list[tuple[float, ...]]:
  """:func:`across_seeds` of each sequence of ``values``, one batched call per
  number of seeds (the same numbers, far fewer dispatches)."""
  out: list[tuple[float, ...]] = [()] * len(values)
  by_size: dict[int, list[int]] = {}
  for i, v in enumerate(values):
    if len(v) < 2 or not np.all(np.isfinite(np.asarray(v, np.float64))):
      out[i] = across_seeds(v, bounds)
    else:
      by_size.setdefault(len(v), []).append(i)
  for indices in by_size.values():
    batch = jnp.asarray(np.array([values[i] for i in indices], np.float64))
    iv = maxk.mean_with_interval(batch, confidence=intervals.CONFIDENCE, distribution="t")
    for i, mean, lo, hi in zip(indices, np.asarray(iv.mean), np.asarray(iv.lo), np.asarray(iv.hi)):
      out[i] = (float(mean), max(bounds[0], float(lo)), min(bounds[1], float(hi)))
  return out


def fmt_seeds(values: Iterable[float]) -> str:
  """Per-seed values as CSV text: space-separated, 6 significant digits."""
  return " ".join(f"{float(v):.6g}" for v in values)


def seed_interval(diffs: Sequence[float], stderrs: Sequence[float]) -> significance.SeedInterval:
  """:func:`significance.floored_interval` of per-seed differences, its bounds intersected
  with [-1, 1]. The mean of the differences is kept where there is no interval: for
  fewer than 2 seeds, or a seed without a standard error (a set of one problem)."""
  mean = np.mean(np.asarray(diffs, np.float64)) if len(diffs) else np.float64(np.nan)
  if len(diffs) < 2:
    nan = np.full((), np.nan)
    return significance.SeedInterval(np.asarray(mean), nan, nan, nan, nan, np.asarray(False))
  iv = significance.floored_interval(diffs, stderrs, confidence=intervals.CONFIDENCE)
  return iv._replace(mean=np.asarray(mean), lo=np.maximum(iv.lo, -1.0), hi=np.minimum(iv.hi, 1.0))


def plain_bounds(diffs: Sequence[float]) -> tuple[float, float]:
  """The unfloored t-interval's bounds in [-1, 1] (NaN for fewer than 2 seeds)."""
  if len(diffs) < 2:
    return float("nan"), float("nan")
  iv = significance.plain_interval(diffs, confidence=intervals.CONFIDENCE)
  return max(-1.0, float(iv.lo)), min(1.0, float(iv.hi))


def plain_across_seeds(
  values_S: Sequence[float], bounds: tuple[float, float] = (-math.inf, math.inf)
) -> tuple[float, float, float]:
  """(mean, lo, hi) in float64: the mean of per-seed values with the plain Student-t
  interval of :func:`significance.plain_interval` intersected with ``bounds``; NaN bounds
  for fewer than 2 seeds (and NaN throughout for a NaN value)."""
  values = np.asarray(values_S, np.float64)
  mean = float(np.mean(values)) if values.size else float("nan")
  if values.size < 2:
    return mean, float("nan"), float("nan")
  iv = significance.plain_interval(values, confidence=intervals.CONFIDENCE)
  return mean, max(bounds[0], float(iv.lo)), min(bounds[1], float(iv.hi))


def seed_row(values: Sequence[float], bounds: tuple[float, float]) -> dict[str, Any]:
  """Per-seed values, their mean and the plain Student-t interval over seeds."""
  mean, lo, hi = plain_across_seeds(values, bounds)
  return {"mean": mean, "lo": lo, "hi": hi, "value_seeds": fmt_seeds(values)}
