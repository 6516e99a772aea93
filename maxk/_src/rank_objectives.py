"""Rank (order-statistic) objectives of k draws: weights, estimates, advantages.

A rank objective of k i.i.d. rewards is J = E[Σ_j w_j X_(j:k)], X_(1:k) <= ... <=
X_(k:k) the order statistics and w a static weight vector over *ascending* ranks
(w = e_k is max@k, w = e_1 is min@k, w = 1/k the mean reward).  From n >= k draws
with sorted rewards r_(1) <= ... <= r_(n), the unbiased estimate (the U-statistic:
the mean over all k-subsets I of L(I) = Σ_j w_j (j-th smallest of I)) is

  U = Σ_i c_i r_(i),   c_i = Σ_j w_j C(i-1, j-1) C(n-i, k-j) / C(n, k),

since r_(i) is the j-th smallest of C(i-1, j-1) C(n-i, k-j) subsets.  The same
count gives E[X_(j:k)] = Σ_i C(i-1,j-1) C(m-i,k-j)/C(m,k) E[X_(i:m)] for m >= k
draws, so c = :func:`lift_rank_weights` (w, n).

The policy-gradient transform S(i) = (1/C(n,k)) Σ_{I∋i} L(I) splits, for the sample
of rank p, into p's own rank in I and the other members m of I.  A member of rank
m > p is the j-th smallest of C(m-2, j-2) C(n-m, k-j) subsets holding p and m, one
of rank m < p of C(m-1, j-1) C(n-m-1, k-j-1): neither count depends on p, so

  S_(p) = d_p r_(p) + Σ_{m>p} u_m r_(m) + Σ_{m<p} ℓ_m r_(m),   d = c,

a prefix plus a suffix sum with static coefficients (the leave-one-out baselines
are U over n-1 samples, whose coefficients are also a prefix and a suffix).
Tables are computed once per (n, w) in float64 from log-factorials (no C(n, k) is
formed), O(n k); each call costs one sort and two cumulative sums, O(n log n).

Infinite rewards.  Every value here is a mean over subsets of L(I), and is
defined with infinite rewards by IEEE arithmetic with the terms of zero weight
left out: an infinite reward enters a value as ±inf where some subset holds it at
a rank j with w_j != 0, by the sign of w_j (and of the reward).  Which ranks do
is a question of which binomial counts are nonzero, answered exactly from the
weights' signs (a float coefficient can underflow to 0 although its count is
positive, e.g. 1/C(200, 100) in float32); infinite terms of both signs give NaN.

References: Parmas et al., "OrderGrad", arXiv 2606.06096 (finite-sample
L-statistic objectives and their likelihood-ratio transforms); Hoeffding (1948),
"A class of statistics with asymptotically normal distribution" (U-statistics);
Walder & Karkhanis, "Pass@K Policy Optimization", arXiv 2505.15201 (Eqs. 12-14,
18-21, 29-30: the max weights).
"""

from __future__ import annotations

import functools
import math
import numbers
from typing import Any, NamedTuple, TypeVar

import jax
from jax import lax
import jax.numpy as jnp
from jax.typing import ArrayLike
from jax.typing import DTypeLike
import numpy as np
import numpy.typing as npt

from maxk._src import checks
from maxk._src import ragged
from maxk._src import sorted_kernels
from maxk._src import sorting

# The ``baseline`` options of :func:`order_stat_advantages`.
ORDER_STAT_BASELINES = ("none", "loo", "loo_centered")

_T = TypeVar("_T")
# A static table: NumPy (float64, int or bool) on the host, passed to the kernels as
# an array of the rewards' dtype (ints as int32, bools as bools).
_Table = Any

# Table entries per chunk of ranks j (bounds the float64 work array to ~32 MiB).
_CHUNK_ELEMENTS = 1 << 22


# ----------------------------------------------------------------------------
# Rank weights.
# ----------------------------------------------------------------------------


def _check_k(k: object) -> int:
  if isinstance(k, numbers.Real) and not isinstance(k, (bool, np.bool_, numbers.Integral)):
    raise ValueError(
      f"k={k!r} must be a Python int: a rank objective over a real-valued number of"
      " draws has no unbiased estimator from n draws.  For a randomised k (J_k0 with"
      " probability 1-t, J_(k0+1) with probability t), lift both weight vectors to k0+1"
      " with lift_rank_weights and mix them: (1-t)*lift(w_k0, k0+1) + t*w_(k0+1)."
    )
  return checks.check_int(k, "k", low=1)


def _check_count(value: object, name: str, k: int) -> int:
  return checks.check_int(value, name, low=1, high=k, high_name="k")


def _tail_count(alpha: object, k: int) -> int:
  if isinstance(alpha, (bool, np.bool_)) or not isinstance(alpha, numbers.Real):
    raise ValueError(f"alpha={alpha!r} must be a real number in (0, 1].")
  a = float(alpha)
  if not 0.0 < a <= 1.0:
    raise ValueError(f"alpha={alpha!r} must satisfy 0 < alpha <= 1.")
  x = a * k
  nearest = round(x)
  # alpha*k within rounding of an integer is that integer (0.3 * 10 = 3.0000000000000004).
  m = nearest if abs(x - nearest) <= 1e-9 * max(1.0, x) else math.ceil(x)
  return max(1, min(k, int(m)))


_KIND_PARAMS: dict[str, tuple[str, ...]] = {
  "max": (),
  "min": (),
  "mean": (),
  "median": (),
  "top_m": ("m",),
  "bottom_m": ("m",),
  "upper_tail_mean": ("alpha",),
}

# The ``kind`` options of :func:`rank_weights`.
RANK_WEIGHT_KINDS = tuple(_KIND_PARAMS)


def rank_weights(kind: str, k: int, **params: object) -> np.ndarray:
  """Weight vector over ascending ranks of a named rank objective of k draws.

  J = E[Σ_j w_j X_(j:k)] with X_(1:k) <= ... <= X_(k:k); ``w[-1]`` weighs the maximum.

  * ``"max"``: e_k (max@k; pass@k on {0, 1} rewards).
  * ``"min"``: e_1 (min@k; pass^k, all k correct, on {0, 1} rewards).
  * ``"mean"``: 1/k everywhere (the mean reward, for any k).
  * ``"median"``: the middle rank; for even k the mean of the two middle ranks.
  * ``"top_m"`` (``m``, 1 <= m <= k): 1/m on the top m ranks.
  * ``"bottom_m"`` (``m``): 1/m on the bottom m ranks.
  * ``"upper_tail_mean"`` (``alpha`` in (0, 1]): CVaR-style mean of the top
    max(1, ceil(alpha k)) ranks; alpha k within 1e-9 of an integer counts as that
    integer (alpha = 0.3, k = 10 gives 3 ranks, not 4).

  References: Parmas et al., "OrderGrad", arXiv 2606.06096 (rank weights of VaR,
  CVaR, medians, top-m).

  Args:
    kind: one of the kinds above.
    k: static int >= 1, the number of draws.  Only integers: see Raises.
    **params: the kind's parameters (``m`` or ``alpha``) and no others.

  Returns:
    ``[k]`` float64 NumPy weights over ascending ranks.

  Raises:
    ValueError: unknown ``kind``; missing, unexpected or out-of-range parameters;
      ``k`` not an int >= 1.  A real-valued k has no unbiased estimator from n
      draws; a randomised k (k0 with probability 1-t, k0+1 with probability t) does,
      by mixing the two weight vectors after :func:`lift_rank_weights` to k0+1.
  """
  kind = checks.check_option(kind, "kind", RANK_WEIGHT_KINDS)
  k = _check_k(k)
  expected = _KIND_PARAMS[kind]
  missing = [p for p in expected if p not in params]
  extra = sorted(p for p in params if p not in expected)
  if missing or extra:
    raise ValueError(
      f"rank_weights kind={kind!r} takes parameters {list(expected)}; "
      f"missing {missing}, unexpected {extra}."
    )
  w = np.zeros(k)
  if kind == "max":
    w[-1] = 1.0
  elif kind == "min":
    w[0] = 1.0
  elif kind == "mean":
    w[:] = 1.0 / k
  elif kind == "median":
    if k % 2:
      w[k // 2] = 1.0
    else:
      w[k // 2 - 1 : k // 2 + 1] = 0.5
  elif kind == "top_m":
    m = _check_count(params["m"], "m", k)
    w[k - m :] = 1.0 / m
  elif kind == "bottom_m":
    m = _check_count(params["m"], "m", k)
    w[:m] = 1.0 / m
  else:  # upper_tail_mean
    m = _tail_count(params["alpha"], k)
    w[k - m :] = 1.0 / m
  return w


# ----------------------------------------------------------------------------
# Static coefficient tables.
# ----------------------------------------------------------------------------


def check_weights(weights: object, *, n: int | None = None) -> tuple[float, ...]:
  """``weights`` as a tuple of floats (a hashable, static value), validated.

  Raises:
    ValueError: if ``weights`` is not a concrete, non-empty, finite 1-D sequence,
      or (when ``n`` is given) has more than n entries.
  """
  if isinstance(weights, jax.core.Tracer):
    raise ValueError("weights must be static (a concrete 1-D sequence), not a traced array.")
  try:
    w = np.asarray(weights, dtype=np.float64)
  except (TypeError, ValueError) as e:
    raise ValueError(f"weights must be a 1-D sequence of numbers: {e}") from e
  if w.ndim != 1:
    raise ValueError(f"weights must be 1-D (one weight per rank); got shape {w.shape}.")
  if w.size == 0:
    raise ValueError("weights must not be empty (k = len(weights) must be >= 1).")
  if not np.all(np.isfinite(w)):
    raise ValueError("weights must be finite.")
  if n is not None and w.size > n:
    raise ValueError(f"k={w.size} (len(weights)) must satisfy 1 <= k <= n={n}.")
  return tuple(float(x) for x in w)


@functools.lru_cache(maxsize=16)
def _log_factorials(size: int) -> np.ndarray:
  """log(i!) for i = 0..size in float64 (``math.lgamma``, correctly rounded to ~1 ulp)."""
  return np.array([math.lgamma(i + 1.0) for i in range(size + 1)])


def _log_binom(lf: np.ndarray, top: np.ndarray, bottom: np.ndarray) -> np.ndarray:
  """log C(top, bottom) from the log-factorial table; -inf unless 0 <= bottom <= top."""
  valid = (bottom >= 0) & (bottom <= top)
  t = np.where(valid, top, 0)
  b = np.where(valid, bottom, 0)
  return np.where(valid, lf[t] - lf[b] - lf[t - b], -np.inf)


def _rank_sum(
  w: tuple[float, ...],
  top1: npt.ArrayLike,
  shift1: int,
  top2: npt.ArrayLike,
  shift2: int,
  denom: int,
) -> np.ndarray:
  """Σ_j w_j C(top1, j-1+shift1) C(top2, k-j+shift2) / C(denom, k), float64.

  ``top1`` and ``top2`` are integer vectors (one entry per output rank); every
  product of binomials is formed as exp of a sum of log-factorials.  Cost
  O(len(top1) · #nonzero(w)), in chunks of ranks j.
  """
  k = len(w)
  top1 = np.asarray(top1, np.int64)
  top2 = np.asarray(top2, np.int64)
  lf = _log_factorials(max(denom, int(top1.max(initial=0)), int(top2.max(initial=0)), k) + 1)
  log_den = float(_log_binom(lf, np.array(denom), np.array(k)))
  # log C(t, b) = lf[t] − lf[b] − lf[t − b]: the first term depends on the output
  # rank only, the second on j only.
  base = np.where((top1 >= 0) & (top2 >= 0), lf[np.maximum(top1, 0)] + lf[np.maximum(top2, 0)], 0)
  weights = np.asarray(w)
  ranks = np.flatnonzero(weights) + 1  # j = 1..k with w_j != 0
  out = np.zeros(top1.shape)
  chunk = max(1, _CHUNK_ELEMENTS // max(1, top1.size))
  for start in range(0, ranks.size, chunk):
    j = ranks[start : start + chunk]
    b1, b2 = j - 1 + shift1, k - j + shift2
    rows = (b1 >= 0) & (b2 >= 0)
    j, b1, b2 = j[rows], b1[rows], b2[rows]
    d1 = top1[None, :] - b1[:, None]
    d2 = top2[None, :] - b2[:, None]
    valid = (d1 >= 0) & (d2 >= 0)
    log_terms = (
      (base - log_den)[None, :]
      - (lf[b1] + lf[b2])[:, None]
      - lf[np.maximum(d1, 0)]
      - lf[np.maximum(d2, 0)]
    )
    with np.errstate(under="ignore"):
      out += weights[j - 1] @ np.where(valid, np.exp(log_terms), 0.0)
  return out


def _reach(
  w: tuple[float, ...],
  top1: npt.ArrayLike,
  shift1: int,
  top2: npt.ArrayLike,
  shift2: int,
) -> tuple[np.ndarray, np.ndarray]:
  """Whether Σ_j w_j C(top1, j-1+shift1) C(top2, k-j+shift2) has a nonzero term with
  w_j > 0 (first) and with w_j < 0 (second), exactly: the binomials are nonzero
  for j in an interval, so this counts signed weights there (no floating point)."""
  k = len(w)
  top1 = np.asarray(top1, np.int64)
  top2 = np.asarray(top2, np.int64)
  lo = np.maximum(np.maximum(1, 1 - shift1), k + shift2 - top2)
  hi = np.minimum(np.minimum(k, top1 + 1 - shift1), k + shift2)
  empty = hi < lo
  lo, hi = np.where(empty, 1, lo), np.where(empty, 0, hi)
  weights = np.asarray(w)
  pos, neg = (np.concatenate([[0], np.cumsum(sign)]) for sign in (weights > 0, weights < 0))
  return pos[hi] - pos[lo - 1] > 0, neg[hi] - neg[lo - 1] > 0


@functools.lru_cache(maxsize=256)
def _lifted(w: tuple[float, ...], size: int) -> np.ndarray:
  """v_i = Σ_j w_j C(i-1, j-1) C(size-i, k-j) / C(size, k), i = 1..size."""
  i = np.arange(1, size + 1)
  return _rank_sum(w, i - 1, 0, size - i, 0, size)


def _lifted_reach(w: tuple[float, ...], size: int) -> tuple[np.ndarray, np.ndarray]:
  """The signed parts of :func:`_lifted` (see :func:`_reach`)."""
  i = np.arange(1, size + 1)
  return _reach(w, i - 1, 0, size - i, 0)


class _EstimateTables(NamedTuple):
  """c = lift(w, n) in float64 and its exact signed parts (``[n]`` bools)."""

  coeffs: _Table
  pos: _Table
  neg: _Table


@functools.lru_cache(maxsize=256)
def _estimate_tables(w: tuple[float, ...], n: int) -> _EstimateTables:
  return _EstimateTables(_lifted(w, n), *_lifted_reach(w, n))


class _AdvantageTables(NamedTuple):
  """Static tables of :func:`order_stat_advantages` for one (w, n, baseline).

  For n > k, (diag, suffix, prefix) of the "loo_centered" transform a_lc(q) =
  d_q x_(q) + Σ_{m>q} u_m x_(m) − Σ_{m<q} p_m x_(m), x the rewards measured from
  the reward of rank ``shift`` (0-based); the baseline asked for is
  alpha·a_lc + beta·U.

  Where infinite rewards enter a_(q), exactly (row 0 of each table: with a
  positive coefficient, row 1: a negative one; ranks 1-based): ``inf_diag``
  ``[2, n]``, the reward of rank q itself.  A reward of rank m > q enters every
  a_(q), q < m, where the suffix support holds at m: ``suffix_next`` ``[2, n]``
  is the first such m > q (n+1 if none), ``suffix_last`` ``[2, 1]`` the last
  such m (0 if none).  One of rank m < q enters where the prefix support holds:
  ``prefix_prev`` ``[2, n]`` the last such m < q (0 if none), ``prefix_first``
  ``[2, 1]`` the first such m (n+1 if none).
  """

  estimate: _EstimateTables
  diag: _Table
  suffix: _Table
  prefix: _Table
  alpha: _Table
  beta: _Table
  shift: _Table
  inf_diag: _Table
  suffix_next: _Table
  suffix_last: _Table
  prefix_prev: _Table
  prefix_first: _Table


def _either(*parts: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
  """``[2, n]``: (any part positive, any part negative)."""
  return np.stack([np.any([p for p, _ in parts], 0), np.any([q for _, q in parts], 0)])


def _next_after(support: np.ndarray) -> np.ndarray:
  """``[2, n]``: for each rank q (1-based), the first supported rank m > q, else n+1."""
  n = support.shape[-1]
  m = np.where(support, np.arange(1, n + 1), n + 1)
  after = np.minimum.accumulate(m[:, ::-1], axis=-1)[:, ::-1]  # first supported >= q
  return np.concatenate([after[:, 1:], np.full((2, 1), n + 1)], axis=-1)


def _last_before(support: np.ndarray) -> np.ndarray:
  """``[2, n]``: for each rank q (1-based), the last supported rank m < q, else 0."""
  m = np.where(support, np.arange(1, support.shape[-1] + 1), 0)
  upto = np.maximum.accumulate(m, axis=-1)  # last supported <= q
  return np.concatenate([np.zeros((2, 1), np.int64), upto[:, :-1]], axis=-1)


def _s_suffix(n: int) -> tuple[np.ndarray, int, np.ndarray, int]:
  """S(q): a member m > q is the j-th smallest of C(m-2, j-2) C(n-m, k-j) of the
  subsets holding q and m (``_rank_sum`` arguments)."""
  m = np.arange(1, n + 1)
  return m - 2, -1, n - m, 0


def _s_prefix(n: int) -> tuple[np.ndarray, int, np.ndarray, int]:
  """S(q): a member m < q is the j-th smallest of C(m-1, j-1) C(n-m-1, k-j-1)."""
  m = np.arange(1, n + 1)
  return m - 1, 0, n - m - 1, -1


@functools.lru_cache(maxsize=64)
def _loo_centered(w: tuple[float, ...], n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
  """(d, u, p) of a_lc(q) = S(q) − (k/n) U(r_{−q}) in sorted order, n > k: S's own
  coefficients (d = lift(w, n)), and U(r without rank q) over n-1 samples, in
  which ranks m < q keep their rank and m > q move down by one, so with
  v = lift(w, n-1) it adds v_m to the prefix and v_(m-1) to the suffix."""
  k = len(w)
  v = np.concatenate([_lifted(w, n - 1), [0.0]])
  suffix = _rank_sum(w, *_s_suffix(n), n) - (k / n) * np.concatenate([[0.0], v[:-1]])
  prefix = (k / n) * v - _rank_sum(w, *_s_prefix(n), n)
  return _lifted(w, n), suffix, prefix


@functools.lru_cache(maxsize=256)
def _advantage_tables(w: tuple[float, ...], n: int, baseline: str) -> _AdvantageTables:
  k = len(w)
  diag, suffix, prefix = _loo_centered(w, n) if n > k else (np.zeros(n),) * 3
  # a_lc(q) = S(q) − (k/n) U(r_{−q}) = U − U(r_{−q}), as S(q) = U − ((n−k)/n)
  # U(r_{−q}) (the subsets without q are those of r_{−q}); hence S = ((n−k)/n)
  # a_lc + (k/n) U and S − (k/(n−1)) U(r_{−q}) = γ a_lc + (1−γ) U.
  if baseline == "none":
    alpha, beta = (n - k) / n, k / n
  elif baseline == "loo":
    alpha, beta = 1 + k / (n * (n - 1)), -k / (n * (n - 1))
  elif baseline == "loo_centered":
    alpha, beta = 1.0, 0.0
  else:
    raise AssertionError(baseline)
  inf_suffix = [_reach(w, *_s_suffix(n))]
  inf_prefix = [_reach(w, *_s_prefix(n))]
  if baseline != "none":
    # The baseline enters with the opposite sign: −v is positive where v is negative.
    v_pos, v_neg = _lifted_reach(w, n - 1)
    false = np.zeros(1, bool)
    inf_suffix.append((np.concatenate([false, v_neg]), np.concatenate([false, v_pos])))
    inf_prefix.append((np.concatenate([v_neg, false]), np.concatenate([v_pos, false])))
  suffix_support = _either(*inf_suffix)
  prefix_support = _either(*inf_prefix)
  ranks = np.arange(1, n + 1)
  return _AdvantageTables(
    estimate=_estimate_tables(w, n),
    diag=diag,
    suffix=suffix,
    prefix=prefix,
    alpha=alpha,
    beta=beta,
    shift=_shift_rank(w, n),
    inf_diag=_either(_lifted_reach(w, n)),
    suffix_next=_next_after(suffix_support),
    suffix_last=np.max(np.where(suffix_support, ranks, 0), axis=-1, keepdims=True),
    prefix_prev=_last_before(prefix_support),
    prefix_first=np.min(np.where(prefix_support, ranks, n + 1), axis=-1, keepdims=True),
  )


@functools.lru_cache(maxsize=256)
def _shift_rank(w: tuple[float, ...], n: int) -> int:
  """The rank (0-based) whose reward the leave-one-out transform is measured from:
  the weighted median of |lift(w, n)|, i.e. where the estimate's weight lies (the
  top for max@k, the bottom for min@k)."""
  mass = np.cumsum(np.abs(_lifted(w, n)))
  return int(np.searchsorted(mass, 0.5 * mass[-1]))


def _pad(x: object, n: int, fill: float | bool) -> np.ndarray:
  """``x`` padded along its last axis to length n with ``fill``."""
  arr = np.asarray(x)
  out = np.full(arr.shape[:-1] + (n,), fill, dtype=arr.dtype)
  out[..., : arr.shape[-1]] = arr
  return out


@functools.lru_cache(maxsize=32)
def _stacked_estimate_tables(w: tuple[float, ...], n: int) -> _EstimateTables:
  """The estimate tables of every group size m = 0..n, stacked (row m; zero below k)."""
  k = len(w)
  rows = [
    _estimate_tables(w, m) if m >= k else _EstimateTables(np.zeros(m), *(np.zeros(m, bool),) * 2)
    for m in range(n + 1)
  ]
  return _EstimateTables(
    np.stack([_pad(r.coeffs, n, 0.0) for r in rows]),
    np.stack([_pad(r.pos, n, False) for r in rows]),
    np.stack([_pad(r.neg, n, False) for r in rows]),
  )


@functools.lru_cache(maxsize=32)
def _stacked_advantage_tables(w: tuple[float, ...], n: int, baseline: str) -> _AdvantageTables:
  """:func:`_advantage_tables` of every group size m = 0..n, stacked (row m).

  Size k uses the "none" tables (alpha 0, beta 1: every sample gets U, as the dense
  call at n == k); sizes below k are all zero.  Building them costs O(n² k) once per
  (weights, n, baseline).
  """
  k = len(w)
  zero = _advantage_tables(w, k, "none")._replace(alpha=0.0, beta=0.0)
  rows = []
  for m in range(n + 1):
    if m < k:
      rows.append((m, zero))
    else:
      rows.append((m, _advantage_tables(w, m, "none" if m == k else baseline)))

  def column(field: str, fill: float | bool) -> np.ndarray:
    return np.stack([_pad(getattr(t, field), n, fill) for _, t in rows])

  return _AdvantageTables(
    estimate=_stacked_estimate_tables(w, n),
    diag=column("diag", 0.0),
    suffix=column("suffix", 0.0),
    prefix=column("prefix", 0.0),
    alpha=np.array([float(t.alpha) for _, t in rows]),
    beta=np.array([float(t.beta) for _, t in rows]),
    shift=np.array([int(t.shift) if m >= k else 0 for m, t in rows]),
    inf_diag=column("inf_diag", False),
    suffix_next=column("suffix_next", n + 1),
    suffix_last=np.stack([np.asarray(t.suffix_last) for _, t in rows]),
    prefix_prev=column("prefix_prev", 0),
    prefix_first=np.stack([np.asarray(t.prefix_first) for _, t in rows]),
  )


def _per_group(tables: _T, m: jax.Array) -> _T:
  """Each group's row (its size m, ``[...]``) of stacked tables."""
  return jax.tree_util.tree_map(lambda x: x[m], tables)


def lift_rank_weights(weights: ArrayLike, size: int) -> np.ndarray:
  """The same rank objective written over ``size >= k`` draws.

  E[X_(j:k)] = Σ_i C(i-1, j-1) C(size-i, k-j) / C(size, k) E[X_(i:size)], so the
  objective with weights w over k draws has weights
  v_i = Σ_j w_j C(i-1, j-1) C(size-i, k-j) / C(size, k) over ``size`` draws (the
  U-statistic identity: of the k-subsets of ``size`` draws, that fraction has the
  i-th smallest draw at rank j).  Objectives over different k add after lifting to
  a common size; e.g. MaxRL's Σ_{k<=K} (1/k) pass@k (arXiv 2602.02710) is
  Σ_k lift(rank_weights("max", k), K) / k.  Also the estimate is unchanged:
  ``order_stat_at_k(r, lift_rank_weights(w, size)) == order_stat_at_k(r, w)`` for
  k <= size <= n.  Computed in float64 from log-factorials (no C(size, k) is
  formed); O(size · k).

  References: Hoeffding (1948) (U-statistics); Parmas et al., "OrderGrad",
  arXiv 2606.06096 (rank weights over a larger sample).

  Args:
    weights: ``[k]`` static weights over ascending ranks.
    size: static int, ``k <= size``.

  Returns:
    ``[size]`` float64 NumPy weights over ascending ranks (they sum to Σ_j w_j).

  Raises:
    ValueError: bad ``weights`` (as in :func:`order_stat_at_k`) or ``size`` < k.
  """
  w = check_weights(weights)
  size = checks.check_int(size, "size", low=len(w))
  return _lifted(w, size).copy()


# ----------------------------------------------------------------------------
# Estimates and advantages.
# ----------------------------------------------------------------------------


def _prepare(rewards: ArrayLike, weights: object) -> tuple[jax.Array, tuple[float, ...]]:
  r = checks.as_float_array(rewards, "rewards")
  if r.shape[-1] < 1:
    raise ValueError(
      f"rewards must hold at least one sample on its last axis; got shape {r.shape}."
    )
  return r, check_weights(weights, n=r.shape[-1])


def order_stat_at_k(
  rewards: ArrayLike, weights: ArrayLike, *, where: ArrayLike | None = None
) -> jax.Array:
  """Unbiased estimate of the rank objective E[Σ_j w_j X_(j:k)] from n >= k draws.

  The U-statistic: the mean over all k-subsets I of the n rewards of
  Σ_j w_j (j-th smallest of I), evaluated as Σ_i c_i r_(i) on the sorted rewards with
  c_i = Σ_j w_j C(i-1, j-1) C(n-i, k-j) / C(n, k) (a static float64 table per
  (n, w), :func:`lift_rank_weights` (w, n)).  With ``rank_weights("max", k)`` it is
  :func:`maxk.max_at_k`; with ``rank_weights("min", k)`` on {0, 1} rewards it is
  the unbiased pass^k.  Cost: one sort, O(n log n) per group (tables O(n k) once).
  The sum is compensated, so rewards of both signs that cancel cost no accuracy
  beyond the rounding of the terms: error ≲ ε Σ_i |c_i r_(i)| + ε |U| for the
  dtype's ε (not n ε).

  Infinite rewards are allowed: the value is that mean over subsets in IEEE
  arithmetic, terms with w_j = 0 left out.  An infinite r_(i) enters as ±inf
  where some subset holds it at a rank j with w_j != 0 (known exactly from the
  counts, also where c_i underflows to 0 in float32, e.g. 1/C(200, 100)), and not
  at all otherwise; infinite terms of both signs give NaN.  E.g. with
  ``rank_weights("max", 100)``, 100 rewards -inf and 100 rewards 1 give -inf
  (a 100-subset of only -inf exists) in float32 and float64 alike.

  References: Parmas et al., "OrderGrad", arXiv 2606.06096; Hoeffding (1948);
  PKPO arXiv 2505.15201 Eqs. 12-14 (the max weights).

  Args:
    rewards: ``[..., n]`` float rewards, samples on the last axis (ties and ±inf
      allowed), n >= 1.
    weights: ``[k]`` static weights over ascending ranks (a concrete 1-D
      sequence, e.g. from :func:`rank_weights`), 1 <= k <= n.
    where: keyword-only, optional bool, broadcastable to ``rewards``: the valid
      samples of each group (ragged groups); the estimate of a group is that of its
      m valid samples, NaN where m < k.  The tables of every size m <= n are built
      once per (weights, n), O(n² k).

  Returns:
    ``[...]`` estimates.  A NaN in a group makes that group's estimate NaN (and
    no other), for every weight vector, also where its weight is 0.

  Raises:
    ValueError: if ``weights`` is not 1-D, is empty, non-finite or longer than n,
      or ``rewards`` is a scalar or has no samples.
  """
  r, w = _prepare(rewards, weights)
  valid = ragged.as_valid(where, r.shape)
  if valid is not None:
    stacked = _stacked_estimate_tables(w, r.shape[-1])
    return _order_stat_at_k_ragged(r, valid, _as_arrays(stacked, r.dtype), len(w))
  tables = _estimate_tables(w, r.shape[-1])
  return _order_stat_at_k(r, _as_arrays(tables, r.dtype))


def _as_arrays(tables: _T, dtype: DTypeLike) -> _T:
  """Static tables as arrays: floats in the rewards' dtype, ints as int32, bools.

  They are passed to the jitted kernels as arguments (not baked in as constants),
  so a new weight vector of the same length does not recompile.
  """

  def cast(x: object) -> jax.Array:
    x = np.asarray(x)
    if x.dtype == bool:
      return jnp.asarray(x)
    return jnp.asarray(x, jnp.int32 if x.dtype.kind in "iu" else dtype)

  return jax.tree_util.tree_map(cast, tables)


def _estimate(r_sorted: jax.Array, t: _EstimateTables) -> jax.Array:
  return sorted_kernels.rank_weighted_sum(r_sorted, t.coeffs, t.pos, t.neg)


@jax.jit
def _order_stat_at_k(rewards: jax.Array, tables: _EstimateTables) -> jax.Array:
  r_sorted, _ = sorting.sort_last(rewards)
  return _estimate(r_sorted, tables)


def order_stat_advantages(
  rewards: ArrayLike,
  weights: ArrayLike,
  *,
  baseline: str = "loo_centered",
  where: ArrayLike | None = None,
) -> jax.Array:
  """Transformed rewards a_i whose Σ_i a_i ∇log π(y_i) estimates ∇ E[Σ_j w_j X_(j:k)].

  With L(I) = Σ_j w_j (j-th smallest of I), S(i) = (1/C(n,k)) Σ_{|I|=k, I∋i} L(I)
  and U = :func:`order_stat_at_k`:

  * ``"none"``: a_i = S(i).
  * ``"loo"``: a_i = S(i) − k/(n−1) · U(r_{−i}).
  * ``"loo_centered"`` (default): a_i = S(i) − k/n · U(r_{−i}) = U − U(r_{−i});
    sums to 0 in every group and is invariant to adding a constant to the rewards.

  All three are unbiased (the baselines do not depend on y_i); for n == k the
  leave-one-out baselines do not exist and both equal ``"none"``, which is then
  U for every sample.  With ``rank_weights("max", k)`` they equal
  :func:`maxk.max_at_k_advantages` with the same baseline (for finite rewards).

  Computation: ``"loo_centered"`` in sorted order, a_(q) = d_q x_(q) +
  Σ_{m>q} u_m x_(m) − Σ_{m<q} p_m x_(m) with static float64 coefficients (module
  docstring), on rewards x measured from one of the group's own rewards, at the
  rank where the weight of the estimate lies (the maximum for max@k, the minimum
  for min@k): a constant group gives exactly 0 and the differences of the most
  weighted rewards are exact (Sterbenz).  The subsets without i are those of
  r_{−i}, so S(i) = U − (n−k)/n · U(r_{−i}), and the other two baselines follow
  from a_lc and the one number U: ``"none"`` = (n−k)/n · a_lc + k/n · U and
  ``"loo"`` = (1 + k/(n(n−1))) · a_lc − k/(n(n−1)) · U.  U is summed with
  compensation (:func:`order_stat_at_k`), so no long sum of same-signed sorted
  rewards cancels in float32, as S(i) itself would for zero-mean rewards.

  Accuracy in float32, measured against float64 for uniform, normal, normal + 3,
  1e3 + uniform, tied integer, binary, Cauchy and log-normal rewards with k = n/4
  and max, min, mean, median, top-m (m = 1, 3, k/4, k/2, k−1) and bottom-m
  (m = k−1) weights: the worst error over all three baselines is 4.4e-7 ·
  max|a| at n = 1024, 2.9e-7 at n = 4096 and 2.7e-7 at n = 8192 (k = 2048).

  Infinite rewards are allowed: each a_i is then its definition above in IEEE
  arithmetic (module docstring): ±inf where infinite terms of one sign enter it,
  NaN where both signs do (S(i) and U(r_{−i}) both infinite, say), its finite
  value where none does.

  Cost: one sort and two cumulative sums, O(n log n) per group, plus O(n k) once
  per (n, weights) for the tables.

  References: Parmas et al., "OrderGrad", arXiv 2606.06096 (the leave-one-out
  transform of L-statistics); PKPO arXiv 2505.15201 Eqs. 18-21, 29-30 (max weights).

  Args:
    rewards: ``[..., n]`` float rewards, samples on the last axis, n >= 1.
    weights: ``[k]`` static weights over ascending ranks, 1 <= k <= n.
    baseline: one of ``"none"``, ``"loo"``, ``"loo_centered"``.
    where: keyword-only, optional bool, broadcastable to ``rewards``: the valid
      samples of each group (ragged groups): each group's advantages are those of
      its m valid samples alone (the tables of size m, gathered per group; built
      once per (weights, n, baseline), O(n² k)); the others get 0, as does every
      sample of a group with m < k.

  Returns:
    ``[..., n]`` transformed rewards in the caller's order.  A NaN in a group
    makes that whole group NaN (and no other), for every weight vector and
    baseline, also where its weight is 0.

  Raises:
    ValueError: bad ``weights`` (as in :func:`order_stat_at_k`), ``rewards``
      without samples, or unknown ``baseline``.
  """
  r, w = _prepare(rewards, weights)
  baseline = checks.check_option(baseline, "baseline", ORDER_STAT_BASELINES)
  n, k = r.shape[-1], len(w)
  valid = ragged.as_valid(where, r.shape)
  if valid is not None:
    stacked = _stacked_advantage_tables(w, n, baseline)
    return _order_stat_advantages_ragged(r, valid, _as_arrays(stacked, r.dtype), k)
  tables = _advantage_tables(w, n, "none" if n == k else baseline)
  mode = "broadcast" if n == k else "centered" if baseline == "loo_centered" else "mixed"
  return _order_stat_advantages(r, _as_arrays(tables, r.dtype), mode=mode)


def _finite_advantages(r_sorted: jax.Array, t: _AdvantageTables, mode: str) -> jax.Array:
  """The advantages in sorted order, with every ±inf reward replaced by the reward
  of rank ``shift`` (any finite value gives the same a_(q) wherever no infinite
  term enters it, as the coefficient of that rank in a_(q) is then exactly 0;
  this one makes its x exactly 0).  NaN propagates."""
  shift = jnp.broadcast_to(jnp.asarray(t.shift), r_sorted.shape[:-1])[..., None]
  origin = sorted_kernels.finite_or_zero(jnp.take_along_axis(r_sorted, shift, axis=-1))
  r_fin = jnp.where(jnp.isinf(r_sorted), origin, r_sorted)
  if mode == "broadcast":  # n == k: S(i) = U for every i
    return jnp.broadcast_to(_estimate(r_fin, t.estimate)[..., None], r_sorted.shape)
  x = r_fin - origin
  a = (
    t.diag * x
    + sorted_kernels.exclusive_suffix_sum(t.suffix * x)
    - sorted_kernels.exclusive_prefix_sum(t.prefix * x)
  )
  if mode == "mixed":
    beta = jnp.asarray(t.beta)[..., None] if jnp.ndim(t.beta) else t.beta
    alpha = jnp.asarray(t.alpha)[..., None] if jnp.ndim(t.alpha) else t.alpha
    u = _estimate(r_fin, t.estimate)[..., None]
    a = alpha * a + jnp.where(beta != 0, beta * u, 0)
  return a


def _infinite_reach(
  r_sorted: jax.Array, t: _AdvantageTables, size: jax.Array | None = None
) -> tuple[jax.Array, jax.Array]:
  """(plus, minus) ``[..., n]``: whether an infinite reward enters a_(q) as +inf / −inf.

  Sorted, the -inf rewards hold ranks 1..a and the +inf ones n-b+1..n (a NaN
  group is NaN anyway), so whether one of them enters a_(q) through a supported
  rank is a comparison of a and b with static per-rank tables.
  """
  n = r_sorted.shape[-1]
  q = jnp.arange(1, n + 1)
  up, down = r_sorted == jnp.inf, r_sorted == -jnp.inf
  if size is None:
    size = jnp.asarray(n)
  low = jnp.sum(down, axis=-1, keepdims=True)  # a
  high = size + 1 - jnp.sum(up, axis=-1, keepdims=True)  # n - b + 1

  def enters(row: int) -> jax.Array:
    """Whether a +inf reward enters with a coefficient of sign ``row`` (0: positive,
    1: negative), or a -inf one with the opposite sign.  Tables may carry leading
    group axes (ragged groups: one table per group size)."""
    last = t.suffix_last[..., row, :]
    first = t.prefix_first[..., 1 - row, :]
    return (
      (up & t.inf_diag[..., row, :])
      | (down & t.inf_diag[..., 1 - row, :])
      | ((last > q) & (last >= high))  # +inf at a rank m > q
      | (t.suffix_next[..., 1 - row, :] <= low)  # -inf at a rank q < m <= a
      | (t.prefix_prev[..., row, :] >= high)  # +inf at a rank n-b < m < q
      | ((first < q) & (first <= low))  # -inf at a rank m < q
    )

  return enters(0), enters(1)


@functools.partial(jax.jit, static_argnames="mode")
def _order_stat_advantages(rewards: jax.Array, tables: _AdvantageTables, *, mode: str) -> jax.Array:
  r_sorted, order = sorting.sort_last(rewards)
  value = _finite_advantages(r_sorted, tables, mode)
  # Where no reward is infinite, skip the comparisons that place the infinite terms.
  a_sorted = lax.cond(
    jnp.any(jnp.isinf(r_sorted)),
    lambda: sorted_kernels.infinite_overlay(value, *_infinite_reach(r_sorted, tables)),
    lambda: value,
  )
  return checks.nan_group(rewards, sorting.unsort_last(a_sorted, order))


@jax.jit
def _order_stat_at_k_ragged(
  rewards: jax.Array, valid: jax.Array, stacked: _EstimateTables, k: jax.Array
) -> jax.Array:
  # The tables of every size and k are arguments: another k reuses the program.
  r_sorted, _, m, _ = ragged.sort_valid(rewards, valid)
  estimate = _estimate(r_sorted, _per_group(stacked, m[..., 0]))
  return ragged.nan_group(rewards, valid, jnp.where(m[..., 0] >= k, estimate, jnp.nan))


@jax.jit
def _order_stat_advantages_ragged(
  rewards: jax.Array, valid: jax.Array, stacked: _AdvantageTables, k: jax.Array
) -> jax.Array:
  # The dense kernels with each group's tables of its size m (valid samples first,
  # in ranks 1..m; the others hold 0 and get 0).  "mixed" covers every size:
  # alpha = 1, beta = 0 is "loo_centered", alpha = 0, beta = 1 is m == k.
  r_sorted, order, m, inside = ragged.sort_valid(rewards, valid)
  tables = _per_group(stacked, m[..., 0])
  value = _finite_advantages(r_sorted, tables, "mixed")
  a_sorted = lax.cond(
    jnp.any(jnp.isinf(r_sorted)),
    lambda: sorted_kernels.infinite_overlay(value, *_infinite_reach(r_sorted, tables, m)),
    lambda: value,
  )
  a_sorted = jnp.where(inside & (m >= k), a_sorted, 0)
  return ragged.nan_group(rewards, valid, sorting.unsort_last(a_sorted, order))
