r"""Declared contrasts between two arms at matched KL to the warm start, and at their
final evaluated step, from the runs' ``checkpoints.csv``.

**Per seed.** For a contrast a − b in pass@k at KL level κ, each arm's per-prompt
pass@k is read at the first crossing of κ by its mean held-out KL
(:func:`experiments.lm_study.frontier.matched_values`: v = (1 − w)·v_i + w·v_{i+1}
between the two checkpoints around the crossing). With d_p = v_{a,p} − v_{b,p} on the
P held-out prompts, the seed's difference is d_s = mean_p d_p and its standard error
se_s = std_p(d_p, ddof = 1)/√P (paired over prompts, ``maxk.paired_difference`` via
``intervals.paired_interval``). A seed in which either arm never reaches κ (or lacks
the run) is left out of that contrast; the row says how many seeds reached it.

**The weight is estimated too.** se_s treats each arm's w as fixed, but w comes from
the mean KL over the same P prompts, itself noisy (prompts of longer answers carry
more KL per sequence). ``stderr="bootstrap"`` instead resamples the P prompts B times
(the same resample for both arms and every step), recomputes both arms' mean KL,
hence their crossings and w, and the mean difference; se_s is the standard deviation
of those B differences (resamples in which an arm does not reach κ are dropped). The
test module simulates when this matters: with KL per prompt varying independently
between the arms the fixed-w se_s is too small and the bootstrap's is not; where the
arms share the prompts' KL profile the shift of w is common to both and mostly
cancels in the difference. The across-seed interval below is affected only through
its floor (it mostly rests on the spread of d_s over seeds, which contains every
source of noise).

**Across seeds.** ``seeds.seed_interval``: the floored interval of
``significance.floored_interval`` (bounds in [−1, 1]) and its two-sided p-value, over the
seeds that reached κ. Conditioning on reaching κ can select seeds (those that moved
further); a level that not every seed reaches is a weaker comparison, hence
``num_seeds_reached`` beside ``num_seeds``. Holm's correction and verdicts are left
to the caller (the p-values are exposed).

**Final step.** The same with each arm's last evaluated step instead of a KL level
(``kl_level`` = ``"final"``): the comparison the earlier study made, confounded with
how far each arm moved.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from experiments.lm import contrasts
from experiments.lm import intervals
from experiments.lm_study import frontier
from experiments.lm_study import seeds as seeds_lib
from experiments.lm_study.checkpoints import Arm

STDERRS = ("paired", "bootstrap")
NUM_RESAMPLES = 1000
FINAL = "final"
COLUMNS = (
  "task", "question", "a", "b", "measure", "k", "kl_level", "num_seeds", "num_seeds_reached",
  "seeds", "diff", "lo", "hi", "p_value", "floored", "diff_seeds", "se_seeds",
)  # fmt: skip


def paired_seed_difference(a_P: np.ndarray, b_P: np.ndarray) -> tuple[float, float]:
  """(d_s, se_s): mean of a − b over prompts and its paired standard error
  std(a − b, ddof = 1)/√P (``maxk.paired_difference``)."""
  mean, se, _, _ = intervals.paired_interval(a_P, b_P)
  return float(mean), float(se)


def bootstrap_matched_difference(
  a: Arm, b: Arm, k: int, level: float, *, num_resamples: int = NUM_RESAMPLES, seed: int = 0
) -> tuple[float, float]:
  """(d_s, se_s) at matched KL ``level`` with se_s from a bootstrap over prompts that
  re-estimates both arms' crossing weights (module docstring); d_s is the plain
  estimate. NaN se_s with fewer than 2 resamples in which both arms reach ``level``.

  Raises:
    ValueError: if the arms hold different numbers of prompts or num_resamples < 2.
  """
  P = a.correct.shape[1]
  if b.correct.shape[1] != P or num_resamples < 2:
    raise ValueError(f"Arms of {P} and {b.correct.shape[1]} prompts, {num_resamples} resamples.")
  rng = np.random.default_rng(seed)
  weights = rng.multinomial(P, np.full(P, 1 / P), size=num_resamples) / P  # [B, P]
  means = []
  for arm in (a, b):
    passes = frontier.pass_at_k_values(arm.correct, arm.n, k)  # [T, P]
    crossing = frontier.first_crossings(weights @ arm.kl.T, level)
    means.append(frontier.interpolate(weights @ passes.T, crossing))
  diffs = means[0] - means[1]
  diffs = diffs[np.isfinite(diffs)]
  point = np.mean(frontier.matched_values(a, k, level) - frontier.matched_values(b, k, level))
  se = float(np.std(diffs, ddof=1)) if diffs.size >= 2 else float("nan")
  return float(point), se


def seed_difference(
  a: Arm,
  b: Arm,
  k: int,
  level: float | None,
  *,
  stderr: str = "paired",
  num_resamples: int = NUM_RESAMPLES,
) -> tuple[float, float] | None:
  """(d_s, se_s) of a − b in pass@k at KL ``level`` of one seed (``None``: each arm's
  final step); ``None`` when either arm never reaches ``level``.

  Raises:
    ValueError: for an unknown ``stderr`` (:data:`STDERRS`).
  """
  if stderr not in STDERRS:
    raise ValueError(f"stderr={stderr!r} must be one of {STDERRS}.")
  if level is None:
    return paired_seed_difference(
      frontier.pass_at_k_values(a.correct[-1], a.n, k),
      frontier.pass_at_k_values(b.correct[-1], b.n, k),
    )
  va, vb = (frontier.matched_values(arm, k, level) for arm in (a, b))
  if not (np.all(np.isfinite(va)) and np.all(np.isfinite(vb))):
    return None
  if stderr == "bootstrap":
    return bootstrap_matched_difference(a, b, k, level, num_resamples=num_resamples)
  return paired_seed_difference(va, vb)


def contrast_row(
  task: str,
  contrast: contrasts.Contrast,
  k: int,
  kl_level: float | str,
  per_seed: Mapping[int, tuple[float, float] | None],
) -> dict[str, Any]:
  """One row of :data:`COLUMNS` from each seed's (d_s, se_s), ``None`` for a seed that
  did not reach the level: the floored interval over the seeds that did."""
  found = sorted((s, v) for s, v in per_seed.items() if v is not None)
  reached = [s for s, _ in found]
  diffs = [d for _, (d, _) in found]
  ses = [se for _, (_, se) in found]
  iv = seeds_lib.seed_interval(diffs, ses)
  return {
    "task": task,
    "question": contrast.question,
    "a": contrast.a,
    "b": contrast.b,
    "measure": contrast.measure,
    "k": k,
    "kl_level": kl_level,
    "num_seeds": len(per_seed),
    "num_seeds_reached": len(reached),
    "seeds": " ".join(str(s) for s in reached),
    "diff": float(iv.mean),
    "lo": float(iv.lo),
    "hi": float(iv.hi),
    "p_value": float(iv.p_value),
    "floored": bool(iv.floored),
    "diff_seeds": seeds_lib.fmt_seeds(diffs),
    "se_seeds": seeds_lib.fmt_seeds(ses),
  }


def _resolved_k(contrast: contrasts.Contrast, arms_by_seed: Mapping[int, Mapping[str, Arm]]) -> int:
  """The contrast's k for the seeds' evaluation n (``"n"`` is n)."""
  if contrast.measure != "pass":
    raise ValueError(f"{contrast.question}: checkpoints hold pass@k only, not {contrast.measure}.")
  ns = {arm.n for arms in arms_by_seed.values() for arm in arms.values()}
  if len(ns) != 1:
    raise ValueError(f"The seeds' checkpoints evaluate different n: {sorted(ns)}.")
  return contrast.resolve_k(ns.pop())


def _rows(
  task: str,
  arms_by_seed: Mapping[int, Mapping[str, Arm]],
  declared: Sequence[contrasts.Contrast],
  levels: Sequence[float | None],
  stderr: str,
  resamples: int,
) -> list[dict[str, Any]]:
  """The rows of every declared contrast at every level (``None``: the final step)."""
  rows = []
  for c in declared:
    k = _resolved_k(c, arms_by_seed)
    for level in levels:
      per_seed = {
        s: seed_difference(arms[c.a], arms[c.b], k, level, stderr=stderr, num_resamples=resamples)
        if c.a in arms and c.b in arms
        else None
        for s, arms in sorted(arms_by_seed.items())
      }
      rows.append(contrast_row(task, c, k, FINAL if level is None else level, per_seed))
  return rows


def matched_kl_rows(
  task: str,
  arms_by_seed: Mapping[int, Mapping[str, Arm]],
  declared: Sequence[contrasts.Contrast],
  *,
  kl_levels: Sequence[float],
  stderr: str = "paired",
  num_resamples: int = NUM_RESAMPLES,
) -> list[dict[str, Any]]:
  """Rows of :data:`COLUMNS`, per declared contrast (pass@k; k = "n" is the
  evaluation's n) and KL level in nats (>= 0), in that order, over the seeds of
  ``arms_by_seed`` (seed -> run -> :class:`Arm`) that reached the level.

  Raises:
    ValueError: for a max@k contrast, seeds of different n, a k above n, a negative
      level or an unknown ``stderr``.
  """
  if stderr not in STDERRS or any(not level >= 0 for level in kl_levels):
    raise ValueError(f"kl_levels={kl_levels!r} must be >= 0; stderr={stderr!r} in {STDERRS}.")
  return _rows(task, arms_by_seed, declared, list(kl_levels), stderr, num_resamples)


def final_step_rows(
  task: str, arms_by_seed: Mapping[int, Mapping[str, Arm]], declared: Sequence[contrasts.Contrast]
) -> list[dict[str, Any]]:
  """As :func:`matched_kl_rows` at each arm's last evaluated step (``kl_level`` =
  ``"final"``; every seed holding both runs counts as reached)."""
  return _rows(task, arms_by_seed, declared, [None], "paired", NUM_RESAMPLES)
