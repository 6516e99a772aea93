"""Static binomial-coefficient tables, computed once per (n, k) in float64.

The estimators in this package are linear in the *sorted* rewards with coefficients
that depend only on the static sizes ``n`` and ``k``, e.g. the U-statistic weight of
the j-th smallest of n rewards in max@k is C(j-1, k-1) / C(n, k) (PKPO Eq. 13).
``C(n, k)`` overflows float32 for n as small as 40, so a ratio of binomials is never
formed in floating point from its parts.  For sizes up to ``EXACT_MAX_N`` it is the
exact ratio of Python integers, correctly rounded to float64 (integer true division
rounds correctly), so the tables are exact to 1/2 ulp also under ``jax_enable_x64``;
beyond that it is ``exp(log C(a, b) - log C(c, d))`` with ``math.lgamma`` in float64
(absolute log error ~ eps * log Γ(n): relative error measured at 3e-11 for n = 16384
and 1.2e-10 for n = 65536), except ``1 - C(n - c, k)/C(n, k)`` (pass@k), which is a
prefix sum of ``log1p`` terms and stays within a few ulp however close it is to 0.
Only then are tables cast to the caller's dtype.  Ratios whose true value
underflows the target dtype become 0, which is the correctly rounded result.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import numpy.typing as npt

_lgamma = np.frompyfunc(math.lgamma, 1, 1)

# Binomial ratios with every argument <= EXACT_MAX_N are computed exactly with
# Python integers (a table for n = 4096 takes a few ms); larger ones in log space.
EXACT_MAX_N = 8192


@functools.lru_cache(maxsize=64)
def _comb_column(bottom: int, top_max: int) -> tuple[int, ...]:
  """(C(0, b), C(1, b), ..., C(top_max, b)) as exact Python integers (b >= 0)."""
  out = [0] * (top_max + 1)
  if bottom <= top_max:
    value = 1  # C(b, b)
    out[bottom] = value
    for j in range(bottom + 1, top_max + 1):
      value = value * j // (j - bottom)
      out[j] = value
  return tuple(out)


def _exact_comb(top: int, bottom: int, top_max: int) -> int:
  if bottom < 0 or bottom > top:
    return 0
  return _comb_column(bottom, top_max)[top]


def _exact_ratio(
  top: np.ndarray, bottom: np.ndarray, n: int, k: int, complement: bool
) -> np.ndarray:
  """C(top, bottom)/C(n, k) (or 1 minus it), correctly rounded to float64."""
  top_max = int(max(n, int(top.max(initial=0))))
  denom = _exact_comb(n, k, top_max)
  out = np.empty(top.shape, np.float64)
  flat_top, flat_bottom, flat_out = top.ravel(), bottom.ravel(), out.reshape(-1)
  for i in range(flat_top.size):
    numer = _exact_comb(int(flat_top[i]), int(flat_bottom[i]), top_max)
    flat_out[i] = (denom - numer) / denom if complement else numer / denom
  return out


def _use_exact(top: np.ndarray, n: int) -> bool:
  return max(n, int(top.max(initial=0))) <= EXACT_MAX_N


def log_binom(top: npt.ArrayLike, bottom: npt.ArrayLike) -> np.ndarray:
  """Elementwise log C(top, bottom) in float64; -inf where the binomial is 0.

  C(a, b) is taken to be 0 unless 0 <= b <= a (integers), so that sums over
  ranks can use the full index range without special cases.
  """
  top = np.asarray(top, dtype=np.int64)
  bottom = np.asarray(bottom, dtype=np.int64)
  top, bottom = np.broadcast_arrays(top, bottom)
  valid = (bottom >= 0) & (bottom <= top)
  t = np.where(valid, top, 0).astype(np.float64)
  b = np.where(valid, bottom, 0).astype(np.float64)
  out = np.asarray(_lgamma(t + 1.0) - _lgamma(b + 1.0) - _lgamma(t - b + 1.0), dtype=np.float64)
  return np.where(valid, out, -np.inf)


def binom_ratio(
  top: npt.ArrayLike, bottom: npt.ArrayLike, n: int, k: int, *, scale: float = 1.0
) -> np.ndarray:
  """``scale * C(top, bottom) / C(n, k)`` elementwise, in float64 (0 where C(top, bottom) = 0).

  Requires 0 <= k <= n.  Correctly rounded (before ``scale``) for sizes up to
  ``EXACT_MAX_N``; relative error ~1e-16 * log C(n, k) beyond.
  """
  t, b = np.broadcast_arrays(np.asarray(top, np.int64), np.asarray(bottom, np.int64))
  if _use_exact(t, n):
    return scale * _exact_ratio(t, b, n, k, complement=False)
  with np.errstate(over="ignore", under="ignore"):
    return scale * np.exp(log_binom(t, b) - float(log_binom(n, k)))


def binom_ratio_complement(top: npt.ArrayLike, bottom: npt.ArrayLike, n: int, k: int) -> np.ndarray:
  """``1 - C(top, bottom) / C(n, k)`` elementwise in float64, without cancellation.

  Exact (correctly rounded) for sizes up to ``EXACT_MAX_N``, else ``-expm1`` of the
  log ratio, so it is accurate both near 0 and near 1; with ``bottom == k`` and
  ``0 <= top <= n`` (pass@k's table) the log ratio is a sum of ``log1p`` terms
  (relative error <= 1e-13 measured against exact rationals up to n = 65536).
  """
  t, b = np.broadcast_arrays(np.asarray(top, np.int64), np.asarray(bottom, np.int64))
  if _use_exact(t, n):
    return _exact_ratio(t, b, n, k, complement=True)
  if t.size and np.all(b == k) and 0 <= t.min() and t.max() <= n:
    return -np.expm1(_log_ratio_fewer(n, k)[n - t])
  return -np.expm1(log_binom(t, b) - float(log_binom(n, k)))


@functools.lru_cache(maxsize=64)
def _log_ratio_fewer(n: int, k: int) -> np.ndarray:
  """L[c] = log(C(n - c, k) / C(n, k)) for c = 0..n in float64 (-inf where it is 0).

  From C(n-c-1, k)/C(n-c, k) = 1 - k/(n-c): prefix sums of ``log1m_ratio`` terms of
  one sign, accumulated in extended precision where the platform has it.  Unlike a
  difference of log-gammas (absolute error ~ eps * log Γ(n), i.e. 5e-7 relative in
  1 - C(n-1, 1)/C(n, 1) at n = 16384), the error is a few ulp of |L[c]|, so
  ``-expm1(L[c])`` keeps its relative accuracy as L[c] -> 0.
  """
  size = np.arange(n, 0, -1, dtype=np.float64)  # n - c for c = 0..n-1
  with np.errstate(divide="ignore", invalid="ignore"):
    steps = np.where(size > k, log1m_ratio(float(k), size), -np.inf)
  out = np.zeros(n + 1, np.float64)
  out[1:] = np.cumsum(steps.astype(np.longdouble)).astype(np.float64)
  return out


@functools.lru_cache(maxsize=256)
def max_weights(n: int, k: int) -> np.ndarray:
  """w_j = C(j-1, k-1) / C(n, k) for ranks j = 1..n (ascending); shape [n], float64.

  ``sum_j w_j r_(j)`` is the mean over all k-subsets of the subset maximum
  (PKPO Eq. 12-14; the max@k paper App. C.1).  The weights sum to 1.
  """
  j = np.arange(1, n + 1)
  return binom_ratio(j - 1, k - 1, n, k)


def log1m_ratio(num: npt.ArrayLike, den: npt.ArrayLike) -> np.ndarray:
  """log(1 − num/den) elementwise in float64, for 0 <= num <= den (-inf where num = den).

  ``log1p(−num/den)`` while num/den < 1/2, else ``log((den − num)/den)``, whose
  subtraction is exact there (Sterbenz); either way the result is within a few ulp
  (relative) for exactly represented inputs, with no cancellation near num = 0 or
  num = den.  Sums of these terms give log-ratios of products such as
  C(n−c, k)/C(n, k) = Π_j (1 − c/(n−j)) without differencing large log-gammas.
  """
  num = np.asarray(num, np.float64)
  den = np.asarray(den, np.float64)
  with np.errstate(divide="ignore", invalid="ignore"):
    ratio = num / den
    return np.where(ratio < 0.5, np.log1p(-ratio), np.log((den - num) / den))
