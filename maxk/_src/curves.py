"""Whole curves over k, pass^k and G-Pass@k from n samples per group.

Curves.  pass@k, max@k and their variance estimates for every k at once, each
entry equal to the single-k estimator (:func:`maxk.pass_at_k`, :func:`maxk.max_at_k`,
:func:`maxk.pass_at_k_variance`, :func:`maxk.max_at_k_variance`) at that k:

  pass@k ≈ 1 − C(n−c, k)/C(n, k)                 (Chen et al. 2021; PKPO Eq. 3)
  max@k  ≈ Σ_j C(j−1, k−1)/C(n, k) · r_(j)       (PKPO Eqs. 12-14)

with c the number of correct samples and r_(1) <= ... <= r_(n) the sorted rewards.

Stability metrics (all k samples, or a fraction τ of them, correct).  With X the
number of correct samples in a k-subset drawn without replacement from the n
samples (hypergeometric: P(X = j) = C(c, j) C(n−c, k−j)/C(n, k)):

  pass^k        ≈ P(X = k) = C(c, k)/C(n, k)                  (Yao et al. 2024)
  G-Pass@k_τ    ≈ P(X >= ⌈τk⌉) = Σ_{j=⌈τk⌉}^{k} C(c,j) C(n−c,k−j)/C(n,k)
  mG-Pass@k     = (2/k) Σ_{i=⌈k/2⌉+1}^{k} G-Pass@k_{i/k}         (Liu et al. 2024)

Each is a U-statistic (the mean over all k-subsets of a k-sample statistic), so it
is unbiased for the same statistic of k i.i.d. draws: pass^k for p^k, G-Pass@k_τ
for P(Binomial(k, p) >= ⌈τk⌉), with p the policy's probability of a correct sample.

Every coefficient is a static float64 table, built on the host once per size and
passed to the jitted kernels as an argument (a cached NumPy array, see
:class:`maxk._src.sorted_kernels.Operand`), so one compiled program serves every k.

References: Walder & Karkhanis, "Pass@K Policy Optimization", arXiv 2505.15201,
Eqs. 3, 12-14; Chen et al., arXiv 2107.03374 (pass@k); Hoeffding 1948 (U-statistic
variance); Yao et al., "τ-bench", arXiv 2406.12045 (pass^k); Liu et al., "Are Your
LLMs Capable of Stable Reasoning?", arXiv 2412.13147 (G-Pass@k_τ, mG-Pass@k).
"""

from __future__ import annotations

from collections.abc import Callable
import functools
import math
import numbers
from typing import Any, NamedTuple

import jax
from jax import lax
import jax.numpy as jnp
from jax.typing import ArrayLike
from jax.typing import DTypeLike
import numpy as np

from maxk._src import checks
from maxk._src import combinatorics
from maxk._src import estimate_variance
from maxk._src import metrics
from maxk._src import ragged
from maxk._src import sorted_kernels
from maxk._src import sorting

# ----------------------------------------------------------------------------
# Host tables (float64, cached per size; cast to the caller's dtype last).
# ----------------------------------------------------------------------------


@functools.lru_cache(maxsize=8)
def _log_factorial(n: int) -> np.ndarray:
  """log m! for m = 0..n in extended precision (where the platform has it).

  Differences of these give log C(a, b) with an absolute error of about
  1e-19 · log n! on x86 (long double), so ratios of binomials built from them are
  within ~1e-15 relative up to n = 4096 (and ~1e-12 where long double is double).
  """
  logs = np.log(np.arange(1, n + 1, dtype=np.longdouble))
  return np.concatenate([np.zeros(1, np.longdouble), np.cumsum(logs)])


def _log_binom(lf: np.ndarray, top: np.ndarray, bottom: np.ndarray) -> np.ndarray:
  """log C(top, bottom) from a log-factorial table, −inf unless 0 <= bottom <= top."""
  top, bottom = np.broadcast_arrays(top, bottom)
  ok = (bottom >= 0) & (bottom <= top)
  t, b = np.where(ok, top, 0), np.where(ok, bottom, 0)
  return np.where(ok, lf[t] - lf[b] - lf[t - b], -np.inf)


@functools.lru_cache(maxsize=16)
def _fail_logs(n: int, kmax: int) -> tuple[np.ndarray, np.ndarray]:
  """(log p, log(q/p)) over k = 1..kmax (rows) and c = 0..n (columns), float64.

  p = C(n−c, k)/C(n, k) and q = C(n−c−k, k)/C(n−k, k): row k holds exactly the
  cumulative sums over c of same-sign log1p terms that :mod:`maxk._src.estimate_variance`
  builds for that k alone (so its tables are reproduced bit for bit), with
  log(q/p) only meaningful where 2k <= n.
  """
  k = np.arange(1, kmax + 1, dtype=np.float64)[:, None]
  big = (n - np.arange(n, dtype=np.float64))[None, :]  # N = n − c for the step c -> c + 1
  with np.errstate(divide="ignore", invalid="ignore"):
    step_p = np.where(big > k, combinatorics.log1m_ratio(k, big), -np.inf)
    step_r = np.where(big > 2 * k, combinatorics.log1m_ratio(k**2, (big - k) ** 2), -np.inf)
  zero = np.zeros((kmax, 1))
  log_p = np.concatenate([zero, np.cumsum(step_p, axis=1)], axis=1)
  log_r = np.concatenate([zero, np.cumsum(step_r, axis=1)], axis=1)
  return log_p, log_r


@functools.lru_cache(maxsize=16)
def _pass_curve_operand(n: int, dtype: DTypeLike) -> np.ndarray:
  """T[c, k−1] = 1 − C(n−c, k)/C(n, k), shape [n+1, n], in ``dtype``."""
  log_p, _ = _fail_logs(n, n)
  return np.asarray(-np.expm1(log_p).T, np.dtype(dtype))


@functools.lru_cache(maxsize=16)
def _pass_hat_curve_operand(n: int, dtype: DTypeLike) -> np.ndarray:
  """T[c, k−1] = C(c, k)/C(n, k) = p at c' = n − c, shape [n+1, n], in ``dtype``."""
  log_p, _ = _fail_logs(n, n)
  with np.errstate(under="ignore"):
    return np.asarray(np.exp(log_p[:, ::-1]).T, np.dtype(dtype))


@functools.lru_cache(maxsize=16)
def _pass_variance_curve_operand(n: int, dtype: DTypeLike) -> np.ndarray:
  """T[c, k−1] = p² (1 − q/p) for k = 1..n//2, shape [n+1, n//2], in ``dtype``."""
  log_p, log_r = _fail_logs(n, n // 2)
  with np.errstate(under="ignore"):
    return np.asarray((np.exp(2 * log_p) * -np.expm1(log_r)).T, np.dtype(dtype))


@functools.lru_cache(maxsize=16)
def _max_weight_table(n: int) -> np.ndarray:
  """W[k−1, j−1] = C(j−1, k−1)/C(n, k) for k, j = 1..n (float64; rows sum to 1)."""
  lf = _log_factorial(n)
  k = np.arange(1, n + 1)[:, None]
  j = np.arange(1, n + 1)[None, :]
  log_w = _log_binom(lf, j - 1, k - 1) - _log_binom(lf, np.full_like(k, n), k)
  with np.errstate(under="ignore"):
    return np.exp(log_w).astype(np.float64)


@functools.lru_cache(maxsize=16)
def _max_curve_operands(n: int, dtype: DTypeLike) -> tuple[np.ndarray, np.ndarray]:
  # Rank j is the maximum of C(j−1, k−1) > 0 subsets exactly when j >= k, also
  # where that weight underflows.
  top = np.arange(1, n + 1)[None, :] >= np.arange(1, n + 1)[:, None]
  return np.asarray(_max_weight_table(n), np.dtype(dtype)), top


@functools.lru_cache(maxsize=16)
def _gap_curve_operands(
  n: int, dtype: DTypeLike
) -> tuple[sorted_kernels.Operand, sorted_kernels.Operand]:
  """(p, γ) over k = 1..n//2 (rows) and gaps m = 1..n−1: p = C(m,k)/C(n,k),
  γ = p (1 − q/p) at c = n − m, as in :func:`maxk.max_at_k_variance`."""
  log_p, log_r = _fail_logs(n, n // 2)
  with np.errstate(under="ignore"):
    p = np.exp(log_p[:, n - 1 : 0 : -1])
    gamma = p * -np.expm1(log_r[:, n - 1 : 0 : -1])
  return sorted_kernels.operand(p, dtype), sorted_kernels.operand(gamma, dtype)


def _tails(lf: np.ndarray, n: int, k: int) -> np.ndarray:
  """T[c, i] = P(X >= i) for X ~ Hypergeometric(n, c, k), c = 0..n, i = 0..k (float64),
  from the log-factorial table ``lf`` (of at least n + 1 entries).

  P(X = j) = C(c, j) C(n−c, k−j)/C(n, k); the tails are sums of these non-negative
  terms (no cancellation), clipped to 1.
  """
  c = np.arange(n + 1)[:, None]
  j = np.arange(k + 1)[None, :]
  log_pmf = (
    _log_binom(lf, c, j) + _log_binom(lf, n - c, k - j) - _log_binom(lf, np.array(n), np.array(k))
  )
  with np.errstate(under="ignore"):
    pmf = np.exp(log_pmf).astype(np.float64)
  tails = np.cumsum(pmf[:, ::-1], axis=1)[:, ::-1]
  return np.minimum(tails, 1.0)


@functools.lru_cache(maxsize=64)
def _hypergeometric_tails(n: int, k: int) -> np.ndarray:
  """:func:`_tails` from extended-precision log factorials (~1e-15 relative)."""
  return _tails(_log_factorial(n), n, k)


@functools.lru_cache(maxsize=64)
def _g_pass_operand(n: int, k: int, threshold: int, dtype: DTypeLike) -> np.ndarray:
  return np.asarray(_hypergeometric_tails(n, k)[:, threshold], np.dtype(dtype))


@functools.lru_cache(maxsize=64)
def _mg_pass_operand(n: int, k: int, dtype: DTypeLike) -> np.ndarray:
  majority = (k + 1) // 2  # ⌈k/2⌉
  tails = _hypergeometric_tails(n, k)[:, majority + 1 : k + 1]
  return np.asarray(2.0 / k * np.sum(tails, axis=1), np.dtype(dtype))


@functools.lru_cache(maxsize=64)
def _pass_hat_operand(n: int, k: int, dtype: DTypeLike) -> np.ndarray:
  return np.asarray(combinatorics.binom_ratio(np.arange(n + 1), k, n, k), np.dtype(dtype))


def _ragged_operand(
  row: Callable[[int], np.ndarray], n: int, k: int, dtype: DTypeLike
) -> np.ndarray:
  """[n + 1, n + 1] table of ``row(m)`` (float64 over c = 0..m) in row m, for the
  groups of m valid samples; rows m < k are NaN (too few samples for k)."""
  table = np.full((n + 1, n + 1), np.nan)
  for m in range(k, n + 1):
    table[m, : m + 1] = row(m)
  return np.asarray(table, np.dtype(dtype))


# The ragged tables hold a row per group size m: built from float64 log factorials
# (~1e-12 relative up to m = 4096, ample for a float32 result, and 10x faster to
# build for every m than the extended-precision ones).
@functools.lru_cache(maxsize=16)
def _ragged_g_pass_operand(n: int, k: int, threshold: int, dtype: DTypeLike) -> np.ndarray:
  lf = _log_factorial(n).astype(np.float64)
  return _ragged_operand(lambda m: _tails(lf, m, k)[:, threshold], n, k, dtype)


@functools.lru_cache(maxsize=16)
def _ragged_mg_pass_operand(n: int, k: int, dtype: DTypeLike) -> np.ndarray:
  majority = (k + 1) // 2
  lf = _log_factorial(n).astype(np.float64)
  return _ragged_operand(
    lambda m: 2.0 / k * np.sum(_tails(lf, m, k)[:, majority + 1 :], axis=1), n, k, dtype
  )


@functools.lru_cache(maxsize=16)
def _ragged_pass_hat_operand(n: int, k: int, dtype: DTypeLike) -> np.ndarray:
  return _ragged_operand(
    lambda m: combinatorics.binom_ratio(np.arange(m + 1), k, m, k), n, k, dtype
  )


class _RaggedCurveTables(NamedTuple):
  """Static factors of the curves of groups of m <= n valid samples (``where=``),
  float64 (:class:`maxk._src.ragged.Pow2` for the binomials), sizes x = 0..n on
  the last axis."""

  choose: ragged.Pow2  # [n + 1, n + 1]: C(x, b) at [b, x].
  inv: ragged.Pow2  # [n, n + 1]: 1/C(m, k) at [k − 1, m], 0 for m < k.
  g: np.ndarray  # [n, n + 1]: Σ_{k<N<=x} log(1 − k/N) at [k − 1, x].
  g2: np.ndarray  # [n // 2, n + 1]: Σ_{2k<N<=x} log(1 − k²/(N − k)²) at [k − 1, x].


@functools.lru_cache(maxsize=8)
def _ragged_curve_tables(n: int) -> _RaggedCurveTables:
  """For a group of m valid samples, f of them incorrect (or below a gap):
  C(f, k)/C(m, k) is choose[k, f] · inv[k − 1, m], or exp(g[k − 1, m] − g[k − 1, f])
  where f >= k (same-sign log1p terms, as :func:`_fail_logs`, summed in extended
  precision), and log(q/p) of :func:`maxk.pass_at_k_variance` is
  g2[k − 1, m] − g2[k − 1, f] where f >= 2k (as
  :func:`maxk._src.estimate_variance._ragged_tables`)."""
  b = np.arange(n + 1)[:, None]
  x = np.arange(n + 1)[None, :]
  log_choose = combinatorics.log_binom(x, b)
  size = x.astype(np.float64)
  k = np.arange(1, n + 1, dtype=np.float64)[:, None]
  k2 = k[: n // 2]
  with np.errstate(divide="ignore", invalid="ignore"):
    step = np.where(size > k, combinatorics.log1m_ratio(k, size), 0.0)
    step2 = np.where(size > 2 * k2, combinatorics.log1m_ratio(k2**2, (size - k2) ** 2), 0.0)

  def cumulative(steps: np.ndarray) -> np.ndarray:
    return np.cumsum(steps.astype(np.longdouble), axis=1).astype(np.float64)

  inv = np.where(x >= b[1:], -log_choose[1:], -np.inf)
  return _RaggedCurveTables(
    ragged.pow2(log_choose), ragged.pow2(inv), cumulative(step), cumulative(step2)
  )


def _pow2_operand(table: ragged.Pow2, rows: slice, cols: slice, dtype: DTypeLike) -> ragged.Pow2:
  """A block of a :class:`maxk._src.ragged.Pow2` table as host arrays (mantissas in ``dtype``)."""
  mant = np.ascontiguousarray(table.mant[rows, cols], np.dtype(dtype))
  return ragged.Pow2(mant, np.ascontiguousarray(table.exp[rows, cols]))


class _RaggedPassOperands(NamedTuple):
  """Sizes x = 0..n on the first axis, k on the second (host arrays)."""

  choose: ragged.Pow2  # C(x, k), k = 1..n
  inv: ragged.Pow2  # 1/C(x, k), k = 1..n
  g: Any  # ragged.split_host parts (host or, in the kernel, device arrays), k = 1..n
  g2: Any  # k = 1..n//2


@functools.lru_cache(maxsize=16)
def _ragged_pass_operands(n: int, dtype: DTypeLike) -> _RaggedPassOperands:
  t = _ragged_curve_tables(n)
  choose = _pow2_operand(
    ragged.Pow2(t.choose.mant.T, t.choose.exp.T), slice(None), slice(1, None), dtype
  )
  inv = _pow2_operand(ragged.Pow2(t.inv.mant.T, t.inv.exp.T), slice(None), slice(None), dtype)
  g = ragged.split_host(np.ascontiguousarray(t.g.T), np.dtype(dtype))
  g2 = ragged.split_host(np.ascontiguousarray(t.g2.T), np.dtype(dtype))
  return _RaggedPassOperands(choose, inv, g, g2)


@functools.lru_cache(maxsize=16)
def _ragged_max_curve_operands(n: int, dtype: DTypeLike) -> tuple[ragged.Pow2, ragged.Pow2]:
  """Over k = 1..n (rows): C(t − 1, k − 1) at positions t = 1..n, 1/C(m, k) at m = 0..n."""
  t = _ragged_curve_tables(n)
  return (
    _pow2_operand(t.choose, slice(0, n), slice(0, n), dtype),
    _pow2_operand(t.inv, slice(None), slice(None), dtype),
  )


@functools.lru_cache(maxsize=16)
def _ragged_gap_curve_operands(
  n: int, dtype: DTypeLike
) -> tuple[ragged.Pow2, ragged.Pow2, tuple[np.ndarray, np.ndarray]]:
  """Over k = 1..n//2 (rows): C(x, k) and 1/C(x, k) at x = 0..n, and g2's split parts."""
  t = _ragged_curve_tables(n)
  half = n // 2
  return (
    _pow2_operand(t.choose, slice(1, half + 1), slice(None), dtype),
    _pow2_operand(t.inv, slice(0, half), slice(None), dtype),
    ragged.split_host(t.g2, np.dtype(dtype)),
  )


# ----------------------------------------------------------------------------
# Kernels.
# ----------------------------------------------------------------------------


@jax.jit
def _ragged_lookup(values: jax.Array, valid: jax.Array, table: jax.Array) -> jax.Array:
  """table[m, c] for each group's m valid samples and c correct ones among them
  (NaN if a valid entry is not finite; the table's rows m < k are NaN)."""
  finite, m, c = ragged.count_correct(values, valid)
  return jnp.where(finite, table[m, c], jnp.nan)


@functools.partial(jax.jit, static_argnums=3)
def _ragged_pass_curve(
  values: jax.Array, valid: jax.Array, operands: _RaggedPassOperands, kind: str
) -> jax.Array:
  """The pass@k ("pass"), pass^k ("pass_hat") or pass@k variance ("variance")
  curve of each group's m valid samples, NaN where m < k (m < 2k for the variance)."""
  dtype = values.dtype
  finite, m, c = ragged.count_correct(values, valid)
  fail = m - c
  if kind == "pass_hat":
    out = ragged.gathered_ratio(operands.choose, c, operands.inv, m, dtype)  # C(c, k)/C(m, k)
    need = 1
  elif kind == "pass":
    log_p = ragged.split_difference(operands.g, m, operands.g, fail)  # log C(f, k)/C(m, k)
    k = jnp.arange(1, log_p.shape[-1] + 1, dtype=jnp.int32)
    out = jnp.where(fail[..., None] >= k, -jnp.expm1(log_p), 1)
    need = 1
  else:
    half = operands.g2[0].shape[-1]
    choose, inv = (ragged.Pow2(t.mant[:, :half], t.exp[:, :half]) for t in operands[:2])
    p = ragged.gathered_ratio(choose, fail, inv, m, dtype)
    log_r = ragged.split_difference(operands.g2, m, operands.g2, fail)
    k = jnp.arange(1, half + 1, dtype=jnp.int32)
    out = p * p * jnp.where(fail[..., None] >= 2 * k, -jnp.expm1(log_r), 1)
    need = 2
  k = jnp.arange(1, out.shape[-1] + 1, dtype=jnp.int32)
  return jnp.where(finite[..., None] & (m[..., None] >= need * k), out, jnp.nan)


def _nan_groups(rewards: jax.Array, valid: jax.Array, curve: jax.Array) -> jax.Array:
  """``curve`` ``[..., K]`` all NaN for the groups with a NaN among their valid rewards."""
  bad = jnp.any(jnp.isnan(rewards) & valid, axis=-1, keepdims=True)
  return jnp.where(bad, jnp.nan, curve)


@jax.jit
def _ragged_max_at_k_curve(
  rewards: jax.Array, valid: jax.Array, diag: ragged.Pow2, inv: ragged.Pow2
) -> jax.Array:
  # :func:`maxk.max_at_k`'s ragged sum at each k: w_t = C(t−1, k−1)/C(m, k).
  n, dtype = rewards.shape[-1], rewards.dtype
  r_sorted, _, m, inside = ragged.sort_valid(rewards, valid)
  t = ragged.positions(rewards.shape)

  def one_k(row: tuple[jax.Array, ragged.Pow2, ragged.Pow2]) -> jax.Array:
    k, d, i = row
    w = jnp.where(inside, ragged.product(d, i, m, dtype), 0)
    top = inside & (t >= k)
    estimate = sorted_kernels.rank_weighted_sum(r_sorted, w, top, jnp.zeros_like(top))
    return jnp.where(m[..., 0] >= k, estimate, jnp.nan)

  ks = jnp.arange(1, n + 1, dtype=jnp.int32)
  out = lax.map(one_k, (ks, diag, inv), batch_size=_chunk(n, rewards.size))
  return _nan_groups(rewards, valid, jnp.moveaxis(out, 0, -1))


@jax.jit
def _ragged_max_at_k_curve_variance(
  rewards: jax.Array,
  valid: jax.Array,
  choose: ragged.Pow2,
  inv: ragged.Pow2,
  g2: tuple[jax.Array, jax.Array],
) -> jax.Array:
  # :func:`maxk.max_at_k_variance`'s ragged gap form at each k.
  dtype = rewards.dtype
  r_sorted, _, size, inside = ragged.sort_valid(rewards, valid)
  lower, upper = r_sorted[..., :-1], r_sorted[..., 1:]
  gaps = jnp.where((upper == lower) | ~inside[..., 1:], 0, upper - lower)
  top = ragged.positions(gaps.shape)  # gap m between positions m and m + 1

  def one_k(row: tuple[Any, ...]) -> jax.Array:
    k, c, i, hi, lo = row
    p, one_minus = estimate_variance.ragged_fail(c, i, (hi, lo), k, top, size, dtype)
    estimate = estimate_variance.ragged_gap_variance(gaps, inside[..., 1:], p, one_minus)
    return jnp.where(size[..., 0] >= 2 * k, estimate, jnp.nan)

  half = g2[0].shape[0]
  ks = jnp.arange(1, half + 1, dtype=jnp.int32)
  out = lax.map(one_k, (ks, choose, inv, *g2), batch_size=_chunk(half, gaps.size))
  return _nan_groups(rewards, valid, jnp.moveaxis(out, 0, -1))


@jax.jit
def _row_lookup(values: jax.Array, table: jax.Array) -> jax.Array:
  """table[c] (a row over k) for each group's number c of correct samples; NaN rows
  for groups with a non-finite entry."""
  count, index = metrics.count_correct(values)
  return jnp.where(jnp.isfinite(count)[..., None], table[index], jnp.nan)


# Elements of the [..., chunk of k, n] intermediates evaluated at once by the
# curves that need one pass per k (a bound on their memory, 64 MiB in float32).
_CHUNK_ELEMENTS = 2**24


def _chunk(num_k: int, per_k: int) -> int:
  return max(1, min(num_k, _CHUNK_ELEMENTS // max(1, per_k)))


@jax.jit
def _max_at_k_curve(rewards: jax.Array, weights: jax.Array, top: jax.Array) -> jax.Array:
  r_sorted, _ = sorting.sort_last(rewards)

  def one_k(coeffs: tuple[jax.Array, jax.Array]) -> jax.Array:
    # :func:`maxk.max_at_k`'s compensated rank-weighted sum at one k.
    w, pos = coeffs
    return sorted_kernels.rank_weighted_sum(r_sorted, w, pos, jnp.zeros_like(pos))

  chunk = _chunk(weights.shape[0], rewards.size)
  out = lax.map(one_k, (weights, top), batch_size=chunk)
  return checks.nan_group(rewards, jnp.moveaxis(out, 0, -1))


@jax.jit
def _max_at_k_curve_variance(
  rewards: jax.Array, p: sorted_kernels.Operand, gamma: sorted_kernels.Operand
) -> jax.Array:
  r_sorted, _ = sorting.sort_last(rewards)
  lower, upper = r_sorted[..., :-1], r_sorted[..., 1:]
  gaps = jnp.where(upper == lower, 0, upper - lower)

  def one_k(coeffs: tuple[jax.Array, jax.Array, jax.Array, jax.Array]) -> jax.Array:
    # The gap form of :func:`maxk.max_at_k_variance` at one k.
    p_value, p_nonzero, g_value, g_nonzero = coeffs
    weighted = jnp.where(p_nonzero, p_value * gaps, 0)
    inner = weighted + 2 * sorted_kernels.exclusive_prefix_sum(weighted)
    nonzero = g_nonzero & (gaps != 0)
    return estimate_variance.gap_sum(jnp.where(nonzero, g_value * gaps, 0), nonzero, inner)

  num_k = p.value.shape[0]
  chunk = _chunk(num_k, gaps.size)
  out = lax.map(one_k, (p.value, p.nonzero, gamma.value, gamma.nonzero), batch_size=chunk)
  return checks.nan_group(rewards, jnp.moveaxis(out, 0, -1))


# ----------------------------------------------------------------------------
# Argument checks.
# ----------------------------------------------------------------------------


def _validate_curve_correct(
  correct: ArrayLike, where: ArrayLike | None
) -> tuple[jax.Array, int, jax.Array | None]:
  values, n, _, valid = metrics.validate_correct(correct, 1, where)
  return values, n, valid


def _check_pairs(n: int, name: str) -> None:
  if n < 2:
    raise ValueError(
      f"{name} must hold at least 2 samples on its last axis: the unbiased variance"
      f" estimate at k needs two disjoint k-subsets (n >= 2k); got n={n}."
    )


def _check_tau(tau: object) -> tuple[float, np.dtype]:
  """(τ as a float, τ's own floating dtype: float64 unless a NumPy float scalar)."""
  if isinstance(tau, (bool, np.bool_)) or not isinstance(tau, numbers.Real):
    raise ValueError(f"tau={tau!r} must be a real number in [0, 1] (got {type(tau).__name__}).")
  dtype = np.dtype(type(tau)) if isinstance(tau, np.floating) else np.dtype(np.float64)
  value = float(tau)
  if not 0.0 <= value <= 1.0:  # also rejects NaN
    raise ValueError(f"tau={tau} must satisfy 0 <= tau <= 1.")
  return value, dtype


def _threshold(tau: float, k: int, dtype: np.dtype) -> int:
  """max(⌈τk⌉, 1) for the τ the caller meant: i where τ is i/k, else ⌈τk⌉.

  τ counts as i/k (i the integer nearest τk) when τk is within 1e-9 (relative) of
  i, so that i/k computed in float64 (0.28 · 25 = 7.000000000000001) asks for
  exactly i, or when τ is i/k rounded to τ's own dtype, so that ``np.float32(0.3)``
  (0.30000001192...) at k = 10 asks for 3, and ``np.float16(1/3)`` at k = 3 for 1.
  A float16 (float32) τ resolves i/k only while 1/k exceeds its spacing, about
  k < 2^10 (2^23); beyond that several i/k round to the same τ and the nearest
  is taken.
  """
  x = tau * k
  nearest = round(x)
  close = abs(x - nearest) <= 1e-9 * max(1.0, x)
  rounded = dtype.type(nearest / k) == dtype.type(tau)
  j = nearest if close or rounded else math.ceil(x)
  return max(int(j), 1)


# ----------------------------------------------------------------------------
# Public functions.
# ----------------------------------------------------------------------------


def pass_at_k_curve(correct: ArrayLike, *, where: ArrayLike | None = None) -> jax.Array:
  """Unbiased pass@k estimates for every k = 1..n at once.

  Entry k−1 of the last axis is 1 − C(n−c, k)/C(n, k), with c the number of
  correct samples of the group: :func:`maxk.pass_at_k` at that k.  The curve is
  read from a static float64 table T[c, k] (1 − exp of cumulative sums of
  same-sign log1p terms, within ~1e-13 relative of the exact ratio), so every
  float32 entry is correctly rounded up to that error (it may differ from
  :func:`maxk.pass_at_k`, whose table is exact, by 1 ulp where the value falls on
  a rounding boundary).

  Cost: O(n) per group (the count and a gather of one table row); the table has
  n(n+1) entries (4 MiB in float32 at n = 1024), built once per n in O(n²) on the
  host and passed to the compiled lookup.

  Args:
    correct: ``[..., n]`` bool or {0, 1}; samples on the last axis.
    where: keyword-only, optional bool, broadcastable to ``correct``: the valid
      samples of each group (ragged groups; README's "Ragged groups"): a group's
      curve is that of its m valid samples alone, and NaN at every k > m
      (too few samples for that k, as the single-k function with ``where=``).
      Entry k−1 is 1 − exp(G_k(m) − G_k(m − c)), G_k(x) =
      Σ_{k<N<=x} log(1 − k/N) from a static float64 table split into two
      floats (measured within 2 ulp of the exact ratio in float32 at n = 64;
      tables of O(n²) entries, built once per n).

  Returns:
    ``[..., n]`` float32 (or the input's floating dtype) estimates in [0, 1],
    non-decreasing in k.  A group with a non-finite entry returns NaN for every
    k.  Values outside {0, 1} raise ``ValueError`` when called eagerly; under
    ``jit`` c is taken as the rounded sum of the group, as in :func:`maxk.pass_at_k`.

  Raises:
    ValueError: if ``correct`` is a scalar, empty or not {0, 1}.

  References: Chen et al., arXiv 2107.03374 (the pass@k estimator); Walder &
  Karkhanis, arXiv 2505.15201, Eq. 3.
  """
  values, n, valid = _validate_curve_correct(correct, where)
  if valid is not None:
    return _ragged_pass_curve(values, valid, _ragged_pass_operands(n, values.dtype), "pass")
  return _row_lookup(values, _pass_curve_operand(n, values.dtype))


def max_at_k_curve(rewards: ArrayLike, *, where: ArrayLike | None = None) -> jax.Array:
  """Unbiased max@k estimates for every k = 1..n at once.

  Entry k−1 of the last axis is Σ_j C(j−1, k−1)/C(n, k) · r_(j) over the sorted
  rewards, the mean over all k-subsets of the subset maximum: :func:`maxk.max_at_k`
  at that k.  Each entry is that function's sum with the static [n, n] float64
  weight table W[k, j] (from extended-precision log factorials, within ~1e-15
  relative of the exact ratios on x86): a compensated (TwoSum) sum over the
  sorted rewards, so the float32 error is about ε·Σ_j W[k, j] |r_(j)| + ε·|max@k|
  for any n and any offset of the rewards, as for :func:`maxk.max_at_k`.  The
  gradient with respect to the rewards is W[k, rank] (as for :func:`maxk.max_at_k`).

  Infinite rewards follow :func:`maxk.max_at_k` at each k: a +inf reward makes
  every entry +inf, m rewards −inf make the entries k <= m −inf (some k-subset
  holds only −inf), and both together give NaN there.

  Cost: O(n²) per group (one sort, then O(n) per k; the k's are mapped over in
  chunks that bound the intermediate to 2^24 elements); the weight table has n²
  entries (4 MiB in float32 at n = 1024), built once per n on the host.

  Args:
    rewards: ``[..., n]`` float rewards; samples on the last axis.  Ties and
      negative or infinite rewards are allowed.
    where: keyword-only, optional bool, broadcastable to ``rewards``: the valid
      samples of each group (ragged groups; README's "Ragged groups"): a group's
      curve is that of its m valid samples alone, and NaN at every k > m
      (too few samples for that k, as the single-k function with ``where=``).
      The weights C(t−1, k−1)/C(m, k) are products of static
      factors of t and of m, gathered per group (as :func:`maxk.max_at_k`).

  Returns:
    ``[..., n]`` estimates, non-decreasing in k.  A NaN in a group makes that
    group's whole curve NaN, and only it.

  Raises:
    ValueError: if ``rewards`` is a scalar, empty or not real.

  References: Walder & Karkhanis, "Pass@K Policy Optimization", arXiv 2505.15201,
  Eqs. 12-14.
  """
  rewards = checks.as_float_array(rewards, "rewards")
  n = rewards.shape[-1]
  if n < 1:
    raise ValueError(
      f"rewards must hold at least one sample on its last axis; got {rewards.shape}."
    )
  valid = ragged.as_valid(where, rewards.shape)
  if valid is not None:
    return _ragged_max_at_k_curve(rewards, valid, *_ragged_max_curve_operands(n, rewards.dtype))
  return _max_at_k_curve(rewards, *_max_curve_operands(n, rewards.dtype))


def pass_at_k_curve_variance(correct: ArrayLike, *, where: ArrayLike | None = None) -> jax.Array:
  """Unbiased estimates of the sampling variance of :func:`pass_at_k_curve`, k = 1..n//2.

  Entry k−1 is :func:`maxk.pass_at_k_variance` at k: V̂ = p (p − q) with
  p = C(n−c,k)/C(n,k) and q = C(n−c−k,k)/C(n−k,k), unbiased for the variance of
  the pass@k estimate when n >= 2k (U-statistic theory), in [0, 1/4].  The
  static float64 table V[c, k] holds, column by column, exactly the values of
  :func:`maxk.pass_at_k_variance`'s table at that k (so the results are
  bit-identical to it).

  Cost: O(n) per group (the count and a gather of one table row); the table has
  (n+1)·⌊n/2⌋ entries, built once per n in O(n²) on the host.

  Args:
    correct: ``[..., n]`` bool or {0, 1}; samples on the last axis; n >= 2.
    where: keyword-only, optional bool, broadcastable to ``correct``: the valid
      samples of each group (ragged groups; README's "Ragged groups"): a group's
      curve is that of its m valid samples alone, and NaN at every k > m/2
      (too few samples for that k, as the single-k function with ``where=``).
      The coefficients are those of :func:`maxk.pass_at_k_variance`
      with ``where=`` (products of static factors, gathered per group).

  Returns:
    ``[..., n // 2]`` variance estimates (entry k−1 for k = 1..⌊n/2⌋).  A group
    with a non-finite entry returns NaN for every k.

  Raises:
    ValueError: if ``correct`` has fewer than 2 samples or is not {0, 1}.

  References: Hoeffding 1948 (U-statistic variance); Chen et al., arXiv 2107.03374.
  """
  values, n, valid = _validate_curve_correct(correct, where)
  _check_pairs(n, "correct")
  if valid is not None:
    return _ragged_pass_curve(values, valid, _ragged_pass_operands(n, values.dtype), "variance")
  return _row_lookup(values, _pass_variance_curve_operand(n, values.dtype))


def max_at_k_curve_variance(rewards: ArrayLike, *, where: ArrayLike | None = None) -> jax.Array:
  """Unbiased estimates of the sampling variance of :func:`max_at_k_curve`, k = 1..n//2.

  Entry k−1 is :func:`maxk.max_at_k_variance` at k: with d_m the gaps of the
  sorted rewards, V̂ = Σ_m γ_m d_m (p_m d_m + 2 Σ_{m'<m} p_m' d_m'),
  p_m = C(m,k)/C(n,k), γ_m = C(m,k)/C(n,k) − C(m−k,k)/C(n−k,k), the same float64
  coefficients and the same float arithmetic at each k (so it is >= 0, shift
  invariant and accurate to about n·ε relative, as that function).  The
  prefix sum depends on k, so no all-k form is cheaper than one pass per k: the
  k's are mapped over in chunks that bound the intermediate to 2^24 elements.

  Cost: O(n log n + n²/2) per group (one sort, then O(n) per k); two coefficient
  tables of ⌊n/2⌋(n−1) entries, built once per n on the host.

  Args:
    rewards: ``[..., n]`` float rewards; samples on the last axis; n >= 2.  Ties
      are allowed; −inf rewards as in :func:`maxk.max_at_k_variance` (the
      entries with k <= their number are +inf, unless all rewards are −inf).
    where: keyword-only, optional bool, broadcastable to ``rewards``: the valid
      samples of each group (ragged groups; README's "Ragged groups"): a group's
      curve is that of its m valid samples alone, and NaN at every k > m/2
      (too few samples for that k, as the single-k function with ``where=``).
      Each k is :func:`maxk.max_at_k_variance` with ``where=``.

  Returns:
    ``[..., n // 2]`` variance estimates (entry k−1 for k = 1..⌊n/2⌋), >= 0.  A NaN
    in a group makes that group's whole curve NaN, and only it.

  Raises:
    ValueError: if ``rewards`` has fewer than 2 samples, or is not real.

  References: Hoeffding 1948 (U-statistic variance); Walder & Karkhanis, arXiv
  2505.15201, Eqs. 12-14 (the estimator).
  """
  rewards = checks.as_float_array(rewards, "rewards")
  n = rewards.shape[-1]
  _check_pairs(n, "rewards")
  valid = ragged.as_valid(where, rewards.shape)
  if valid is not None:
    operands = _ragged_gap_curve_operands(n, rewards.dtype)
    return _ragged_max_at_k_curve_variance(rewards, valid, *operands)
  return _max_at_k_curve_variance(rewards, *_gap_curve_operands(n, rewards.dtype))


# The two estimators of pass^k = p^k that :func:`pass_hat_k` offers.
PASS_HAT_ESTIMATORS = ("unbiased", "plug_in")


def pass_hat_k(
  correct: ArrayLike,
  k: int,
  *,
  estimator: str = "unbiased",
  where: ArrayLike | None = None,
) -> jax.Array:
  """pass^k estimate (all k samples correct) from n samples per group.

  pass^k of a policy is p^k, the probability that k i.i.d. samples are all
  correct (p the probability that one is).  Two estimators, from the number c of
  correct samples among n (``estimator``):

  * ``"unbiased"`` (default): C(c, k)/C(n, k), the fraction of k-subsets of the n
    samples that hold only correct ones.  A U-statistic, so E[C(c, k)/C(n, k)] =
    p^k exactly; it is G-Pass@k_τ at τ = 1 (:func:`g_pass_at_k`).  Read from a
    static float64 table indexed by c, exact (correctly rounded) for n <= 8192 as
    :func:`maxk.pass_at_k`.
  * ``"plug_in"``: (c/n)^k, the k-th power of the success rate.  Biased upwards
    for k >= 2 (and 0 < p < 1): x ↦ x^k is convex, so by Jensen's inequality
    E[(c/n)^k] > (E[c/n])^k = p^k.  With c ~ Binomial(n, p) its expectation is

      E[(c/n)^k] = Σ_{j=1}^{k} S(k, j) · n(n−1)···(n−j+1)/n^k · p^j
                 = p^k + C(k, 2) p^(k−1) (1 − p)/n + O(1/n²),

    S(k, j) the Stirling numbers of the second kind (the binomial's factorial
    moments E[c(c−1)···(c−j+1)] = n(n−1)···(n−j+1) p^j); at k = 2 exactly
    p² + p(1 − p)/n.  The bias vanishes as n grows at fixed k, but not at k
    near n: at k = n the unbiased estimate is 1[c = n] and the plug-in (c/n)^n.
    Computed in the input's floating dtype.

  Cost O(n) per group (the count).

  Args:
    correct: ``[..., n]`` bool or {0, 1}; samples on the last axis.
    k: static int, ``1 <= k <= n``.
    estimator: keyword-only, ``"unbiased"`` (default) or ``"plug_in"``.
    where: keyword-only, optional bool, broadcastable to ``correct``: the valid
      samples of each group (ragged groups): a group's estimate is that of its m
      valid samples alone (c/m for the plug-in), NaN where m < k (for both
      estimators).  The unbiased estimator's float64 table over (m, c) costs
      O(n²·k) once per (n, k) on the host (seconds at n = 1024, k = 128).

  Returns:
    ``[...]`` estimates in [0, 1].  A group with a non-finite entry returns NaN.
    Values outside {0, 1} raise ``ValueError`` when called eagerly; under ``jit``
    c is taken as the rounded sum of the group (the plain sum for the plug-in).

  Raises:
    ValueError: if ``k`` is not an int in [1, n], ``estimator`` is unknown or
      ``correct`` is not {0, 1}.

  References: Yao et al., "τ-bench", arXiv 2406.12045 (pass^k); Liu et al.,
  arXiv 2412.13147 (G-Pass@k, its τ = 1 case).
  """
  values, n, k, valid = metrics.validate_correct(correct, k, where)
  checks.check_option(estimator, "estimator", PASS_HAT_ESTIMATORS)
  if estimator == "plug_in":
    return _pass_hat_plug_in(values, valid, k)
  if valid is not None:
    return _ragged_lookup(values, valid, _ragged_pass_hat_operand(n, k, values.dtype))
  return metrics.table_lookup(values, _pass_hat_operand(n, k, values.dtype))


@functools.partial(jax.jit, static_argnums=2)
def _pass_hat_plug_in(values: jax.Array, valid: jax.Array | None, k: int) -> jax.Array:
  """(c/m)^k per group, m its number of valid samples; NaN where m < k."""
  if valid is None:
    return jnp.mean(values, axis=-1) ** k
  m = jnp.sum(valid, axis=-1, dtype=jnp.int32)
  c = jnp.sum(jnp.where(valid, values, 0), axis=-1)
  rate = c / jnp.maximum(m, 1).astype(values.dtype)
  return jnp.where(m >= k, rate**k, jnp.nan)


def pass_hat_k_curve(correct: ArrayLike, *, where: ArrayLike | None = None) -> jax.Array:
  """Unbiased pass^k estimates C(c, k)/C(n, k) for every k = 1..n at once.

  Entry k−1 is :func:`pass_hat_k` at k, read from a static float64 table (the
  reversed rows of :func:`pass_at_k_curve`'s, within ~1e-13 relative of the exact
  ratio).  Cost O(n) per group; a table of n(n+1) entries, built once per n.

  Args:
    correct: ``[..., n]`` bool or {0, 1}; samples on the last axis.
    where: keyword-only, optional bool, broadcastable to ``correct``: the valid
      samples of each group (ragged groups; README's "Ragged groups"): a group's
      curve is that of its m valid samples alone, and NaN at every k > m
      (too few samples for that k, as the single-k function with ``where=``).
      Entry k−1 is C(c, k)/C(m, k), a product of static factors
      of c and of m (each a float64 binomial's mantissa and exponent).

  Returns:
    ``[..., n]`` estimates in [0, 1], non-increasing in k.  A group with a
    non-finite entry returns NaN for every k.

  Raises:
    ValueError: if ``correct`` is a scalar, empty or not {0, 1}.

  References: Yao et al., "τ-bench", arXiv 2406.12045 (pass^k).
  """
  values, n, valid = _validate_curve_correct(correct, where)
  if valid is not None:
    return _ragged_pass_curve(values, valid, _ragged_pass_operands(n, values.dtype), "pass_hat")
  return _row_lookup(values, _pass_hat_curve_operand(n, values.dtype))


def g_pass_at_k(
  correct: ArrayLike, k: int, tau: float, *, where: ArrayLike | None = None
) -> jax.Array:
  """G-Pass@k_τ of Liu et al.: the estimated probability that at least ⌈τk⌉ of k
  samples are correct.

  G-Pass@k_τ ≈ Σ_{j=⌈τk⌉}^{k} C(c, j) C(n−c, k−j)/C(n, k), the fraction of k-subsets
  of the n samples with at least ⌈τk⌉ correct ones (c correct samples in all):
  an unbiased estimate of P(Binomial(k, p) >= ⌈τk⌉) (a U-statistic).  τ = 1 gives
  pass^k (:func:`pass_hat_k`), and any 0 < τ <= 1/k, as τ -> 0, gives pass@k
  (:func:`maxk.pass_at_k`).  The paper defines τ ∈ (0, 1]; τ = 0 is accepted as
  that limit (threshold 1, as in the authors' code).  τ = i/k in floating point
  asks for exactly i, whatever τ's dtype: a τk within 1e-9 of the integer i, or a
  τ equal to i/k rounded to τ's own dtype (a NumPy float16 or float32 scalar),
  counts as i/k (float16 resolves i/k for k up to about 2^10, float32 up to about
  2^23).  This is where it differs from GPassK's ⌈kτ⌉ computed in floating point,
  which asks for 4 of 10 at ``np.float32(0.3)`` and for 8 of 25 at τ = 0.28
  (0.28 · 25 = 7.000000000000001).

  The value is read from a static float64 table over c (hypergeometric tail sums
  of non-negative terms from extended-precision log factorials, ~1e-15 relative
  on x86).  Cost O(n) per group (the count); the table costs O(n·k) once per
  (n, k, ⌈τk⌉) on the host.  The mean over prompts is the benchmark score.

  Args:
    correct: ``[..., n]`` bool or {0, 1}; samples on the last axis.
    k: static int, ``1 <= k <= n``.
    tau: the tolerance τ, a real number in [0, 1] (positional or keyword): a
      Python number or a NumPy float scalar of any precision.
    where: keyword-only, optional bool, broadcastable to ``correct``: the valid
      samples of each group (ragged groups): a group's estimate is that of its m
      valid samples alone, NaN where m < k.  Its float64 table over (m, c)
      costs O(n²·k) once per (n, k) on the host (seconds at n = 1024, k = 128).

  Returns:
    ``[...]`` per-group estimates in [0, 1].  A group with a non-finite entry
    returns NaN.  Values outside {0, 1} raise ``ValueError`` when called eagerly.

  Raises:
    ValueError: if ``k`` is not an int in [1, n], ``tau`` is not a real number
      in [0, 1], or ``correct`` is not {0, 1}.

  References: Liu et al., "Are Your LLMs Capable of Stable Reasoning?", arXiv
  2412.13147, Sec. 2 (the definition of G-Pass@k_τ).
  """
  values, n, k, valid = metrics.validate_correct(correct, k, where)
  tau_value, tau_dtype = _check_tau(tau)
  threshold = _threshold(tau_value, k, tau_dtype)
  if valid is not None:
    table = _ragged_g_pass_operand(n, k, threshold, values.dtype)
    return _ragged_lookup(values, valid, table)
  return metrics.table_lookup(values, _g_pass_operand(n, k, threshold, values.dtype))


def mg_pass_at_k(correct: ArrayLike, k: int, *, where: ArrayLike | None = None) -> jax.Array:
  """mG-Pass@k of Liu et al.: G-Pass@k_τ averaged over τ ∈ [0.5, 1].

  mG-Pass@k = (2/k) Σ_{i=⌈k/2⌉+1}^{k} G-Pass@k_{i/k} (:func:`g_pass_at_k`), the
  paper's discretisation of 2∫_{0.5}^{1} G-Pass@k_τ dτ; equivalently
  (2/k) E[(X − ⌈k/2⌉)_+] for X the number of correct samples in a random
  k-subset.  Unbiased for the same functional of Binomial(k, p).  As defined, the
  weights 2/k over ⌊k/2⌋ terms sum to 2⌊k/2⌋/k: for odd k a policy that is
  always correct scores (k−1)/k, not 1, and mG-Pass@1 = 0 (an empty sum).

  Read from a static float64 table over c (as :func:`g_pass_at_k`).  Cost O(n)
  per group; the table costs O(n·k) once per (n, k) on the host.

  Args:
    correct: ``[..., n]`` bool or {0, 1}; samples on the last axis.
    k: static int, ``1 <= k <= n``.
    where: keyword-only, optional bool, broadcastable to ``correct``: the valid
      samples of each group (ragged groups): a group's estimate is that of its m
      valid samples alone, NaN where m < k.  Its float64 table over (m, c)
      costs O(n²·k) once per (n, k) on the host (seconds at n = 1024, k = 128).

  Returns:
    ``[...]`` per-group estimates in [0, 2⌊k/2⌋/k].  A group with a non-finite
    entry returns NaN.  Values outside {0, 1} raise ``ValueError`` when called
    eagerly.

  Raises:
    ValueError: if ``k`` is not an int in [1, n] or ``correct`` is not {0, 1}.

  References: Liu et al., "Are Your LLMs Capable of Stable Reasoning?", arXiv
  2412.13147, Sec. 2 (the definition of mG-Pass@k).
  """
  values, n, k, valid = metrics.validate_correct(correct, k, where)
  if valid is not None:
    return _ragged_lookup(values, valid, _ragged_mg_pass_operand(n, k, values.dtype))
  return metrics.table_lookup(values, _mg_pass_operand(n, k, values.dtype))
