"""Static binomial-coefficient tables, computed once per (n, k) in float64.

The estimators in this package are linear in the *sorted* rewards with coefficients
that depend only on the static sizes ``n`` and ``k``, e.g. the U-statistic weight of
the j-th smallest of n rewards in max@k is C(j-1, k-1) / C(n, k) (PKPO Eq. 13).
``C(n, k)`` overflows float32 for n as small as 40, so every ratio of binomials is
evaluated here as ``exp(log C(a, b) - log C(c, d))`` with ``math.lgamma`` in float64
(absolute log error ~1e-16 * log C, i.e. relative error < 1e-11 for n <= 10^6) and
only then cast to the caller's dtype.  Ratios whose true value underflows the
target dtype become 0, which is the correctly rounded result.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import numpy.typing as npt

_lgamma = np.frompyfunc(math.lgamma, 1, 1)


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
  """``scale * C(top, bottom) / C(n, k)`` elementwise, in float64 (0 where C(top, bottom) = 0)."""
  with np.errstate(over="ignore", under="ignore"):
    return scale * np.exp(log_binom(top, bottom) - float(log_binom(n, k)))


@functools.lru_cache(maxsize=256)
def max_weights(n: int, k: int) -> np.ndarray:
  """w_j = C(j-1, k-1) / C(n, k) for ranks j = 1..n (ascending); shape [n], float64.

  ``sum_j w_j r_(j)`` is the mean over all k-subsets of the subset maximum
  (PKPO Eq. 12-14; the max@k paper App. C.1).  The weights sum to 1.
  """
  j = np.arange(1, n + 1)
  return binom_ratio(j - 1, k - 1, n, k)
