"""Unbiased estimates of the sampling variance of the max@k and pass@k estimators.

:func:`maxk.max_at_k` is a U-statistic of order k with kernel h(I) = max_{i∈I} r_i:
M̂ = (1/C(n,k)) Σ_{|I|=k} h(I).  Its sampling variance over n i.i.d. draws is
Var(M̂) = E[M̂²] − θ², θ = max@k.  θ² has the unbiased estimate

  T = (1/(C(n,k) C(n−k,k))) Σ_{(I,J) disjoint, |I|=|J|=k} h(I) h(J),

(E[h(I) h(J)] = θ² when I and J share no sample), so V̂ = M̂² − T is unbiased for
Var(M̂) whenever n >= 2k (Hoeffding 1948).

Gap form.  In ascending order r_(1) <= ... <= r_(n), the pairs with max I = a < b =
max J number C(a−1,k−1) C(b−1−k,k−1), so V̂ is a quadratic form in the sorted
rewards whose rows sum to 0 (V̂ is shift invariant).  Rewriting it in the gaps
d_m = r_(m+1) − r_(m) >= 0, m = 1..n−1, the coefficient of d_m d_m' factorises:

  V̂ = Σ_{m,m'} p_{min(m,m')} γ_{max(m,m')} d_m d_m'
    = Σ_m γ_m d_m (p_m d_m + 2 Σ_{m'<m} p_m' d_m'),

  p_m = C(m,k)/C(n,k),   γ_m = C(m,k)/C(n,k) − C(m−k,k)/C(n−k,k).

(The pairs with max I <= m < max J give p_m via the hockey-stick identity
Σ_{a<=m} C(a−1,k−1) = C(m,k); the same identity on the J side gives γ.)  Every
p_m, γ_m is >= 0 (γ_m >= 0 because (m−i)/(n−i) >= (m−k−i)/(n−k−i)), so V̂ is a sum
of non-negative terms: this unbiased variance estimate is never negative, it is 0
exactly when the top n−k+1 sorted rewards are equal (every k-subset then has the
same maximum), and it is computed without cancellation, to a relative error of
about n·ε in float32 whatever the offset of the rewards.  For k = 1 it is s²/n,
the unbiased sample variance of the mean.

References: Hoeffding, "A Class of Statistics with Asymptotically Normal
Distribution", Ann. Math. Statist. 1948 (U-statistic variance); Walder & Karkhanis,
"Pass@K Policy Optimization", arXiv 2505.15201, Eq. 3 and Eqs. 12-14 (the estimators).
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike
from jax.typing import DTypeLike
import numpy as np

from maxk._src import checks
from maxk._src import combinatorics
from maxk._src import metrics
from maxk._src import ragged
from maxk._src import sorted_kernels
from maxk._src import sorting


def _check_two_subsets(k: int, n: int) -> None:
  if 2 * k > n:
    raise ValueError(
      f"k={k} must satisfy 1 <= k <= n/2 with n={n} samples: the unbiased variance"
      " estimate averages over pairs of disjoint k-subsets, so it needs n >= 2k."
    )


@functools.lru_cache(maxsize=256)
def _fail_log_tables(n: int, k: int) -> tuple[np.ndarray, np.ndarray]:
  """(log p_c, log(q_c/p_c)) for c = 0..n in float64.

  p_c = C(n−c,k)/C(n,k) and q_c = C(n−c−k,k)/C(n−k,k).  Both logs are cumulative
  sums over c of one-step log-ratios, all <= 0: with N = n − c, p_{c+1}/p_c =
  (N − k)/N and (q/p)_{c+1}/(q/p)_c = N(N − 2k)/(N − k)² = 1 − k²/(N − k)²
  (:func:`combinatorics.log1m_ratio`).  Summing same-sign terms involves no
  cancellation, unlike a difference of log-gamma values (whose absolute error
  ~1e-16 · n log n swamps small log-ratios at large n).  A ratio that is exactly 0
  has log -inf.
  """
  big = n - np.arange(n, dtype=np.float64)  # N = n − c for the step c -> c + 1
  step_p = np.where(big > k, combinatorics.log1m_ratio(k, big), -np.inf)
  step_r = np.where(big > 2 * k, combinatorics.log1m_ratio(float(k) ** 2, (big - k) ** 2), -np.inf)
  log_p = np.concatenate([[0.0], np.cumsum(step_p)])
  log_r = np.concatenate([[0.0], np.cumsum(step_r)])
  return log_p, log_r


@functools.lru_cache(maxsize=256)
def _gap_tables(n: int, k: int) -> tuple[np.ndarray, np.ndarray]:
  """(p, γ) over gaps m = 1..n−1, float64, with V̂ = Σ_m γ_m d_m (p_m d_m + 2 Σ_{m'<m} p_m' d_m').

  p_m = C(m,k)/C(n,k) and γ_m = C(m,k)/C(n,k) − C(m−k,k)/C(n−k,k) = p_m (1 − q/p),
  both in [0, 1], from :func:`_fail_log_tables` at c = n − m.
  """
  log_p, log_r = _fail_log_tables(n, k)
  with np.errstate(under="ignore"):
    p = np.exp(log_p[n - 1 : 0 : -1])
    return p, p * -np.expm1(log_r[n - 1 : 0 : -1])


@functools.lru_cache(maxsize=256)
def _pass_variance_table(n: int, k: int) -> np.ndarray:
  """V[c] = p(p − q) = p² (1 − q/p), p = C(n−c,k)/C(n,k), q = C(n−c−k,k)/C(n−k,k), c = 0..n."""
  log_p, log_r = _fail_log_tables(n, k)
  with np.errstate(under="ignore"):
    return np.exp(2 * log_p) * -np.expm1(log_r)


@functools.lru_cache(maxsize=256)
def _ragged_tables(n: int, k: int) -> tuple[ragged.Pow2, ragged.Pow2, np.ndarray]:
  """For groups of N <= n valid samples: C(m, k) over m = 0..n, 1/C(N, k) over N, and
  G(x) = Σ_{2k < N' <= x} log(1 − k²/(N' − k)²) over x = 0..n (0 for x <= 2k), so
  that log(q/p) at size N and c = N − m is G(N) − G(m) (see :func:`_fail_log_tables`)."""
  size = np.arange(n + 1, dtype=np.float64)
  with np.errstate(divide="ignore", invalid="ignore"):
    step = np.where(size > 2 * k, combinatorics.log1m_ratio(float(k) ** 2, (size - k) ** 2), 0.0)
  g = np.cumsum(step.astype(np.longdouble)).astype(np.float64)
  choose = ragged.pow2(combinatorics.log_binom(np.arange(n + 1), k))
  return choose, ragged.max_tables(n, k).inv, g


class RaggedOperands(NamedTuple):
  """:func:`_ragged_tables` as kernel operands, host arrays passed with k as
  arguments so that another k reuses the compiled program: C(m, k) and 1/C(N, k)
  (:class:`maxk._src.ragged.Packed`) and G's :func:`maxk._src.ragged.split_host`
  parts (``[2, n + 1]``, in the rewards' dtype)."""

  tables: ragged.Packed
  g: np.ndarray


@functools.lru_cache(maxsize=256)
def _ragged_operands(n: int, k: int, dtype: DTypeLike) -> RaggedOperands:
  choose, inv, g = _ragged_tables(n, k)
  return RaggedOperands(
    ragged.pack([choose, inv], dtype), np.stack(ragged.split_host(g, np.dtype(dtype)))
  )


def _fail_from(
  t: RaggedOperands, k: jax.Array, top: jax.Array, size: jax.Array, dtype: jnp.dtype
) -> tuple[jax.Array, jax.Array]:
  """:func:`ragged_fail` from the operands of :func:`_ragged_operands`, in a kernel."""
  choose, inv = ragged.unpack(t.tables, [t.g.shape[-1]] * 2)
  g = jnp.asarray(t.g)
  return ragged_fail(choose, inv, (g[0], g[1]), k, top, size, dtype)


def ragged_fail(
  choose: ragged.Pow2,
  inv: ragged.Pow2,
  g: tuple[jax.Array, jax.Array],
  k: int | jax.Array,
  top: jax.Array,
  size: jax.Array,
  dtype: jnp.dtype,
) -> tuple[jax.Array, jax.Array]:
  """(p, 1 − q/p) for C(top, k)/C(size, k) and its disjoint-pair companion (see
  :func:`_fail_log_tables` with c = size − top; 1 − q/p = 1 where top < 2k), from
  the tables of :func:`_ragged_tables` at k (``g`` as :func:`maxk._src.ragged.split`
  parts; ``k`` may be traced)."""
  p = ragged.gathered_ratio(choose, top, inv, size, dtype)
  log_r = ragged.split_difference(g, size, g, jnp.minimum(top, size))
  one_minus = jnp.where(top >= 2 * k, -jnp.expm1(log_r), 1)
  return p, one_minus


def max_at_k_variance(rewards: ArrayLike, k: int, *, where: ArrayLike | None = None) -> jax.Array:
  """Unbiased estimate of Var(M̂), the sampling variance of :func:`maxk.max_at_k`.

  With M̂ the max@k estimate from the n samples of a group and T the mean of
  max_I r · max_J r over ordered pairs of disjoint k-subsets (I, J), the estimate is
  V̂ = M̂² − T, unbiased for E[M̂²] − (max@k)² (U-statistic theory).  It is
  evaluated in the equivalent gap form V̂ = Σ_m γ_m d_m (p_m d_m + 2 Σ_{m'<m} p_m' d_m')
  over the sorted gaps d_m = r_(m+1) − r_(m), with static float64 coefficients
  p_m = C(m,k)/C(n,k) and γ_m = C(m,k)/C(n,k) − C(m−k,k)/C(n−k,k) (module
  docstring).  All terms are non-negative, so V̂ >= 0 always (unbiased and never
  negative: no clipping is involved), it is invariant to adding a constant to the
  group, and it is accurate in float32 to a relative error of about n·ε (the
  float64 coefficients, built like :func:`pass_at_k_variance`'s table, are within
  5e-14 relative of the exact rationals where they exceed 1e-10, 2e-12 down to
  1e-300, for n <= 16384).  For
  k = 1 it is s²/n with s² the unbiased sample variance.  Cost O(n log n) per group
  (one sort, one cumulative sum).

  Args:
    rewards: ``[..., n]`` float rewards; samples on the last axis.  Ties are
      allowed; -inf rewards are allowed while fewer than k of them are present
      (with k or more, max@k is -inf and the variance +inf, the limit of V̂ as
      those rewards go to -inf; a group of -inf rewards only gives 0).
    k: static int, ``1 <= k <= n/2``.
    where: keyword-only, optional bool, broadcastable to ``rewards``: the valid
      samples of each group (ragged groups); the estimate of a group is that of
      its m valid samples, NaN where m < 2k.

  Returns:
    ``[...]`` variance estimates (>= 0).  A NaN in a group makes that group's
    estimate NaN only.

  Raises:
    ValueError: if ``k`` is not an int with 2k <= n, or ``rewards`` is a scalar.

  References: Hoeffding 1948 (U-statistic variance); Walder & Karkhanis,
  arXiv 2505.15201, Eqs. 12-14 (the estimator M̂).
  """
  rewards = checks.as_float_array(rewards, "rewards")
  n = rewards.shape[-1]
  k = checks.check_int(k, "k", low=1, high=n, high_name="n")
  _check_two_subsets(k, n)
  valid = ragged.as_valid(where, rewards.shape)
  if valid is not None:
    return _max_at_k_variance_ragged(rewards, valid, _ragged_operands(n, k, rewards.dtype), k)
  return _max_at_k_variance(rewards, *_gap_operands(n, k, rewards.dtype))


@functools.lru_cache(maxsize=256)
def _gap_operands(
  n: int, k: int, dtype: DTypeLike
) -> tuple[sorted_kernels.Operand, sorted_kernels.Operand]:
  p, gamma = _gap_tables(n, k)
  return sorted_kernels.operand(p, dtype), sorted_kernels.operand(gamma, dtype)


@jax.jit
def _max_at_k_variance(
  rewards: jax.Array, p: sorted_kernels.Operand, gamma: sorted_kernels.Operand
) -> jax.Array:
  r_sorted, _ = sorting.sort_last(rewards)
  lower, upper = r_sorted[..., :-1], r_sorted[..., 1:]
  # Equal neighbours give an exact 0 gap (also for tied ±inf, where inf − inf = NaN).
  gaps = jnp.where(upper == lower, 0, upper - lower)
  weighted = sorted_kernels.scaled(p, gaps)  # p_m d_m >= 0
  inner = weighted + 2 * sorted_kernels.exclusive_prefix_sum(weighted)
  nonzero = jnp.asarray(gamma.nonzero) & (gaps != 0)
  estimate = gap_sum(sorted_kernels.scaled(gamma, gaps), nonzero, inner)
  return checks.nan_group(rewards, estimate[..., None])[..., 0]


def gap_sum(gamma_gaps: jax.Array, nonzero: jax.Array, inner: jax.Array) -> jax.Array:
  """Σ_m γ_m d_m · inner_m over the last axis, a sum of terms >= 0.

  A term is 0 where γ_m d_m is exactly 0 (``nonzero`` False: a tied gap or a zero
  coefficient), even where ``inner`` is +inf (every gap above an infinite one),
  and +inf where ``inner`` is +inf otherwise: k or more −inf rewards put an
  infinite gap with p_m, γ_m > 0 below the others, and V̂ is then +inf (the
  limit of the finite values as those rewards go to −inf) rather than the NaN
  of 0 · inf.
  """
  # Finite inner sums keep the plain product (and its derivative).
  at_inf = jnp.where(nonzero, jnp.inf, 0).astype(gamma_gaps.dtype)
  return jnp.sum(jnp.where(jnp.isposinf(inner), at_inf, gamma_gaps * inner), axis=-1)


def pass_at_k_variance(correct: ArrayLike, k: int, *, where: ArrayLike | None = None) -> jax.Array:
  """Unbiased estimate of the sampling variance of :func:`maxk.pass_at_k`.

  For {0, 1} samples with c correct out of n, the U-statistic variance estimate
  of :func:`max_at_k_variance` has the closed form

    V̂ = p (p − q),   p = C(n−c,k)/C(n,k),   q = C(n−c−k,k)/C(n−k,k),

  where p = 1 − pass@k estimate is the fraction of k-subsets with no correct
  sample and p·q the fraction of disjoint pairs of k-subsets that both fail, so
  V̂ = (1 − p)² − (1 − 2p + pq).  It is unbiased for Var(pass@k estimate) when
  n >= 2k, lies in [0, 1/4], and is read from a static float64 table indexed by c,
  V̂ = p² (1 − q/p) with log p and log(q/p) sums of same-sign log1p terms (no
  cancellation, no difference of log-gammas).  Against exact rationals, for
  n <= 16384, the table's measured relative error is below 5e-14 where V̂ > 1e-10
  and below 2e-12 down to 1e-300 (exp of a log of magnitude up to 700), so the
  float32 (and float64) results are correctly rounded up to that error.  Cost O(n) per
  group (the count).

  Args:
    correct: ``[..., n]`` bool or {0, 1}; samples on the last axis.
    k: static int, ``1 <= k <= n/2``.
    where: keyword-only, optional bool, broadcastable to ``correct``: the valid
      samples of each group (ragged groups); the estimate of a group is that of
      its m valid samples, NaN where m < 2k.

  Returns:
    ``[...]`` variance estimates.  A group with a non-finite entry returns NaN.

  Raises:
    ValueError: if ``k`` is not an int with 2k <= n, or ``correct`` is not {0, 1}.

  References: Hoeffding 1948 (U-statistic variance); Chen et al., "Evaluating Large
  Language Models Trained on Code", arXiv 2107.03374 (the pass@k estimator);
  Walder & Karkhanis, arXiv 2505.15201, Eq. 3.
  """
  values, n, k, valid = metrics.validate_correct(correct, k, where)
  _check_two_subsets(k, n)
  if valid is not None:
    return _pass_at_k_variance_ragged(values, valid, _ragged_operands(n, k, values.dtype), k)
  return metrics.table_lookup(values, _pass_variance_operand(n, k, values.dtype))


@functools.lru_cache(maxsize=256)
def _pass_variance_operand(n: int, k: int, dtype: DTypeLike) -> np.ndarray:
  return np.asarray(_pass_variance_table(n, k), np.dtype(dtype))


@jax.jit
def _max_at_k_variance_ragged(
  rewards: jax.Array, valid: jax.Array, t: RaggedOperands, k: jax.Array
) -> jax.Array:
  # The gap form over each group's N valid samples: gap m (1..N−1) has
  # p_m = C(m, k)/C(N, k) and γ_m = p_m (1 − q/p) at c = N − m.
  dtype = rewards.dtype
  r_sorted, _, size, inside = ragged.sort_valid(rewards, valid)
  lower, upper = r_sorted[..., :-1], r_sorted[..., 1:]
  gaps = jnp.where((upper == lower) | ~inside[..., 1:], 0, upper - lower)
  top = ragged.positions(gaps.shape)  # gap m between positions m and m + 1
  p, one_minus = _fail_from(t, k, top, size, dtype)
  estimate = ragged_gap_variance(gaps, inside[..., 1:], p, one_minus)
  estimate = jnp.where(size[..., 0] >= 2 * k, estimate, jnp.nan)
  return ragged.nan_group(rewards, valid, estimate)


def ragged_gap_variance(
  gaps: jax.Array, inside: jax.Array, p: jax.Array, one_minus: jax.Array
) -> jax.Array:
  """V̂ = Σ_m γ_m d_m (p_m d_m + 2 Σ_{m'<m} p_m' d_m') over the gaps ``[..., n − 1]``
  of each group's valid samples (``inside``), γ_m = p_m (1 − q/p)."""
  p = jnp.where(inside, p, 0)
  weighted = jnp.where(p != 0, p * gaps, 0)
  inner = weighted + 2 * sorted_kernels.exclusive_prefix_sum(weighted)
  gamma = p * one_minus
  gamma_gaps = jnp.where(inside & (gamma != 0), gamma * gaps, 0)
  return gap_sum(gamma_gaps, inside & (gamma != 0) & (gaps != 0), inner)


@jax.jit
def _pass_at_k_variance_ragged(
  values: jax.Array, valid: jax.Array, t: RaggedOperands, k: jax.Array
) -> jax.Array:
  # V̂ = p² (1 − q/p) with p = C(N − c, k)/C(N, k) over the N valid samples.
  dtype = values.dtype
  size = ragged.count(valid)[..., 0]
  count, correct = metrics.count_correct(jnp.where(valid, values, 0))
  fail = size - correct
  p, one_minus = _fail_from(t, k, jnp.maximum(fail, 0), size, dtype)
  estimate = jnp.where(size >= 2 * k, p * p * one_minus, jnp.nan)
  return jnp.where(jnp.isfinite(count), estimate, jnp.nan)
