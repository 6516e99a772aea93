r"""pass@k against the held-out KL to the warm start: each arm's frontier per seed, the
rule that reads it at a declared KL, and its mean over seeds on a KL grid
(``frontier.csv``), and the order of the arms' mean curves along it
(:func:`frontier_orders`, which the matched-KL README block cites). The contrasts at
matched KL are :mod:`~experiments.lm_study.matched_kl`.

**Frontier.** An arm of one seed is evaluated at steps t_0 = 0 (the warm start) <
t_1 < ... < t_{T−1} on the same P held-out prompts (:class:`~experiments.lm_study.
checkpoints.Arm`). Its frontier is the points (K_j, π_j), j = 0..T−1, with K_j the
mean over prompts of the held-out KL at t_j and π_j the mean over prompts of the
unbiased per-prompt pass@k, 1 − C(n − c, k)/C(n, k) (``maxk.pass_at_k``).

**Reading it at KL κ (first crossing).** KL need not grow monotonically with the
step. The arm's value at κ >= 0 is read where its mean KL *first* reaches κ: with
j* = min{j : K_j >= κ}, i = j* − 1 and w = (κ − K_i)/(K_{j*} − K_i) (so K_i < κ <=
K_{j*} and w in (0, 1]), the per-prompt value is v = (1 − w)·v_i + w·v_{j*}, and the
mean over prompts is the same interpolation of the means. If j* = 0 (the arm starts
at or beyond κ, e.g. κ = 0) the value is v_0. An arm whose KL never reaches κ has no
value there (NaN): that seed is missing at κ. Why the first crossing: it is the
point where the policy is first that far from its warm start, it is unique, and as a
function of κ it walks along the trajectory only forward (a later dip of KL below a
level already reached is skipped rather than read twice). Linear interpolation
between checkpoints ΔK apart is off by at most ΔK²/8 · max|π''(K)| where the
frontier curves; arms that move faster have wider gaps, hence checkpoints every
20-50 steps.

**Mean over seeds (the figure and frontier.csv).** Each seed's frontier is read at a
grid of G KL values from 0 to the largest KL that *every* seed of the arm reached
(min over seeds of max_j K_j), so every grid point has all S seeds and the curve's
band does not change its seeds along the axis (a seed that moved further is cut
where the slowest stopped; its checkpoints still appear as ``checkpoint`` rows).
Per grid point: the mean over seeds and the pointwise Student-t 95% interval
(``significance.plain_interval``; S − 1 degrees of freedom), clipped to [0, 1].
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import ArrayLike

from experiments import outputs
from experiments.lm_study import significance
from experiments.lm_study.checkpoints import Arm
import maxk

FILE = "frontier.csv"
COLUMNS = (
  "task", "run", "method", "k_opt", "k", "point", "step", "kl", "mean", "lo", "hi", "num_seeds"
)  # fmt: skip
NUM_POINTS = 41  # KL grid points of a curve in frontier.csv.


def pass_at_k_values(correct: ArrayLike, n: int, k: int) -> np.ndarray:
  """Per-prompt unbiased pass@k, 1 − C(n − c, k)/C(n, k), from correct counts c
  (any shape, each in [0, n]): ``maxk.pass_at_k`` of c correct among n, float64."""
  c = np.asarray(correct)
  samples = np.arange(n) < c[..., None]
  return np.asarray(maxk.pass_at_k(samples, k), np.float64)


class Crossing(NamedTuple):
  """Where a mean KL first reaches a level (module docstring): the value there is
  (1 − weight)·v[lo] + weight·v[hi]; ``weight`` is NaN where not ``reached``."""

  lo: np.ndarray
  hi: np.ndarray
  weight: np.ndarray
  reached: np.ndarray


def first_crossings(kl_xT: ArrayLike, level: ArrayLike) -> Crossing:
  """The first crossing of ``level`` (>= 0, broadcast with ``kl_xT[..., 0]``) by each
  mean-KL trajectory ``kl_xT`` ``[..., T]`` (steps on the last axis).

  Raises:
    ValueError: for a negative or non-finite ``level`` or an empty trajectory.
  """
  level_x = np.asarray(level, np.float64)
  if np.any(~np.isfinite(level_x) | (level_x < 0)):
    raise ValueError(f"level={level!r} must be finite and >= 0 (nats).")
  K = np.asarray(kl_xT, np.float64)
  if K.ndim < 1 or K.shape[-1] < 1:
    raise ValueError(f"kl_xT must hold T >= 1 steps on its last axis; got shape {K.shape}.")
  shape = np.broadcast_shapes(K.shape[:-1], level_x.shape)
  K = np.broadcast_to(K, (*shape, K.shape[-1]))
  level_x = np.broadcast_to(level_x, shape)
  above = K >= level_x[..., None]
  reached = np.any(above, axis=-1)
  hi = np.argmax(above, axis=-1)
  lo = np.maximum(hi - 1, 0)
  k_lo = np.take_along_axis(K, lo[..., None], -1)[..., 0]
  k_hi = np.take_along_axis(K, hi[..., None], -1)[..., 0]
  with np.errstate(divide="ignore", invalid="ignore"):
    weight = np.where(hi == 0, 0.0, (level_x - k_lo) / (k_hi - k_lo))
  return Crossing(lo, hi, np.where(reached, weight, np.nan), reached)


def interpolate(values_xT: ArrayLike, crossing: Crossing) -> np.ndarray:
  """(1 − w)·values[..., lo] + w·values[..., hi] (NaN where not reached), with the
  crossing broadcast against ``values_xT``'s leading axes (e.g. one crossing for
  ``[P, T]`` per-prompt values, or one per resample for ``[B, T]`` means)."""
  v = np.asarray(values_xT, np.float64)
  lead = np.broadcast_shapes(v.shape[:-1], np.shape(crossing.lo))
  v = np.broadcast_to(v, (*lead, v.shape[-1]))

  def at(index: np.ndarray) -> np.ndarray:
    return np.take_along_axis(v, np.broadcast_to(index, lead)[..., None], -1)[..., 0]

  w = np.broadcast_to(crossing.weight, lead)
  return (1 - w) * at(crossing.lo) + w * at(crossing.hi)


def mean_kl(arm: Arm) -> np.ndarray:
  """``[T]`` the arm's mean held-out KL over prompts at each evaluated step."""
  return np.mean(arm.kl, axis=1)


def matched_values(arm: Arm, k: int, level: float) -> np.ndarray:
  """``[P]`` per-prompt pass@k at the first crossing of mean KL ``level`` (module
  docstring); all NaN when the arm never reaches it."""
  crossing = first_crossings(mean_kl(arm), level)
  return interpolate(pass_at_k_values(arm.correct, arm.n, k).T, crossing)


def frontier_curve(
  arms: Mapping[int, Arm], k: int, *, num_points: int = NUM_POINTS
) -> tuple[np.ndarray, np.ndarray]:
  """(grid ``[G]``, values ``[S, G]``): each seed's mean pass@k read at a KL grid from
  0 to the largest KL every seed reached (module docstring), seeds in key order."""
  if num_points < 2 or not arms:
    raise ValueError(f"num_points={num_points} must be >= 2, with arms of >= 1 seed.")
  kl = [mean_kl(arm) for arm in arms.values()]
  reach = max(0.0, min(float(np.max(K)) for K in kl))
  grid = np.linspace(0.0, reach, num_points) if reach > 0 else np.zeros(1)
  values = [
    interpolate(np.mean(pass_at_k_values(arm.correct, arm.n, k), axis=1), first_crossings(K, grid))
    for arm, K in zip(arms.values(), kl)
  ]
  return grid, np.stack(values)


def over_seeds(values_xS: ArrayLike) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
  """(mean, lo, hi) over the last (seed) axis: the plain Student-t 95% interval
  clipped to [0, 1]; NaN bounds for fewer than 2 seeds."""
  v = np.asarray(values_xS, np.float64)
  if v.shape[-1] < 2:
    nan = np.full(v.shape[:-1], np.nan)
    return np.mean(v, axis=-1), nan, nan
  iv = significance.plain_interval(v)
  return iv.mean, np.clip(iv.lo, 0, 1), np.clip(iv.hi, 0, 1)


def _identity(task: str, arm: Arm, k: int) -> dict[str, Any]:
  return {"task": task, "run": arm.run, "method": arm.method, "k_opt": arm.k_opt, "k": k}


def _checkpoint_rows(task: str, arms: Mapping[int, Arm], k: int) -> list[dict[str, Any]]:
  """Per step that every seed evaluated: mean KL and pass@k with its interval over seeds."""
  first = next(iter(arms.values()))
  common = set.intersection(*(set(a.steps.tolist()) for a in arms.values()))
  rows = []
  for step in sorted(common):
    at = [int(np.flatnonzero(a.steps == step)[0]) for a in arms.values()]
    kl = [float(mean_kl(a)[j]) for a, j in zip(arms.values(), at)]
    passes = [np.mean(pass_at_k_values(a.correct[j], a.n, k)) for a, j in zip(arms.values(), at)]
    mean, lo, hi = over_seeds(passes)
    rows.append(
      {**_identity(task, first, k), "point": "checkpoint", "step": step, "kl": np.mean(kl)}
      | {"mean": float(mean), "lo": float(lo), "hi": float(hi), "num_seeds": len(arms)}
    )
  return rows


def frontier_rows(
  task: str,
  arms_by_seed: Mapping[int, Mapping[str, Arm]],
  ks: Sequence[int],
  *,
  num_points: int = NUM_POINTS,
) -> list[dict[str, Any]]:
  """frontier.csv's rows of one task (:data:`COLUMNS`): per run present in every seed
  and per k of ``ks``, the ``grid`` points of :func:`frontier_curve` (mean, lo, hi
  over seeds; ``step`` empty) and the ``checkpoint`` points (per evaluated step the
  mean KL over seeds, the mean pass@k and its interval).

  Raises:
    ValueError: for a k outside 1..n of a run, or no seed.
  """
  if not arms_by_seed:
    raise ValueError("arms_by_seed must hold at least one seed.")
  seeds = sorted(arms_by_seed)
  names = [r for r in arms_by_seed[seeds[0]] if all(r in arms_by_seed[s] for s in seeds)]
  rows: list[dict[str, Any]] = []
  for run in names:
    arms = {s: arms_by_seed[s][run] for s in seeds}
    for k in ks:
      grid, values = frontier_curve(arms, k, num_points=num_points)
      mean, lo, hi = over_seeds(values.T)
      rows += [
        {**_identity(task, arms[seeds[0]], k), "point": "grid", "step": "", "kl": float(x)}
        | {"mean": float(m), "lo": float(a), "hi": float(b), "num_seeds": len(seeds)}
        for x, m, a, b in zip(grid, mean, lo, hi)
      ]
      rows += _checkpoint_rows(task, arms, k)
  return rows


def write_frontier_csv(workdir: str, rows: list[dict[str, Any]]) -> str:
  """Writes ``rows`` (:func:`frontier_rows`, any tasks) to ``workdir/frontier.csv``."""
  return outputs.write_results_csv(
    workdir, [{c: r[c] for c in COLUMNS} for r in rows], filename=FILE
  )


def frontier_orders(
  frontier: Sequence[Mapping[str, Any]], k: int, task: str
) -> tuple[float, list[tuple[tuple[str, ...], int, float, float]]]:
  """(the largest KL every arm's grid reaches, segments) for the mean pass@k curves of
  ``task``'s arms in ``frontier.csv``'s rows (:func:`frontier_rows`; grid rows; an arm
  with one point, the base model, left out): at the grid points in (0, that KL] of the
  arm whose grid ends first, each arm's mean pass@k (linear between its own grid
  points), and the consecutive runs of points where the arms' order (highest first)
  is the same, each as (order, points, first KL, last KL).

  Raises:
    ValueError: for fewer than two arms with a grid at ``k``.
  """
  curves: dict[str, list[tuple[float, float]]] = {}
  for r in frontier:
    if r["task"] == task and r["point"] == "grid" and int(r["k"]) == k:
      curves.setdefault(str(r["run"]), []).append((float(r["kl"]), float(r["mean"])))
  arrays = {run: np.array(sorted(v)) for run, v in curves.items() if len(v) > 1}
  if len(arrays) < 2:
    raise ValueError(f"frontier has {len(arrays)} arms with a grid at k={k} on {task}.")
  shortest = min(arrays, key=lambda run: arrays[run][-1, 0])
  top = float(arrays[shortest][-1, 0])
  kls = arrays[shortest][:, 0]
  kls = kls[(kls > 0) & (kls <= top)]
  values = {run: np.interp(kls, a[:, 0], a[:, 1]) for run, a in arrays.items()}
  segments: list[tuple[tuple[str, ...], int, float, float]] = []
  for i, kl in enumerate(kls):
    order = tuple(sorted(values, key=lambda run: -values[run][i]))
    if segments and segments[-1][0] == order:
      last = segments[-1]
      segments[-1] = (order, last[1] + 1, last[2], float(kl))
    else:
      segments.append((order, 1, float(kl), float(kl)))
  return top, segments
