"""Benchmark metrics with error bars from per-sample records (:func:`evaluate_records`).

Each problem i has n_i samples; a metric at k (pass@k, max@k, ...) has an unbiased
per-problem estimate x̂_i, the mean over the k-subsets of the problem's samples of
a k-sample statistic (a U-statistic, computed by maxk's group-wise functions).  The
benchmark score is the mean over the P problems, x̄ = (1/P) Σ_i x̂_i.  Treating the
problems as drawn from a population and the samples of each as drawn from the
model (x̂_i = θ_i + e_i, E[e_i | θ_i] = 0, Var(e_i | θ_i) = σ_i²):

  Var(x̄) = Var(θ)/P + E[σ²]/P            (between problems + within problems)
  SE     = s/√P                          (s² the sample variance of the x̂_i)
  total  = s²/P,   within = (1/P²) Σ_i v_i,   between = total − within,

with v_i an unbiased estimate of σ_i² (:func:`maxk.variance_split`).  The interval
x̄ ± t·SE (Student t with P − 1 degrees of freedom by default) is for the
population mean E[θ]: it covers the choice of problems and the sampling noise.
``within`` is the part that more samples per problem would shrink; more problems
shrink both.  Bayes@N's credible interval (pass@k from 0/1 ``correct``,
:func:`maxk.bayes_at_n`) treats the problems as fixed: it is about the mean over
these problems, and reflects only the sampling noise.

The unbiased v_i exist for the U-statistics whose k-sample statistic depends on the
samples through maxk's variance estimators: pass@k and max@k
(:func:`maxk.pass_at_k_variance`, :func:`maxk.max_at_k_variance`), pass^k (the
pass@k variance of the flipped outcomes, since C(c,k)/C(n,k) = 1 − pass@k of 1 −
correct), and G-Pass@k_τ and mG-Pass@k, whose statistic f(X) depends only on the
number X of correct samples in the subset: with H(m, c) the hypergeometric law of X
among m samples of which c are correct and U(m, c) = E_H[f(X)] the estimate,

  v = U(m, c)² − Σ_i f(i) P_{H(m,c)}(X = i) U(m − k, c − i)      (needs m >= 2k),

the estimate minus the mean of f(I) f(J) over ordered pairs of disjoint k-subsets
(Hoeffding 1948), computed in float64.  maj@k, selected@k and the plug-in pass^k
have no per-problem variance estimate here: their SE and interval hold, their
split is not given.

Coverage.  The interval rests on the mean over problems being close to normal.
Simulated with 30 problems x 16 samples and success rates p ~ Beta(a, b)
(tests/maxk/evaluate_test.py), the t interval covers the population mean of pass@1
and pass@8 94.2% of the time at Beta(1, 4) (the normal one 93.3%).  Where most
problems' estimates sit at 0 or 1 it covers less, because s/√P is then small or 0
in many draws of the problems: pass@8 at Beta(1, 2) 92.4%, Beta(1, 1) 89.4%,
Beta(2, 2) 82.6% (pass@8 ≈ 0.95, many problems at exactly 1); more problems help.
Bayes@N's interval, for the mean over the given problems, covered that mean 82% (pass@1)
and 93% (pass@8) of the time at Beta(1, 2) in a simulation of 40,000 replicates: its
uniform prior pulls each rate towards 1/2.

References: Miller, "Adding Error Bars to Evals", arXiv 2411.00640 (SE over
questions, the split by the law of total variance); Hoeffding 1948 (U-statistic
variance); Hariri et al., arXiv 2510.04265 (Bayes@N).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
import dataclasses
import functools
import math
from typing import Any

import jax.numpy as jnp
import numpy as np

from maxk._src import beta_binomial
from maxk._src import checks
from maxk._src import curves
from maxk._src import estimate_variance
from maxk._src import majority_vote
from maxk._src import metrics as metrics_lib
from maxk._src import records as records_lib
from maxk._src import selectors
from maxk._src import uncertainty

METRICS = ("pass@k", "pass^k", "g_pass@k", "mg_pass@k", "maj@k", "max@k", "selected@k")
# The columns each metric reads (selected@k: the score, and the reward or else correct).
_NEEDS = {
  "pass@k": ("correct",),
  "pass^k": ("correct",),
  "g_pass@k": ("correct",),
  "mg_pass@k": ("correct",),
  "maj@k": ("answer", "correct"),
  "max@k": ("reward",),
  "selected@k": ("score",),
}


@dataclasses.dataclass(frozen=True)
class MetricRow:
  """One metric at one k, summarised over problems (floats; None where not available).

  Attributes:
    metric: one of ``METRICS`` (``"pass@k"``, ``"pass^k"``, ``"g_pass@k"``,
      ``"mg_pass@k"``, ``"maj@k"``, ``"max@k"``, ``"selected@k"``), or
      ``"pass@k (Beta-binomial)"`` (``extrapolate=``).
    k: the number of draws.
    tau: G-Pass@k's τ (None for the other metrics).
    label: the name at this k, e.g. ``"pass@4"``, ``"G-Pass@4 τ=0.5"``.
    problems: P, the number of problems averaged (those with at least k samples).
    mean: the mean over the P problems of the unbiased per-problem estimates.
    stderr: s/√P (NaN for P < 2).
    lo: lower end of the interval mean ± t·stderr (or z·stderr), clipped to
      [0, 1] for the metrics that are probabilities (all but max@k, and
      selected@k of a reward column).
    hi: its upper end (clipped likewise).
    within: the within-problem (sampling) part of stderr², (1/P²) Σ_i v_i; None
      where no unbiased per-problem variance exists (maj@k, selected@k, plug-in
      pass^k) or some problem has fewer than 2k samples.
    between: stderr² − within (the part due to the choice of problems; unbiased,
      so it can be negative when the problems barely differ); None with ``within``.
    bayes_mean: Bayes@N's posterior mean of the mean pass@k (pass@k only).
    bayes_lo: lower end of its credible interval (pass@k only).
    bayes_hi: upper end (pass@k only).
    left_out: the problems with fewer than k samples, not in this row.
  """

  metric: str
  k: int
  tau: float | None
  label: str
  problems: int
  mean: float
  stderr: float
  lo: float
  hi: float
  within: float | None
  between: float | None
  bayes_mean: float | None
  bayes_lo: float | None
  bayes_hi: float | None
  left_out: tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class Evaluation:
  """The result of :func:`evaluate_records`: the rows and what they were computed from.

  Attributes:
    rows: one :class:`MetricRow` per metric and k, grouped by metric (in ``METRICS``
      order, G-Pass@k by τ), k ascending.
    problems: the problem ids (as text), in order of first appearance.
    sizes: the number of samples of each problem.
    ks: the k evaluated.
    columns: the column read for each role (problem, correct, reward, ...).
    confidence: the intervals' confidence level.
    distribution: ``"t"`` (Student t, P − 1 degrees of freedom) or ``"normal"``.
    sources: where the records came from (file names, or ``"records"``).
    tool_scores: the evaluation tools' own aggregates that their files carry
      (:class:`maxk._src.records.ToolScore`), printed beside maxk's rows.
  """

  rows: tuple[MetricRow, ...]
  problems: tuple[str, ...]
  sizes: tuple[int, ...]
  ks: tuple[int, ...]
  columns: Mapping[str, str]
  confidence: float
  distribution: str
  sources: tuple[str, ...]
  tool_scores: tuple[records_lib.ToolScore, ...] = ()

  def to_markdown(self) -> str:
    """The rows as a Markdown table, with a header line and notes (see the README)."""
    return _markdown(self)


def default_ks(n_min: int) -> tuple[int, ...]:
  """1, 2, 4, ... up to ``n_min``, and ``n_min`` itself: every problem has them all."""
  return tuple(sorted({2**j for j in range(n_min.bit_length()) if 2**j <= n_min} | {n_min}))


def evaluate_records(
  records: Iterable[Mapping[str, Any]] | Mapping[str, Sequence[Any]],
  *,
  k: int | Sequence[int] | None = None,
  metrics: Sequence[str] | None = None,
  problem: str | None = None,
  correct: str | None = None,
  reward: str | None = None,
  answer: str | None = None,
  score: str | None = None,
  sample_id: str | None = None,
  tie: str = "uniform",
  taus: Sequence[float] = (0.5, 0.75),
  pass_hat: str = "unbiased",
  confidence: float = 0.95,
  distribution: str = "t",
  extrapolate: int | Sequence[int] | None = None,
) -> Evaluation:
  """Benchmark metrics with standard errors, intervals and their variance split.

  Groups per-sample records by problem (ragged groups are padded and masked with
  ``where=``) and computes, at each k, every metric the columns allow, from maxk's
  unbiased per-problem estimators:

    metric       columns                        per-problem estimate
    pass@k       correct                        maxk.pass_at_k, and Bayes@N
    pass^k       correct                        maxk.pass_hat_k (estimator: pass_hat)
    g_pass@k     correct                        maxk.g_pass_at_k at each τ of taus
    mg_pass@k    correct                        maxk.mg_pass_at_k
    maj@k        answer, correct                maxk.maj_at_k (tie rule: tie)
    max@k        reward                         maxk.max_at_k
    selected@k   score, reward (else correct)   maxk.selected_at_k

  For each: the mean over problems, its standard error s/√P, the interval mean ±
  t·SE, and the split of SE² into within-problem (sampling) and between-problem
  parts where an unbiased per-problem variance exists (module docstring).  The SE
  counts both the choice of problems and the sampling noise, so the interval is
  for the population mean; ``within`` is the part that more samples per problem
  would remove.  A problem with fewer than k samples is left out of the rows at
  that k and named in them (``MetricRow.left_out``).

  Args:
    records: per-sample records: an iterable of mappings (column -> scalar), or a
      mapping of columns (column -> sequence, all of one length).
    k: keyword-only, an int or ints >= 1, none above the largest problem's number
      of samples.  Default: 1, 2, 4, ... up to the smallest problem's number of
      samples n_min, and n_min itself (so no problem is left out).
    metrics: keyword-only, the metrics to compute (of ``METRICS``); default every
      one whose columns the records have.
    problem: keyword-only, the problem-id column (default ``"problem_id"``).
    correct: keyword-only, the 0/1 (or boolean) column; default ``"correct"``
      if the first record has it.  A column in use must be in every record.
    reward: keyword-only, the reward column (default ``"reward"``, likewise).
    answer: keyword-only, the final-answer column (default ``"answer"``,
      likewise); null or "" is an abstention.  For maj@k, equal answers of a
      problem must be equally correct and an abstention must not be correct.
    score: keyword-only, the verifier-score column (default ``"score"``,
      likewise).
    sample_id: keyword-only, an optional sample-id column, unique per problem.
    tie: keyword-only, maj@k's tie rule, ``"uniform"`` or ``"wrong"``.
    taus: keyword-only, the τ of G-Pass@k_τ, each in [0, 1] (empty: none).
    pass_hat: keyword-only, pass^k's estimator: ``"unbiased"`` C(c,k)/C(n,k)
      (default) or ``"plug_in"`` (c/n)^k, biased upwards for k >= 2
      (:func:`maxk.pass_hat_k`).
    confidence: keyword-only, the intervals' level, in (0, 1).
    distribution: keyword-only, ``"t"`` (default: Student t with P − 1 degrees of
      freedom, a little wider than the normal's for few problems, e.g. 30) or
      ``"normal"``.
    extrapolate: keyword-only, optional int or ints >= 1 (above the samples' n
      too): adds a row ``"pass@K (Beta-binomial)"`` (metric
      ``"pass@k (Beta-binomial)"``) at each, the pass@k of a Beta-binomial model
      fitted to every problem's correct samples, with its delta-method interval
      (:func:`maxk.pass_at_k_beta_binomial`; needs the correct column).

  Returns:
    :class:`Evaluation`; ``evaluation.to_markdown()`` is the table
    ``python -m maxk.evaluate`` prints.

  Raises:
    ValueError: for malformed records (a missing column, a value of the wrong type
      or of another type than the column's others, ``correct`` outside 0/1, a
      non-finite reward or score, a repeated sample id, an answer both correct and
      incorrect), naming the record and the column; for bad options, naming them.

  References: Miller, arXiv 2411.00640 (error bars over questions); Chen et al.,
  arXiv 2107.03374 (pass@k); Hariri et al., arXiv 2510.04265 (Bayes@N).
  """
  columns = dict(
    problem=problem, correct=correct, reward=reward, answer=answer, score=score, sample_id=sample_id
  )
  return evaluate_sources(
    [records_lib.as_source(records)],
    columns=columns,
    k=k,
    metrics=metrics,
    tie=tie,
    taus=taus,
    pass_hat=pass_hat,
    confidence=confidence,
    distribution=distribution,
    extrapolate=extrapolate,
  )


def evaluate_sources(
  sources: Sequence[records_lib.Source],
  *,
  columns: Mapping[str, str | None],
  k: int | Sequence[int] | None = None,
  metrics: Sequence[str] | None = None,
  tie: str = "uniform",
  taus: Sequence[float] = (0.5, 0.75),
  pass_hat: str = "unbiased",
  confidence: float = 0.95,
  distribution: str = "t",
  extrapolate: int | Sequence[int] | None = None,
) -> Evaluation:
  """:func:`evaluate_records` on records already read (the command line's entry)."""
  checks.check_option(tie, "tie", majority_vote.TIE_RULES)
  checks.check_option(pass_hat, "pass_hat", curves.PASS_HAT_ESTIMATORS)
  checks.check_option(distribution, "distribution", uncertainty.DISTRIBUTIONS)
  confidence = uncertainty._check_confidence(confidence)
  if isinstance(taus, (str, bytes)) or not isinstance(taus, Sequence):
    raise ValueError(f"taus={taus!r} must be a sequence of numbers in [0, 1].")
  tau_values = tuple(dict.fromkeys(curves._check_tau(t)[0] for t in taus))
  if metrics is not None:
    if isinstance(metrics, str):
      metrics = [metrics]
    for name in metrics:
      checks.check_option(name, "metrics", METRICS)
  groups = records_lib.group_records(
    sources, columns, check_answers=metrics is None or "maj@k" in metrics
  )
  chosen = _choose_metrics(metrics, groups.columns)
  if not tau_values and "g_pass@k" in chosen:
    chosen.remove("g_pass@k")
  ks = _check_ks(k, groups.sizes)
  rows = []
  for metric in chosen:
    for tau in tau_values if metric == "g_pass@k" else (None,):
      for kk in ks:
        rows.append(_row(groups, metric, kk, tau, tie, pass_hat, confidence, distribution))
  if extrapolate is not None:
    extra = beta_binomial.evaluation_rows(groups, extrapolate, confidence)
    at = max((i + 1 for i, row in enumerate(rows) if row.metric == "pass@k"), default=0)
    rows[at:at] = extra  # after the pass@k rows
  return Evaluation(
    rows=tuple(rows),
    problems=tuple(str(p) for p in groups.problems),
    sizes=tuple(int(s) for s in groups.sizes),
    ks=ks,
    columns=dict(groups.columns),
    confidence=confidence,
    distribution=distribution,
    sources=tuple(dict.fromkeys(s.name for s in sources)),
    tool_scores=tuple(score for s in sources for score in s.tool_scores),
  )


def _choose_metrics(metrics: Sequence[str] | None, columns: Mapping[str, str]) -> list[str]:
  def missing(metric: str) -> list[str]:
    need = list(_NEEDS[metric])
    if metric == "selected@k" and "reward" not in columns and "correct" not in columns:
      need.append("reward")
    return [role for role in need if role not in columns]

  if metrics is None:
    chosen = [m for m in METRICS if not missing(m)]
    if not chosen:
      raise ValueError(
        "records: no metric can be computed: the records have none of the columns"
        f" {records_lib.DEFAULT_COLUMNS['correct']!r} or {records_lib.DEFAULT_COLUMNS['reward']!r}"
        " (name the columns with correct=, reward=, ...)."
      )
    return chosen
  for metric in metrics:
    if missing(metric):
      raise ValueError(
        f"metrics: {metric} needs the {' and '.join(missing(metric))} column(s), which the"
        " records do not have (or name them: correct=, reward=, answer=, score=)."
      )
  return [m for m in METRICS if m in metrics]


def _check_ks(k: int | Sequence[int] | None, sizes: np.ndarray) -> tuple[int, ...]:
  n_max = int(sizes.max())
  if k is None:
    return default_ks(int(sizes.min()))
  values = [k] if not isinstance(k, Sequence) else list(k)
  if not values:
    raise ValueError("k: no value given.")
  out = []
  for value in values:
    value = checks.check_int(value, "k", low=1)
    if value > n_max:
      raise ValueError(
        f"k={value} exceeds the number of samples of every problem (at most {n_max})."
      )
    out.append(value)
  return tuple(sorted(set(out)))


def _label(metric: str, k: int, tau: float | None, pass_hat: str) -> str:
  if metric == "g_pass@k":
    return f"G-Pass@{k} τ={tau:g}"
  if metric == "mg_pass@k":
    return f"mG-Pass@{k}"
  if metric == "pass^k":
    return f"pass^{k}" + (" (plug-in)" if pass_hat == "plug_in" else "")
  return metric.replace("@k", f"@{k}")


def _subset(groups: records_lib.Groups, keep: np.ndarray) -> tuple[dict[str, Any], Any]:
  """The arrays of the kept problems, and ``where`` (None when all have one size m:
  then the arrays are sliced to m and the dense functions run)."""
  sizes = groups.sizes[keep]
  width = int(sizes.max())
  dense = bool(np.all(sizes == width))
  arrays = {}
  for role in ("correct", "reward", "answer", "score"):
    value = getattr(groups, role)
    if value is not None:
      arrays[role] = value[keep][:, :width]
  return arrays, None if dense else groups.valid[keep][:, :width]


def _row(
  groups: records_lib.Groups,
  metric: str,
  k: int,
  tau: float | None,
  tie: str,
  pass_hat: str,
  confidence: float,
  distribution: str,
) -> MetricRow:
  keep = groups.sizes >= k
  left_out = tuple(str(p) for p, kept in zip(groups.problems, keep) if not kept)
  arrays, where = _subset(groups, keep)
  sizes = groups.sizes[keep]
  correct: Any = arrays.get("correct")  # [P, m] bool, where the records have it
  pairs = bool(np.all(sizes >= 2 * k))  # the variance estimates need two disjoint k-subsets
  variances: Any = None
  bayes = None
  if metric == "pass@k":
    estimates = metrics_lib.pass_at_k(correct, k, where=where)
    if pairs:
      variances = estimate_variance.pass_at_k_variance(correct, k, where=where)
    bayes = uncertainty.bayes_at_n(correct, k, confidence=confidence, where=where)
  elif metric == "pass^k":
    estimates = curves.pass_hat_k(correct, k, estimator=pass_hat, where=where)
    if pairs and pass_hat == "unbiased":  # C(c,k)/C(n,k) = 1 − pass@k of the flipped samples
      variances = estimate_variance.pass_at_k_variance(~correct, k, where=where)
  elif metric in ("g_pass@k", "mg_pass@k"):
    if metric == "g_pass@k":
      assert tau is not None
      estimates = curves.g_pass_at_k(correct, k, tau, where=where)
      threshold = curves._threshold(float(tau), k, np.dtype(np.float64))
      kernel = tuple(float(i >= threshold) for i in range(k + 1))
    else:
      estimates = curves.mg_pass_at_k(correct, k, where=where)
      kernel = tuple(2.0 / k * max(i - (k + 1) // 2, 0) for i in range(k + 1))
    if pairs:
      counts = np.sum(correct, axis=1)  # the padding is False
      variances = count_kernel_variance(sizes, counts, k, kernel)
  elif metric == "maj@k":
    estimates = majority_vote.maj_at_k(arrays["answer"], correct, k, tie=tie, where=where)
  elif metric == "max@k":
    estimates = metrics_lib.max_at_k(arrays["reward"], k, where=where)
    if pairs:
      variances = estimate_variance.max_at_k_variance(arrays["reward"], k, where=where)
  else:
    truth = arrays["reward"] if "reward" in arrays else correct
    estimates = selectors.selected_at_k(arrays["score"], truth, k, where=where)
  mean, stderr, lo, hi, within, between = (
    _float(x) for x in summary(estimates, variances, confidence, distribution)
  )
  if metric not in ("max@k", "selected@k") or (metric == "selected@k" and "reward" not in arrays):
    lo, hi = max(lo, 0.0), min(hi, 1.0)  # a mean of probabilities lies in [0, 1]
  return MetricRow(
    metric=metric,
    k=k,
    tau=tau,
    label=_label(metric, k, tau, pass_hat),
    problems=int(keep.sum()),
    mean=mean,
    stderr=stderr,
    lo=lo,
    hi=hi,
    within=None if variances is None else within,
    between=None if variances is None else between,
    bayes_mean=None if bayes is None else _float(bayes.mean),
    bayes_lo=None if bayes is None else _float(bayes.lo),
    bayes_hi=None if bayes is None else _float(bayes.hi),
    left_out=left_out,
  )


def _float(x: Any) -> float:
  """The shortest decimal that rounds to ``x`` in its own dtype (float32 by default), so
  0.225 in float32 reads 0.225, not 0.22500000894069672."""
  return float(str(np.asarray(x)[()]))


def summary(
  estimates: Any, variances: Any, confidence: float = 0.95, distribution: str = "t"
) -> tuple[np.ndarray, ...]:
  """(mean, stderr, lo, hi, within, between) over the last (problem) axis.

  ``estimates`` ``[..., P]`` per-problem estimates, ``variances`` the same shape
  (unbiased per-problem variances) or None (within and between are then NaN).  With
  P = 1 only the mean is defined (the rest NaN).  The same computation
  :func:`evaluate_records` reports, batched over leading axes.
  """
  x = jnp.asarray(estimates)
  nan = np.full(x.shape[:-1], np.nan)
  if x.shape[-1] < 2:
    return np.asarray(x[..., 0]), nan, nan, nan, nan, nan
  interval = uncertainty.mean_with_interval(x, confidence=confidence, distribution=distribution)
  within = between = nan
  if variances is not None:
    split = uncertainty.variance_split(x, variances)
    within, between = np.asarray(split.within), np.asarray(split.between)
  return (*(np.asarray(v) for v in interval), within, between)


@functools.lru_cache(maxsize=64)
def _count_kernel_table(m: int, k: int, kernel: tuple[float, ...]) -> np.ndarray:
  """v(c) for c = 0..m (module docstring), float64, for groups of m >= 2k samples."""
  f = np.asarray(kernel, np.float64)
  lf = curves._log_factorial(m)

  def pmf(size: int) -> np.ndarray:  # [size + 1, k + 1]: P(X = i) among size samples, c correct
    c, i = np.arange(size + 1)[:, None], np.arange(k + 1)[None, :]
    log = curves._log_binom(lf, c, i) + curves._log_binom(lf, size - c, k - i)
    with np.errstate(under="ignore"):
      return np.exp(log - curves._log_binom(lf, np.array(size), np.array(k))).astype(np.float64)

  first = pmf(m)
  estimate = first @ f  # U(m, c)
  rest = pmf(m - k) @ f  # U(m − k, c') for the second subset, c' = c − i correct left
  c, i = np.arange(m + 1)[:, None], np.arange(k + 1)[None, :]
  left = c - i
  inside = (left >= 0) & (left <= m - k)
  pair = np.where(inside, rest[np.clip(left, 0, m - k)], 0.0)
  return estimate**2 - (first * pair) @ f


def count_kernel_variance(
  sizes: np.ndarray, counts: np.ndarray, k: int, kernel: Sequence[float]
) -> np.ndarray:
  """Unbiased variance estimates of the U-statistics with kernel f(X), X the number
  of correct samples in a k-subset, for groups of ``sizes`` (each >= 2k) samples
  of which ``counts`` are correct; ``kernel[i]`` = f(i), i = 0..k.  Float64 ``[P]``."""
  sizes, counts = np.asarray(sizes, np.int64), np.asarray(counts, np.int64)
  if len(kernel) != k + 1 or np.any(sizes < 2 * k):
    raise ValueError(f"kernel needs k + 1 = {k + 1} values and every size >= 2k = {2 * k}.")
  kernel = tuple(float(v) for v in kernel)
  return np.array(
    [_count_kernel_table(int(m), k, kernel)[int(c)] for m, c in zip(sizes, counts)], np.float64
  )


# ----------------------------------------------------------------------------
# The Markdown table.
# ----------------------------------------------------------------------------


def _number(x: float | None) -> str:
  return "—" if x is None or not math.isfinite(x) else f"{x:.4f}"


def _interval(lo: float | None, hi: float | None) -> str:
  if lo is None or hi is None or not (math.isfinite(lo) and math.isfinite(hi)):
    return "—"
  return f"[{lo:.4f}, {hi:.4f}]"


def _share(row: MetricRow) -> str:
  total = row.stderr**2
  if row.within is None or not (math.isfinite(row.within) and total > 0):
    return "—"
  return f"{100 * row.within / total:.0f}%"


def _markdown(evaluation: Evaluation) -> str:
  sizes = evaluation.sizes
  lo, hi = min(sizes), max(sizes)
  each = f"{lo} samples each" if lo == hi else f"{lo}-{hi} samples per problem"
  level = f"{100 * evaluation.confidence:g}%"
  how = "Student t, P − 1 degrees of freedom" if evaluation.distribution == "t" else "normal"
  lines = [
    f"{len(sizes)} problems, {each} ({sum(sizes)} samples) from {', '.join(evaluation.sources)}.",
    "",
    f"mean ± SE over problems; the {level} interval ({how}) is for the mean over the"
    " population the problems come from. within: the share of SE² due to sampling within"
    " problems (more samples per problem shrink it, more problems shrink all of SE²)."
    f" Bayes@N: the {level} credible interval of the mean pass@k over these problems.",
    "",
    f"| metric | problems | mean | SE | {level} interval | within | Bayes@N {level} |",
    "|:--|--:|--:|--:|:--|--:|:--|",
  ]
  for row in evaluation.rows:
    lines.append(
      f"| {row.label} | {row.problems} | {_number(row.mean)} | {_number(row.stderr)} |"
      f" {_interval(row.lo, row.hi)} | {_share(row)} | {_interval(row.bayes_lo, row.bayes_hi)} |"
    )
  notes = []
  if any(row.within is None and row.metric != beta_binomial.METRIC for row in evaluation.rows):
    notes.append(
      "within —: no unbiased per-problem variance (maj@k, selected@k, plug-in pass^k),"
      " or a problem with fewer than 2k samples."
    )
  if any(row.bayes_mean is not None for row in evaluation.rows):
    notes.append(
      "Bayes@N's posterior (uniform prior) pulls each problem's rate towards 1/2 ((c + 1)/(n + 2)"
      " at k = 1), so with few samples its interval can lie away from the mean."
    )
  if any(row.metric == beta_binomial.METRIC for row in evaluation.rows):
    notes.append(beta_binomial.NOTE)
  size_of = dict(zip(evaluation.problems, sizes))
  for k in evaluation.ks:
    row = next(r for r in evaluation.rows if r.k == k)
    if row.left_out:
      named = ", ".join(f"{p} ({size_of[p]})" for p in row.left_out)
      notes.append(
        f"k = {k}: {len(row.left_out)} problem(s) with fewer than {k} samples left out: {named}."
      )
  if notes:
    lines += [""] + notes
  if evaluation.tool_scores:
    lines += ["", *_tool_lines(evaluation)]
  return "\n".join(lines)


def _tool_lines(evaluation: Evaluation) -> list[str]:
  """The tools' own numbers beside maxk's (mean ± SE), and what each tool computed."""
  lines = [
    "The tool's own number beside maxk's (mean ± SE):",
    "",
    "| metric | tool's number | from | maxk |",
    "|:--|--:|:--|--:|",
  ]
  for score in evaluation.tool_scores:
    label = score.metric.replace("@k", f"@{score.k}")
    row = next((r for r in evaluation.rows if r.metric == score.metric and r.k == score.k), None)
    ours = "— (not computed: add this k)" if row is None else _plus_minus(row.mean, row.stderr)
    lines.append(
      f"| {label} | {_plus_minus(score.value, score.stderr)} |"
      f" {score.tool}: {score.name} ({score.source}) | {ours} |"
    )
  lines.append("")
  lines += [score.note for score in evaluation.tool_scores]
  return lines


def _plus_minus(mean: float, stderr: float | None) -> str:
  if stderr is None or not math.isfinite(stderr):
    return _number(mean)
  return f"{_number(mean)} ± {_number(stderr)}"
