r"""Power of a declared contrast for a planned number of seeds and held-out problems.

A study's declared contrast a − b is tested over S seeds (``experiments.lm_study.significance``).
Seed s gives the paired difference d_s = μ + u_s + e_s over P held-out problems:
u_s ~ N(0, τ²) is the training noise of the seed (its own warm start, training
problems and samples), e_s the evaluation noise given the seed, with variance
ω² / P (ω²: the variance of one problem's paired difference, the evaluation's
samples per problem fixed). A finished study estimates both
(:func:`variance_components`):

  ω² = P₀ · mean_s(se_s²),   τ² = max(0, s² − mean_s(se_s²)),

with se_s the per-seed standard errors over its P₀ problems and s² the sample
variance of its d_s (``E[s²] = τ² + ω²/P₀``). A planned study of S seeds and P
problems then has per-seed variance τ² + ω²/P, and its floored test
(``significance.floored_interval``) has the power :func:`simulated_power` computes by
simulating the test itself: S normal per-seed differences, the floored variance
max(s², ω²/P) with the within-seed floor at its expected value, and the t quantile
of S − 1 degrees of freedom at level α / m for a family of m contrasts (the first
step of Holm's correction, so the power is a lower bound on Holm's). The
equivalence test (two one-sided tests within ±margin, ``significance.equivalence_p_value``)
is simulated the same way at a true difference of 0.

τ² does not shrink with more problems: past a few hundred problems per seed, power
comes only from seeds. The normal model and the variances carried over from an
earlier study (shorter training, other arms) are assumptions; :func:`design_rows`
also reports the power with both variances inflated by a factor, as a check of how
fragile the design is.

References: Julious, "Sample sizes for clinical trials with normal data", Stat. Med.
23 (2004) (power of two-sided and TOST tests by the noncentral t); Holm, Scand. J.
Statist. 6 (1979).
"""

from __future__ import annotations

from collections.abc import Sequence
import dataclasses
import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats

from experiments.lm_study import significance


@dataclasses.dataclass(frozen=True)
class VarianceComponents:
  """Between-seed variance ``between`` (τ²) and one problem's variance ``within``
  (ω²) of a paired difference, from ``num_seeds`` seeds of ``num_problems`` problems."""

  between: float
  within: float
  num_seeds: int
  num_problems: int

  def seed_variance(self, problems: int) -> float:
    """Variance of one seed's difference over ``problems`` problems: τ² + ω²/P."""
    return self.between + self.within / problems

  def scaled(self, factor: float) -> VarianceComponents:
    """Both variances times ``factor``."""
    return dataclasses.replace(self, between=self.between * factor, within=self.within * factor)


def variance_components(
  diffs_S: ArrayLike, stderrs_S: ArrayLike, *, num_problems: int
) -> VarianceComponents:
  """τ² and ω² of a finished study's contrast (module docstring).

  Args:
    diffs_S: the per-seed paired differences, S >= 2.
    stderrs_S: their standard errors over the study's problems.
    num_problems: the problems per seed those standard errors were computed over.

  Raises:
    ValueError: for fewer than 2 seeds, mismatched or non-finite input, or
      ``num_problems`` < 2.
  """
  d = np.asarray(diffs_S, np.float64)
  se = np.asarray(stderrs_S, np.float64)
  if d.ndim != 1 or d.size < 2 or se.shape != d.shape:
    raise ValueError(f"diffs_S and stderrs_S must be [S] with S >= 2; got {d.shape}, {se.shape}.")
  if not (np.all(np.isfinite(d)) and np.all(np.isfinite(se)) and np.all(se >= 0)):
    raise ValueError("diffs_S must be finite and stderrs_S finite and >= 0.")
  if num_problems < 2:
    raise ValueError(f"num_problems={num_problems!r} must be >= 2.")
  within_mean = float(np.mean(se**2))
  between = max(0.0, float(np.var(d, ddof=1)) - within_mean)
  return VarianceComponents(between, within_mean * num_problems, d.size, num_problems)


def simulated_power(
  effect: float,
  components: VarianceComponents,
  *,
  seeds: int,
  problems: int,
  alpha: float,
  margin: float | None = None,
  draws: int = 20000,
  seed: int = 0,
) -> float:
  """The rejection rate of the floored test in ``draws`` simulated studies.

  Without ``margin``: the two-sided difference test at level ``alpha`` when the
  true difference is ``effect``. With ``margin``: the equivalence test (TOST at
  ``alpha``) within ±margin when the true difference is ``effect``.

  Raises:
    ValueError: for ``seeds`` < 2, ``problems`` < 1, ``alpha`` outside (0, 1) or
      ``draws`` < 1.
  """
  if seeds < 2 or problems < 1 or draws < 1:
    raise ValueError(f"seeds={seeds}, problems={problems}, draws={draws}: need 2, 1, 1 at least.")
  if not 0 < alpha < 1:
    raise ValueError(f"alpha={alpha!r} must lie in (0, 1).")
  rng = np.random.default_rng(seed)
  floor = components.within / problems
  d = rng.normal(effect, math.sqrt(components.seed_variance(problems)), (draws, seeds))
  mean = d.mean(axis=1)
  stderr = np.sqrt(np.maximum(d.var(axis=1, ddof=1), floor) / seeds)
  if margin is None:
    p = 2 * stats.t.sf(np.abs(mean) / stderr, seeds - 1)
  else:
    p = significance.equivalence_p_value(mean, stderr, seeds - 1, margin)
  return float(np.mean(p < alpha))


def detectable_effect(stderr: float, df: int, *, alpha: float, power: float = 0.8) -> float:
  """The smallest effect > 0 that the two-sided t-test at level ``alpha`` (``df``
  degrees of freedom, standard error ``stderr``) detects with probability ``power``:
  bisection on :func:`significance.power`, from [0, 20 SE], the upper end doubled until
  it reaches ``power``."""
  lo, hi = 0.0, 20 * stderr
  while significance.power(hi, stderr, df, alpha=alpha) < power:
    hi *= 2
  for _ in range(60):
    mid = (lo + hi) / 2
    if significance.power(mid, stderr, df, alpha=alpha) < power:
      lo = mid
    else:
      hi = mid
  return hi


def minimal_detectable_effect(
  components: VarianceComponents,
  *,
  seeds: int,
  problems: int,
  alpha: float,
  power: float = 0.8,
) -> float:
  """The smallest true difference the floored test detects with probability
  ``power`` (:func:`detectable_effect`, with the floor at its expected value; it
  decides only when τ² = 0)."""
  stderr = math.sqrt(max(components.seed_variance(problems), components.within / problems) / seeds)
  return detectable_effect(stderr, seeds - 1, alpha=alpha, power=power)


@dataclasses.dataclass(frozen=True)
class CostModel:
  """Single-core seconds of one seed of a study, measured in a pilot: a fixed part
  (``fixed_s``: warm start and everything that does not grow with the problems),
  ``per_problem_s`` per held-out problem (all evaluations of all arms together)."""

  fixed_s: float
  per_problem_s: float

  def hours(self, seeds: int, problems: int) -> float:
    return seeds * (self.fixed_s + self.per_problem_s * problems) / 3600


def design_rows(
  components: dict[str, VarianceComponents],
  *,
  margin: float,
  family: int,
  seeds: Sequence[int],
  problems: Sequence[int],
  cost: CostModel,
  inflation: float = 1.5,
  draws: int = 20000,
) -> list[dict[str, Any]]:
  """One row per (contrast, seeds, problems): the planned study's cost, the power of
  its difference test at ``margin`` and of its equivalence test at 0 (both at level
  0.05 / ``family``), the same with the variances times ``inflation``, and the
  minimal detectable effect at 80% power.

  Args:
    components: contrast name -> its variance components.
    margin: the equivalence margin (and the effect the difference test must detect).
    family: the number of contrasts in the primary family (Holm's first step).
    seeds, problems: the grid of designs.
    cost: the measured cost model.
    inflation: the variance factor of the fragility check.
    draws: simulated studies per power figure.
  """
  alpha = significance.ALPHA / family
  rows = []
  for name, vc in components.items():
    for s in seeds:
      for p in problems:
        row: dict[str, Any] = {"contrast": name, "seeds": s, "problems": p}
        row["hours"] = cost.hours(s, p)
        for label, c in (("", vc), ("_inflated", vc.scaled(inflation))):
          row[f"power_difference{label}"] = simulated_power(
            margin, c, seeds=s, problems=p, alpha=alpha, draws=draws
          )
          row[f"power_equivalence{label}"] = simulated_power(
            0.0, c, seeds=s, problems=p, alpha=alpha, margin=margin, draws=draws
          )
        row["mde_80"] = minimal_detectable_effect(vc, seeds=s, problems=p, alpha=alpha)
        rows.append(row)
  return rows
