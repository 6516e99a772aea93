r"""The declared comparisons of an LM study tested: their interval over seeds, Holm's
correction within each family, equivalence, power and verdicts.

A study run has S seeds; each seed s trains every method from its own warm start on
its own problems and evaluates all of them on the same P held-out problems with the
same sampling keys. For two methods a and b, seed s gives the paired difference
d_s = mean over problems of (a − b) and its standard error se_s over problems
(``maxk.paired_difference``; ``diff`` and ``diff_se`` of ``paired.csv``). The
question is whether the mean of d over the population of seeds, μ, is 0.

**The floored interval.** Model d_s = μ + u_s + e_s, with u_s the training noise of
the seed (between-seed variance τ²) and e_s the evaluation noise given the seed
(variance se_s², estimated well from P = 128 problems). Then

  E[sample variance of d_s (ddof = 1)] = τ² + mean_s(se_s²),

so the within-seed variance mean(se²) is a floor on what the sample variance
estimates. With 3-8 seeds the sample variance is itself very noisy (with S = 3 it
has 2 degrees of freedom: it falls below a fifth of its mean almost one time in
five), and when the seeds happen to agree it can sit far below the floor, making
the plain t-interval narrow on a noise-sized effect. :func:`floored_interval`
therefore uses

  v = max(s², mean(se²)),  SE = √(v / S),  interval d̄ ± t_{S−1, 0.975} SE,

and the two-sided p-value of d̄ / SE under t_{S−1}. The max never lowers the
variance estimate: the floored statistic |d̄| / SE is never larger than the plain t
statistic, so the test rejects only where the plain t-test rejects, and for normal
d_s of common variance the plain t-test has exactly its nominal level; the floored
one is at or below it. The t quantile is kept even where the floor decides, which
only widens the interval. This is the ad hoc variance correction of the Hartung-Knapp
interval for random-effects meta-analysis with few studies (its q is floored at 1),
here with equal weights.
:func:`plain_interval` is the unfloored Student-t interval, for comparison.

Not a hierarchical bootstrap (resampling seeds, then problems): with S = 3 seeds
there are only 10 distinct resamples of the seeds, and for S <= 8 the bootstrap
interval behaves like a normal interval built on the biased variance (S − 1) s²/S,
with no t quantile, so it covers less than its nominal level exactly where the
study needs it.

**Multiplicity.** A study names a few comparisons in advance
(:class:`experiments.lm.contrasts.Contrast`;
the study config's ``CONTRASTS``), applied to every task, each in a named family
(one family, ``declared``, unless the study splits them into e.g. ``primary`` and
``secondary``). Holm's step-down correction (:func:`holm`) runs within each family
over every task of the study: the conservative choice, and the count a reviewer
would make. Verdicts (:func:`declared_verdict`): ``better`` or ``worse`` when the
Holm-adjusted p-value is below 0.05 (the family-wise error rate is then at most 5%
under any dependence between the contrasts); ``equivalent`` when the contrast
declares an equivalence margin and the Holm-adjusted p-value of the two one-sided
tests (:func:`equivalence_p_value`) is below 0.05; ``not detected`` otherwise, which
is no claim of no difference and is reported with the test's power at the margin
(:func:`power`). Every other comparison is exploratory: its verdict says only
whether its floored interval excludes 0, with no claim about error rates.

References: Holm, "A simple sequentially rejective multiple test procedure", Scand.
J. Statist. 6 (1979); Röver, Knapp & Friede, "Hartung-Knapp-Sidik-Jonkman approach
and its modification for random-effects meta-analysis with few studies", BMC Med.
Res. Methodol. 15:99 (2015).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike
from scipy import integrate
from scipy import stats

CONFIDENCE = 0.95
ALPHA = 0.05  # Family-wise error rate of the declared contrasts.

# Verdicts of a declared contrast (:func:`declared_verdict`).
BETTER = "better"
WORSE = "worse"
EQUIVALENT = "equivalent"
NOT_DETECTED = "not detected"
NOT_TESTED = "not tested (fewer than 2 seeds)"
# Verdicts of an exploratory comparison (:func:`exploratory_verdict`).
EXPLORATORY_EXCLUDES = "exploratory, excludes 0"
EXPLORATORY_INCLUDES = "exploratory, includes 0"
EXPLORATORY_NO_INTERVAL = "exploratory, no interval"


class SeedInterval(NamedTuple):
  """Mean over seeds with its standard error, interval and p-value (float64 arrays,
  the seed axis removed); ``floored``: whether the within-seed floor decided."""

  mean: np.ndarray
  stderr: np.ndarray
  lo: np.ndarray
  hi: np.ndarray
  p_value: np.ndarray
  floored: np.ndarray


def _seed_arrays(diffs: ArrayLike, stderrs: ArrayLike | None) -> tuple[np.ndarray, np.ndarray]:
  d = np.asarray(diffs, np.float64)
  if d.ndim < 1 or d.shape[-1] < 2:
    raise ValueError(f"diffs must hold S >= 2 seeds on its last axis; got shape {d.shape}.")
  se = np.zeros_like(d) if stderrs is None else np.asarray(stderrs, np.float64)
  if se.shape != d.shape:
    raise ValueError(f"stderrs has shape {se.shape}, diffs {d.shape}; they must match.")
  if np.any(se[np.isfinite(se)] < 0):
    raise ValueError("stderrs must be >= 0.")
  return d, se


def _t_interval(
  mean: np.ndarray,
  var: np.ndarray,
  S: int,
  ok: np.ndarray,
  floored: np.ndarray,
  confidence: float,
) -> SeedInterval:
  """mean ± t_{S−1} √(var / S) and the two-sided t_{S−1} p-value; NaN where not ``ok``."""
  if not 0 < confidence < 1:
    raise ValueError(f"confidence={confidence!r} must lie in (0, 1).")
  se = np.sqrt(var / S)
  half = stats.t.ppf((1 + confidence) / 2, S - 1) * se
  with np.errstate(divide="ignore", invalid="ignore"):
    p = 2 * stats.t.sf(np.abs(mean) / se, S - 1)
  # SE = 0 (identical seeds, no evaluation noise): the mean is exact.
  p = np.where(se == 0, np.where(mean == 0, 1.0, 0.0), p)
  nan = np.full(np.shape(mean), np.nan)
  return SeedInterval(
    mean=np.where(ok, mean, nan),
    stderr=np.where(ok, se, nan),
    lo=np.where(ok, mean - half, nan),
    hi=np.where(ok, mean + half, nan),
    p_value=np.where(ok, p, nan),
    floored=np.where(ok, floored, False),
  )


def floored_interval(
  diffs: ArrayLike, stderrs: ArrayLike, *, confidence: float = CONFIDENCE
) -> SeedInterval:
  """The mean of per-seed differences with the floored Student-t interval (module
  docstring): v = max(s², mean(se²)), SE = √(v/S), mean ± t_{S−1} SE, p from t_{S−1}.

  Args:
    diffs: ``[..., S]`` per-seed differences d_s, seeds on the last axis.
    stderrs: ``[..., S]`` their standard errors over problems, >= 0.
    confidence: keyword-only, in (0, 1).

  Returns:
    :class:`SeedInterval` of shape ``[...]``; a group with a non-finite d_s or se_s
    is NaN throughout (``floored`` False). Bounds are not clipped to any range. A
    group with SE = 0 (identical seeds, no noise) has p = 1 if its mean is 0, else 0.

  Raises:
    ValueError: for fewer than 2 seeds, mismatched shapes, a negative standard
      error, or ``confidence`` outside (0, 1).
  """
  d, se = _seed_arrays(diffs, stderrs)
  S = d.shape[-1]
  ok = np.all(np.isfinite(d) & np.isfinite(se), axis=-1)
  with np.errstate(invalid="ignore"):
    sample_var = np.var(d, axis=-1, ddof=1)
    floor = np.mean(se**2, axis=-1)
  return _t_interval(
    np.mean(d, axis=-1), np.maximum(sample_var, floor), S, ok, floor > sample_var, confidence
  )


def plain_interval(diffs: ArrayLike, *, confidence: float = CONFIDENCE) -> SeedInterval:
  """The unfloored Student-t interval of the mean of ``diffs`` ``[..., S]`` (S >= 2):
  mean ± t_{S−1} s/√S, p from t_{S−1}; NaN for a group with a non-finite value.

  Raises:
    ValueError: for fewer than 2 seeds or ``confidence`` outside (0, 1).
  """
  d, _ = _seed_arrays(diffs, None)
  ok = np.all(np.isfinite(d), axis=-1)
  with np.errstate(invalid="ignore"):
    var = np.var(d, axis=-1, ddof=1)
  never = np.zeros(ok.shape, bool)
  return _t_interval(np.mean(d, axis=-1), var, d.shape[-1], ok, never, confidence)


def holm(p_values: ArrayLike) -> np.ndarray:
  """Holm's step-down adjusted p-values over the last axis (Holm 1979).

  With the m p-values sorted, p_(1) <= ... <= p_(m), the adjusted value of p_(i) is
  min(1, max_{j <= i} (m − j + 1) p_(j)): hypothesis i is rejected at family-wise
  level α exactly when its adjusted p-value is <= α. The adjusted values are
  monotone in the raw ones and capped at 1.

  NaN p-values (a declared comparison that could not be tested) still count in the
  family size m, since the family was fixed in advance and counting them is the
  conservative choice; they sort last, so they do not change the others' adjusted
  values beyond m, and stay NaN.

  Args:
    p_values: ``[..., m]``, m >= 1, each in [0, 1] or NaN.

  Returns:
    float64 ``[..., m]`` adjusted p-values in the input's order.

  Raises:
    ValueError: for a scalar or empty family, or a value outside [0, 1] that is not NaN.
  """
  p = np.asarray(p_values, np.float64)
  if p.ndim < 1 or p.shape[-1] < 1:
    raise ValueError(f"p_values must hold m >= 1 values on its last axis; got shape {p.shape}.")
  if np.any((p < 0) | (p > 1) | np.isinf(p)):
    raise ValueError("p_values must lie in [0, 1] (or be NaN).")
  m = p.shape[-1]
  nan = np.isnan(p)
  order = np.argsort(np.where(nan, np.inf, p), axis=-1, kind="stable")
  sorted_p = np.take_along_axis(p, order, axis=-1)
  scaled = sorted_p * (m - np.arange(m))
  adjusted_sorted = np.minimum(np.fmax.accumulate(scaled, axis=-1), 1.0)
  adjusted_sorted = np.where(np.isnan(sorted_p), np.nan, adjusted_sorted)
  out = np.empty_like(p)
  np.put_along_axis(out, order, adjusted_sorted, axis=-1)
  return out


def equivalence_p_value(mean: ArrayLike, stderr: ArrayLike, df: int, margin: float) -> np.ndarray:
  """The p-value of the two one-sided tests (TOST) of equivalence within ±``margin``.

  The null hypothesis is |μ| >= margin. With T ~ t_df, the lower test of μ <= −margin
  has p_lo = P(T >= (mean + margin) / SE), the upper test of μ >= margin has
  p_hi = P(T <= (mean − margin) / SE), and TOST's p-value is max(p_lo, p_hi):
  equivalence is concluded at level α exactly when the (1 − 2α) interval
  mean ± t_{df, 1−α} SE lies inside (−margin, margin). SE is the floored standard
  error of :func:`floored_interval`, so the equivalence test is as conservative as
  the difference test. NaN where mean or SE is NaN; SE = 0 gives 0 inside the margin
  and 1 outside.

  References: Schuirmann, "A comparison of the two one-sided tests procedure and the
  power approach for assessing the equivalence of average bioavailability",
  J. Pharmacokinet. Biopharm. 15 (1987).

  Raises:
    ValueError: for ``df`` < 1 or ``margin`` not a finite number > 0.
  """
  if isinstance(df, bool) or int(df) != df or df < 1:
    raise ValueError(f"df={df!r} must be an int >= 1.")
  if not 0 < margin < math.inf:
    raise ValueError(f"margin={margin!r} must be a finite number > 0.")
  m = np.asarray(mean, np.float64)
  se = np.asarray(stderr, np.float64)
  with np.errstate(divide="ignore", invalid="ignore"):
    p_lo = stats.t.sf((m + margin) / se, df)
    p_hi = stats.t.cdf((m - margin) / se, df)
  p = np.maximum(p_lo, p_hi)
  exact = np.where(np.abs(m) < margin, 0.0, 1.0)
  p = np.where(se == 0, exact, p)
  return np.where(np.isfinite(m) & np.isfinite(se), p, np.nan)


def power(effect: float, stderr: float, df: int, *, alpha: float = ALPHA) -> float:
  """Power of the two-sided t-test at level ``alpha`` against a true difference of
  ``effect``, for an estimate with standard error ``stderr`` and ``df`` degrees of
  freedom: P(|T'| > t_{df, 1−α/2}) with T' ~ noncentral t(df, effect / stderr).

  For a declared contrast, ``alpha`` is the family-wise level divided by the family
  size (the first step of Holm's correction, so the figure is a lower bound on
  Holm's power), and ``stderr`` the floored standard error (the floor only
  lowers it). NaN for a non-finite or zero ``stderr``. Where SciPy's noncentral t
  gives no finite value (far in its tails) the power is integrated over the
  chi-squared variance instead.

  Raises:
    ValueError: for ``df`` < 1 or ``alpha`` outside (0, 1).
  """
  if isinstance(df, bool) or int(df) != df or df < 1:
    raise ValueError(f"df={df!r} must be an int >= 1.")
  if not 0 < alpha < 1:
    raise ValueError(f"alpha={alpha!r} must lie in (0, 1).")
  if not (math.isfinite(stderr) and stderr > 0 and math.isfinite(effect)):
    return float("nan")
  crit = stats.t.ppf(1 - alpha / 2, df)
  nc = effect / stderr
  value = float(stats.nct.sf(crit, df, nc) + stats.nct.cdf(-crit, df, nc))
  if math.isfinite(value):
    return value

  # SciPy's noncentral t fails far in its tails: integrate over V ~ chi²(df) instead,
  # T = (Z + nc) / √(V / df), and P(|T| > crit | V) is a normal probability.
  def given(v: float) -> float:
    c = crit * math.sqrt(v / df)
    return float((stats.norm.sf(c - nc) + stats.norm.cdf(-c - nc)) * stats.chi2.pdf(v, df))

  return float(integrate.quad(given, 0, np.inf, limit=200)[0])


def declared_verdict(
  p_holm: float,
  diff: float,
  p_equivalence_holm: float = math.nan,
  *,
  alpha: float = ALPHA,
) -> str:
  """The verdict of a declared contrast from its Holm-adjusted p-values.

  ``better`` (a − b > 0) or ``worse`` (< 0) when the difference test's Holm-adjusted
  p-value is below ``alpha``; otherwise ``equivalent`` when an equivalence margin was
  declared and the Holm-adjusted TOST p-value (:func:`equivalence_p_value`) is below
  ``alpha``; otherwise ``not detected``, which says nothing about the absence of a
  difference (report it with its power, :func:`power`). A NaN difference p-value (no
  test: one seed, or a non-finite difference) gives ``NOT_TESTED``.
  """
  if not math.isfinite(p_holm):
    return NOT_TESTED
  if p_holm < alpha:
    return BETTER if diff > 0 else WORSE
  if math.isfinite(p_equivalence_holm) and p_equivalence_holm < alpha:
    return EQUIVALENT
  return NOT_DETECTED


def exploratory_verdict(lo: float, hi: float) -> str:
  """An exploratory comparison's verdict: whether its floored interval excludes 0."""
  if not (math.isfinite(lo) and math.isfinite(hi)):
    return EXPLORATORY_NO_INTERVAL
  return EXPLORATORY_EXCLUDES if lo > 0 or hi < 0 else EXPLORATORY_INCLUDES
