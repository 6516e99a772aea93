"""Uncertainty of benchmark scores across prompts: standard errors and intervals.

A benchmark score is the mean over P prompts of a per-prompt estimate x̂_i (e.g.
:func:`maxk.pass_at_k` or :func:`maxk.max_at_k` from n samples of prompt i).  The
prompts are treated as an i.i.d. draw from a population, x̂_i = θ_i + e_i with
E[e_i | θ_i] = 0 and Var(e_i | θ_i) = σ_i² (the estimator's sampling variance,
estimated without bias by :func:`maxk.max_at_k_variance`).  Then

  Var(x̄) = (Var(θ) + E[σ²]) / P,

and the sample variance s² of the x̂_i is unbiased for Var(θ) + E[σ²], so
SE = s / √P (Miller, "Adding Error Bars to Evals", arXiv 2411.00640: the CLT
standard error; its decomposition of the score variance by the law of total
variance, in the section on resampling answers, splits Var(x̄) into
between-prompt Var(θ)/P and within-prompt E[σ²]/P parts).  Two methods on the
same prompts are compared through the per-prompt differences, whose standard
error removes the shared prompt difficulty (Miller, section on paired differences).

For {0, 1} outcomes, :func:`pass_at_k_posterior` and :func:`bayes_at_n` give the
Beta-posterior mean and credible interval of pass@k (Hariri et al., "Don't Pass@k:
A Bayesian Framework for Large Language Model Evaluation", arXiv 2510.04265, the
Bayes@N posterior mean and variance with a uniform Beta/Dirichlet prior, averaged
over questions).
"""

from __future__ import annotations

import functools
import math
import numbers
import statistics
from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax.scipy import special
from jax.typing import ArrayLike
import numpy as np

from maxk._src import checks
from maxk._src import metrics

DISTRIBUTIONS = ("normal", "t")


class Interval(NamedTuple):
  """A point estimate with its standard error and a two-sided interval (arrays)."""

  mean: jax.Array
  stderr: jax.Array
  lo: jax.Array
  hi: jax.Array


class VarianceSplit(NamedTuple):
  """The variance of a benchmark mean split into between- and within-prompt parts.

  ``total = between + within``; each is a variance of the mean over prompts (already
  divided by P).
  """

  mean: jax.Array
  total: jax.Array
  within: jax.Array
  between: jax.Array


def _check_confidence(confidence: object) -> float:
  if isinstance(confidence, (bool, np.bool_)) or not isinstance(confidence, numbers.Real):
    raise ValueError(f"confidence={confidence!r} must be a float in (0, 1).")
  value = float(confidence)
  if not 0.0 < value < 1.0:
    raise ValueError(f"confidence={value} must satisfy 0 < confidence < 1.")
  return value


def _prompts_last(x: ArrayLike, name: str, axis: int) -> jax.Array:
  arr = checks.as_float_array(x, name)
  if not isinstance(axis, numbers.Integral) or not -arr.ndim <= axis < arr.ndim:
    raise ValueError(f"axis={axis!r} must be an int in [-{arr.ndim}, {arr.ndim}) for {name}.")
  arr = jnp.moveaxis(arr, int(axis), -1)
  if arr.shape[-1] < 2:
    raise ValueError(
      f"{name} needs P >= 2 prompts along axis {axis} for a standard error; got P={arr.shape[-1]}."
    )
  return arr


@functools.lru_cache(maxsize=256)
def _critical_value(confidence: float, distribution: str, dof: int) -> float:
  """Two-sided critical value: the (1+confidence)/2 quantile of N(0,1) or Student t(dof)."""
  checks.check_option(distribution, "distribution", DISTRIBUTIONS)
  if distribution == "normal":
    return statistics.NormalDist().inv_cdf(0.5 + confidence / 2)
  # |T| <= t  <=>  dof / (dof + T²) >= x, with dof/(dof+T²) ~ Beta(dof/2, 1/2).
  with jax.ensure_compile_time_eval():
    x = float(beta_ppf(1.0 - confidence, dof / 2.0, 0.5))
  return math.sqrt(dof * (1.0 / x - 1.0))


def _interval(mean: jax.Array, stderr: jax.Array, crit: float) -> Interval:
  return Interval(mean, stderr, mean - crit * stderr, mean + crit * stderr)


def _mean_and_variance_of_mean(x: jax.Array) -> tuple[jax.Array, jax.Array]:
  """(mean, s²/P) over the last axis, with s² the unbiased sample variance."""
  p = x.shape[-1]
  mean = jnp.mean(x, axis=-1)
  var = jnp.sum(jnp.square(x - mean[..., None]), axis=-1) / (p - 1)
  return mean, var / p


def mean_with_interval(
  estimates: ArrayLike, *, confidence: float = 0.95, axis: int = -1, distribution: str = "normal"
) -> Interval:
  """Benchmark mean over prompts with its standard error and a confidence interval.

  mean = (1/P) Σ_i x̂_i, stderr = s/√P with s² = Σ_i (x̂_i − mean)²/(P − 1), and the
  interval mean ± z·stderr with z the (1+confidence)/2 quantile of N(0, 1) (or of
  Student's t with P − 1 degrees of freedom).  The standard error accounts for both
  the choice of prompts and the sampling noise of each estimate.  Cost O(P).

  Args:
    estimates: ``[..., P, ...]`` per-prompt estimates, prompts along ``axis``.
    confidence: keyword-only, in (0, 1).
    axis: keyword-only, the prompt axis.
    distribution: keyword-only, ``"normal"`` (CLT) or ``"t"``.

  Returns:
    :class:`Interval` of arrays with the prompt axis removed.  A NaN prompt makes its
    row NaN only.

  Raises:
    ValueError: for ``confidence`` outside (0, 1), a bad ``axis`` or
      ``distribution``, or fewer than 2 prompts.

  References: Miller, "Adding Error Bars to Evals", arXiv 2411.00640 (CLT standard
  error of the mean over questions).
  """
  confidence = _check_confidence(confidence)
  x = _prompts_last(estimates, "estimates", axis)
  crit = _critical_value(confidence, distribution, x.shape[-1] - 1)
  mean, var = _mean_and_variance_of_mean(x)
  return _interval(mean, jnp.sqrt(var), crit)


def variance_split(estimates: ArrayLike, variances: ArrayLike, *, axis: int = -1) -> VarianceSplit:
  """Splits the variance of the benchmark mean into between- and within-prompt parts.

  With per-prompt estimates x̂_i and unbiased estimates v_i of their sampling
  variances σ_i² (e.g. :func:`maxk.max_at_k_variance`):

    total   = s²/P                  unbiased for Var(x̄) = (Var(θ) + E[σ²])/P,
    within  = (1/P²) Σ_i v_i        unbiased for E[σ²]/P (the sampling noise; also
                                    the variance of x̄ for a fixed set of prompts),
    between = total − within        unbiased for Var(θ)/P (prompt difficulty).

  ``between`` is not clipped and can be negative when the prompts barely differ.
  More samples per prompt shrink only ``within``; more prompts shrink both.

  Args:
    estimates: ``[..., P, ...]`` per-prompt estimates, prompts along ``axis``.
    variances: same shape, per-prompt variance estimates.
    axis: keyword-only, the prompt axis.

  Returns:
    :class:`VarianceSplit` of arrays with the prompt axis removed.  A NaN estimate
    or variance makes all four outputs of its row NaN.

  Raises:
    ValueError: for mismatched shapes, a bad ``axis`` or fewer than 2 prompts.

  References: Miller, arXiv 2411.00640 (law of total variance over
  questions and resampled answers).
  """
  x = _prompts_last(estimates, "estimates", axis)
  v = _prompts_last(variances, "variances", axis)
  checks.check_same_shape(x, "estimates", v, "variances")
  mean, total = _mean_and_variance_of_mean(x)
  within = jnp.mean(v, axis=-1) / x.shape[-1]
  # A NaN in either input leaves the split undefined, not just the parts it enters.
  nan = jnp.isnan(mean) | jnp.isnan(within)
  return VarianceSplit(
    *(jnp.where(nan, jnp.nan, part) for part in (mean, total, within, total - within))
  )


def paired_difference(
  a: ArrayLike,
  b: ArrayLike,
  *,
  confidence: float = 0.95,
  axis: int = -1,
  distribution: str = "normal",
) -> Interval:
  """Mean difference of two methods on the same prompts, with its paired interval.

  d_i = a_i − b_i; mean = d̄, stderr = s_d/√P (s_d the sample std of the d_i), and
  the interval d̄ ± z·stderr.  Since Var(d̄) = (Var(a) + Var(b) − 2 Cov(a, b))/P,
  the pairing removes the shared prompt difficulty: the interval is narrower than
  the unpaired one whenever the two methods' per-prompt scores correlate
  positively.  Cost O(P).

  Args:
    a: ``[..., P, ...]`` per-prompt estimates of the first method.
    b: same shape, the second method on the same prompts, in the same order.
    confidence: keyword-only, in (0, 1).
    axis: keyword-only, the prompt axis.
    distribution: keyword-only, ``"normal"`` or ``"t"``.

  Returns:
    :class:`Interval` for mean(a − b), prompt axis removed.

  Raises:
    ValueError: for mismatched shapes, ``confidence`` outside (0, 1), a bad
      ``axis`` or fewer than 2 prompts.

  References: Miller, arXiv 2411.00640 (analysis of paired differences).
  """
  confidence = _check_confidence(confidence)
  a_arr = _prompts_last(a, "a", axis)
  b_arr = _prompts_last(b, "b", axis)
  checks.check_same_shape(a_arr, "a", b_arr, "b")
  crit = _critical_value(confidence, distribution, a_arr.shape[-1] - 1)
  mean, var = _mean_and_variance_of_mean(a_arr - b_arr)
  return _interval(mean, jnp.sqrt(var), crit)


def beta_ppf(q: ArrayLike, a: ArrayLike, b: ArrayLike, *, iterations: int = 48) -> jax.Array:
  """Quantile (inverse CDF) of the Beta(a, b) distribution, by bisection.

  Finds x in [0, 1] with I_x(a, b) = q, I the regularised incomplete beta function
  (:func:`jax.scipy.special.betainc`), by a fixed number of bisection steps on a
  monotone function, so it is jit- and vmap-friendly.  48 steps resolve x to 2^-48;
  the accuracy is then that of ``betainc`` in the dtype (about 1e-6 relative in
  float32 away from the extreme tails).  Cost O(iterations) per element.

  Args:
    q: probabilities in [0, 1]; broadcast with ``a`` and ``b``.
    a: shape parameters > 0.
    b: shape parameters > 0.
    iterations: keyword-only static int >= 1.

  Returns:
    The broadcast array of quantiles (NaN where an input is NaN).
  """
  iterations = checks.check_int(iterations, "iterations", low=1)
  q, a, b = jnp.broadcast_arrays(*(checks.as_float_array(x, "q", min_ndim=0) for x in (q, a, b)))
  dtype = jnp.result_type(q.dtype, a.dtype, b.dtype)
  return _beta_ppf(q.astype(dtype), a.astype(dtype), b.astype(dtype), iterations)


@functools.partial(jax.jit, static_argnums=3)
def _beta_ppf(q: jax.Array, a: jax.Array, b: jax.Array, iterations: int) -> jax.Array:
  def step(_: int, bounds: tuple[jax.Array, jax.Array]) -> tuple[jax.Array, jax.Array]:
    lo, hi = bounds
    mid = 0.5 * (lo + hi)
    below = special.betainc(a, b, mid) < q
    return jnp.where(below, mid, lo), jnp.where(below, hi, mid)

  lo, hi = jax.lax.fori_loop(0, iterations, step, (jnp.zeros_like(q), jnp.ones_like(q)))
  x = 0.5 * (lo + hi)
  x = jnp.where(q <= 0, 0, jnp.where(q >= 1, 1, x))
  return jnp.where(jnp.isnan(q) | jnp.isnan(a) | jnp.isnan(b), jnp.nan, x)


def _check_prior(prior: object) -> tuple[float, float]:
  if (
    not isinstance(prior, (tuple, list))
    or len(prior) != 2
    or not all(isinstance(v, numbers.Real) and not isinstance(v, bool) for v in prior)
    or not all(math.isfinite(float(v)) and float(v) > 0 for v in prior)
  ):
    raise ValueError(f"prior={prior!r} must be a pair (alpha0, beta0) of finite floats > 0.")
  return float(prior[0]), float(prior[1])


@functools.lru_cache(maxsize=256)
def _posterior_moment_tables(n: int, k: int, alpha0: float, beta0: float) -> np.ndarray:
  """[2, n+1] float64: E[π] and Var[π] of π = 1 − (1−p)^k, p ~ Beta(α0+c, β0+n−c), c = 0..n.

  E[(1−p)^j] = B(a, b+j)/B(a, b) = exp(lgamma(b+j) − lgamma(b) + lgamma(a+b) − lgamma(a+b+j)).
  """
  lg = np.frompyfunc(math.lgamma, 1, 1)
  c = np.arange(n + 1, dtype=np.float64)
  a, b = alpha0 + c, beta0 + n - c

  def log_moment(j: int) -> np.ndarray:
    return np.asarray(lg(b + j) - lg(b) + lg(a + b) - lg(a + b + j), np.float64)

  l1, l2 = log_moment(k), log_moment(2 * k)
  mean = -np.expm1(l1)
  var = np.exp(2 * l1) * np.expm1(np.maximum(l2 - 2 * l1, 0.0))  # m2 − m1², no cancellation
  return np.stack([mean, var])


def _posterior_parts(
  correct: ArrayLike, k: int, prior: tuple[float, float]
) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array, jax.Array]:
  """(mean, var, a, b, finite) of the per-prompt posterior of pass@k."""
  alpha0, beta0 = _check_prior(prior)
  values, n, _ = metrics.validate_correct(correct, 1)
  k = checks.check_int(k, "k", low=1)
  count, index = metrics.count_correct(values)
  table = jnp.asarray(_posterior_moment_tables(n, k, alpha0, beta0), dtype=values.dtype)
  finite = jnp.isfinite(count)
  mean = jnp.where(finite, table[0][index], jnp.nan)
  var = jnp.where(finite, table[1][index], jnp.nan)
  c = index.astype(values.dtype)
  return mean, var, alpha0 + c, beta0 + n - c, finite


def pass_at_k_posterior(
  correct: ArrayLike,
  k: int,
  *,
  confidence: float = 0.95,
  prior: tuple[float, float] = (1.0, 1.0),
) -> Interval:
  """Beta-posterior mean, std and equal-tailed credible interval of a prompt's pass@k.

  With c correct of n samples and a Beta(α0, β0) prior on the prompt's success
  probability p, the posterior is p ~ Beta(a, b), a = α0 + c, b = β0 + n − c, and
  pass@k = π(p) = 1 − (1 − p)^k.  Then, in closed form,

    E[π] = 1 − B(a, b + k)/B(a, b),   Var[π] = B(a, b+2k)/B(a, b) − (B(a, b+k)/B(a, b))²,

  read from static float64 tables over c (log-gamma, no cancellation).  Since π is
  increasing in p, the equal-tailed interval of π is π applied to the Beta
  quantiles of p at (1 ∓ confidence)/2 (:func:`beta_ppf`).  k = 1 with the
  uniform prior gives Bayes@N's per-question posterior mean (c + 1)/(n + 2).

  Args:
    correct: ``[..., n]`` bool or {0, 1}; samples on the last axis.
    k: static int >= 1.  Unlike :func:`maxk.pass_at_k`, k may exceed n: the
      posterior extrapolates pass@k beyond the number of samples.
    confidence: keyword-only, in (0, 1).
    prior: keyword-only static pair (α0, β0) > 0; default uniform.

  Returns:
    :class:`Interval` ``(mean, stderr=posterior std, lo, hi)`` of shape ``[...]``.
    A group with a non-finite entry returns NaN.

  Raises:
    ValueError: for ``k`` not an int >= 1, non-binary ``correct``, a bad
      ``prior`` or ``confidence``.

  References: Hariri et al., arXiv 2510.04265 (Bayes@N: Beta/Dirichlet posterior
  of the per-question success probability).
  """
  confidence = _check_confidence(confidence)
  mean, var, a, b, finite = _posterior_parts(correct, k, prior)
  lo, hi = _posterior_interval(a, b, finite, float(k), confidence)
  return Interval(mean, jnp.sqrt(var), lo, hi)


@jax.jit
def _posterior_interval(
  a: jax.Array, b: jax.Array, finite: jax.Array, k: float, confidence: float
) -> tuple[jax.Array, jax.Array]:
  """π(p) at the (1 ∓ confidence)/2 Beta(a, b) quantiles of p, π(p) = 1 − (1 − p)^k."""
  tail = (1.0 - confidence) / 2
  q = jnp.stack([jnp.full_like(a, tail), jnp.full_like(a, 1.0 - tail)])
  p = _beta_ppf(q, jnp.broadcast_to(a, q.shape), jnp.broadcast_to(b, q.shape), 48)
  out = jnp.where(finite, -jnp.expm1(k * jnp.log1p(-p)), jnp.nan)
  return out[0], out[1]


def bayes_at_n(
  correct: ArrayLike,
  k: int = 1,
  *,
  confidence: float = 0.95,
  prior: tuple[float, float] = (1.0, 1.0),
) -> Interval:
  """Posterior mean and credible interval of a benchmark's mean pass@k (Bayes@N).

  Each of the P prompts has an independent Beta posterior (:func:`pass_at_k_posterior`);
  the benchmark score is the average μ = (1/P) Σ_i π_i of their pass@k values, with
  posterior mean (1/P) Σ_i E[π_i] and posterior variance (1/P²) Σ_i Var[π_i]
  (independent prompts).  The interval is the normal approximation μ ± z·σ, as in
  Bayes@N.  For k = 1 and the uniform prior this is Bayes@N's binary score,
  μ = (1/P) Σ_i (c_i + 1)/(n + 2).  The posterior treats the P prompts as fixed, so
  σ reflects only the sampling noise, not the choice of prompts (compare
  :func:`variance_split`).

  Args:
    correct: ``[..., P, n]`` bool or {0, 1}: n samples for each of P prompts.
    k: static int >= 1 (may exceed n).
    confidence: keyword-only, in (0, 1).
    prior: keyword-only static pair (α0, β0) > 0.

  Returns:
    :class:`Interval` ``(mean, stderr=posterior std, lo, hi)`` of shape ``[...]``.

  Raises:
    ValueError: for ``correct`` with fewer than 2 dimensions, or as
      :func:`pass_at_k_posterior`.

  References: Hariri et al., "Don't Pass@k", arXiv 2510.04265 (Bayes@N posterior
  mean and variance averaged over questions, normal-approximation interval).
  """
  confidence = _check_confidence(confidence)
  arr = jnp.asarray(correct)
  if arr.ndim < 2:
    raise ValueError(f"correct must have shape [..., P, n]; got shape {arr.shape}.")
  mean, var, *_ = _posterior_parts(arr, k, prior)
  p = arr.shape[-2]
  crit = statistics.NormalDist().inv_cdf(0.5 + confidence / 2)
  return _interval(jnp.mean(mean, axis=-1), jnp.sqrt(jnp.sum(var, axis=-1)) / p, crit)
