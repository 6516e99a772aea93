"""pass@k beyond the n samples: a Beta-binomial model of problem difficulty.

The unbiased pass@k estimators need k <= n samples per problem.  To go further, model
the problems' single-sample success rates as draws from one Beta distribution and each
problem's number c_i of correct samples among its n_i as binomial given its rate:

  p_i ~ Beta(a, b),   c_i | p_i ~ Binomial(n_i, p_i)          (the Beta-binomial model)

Then the population pass@k, the mean over problems of 1 − (1 − p)^k, is

  pass@k = 1 − E[(1 − p)^k] = 1 − B(a, b + k) / B(a, b)
         = 1 − Π_{j<k} (b + j)/(a + b + j)                     (any k >= 1),

and 1 − pass@k ≈ Γ(a + b)/Γ(b) · k^(−a) for large k: the failure rate falls as a power
of k whose exponent is the Beta's left-tail exponent a.  Schaeffer, Kazdan et al., "How
Do Large Language Monkeys Get Their Power (Laws)?" (arXiv 2502.17578, ICML 2025) show
that this is how aggregate power laws in k arise from per-problem exponential decay
(1 − p)^k, and forecast the scaling from a distribution fitted to the per-problem
success rates.  Here (a, b) are fitted by maximum likelihood from the counts themselves,
the Beta-binomial likelihood

  ℓ(a, b) = Σ_i log B(a + c_i, b + n_i − c_i) − log B(a, b)     (+ const)
          = Σ_i [Σ_{j<c_i} log(a + j) + Σ_{j<n_i−c_i} log(b + j) − Σ_{j<n_i} log(a + b + j)],

so problems with c = 0 or c = n need no special treatment, and ragged n_i are exact.

The interval (delta method).  Newton's method maximises ℓ over (logit μ, log s), with
μ = a/(a + b) and s = a + b; the inverse of the observed information −∇²ℓ at the
maximum is the covariance of the fit, and the delta method carries it to
η(k) = log(−log(1 − pass@k)) = log(−log B(a, b + k)/B(a, b)), whose interval
η ± z·se maps back to an interval for pass@k inside (0, 1).  It is an interval for the
population pass@k of the Beta model (the choice of problems and the sampling noise
both count), valid where the model holds.  In 2000 simulated benchmarks each
(tests/maxk/beta_binomial_test.py) the 95% interval covered the true pass@4n 94.9% of
the time with 100 problems x 16 samples from Beta(0.5, 2) and 94.1% with 60 x 8 from
Beta(0.3, 1); 94.4-95.6% in other settings tried (Beta(1, 4), Beta(2, 2), 30 problems,
k from n to 64n).

Boundaries.  If the counts spread no more than binomial counts with one rate would,
the likelihood grows without bound in s (every problem has the same rate); s is then
held at 1e8 (the binomial limit, pass@k = 1 − (1 − μ)^k) and the interval reflects μ's
uncertainty only.  Likewise s is held at 1e-6 when every problem is all correct or all
wrong (the Beta's mass at 0 and 1).  If every sample is correct, or every sample is
wrong, no finite maximum exists and the results are NaN.

The model ignores everything that distinguishes problems beyond their counts, and one
Beta may fit the bulk of the rates but not their tail near 0, which decides pass@k for
k far beyond n: check the fit (e.g. against the unbiased pass@k at k <= n) before
trusting it far beyond n.

This module runs on the host in float64 NumPy (the fit is an iterative optimisation;
nothing here is jitted).
"""

from __future__ import annotations

from collections.abc import Sequence
import dataclasses
import math
import statistics
from typing import TYPE_CHECKING

import jax.numpy as jnp
from jax.typing import ArrayLike
import numpy as np

from maxk._src import checks
from maxk._src import metrics
from maxk._src import records
from maxk._src import uncertainty

if TYPE_CHECKING:
  from maxk._src import evaluate as evaluate_lib

# log s is kept in [_LOG_S_MIN, _LOG_S_MAX] (see "Boundaries" in the module docstring).
_LOG_S_MIN = math.log(1e-6)
_LOG_S_MAX = math.log(1e8)
_LOGIT_MAX = 40.0
_MAX_ITERATIONS = 200
_CHUNK = 1 << 16


@dataclasses.dataclass(frozen=True)
class _Counts:
  """The problems of a batch of [P, n] slices, by size: ``groups[m]`` is ``[..., m + 1]``,
  the number of problems of each slice with m valid samples of which c are correct."""

  batch: tuple[int, ...]
  groups: dict[int, np.ndarray]
  correct: np.ndarray  # [...] correct samples in all
  total: np.ndarray  # [...] valid samples in all
  nan: np.ndarray  # [...] a NaN among the slice's valid samples


def _counts(correct: ArrayLike, where: ArrayLike | None) -> _Counts:
  try:
    shape = jnp.shape(correct)
  except (TypeError, ValueError) as e:
    raise ValueError(f"correct must be a bool or 0/1 numeric array: {e}") from e
  if len(shape) < 2:
    raise ValueError(
      f"correct must be [..., P, n] (problems, then their samples); got shape {tuple(shape)}."
    )
  values, _, _, valid = metrics.validate_correct(correct, 1, where)
  v = np.asarray(values, np.float64)
  ok = np.ones(v.shape, bool) if valid is None else np.asarray(valid)
  v = np.where(ok, v, 0.0)
  c = np.sum(v, axis=-1)  # [..., P], NaN where a valid sample is NaN
  m = np.sum(ok, axis=-1)
  nan = np.any(np.isnan(c), axis=-1)
  c = np.where(np.isnan(c), 0.0, np.round(c)).astype(np.int64)
  batch = v.shape[:-2]
  fits = math.prod(batch)
  slice_of = np.broadcast_to(np.arange(fits).reshape(*batch, 1), m.shape)  # each problem's fit
  groups = {}
  for size in np.unique(m[m > 0]):  # O(P + fits · size) each
    size = int(size)
    chosen = m == size
    index = slice_of[chosen] * (size + 1) + c[chosen]
    hist = np.bincount(index, minlength=fits * (size + 1))
    groups[size] = hist.reshape(*batch, size + 1).astype(np.float64)
  return _Counts(
    batch=batch,
    groups=groups,
    correct=np.sum(c, axis=-1).astype(np.float64),
    total=np.sum(m, axis=-1).astype(np.float64),
    nan=nan,
  )


def _ab_derivatives(
  counts: _Counts, a: np.ndarray, b: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
  """ℓ, its gradient [..., 2] and Hessian [..., 2, 2] in (a, b), exact finite sums."""
  loglik = np.zeros(counts.batch)
  grad = np.zeros((*counts.batch, 2))
  hess = np.zeros((*counts.batch, 2, 2))
  for size, hist in counts.groups.items():
    j = np.arange(size)
    problems = np.sum(hist, axis=-1)
    sums = []
    for x in (a, b):
      t = x[..., None] + j
      sums.append(
        [
          np.concatenate([np.zeros((*x.shape, 1)), np.cumsum(f, axis=-1)], axis=-1)
          for f in (np.log(t), 1.0 / t, 1.0 / t**2)
        ]
      )
    t = (a + b)[..., None] + j
    s0, s1, s2 = np.sum(np.log(t), -1), np.sum(1.0 / t, -1), np.sum(1.0 / t**2, -1)
    (a0, a1, a2), (b0, b1, b2) = sums
    rev = slice(None, None, -1)  # b's sums at n − c
    loglik += np.sum(hist * (a0 + b0[..., rev]), -1) - problems * s0
    grad[..., 0] += np.sum(hist * a1, -1) - problems * s1
    grad[..., 1] += np.sum(hist * b1[..., rev], -1) - problems * s1
    hess[..., 0, 0] += -np.sum(hist * a2, -1) + problems * s2
    hess[..., 1, 1] += -np.sum(hist * b2[..., rev], -1) + problems * s2
    hess[..., 0, 1] += problems * s2
  hess[..., 1, 0] = hess[..., 0, 1]
  return loglik, grad, hess


def _params(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
  """(a, b, μ) from x = logit μ and y = log s."""
  mu = 1.0 / (1.0 + np.exp(-x))
  s = np.exp(y)
  return mu * s, (1.0 - mu) * s, mu


def _jacobian(a: np.ndarray, b: np.ndarray, mu: np.ndarray) -> np.ndarray:
  """∂(a, b)/∂(x, y), [..., 2, 2] (rows a, b)."""
  return np.stack([np.stack([a * (1 - mu), a], -1), np.stack([-b * mu, b], -1)], -2)


def _xy_derivatives(
  counts: _Counts, x: np.ndarray, y: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
  """ℓ, its gradient and Hessian in (x, y) = (logit μ, log s)."""
  a, b, mu = _params(x, y)
  loglik, g, h = _ab_derivatives(counts, a, b)
  jac = _jacobian(a, b, mu)
  grad = np.einsum("...ij,...i->...j", jac, g)
  hess = np.einsum("...ij,...ik,...kl->...jl", jac, h, jac)
  # The second derivatives of the map (a, b) = (μ s, (1 − μ) s).
  ga, gb = g[..., 0], g[..., 1]
  hess[..., 0, 0] += ga * a * (1 - mu) * (1 - 2 * mu) - gb * b * mu * (1 - 2 * mu)
  hess[..., 0, 1] += ga * a * (1 - mu) - gb * b * mu
  hess[..., 1, 0] = hess[..., 0, 1]
  hess[..., 1, 1] += ga * a + gb * b
  return loglik, grad, hess


@dataclasses.dataclass(frozen=True)
class _Fit:
  a: np.ndarray  # [...] NaN where no finite maximum exists (or a NaN sample)
  b: np.ndarray
  mu: np.ndarray
  cov: np.ndarray  # [..., 2, 2] covariance of (logit μ, log s); row/column of log s 0 at a bound
  info: np.ndarray  # [..., 2, 2] observed information −∇²ℓ at the fit


def _fit(counts: _Counts) -> _Fit:
  """Maximum likelihood over (logit μ, log s) by damped Newton steps, batched."""
  batch = counts.batch
  defined = ~counts.nan & (counts.correct > 0) & (counts.correct < counts.total)
  total = np.where(defined, counts.total, 2.0)
  mu0 = np.where(defined, counts.correct, 1.0) / total
  x = np.log(mu0 / (1 - mu0))
  y = np.full(batch, math.log(2.0))  # s = 2, a moderate spread
  loglik, grad, hess = _xy_derivatives(counts, x, y)
  active = defined.copy()
  for _ in range(_MAX_ITERATIONS):
    if not np.any(active):
      break
    # Newton's direction where −∇²ℓ is positive definite, else a damped one.
    neg = -hess
    det = neg[..., 0, 0] * neg[..., 1, 1] - neg[..., 0, 1] ** 2
    convex = (neg[..., 0, 0] > 0) & (det > 0)
    damp = np.where(convex, 0.0, np.abs(neg[..., 0, 0]) + np.abs(neg[..., 1, 1]) + 1.0)
    m00, m11, m01 = neg[..., 0, 0] + damp, neg[..., 1, 1] + damp, neg[..., 0, 1]
    det = m00 * m11 - m01**2
    dx = (m11 * grad[..., 0] - m01 * grad[..., 1]) / det
    dy = (m00 * grad[..., 1] - m01 * grad[..., 0]) / det
    # At a bound of log s with the gradient pointing out, move μ alone.
    pinned = ((y >= _LOG_S_MAX) & (grad[..., 1] > 0)) | ((y <= _LOG_S_MIN) & (grad[..., 1] < 0))
    dx = np.where(pinned, grad[..., 0] / np.maximum(neg[..., 0, 0], 1e-300), dx)
    dy = np.where(pinned, 0.0, dy)
    scale = np.maximum(1.0, np.maximum(np.abs(dx), np.abs(dy)) / 2.0)  # steps of at most 2
    dx, dy = dx / scale, dy / scale
    step = np.where(active, 1.0, 0.0)
    accepted = ~active
    new_x, new_y = x, y
    new = [loglik, grad, hess]
    for _ in range(40):
      tx = np.clip(x + step * dx, -_LOGIT_MAX, _LOGIT_MAX)
      ty = np.clip(y + step * dy, _LOG_S_MIN, _LOG_S_MAX)
      trial = _xy_derivatives(counts, tx, ty)
      good = ~accepted & (trial[0] >= loglik - 1e-12 * np.abs(loglik))
      new_x, new_y = np.where(good, tx, new_x), np.where(good, ty, new_y)
      new = [np.where(_expand(good, t), t, n) for t, n in zip(trial, new)]
      accepted |= good
      if np.all(accepted):
        break
      step = np.where(accepted, step, step / 2)
    moved = np.maximum(np.abs(new_x - x), np.abs(new_y - y))
    x, y = new_x, new_y
    loglik, grad, hess = new
    active &= accepted & (moved > 1e-10)
  a, b, mu = _params(x, y)
  info = -hess
  at_bound = (y >= _LOG_S_MAX - 1e-9) | (y <= _LOG_S_MIN + 1e-9)
  det = info[..., 0, 0] * info[..., 1, 1] - info[..., 0, 1] ** 2
  with np.errstate(divide="ignore", invalid="ignore"):
    cov = np.stack(
      [
        np.stack([info[..., 1, 1] / det, -info[..., 0, 1] / det], -1),
        np.stack([-info[..., 0, 1] / det, info[..., 0, 0] / det], -1),
      ],
      -2,
    )
    only_mu = np.zeros_like(cov)
    only_mu[..., 0, 0] = 1.0 / info[..., 0, 0]
  cov = np.where(at_bound[..., None, None], only_mu, cov)
  nan = np.where(defined, 0.0, np.nan)
  return _Fit(a=a + nan, b=b + nan, mu=mu + nan, cov=cov + nan[..., None, None], info=info)


def _expand(mask: np.ndarray, like: np.ndarray) -> np.ndarray:
  return mask.reshape(mask.shape + (1,) * (like.ndim - mask.ndim))


def _log_failure(a: np.ndarray, b: np.ndarray, ks: Sequence[int]) -> tuple[np.ndarray, ...]:
  """L(k) = log B(a, b + k)/B(a, b) = Σ_{j<k} log1p(−a/(a + b + j)) and its derivatives
  in a and b, ``[..., len(ks)]`` each; exact sums, O(max k) per fit, in chunks."""
  kmax = max(ks)
  order = np.asarray(ks)
  out = [np.zeros((*a.shape, len(ks))) for _ in range(3)]
  run = [np.zeros(a.shape) for _ in range(3)]
  for start in range(0, kmax, _CHUNK):
    j = np.arange(start, min(start + _CHUNK, kmax))
    ab = (a + b)[..., None] + j
    bj = b[..., None] + j
    terms = (np.log1p(-a[..., None] / ab), -1.0 / ab, 1.0 / bj - 1.0 / ab)
    cums = [r[..., None] + np.cumsum(t, axis=-1) for r, t in zip(run, terms)]
    inside = (order > start) & (order <= j[-1] + 1)
    for o, cum in zip(out, cums):
      o[..., inside] = cum[..., order[inside] - start - 1]
    run = [cum[..., -1] for cum in cums]
  return tuple(out)


def _check_ks(ks: int | Sequence[int]) -> tuple[tuple[int, ...], bool]:
  if isinstance(ks, (str, bytes)):
    raise ValueError(f"ks={ks!r} must be an int >= 1 or a sequence of them.")
  if isinstance(ks, Sequence) or isinstance(ks, np.ndarray):
    values = tuple(checks.check_int(k, "ks", low=1, high=checks.MAX_SIZE) for k in list(ks))
    if not values:
      raise ValueError("ks: no value given.")
    return values, True
  return (checks.check_int(ks, "ks", low=1, high=checks.MAX_SIZE),), False


def fit_beta_binomial(
  correct: ArrayLike, *, where: ArrayLike | None = None
) -> tuple[np.ndarray, np.ndarray]:
  """Maximum-likelihood Beta(a, b) of the problems' success rates from their 0/1 samples.

  The Beta-binomial model p_i ~ Beta(a, b), c_i | p_i ~ Binomial(n_i, p_i), fitted by
  maximising (Newton's method over logit(a/(a + b)) and log(a + b), in float64)

    ℓ(a, b) = Σ_i log B(a + c_i, b + n_i − c_i) − log B(a, b),

  with c_i the correct samples among problem i's n_i (module docstring of
  ``maxk/_src/beta_binomial.py``; Schaeffer, Kazdan et al., arXiv 2502.17578).  Runs
  on the host, not under ``jit``; cost O(iterations · Σ_sizes n) per fit.

  Args:
    correct: ``[..., P, n]`` bool or {0, 1}: P problems with n samples each; leading
      axes are separate fits.
    where: keyword-only, optional bool, broadcastable to ``correct``: the valid samples
      (ragged problems; see the README's "Ragged groups").  Each problem counts with
      its m valid samples (a problem with none is left out), so the fit equals that
      of the compacted problems.

  Returns:
    ``(a, b)``, float64 NumPy arrays of shape ``[...]``.  a + b is held at 1e8 where the
    counts spread no more than binomial ones (one rate for all problems) and at 1e-6
    where every problem is all correct or all wrong.  NaN for a fit whose valid
    samples are all correct or all wrong (no finite maximum), have none, or hold a NaN.

  Raises:
    ValueError: if ``correct`` has fewer than 2 axes or values outside {0, 1}, or
      ``where`` is not a bool array broadcastable to it.
  """
  fit = _fit(_counts(correct, where))
  return fit.a, fit.b


def pass_at_k_beta_binomial(
  correct: ArrayLike,
  ks: int | Sequence[int],
  *,
  where: ArrayLike | None = None,
  confidence: float = 0.95,
) -> uncertainty.Interval:
  """pass@k at any k, beyond the n samples too, from a fitted Beta-binomial model.

  With (a, b) from :func:`fit_beta_binomial` (problems' success rates p ~ Beta(a, b)),

    pass@k = 1 − E[(1 − p)^k] = 1 − B(a, b + k)/B(a, b) = 1 − Π_{j<k} (b + j)/(a + b + j),

  the population pass@k of the model (Schaeffer, Kazdan et al., "How Do Large Language
  Monkeys Get Their Power (Laws)?", arXiv 2502.17578: 1 − pass@k ~ k^(−a)).  The
  interval is the delta method's on η = log(−log(1 − pass@k)) from the observed
  information of the fit, mapped back into (0, 1); it covers the choice of problems
  and the sampling noise, and holds where the model does (about 95% coverage of the
  true pass@64 from 100 problems x 16 samples in simulation).  The model ignores what
  distinguishes problems beyond their counts, and the Beta's tail near p = 0 decides
  pass@k far beyond n: compare it with :func:`maxk.pass_at_k` at k <= n before
  trusting it further.  Host-side float64; O(max k) per fit for the products.

  Args:
    correct: ``[..., P, n]`` bool or {0, 1}; leading axes are separate fits.
    ks: an int >= 1, or a sequence of them (any size: k > n is the point).
    where: keyword-only, optional bool, broadcastable to ``correct``: the valid
      samples, as in :func:`fit_beta_binomial`.
    confidence: keyword-only float in (0, 1), the interval's level (normal quantile).

  Returns:
    :class:`maxk.Interval` of ``mean`` (the model's pass@k), ``stderr`` (its delta-method
    standard error) and ``lo``, ``hi``: jax arrays ``[..., len(ks)]`` (``[...]`` for an
    int ``ks``) in the default float dtype.  Where a + b sits at a bound (see
    :func:`fit_beta_binomial`) the interval reflects the uncertainty of the mean rate
    a/(a + b) only.  NaN where the fit is (every valid sample correct, or every one
    wrong, or a NaN among them).

  Raises:
    ValueError: for a bad ``correct``, ``where``, ``ks`` or ``confidence``, naming it.
  """
  confidence = uncertainty._check_confidence(confidence)
  values, many = _check_ks(ks)
  fit = _fit(_counts(correct, where))
  log_fail, d_a, d_b = _log_failure(fit.a, fit.b, values)
  # ∂L/∂(x, y) through (a, b) = (μ s, (1 − μ) s).
  jac = _jacobian(fit.a, fit.b, fit.mu)
  d = np.stack([d_a, d_b], -1)  # [..., K, 2] in (a, b)
  d_xy = np.einsum("...kj,...jl->...kl", d, jac)
  var = np.einsum("...ki,...ij,...kj->...k", d_xy, fit.cov, d_xy)
  se_log = np.sqrt(np.maximum(var, 0.0))
  z = statistics.NormalDist().inv_cdf(0.5 + confidence / 2)
  with np.errstate(divide="ignore", invalid="ignore"):
    eta = np.log(-log_fail)
    se_eta = se_log / -log_fail
  mean = -np.expm1(log_fail)
  stderr = np.exp(log_fail) * se_log
  lo = -np.expm1(-np.exp(eta - z * se_eta))
  hi = -np.expm1(-np.exp(eta + z * se_eta))
  out = [jnp.asarray(v if many else v[..., 0]) for v in (mean, stderr, lo, hi)]
  return uncertainty.Interval(*out)


# ----------------------------------------------------------------------------
# The rows of maxk.evaluate_records(..., extrapolate=ks) and `maxk.evaluate --extrapolate=`.
# ----------------------------------------------------------------------------

METRIC = "pass@k (Beta-binomial)"
NOTE = (
  "pass@k (Beta-binomial): the pass@k of a Beta-binomial model fitted to the problems'"
  " correct counts (their success rates drawn from one Beta distribution; problem features"
  " ignored), 1 − B(a, b + k)/B(a, b), with a delta-method interval; compare it with the"
  " unbiased pass@k at k <= n before trusting it far beyond n."
)


def evaluation_rows(
  groups: records.Groups, ks: int | Sequence[int], confidence: float
) -> list[evaluate_lib.MetricRow]:
  """The :class:`maxk.MetricRow` of the model's pass@k at each of ``ks`` (every problem)."""
  from maxk._src import evaluate  # pylint: disable=g-import-not-at-top (evaluate imports this)

  if groups.correct is None:
    raise ValueError(
      "extrapolate: the Beta-binomial pass@k needs the correct column, which the records"
      " do not have (or name it: correct=)."
    )
  values, _ = _check_ks(ks)
  values = tuple(sorted(set(values)))
  interval = pass_at_k_beta_binomial(
    groups.correct, values, where=groups.valid, confidence=confidence
  )
  rows = []
  for i, k in enumerate(values):
    mean, stderr, lo, hi = (evaluate._float(np.asarray(v)[i]) for v in interval)
    rows.append(
      evaluate.MetricRow(
        metric=METRIC,
        k=k,
        tau=None,
        label=f"pass@{k} (Beta-binomial)",
        problems=len(groups.problems),
        mean=mean,
        stderr=stderr,
        lo=lo,
        hi=hi,
        within=None,
        between=None,
        bayes_mean=None,
        bayes_lo=None,
        bayes_hi=None,
        left_out=(),
      )
    )
  return rows
