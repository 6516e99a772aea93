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

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike
from jax.typing import DTypeLike
import numpy as np
import numpy.typing as npt

from maxk._src import checks
from maxk._src import sorted_kernels
from maxk._src import sorting

# The ``baseline`` options of :func:`order_stat_advantages`.
ORDER_STAT_BASELINES = ("none", "loo", "loo_centered")

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
  weights = np.asarray(w)
  ranks = np.flatnonzero(weights) + 1  # j = 1..k with w_j != 0
  out = np.zeros(top1.shape)
  chunk = max(1, _CHUNK_ELEMENTS // max(1, top1.size))
  for start in range(0, ranks.size, chunk):
    j = ranks[start : start + chunk, None]
    log_terms = (
      _log_binom(lf, top1[None, :], j - 1 + shift1)
      + _log_binom(lf, top2[None, :], k - j + shift2)
      - log_den
    )
    with np.errstate(under="ignore"):
      out += weights[j[:, 0] - 1] @ np.exp(log_terms)
  return out


@functools.lru_cache(maxsize=256)
def _lifted(w: tuple[float, ...], size: int) -> np.ndarray:
  """v_i = Σ_j w_j C(i-1, j-1) C(size-i, k-j) / C(size, k), i = 1..size."""
  i = np.arange(1, size + 1)
  return _rank_sum(w, i - 1, 0, size - i, 0, size)


@functools.lru_cache(maxsize=256)
def _transform(w: tuple[float, ...], n: int, baseline: str) -> sorted_kernels.SortedTransform:
  """(d, u, p) of a_(q) = d_q r_(q) + Σ_{m>q} u_m r_(m) − Σ_{m<q} p_m r_(m); float64 [n]."""
  m = np.arange(1, n + 1)
  k = len(w)
  diag = _lifted(w, n)
  suffix = _rank_sum(w, m - 2, -1, n - m, 0, n)  # m > q is the j-th smallest
  prefix = -_rank_sum(w, m - 1, 0, n - m - 1, -1, n)  # m < q is the j-th smallest
  if baseline in ("loo", "loo_centered"):
    # U(r without rank q) over n-1 samples: ranks m < q keep their rank, m > q
    # move down by one, so with v = lift(w, n-1): prefix v_m, suffix v_(m-1).
    scale = k / (n - 1) if baseline == "loo" else k / n
    v = np.concatenate([_lifted(w, n - 1), [0.0]])
    prefix = prefix + scale * v
    suffix = suffix - scale * np.concatenate([[0.0], v[:-1]])
  elif baseline != "none":
    raise AssertionError(baseline)
  return sorted_kernels.SortedTransform(diag=diag, suffix=suffix, prefix=prefix)


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
  return r, check_weights(weights, n=r.shape[-1])


def order_stat_at_k(rewards: ArrayLike, weights: ArrayLike) -> jax.Array:
  """Unbiased estimate of the rank objective E[Σ_j w_j X_(j:k)] from n >= k draws.

  The U-statistic: the mean over all k-subsets I of the n rewards of
  Σ_j w_j (j-th smallest of I), evaluated as Σ_i c_i r_(i) on the sorted rewards with
  c_i = Σ_j w_j C(i-1, j-1) C(n-i, k-j) / C(n, k) (a static float64 table per
  (n, w), :func:`lift_rank_weights` (w, n)).  With ``rank_weights("max", k)`` it is
  :func:`maxk.max_at_k`; with ``rank_weights("min", k)`` on {0, 1} rewards it is
  the unbiased pass^k.  Cost: one sort, O(n log n) per group (tables O(n k) once).

  References: Parmas et al., "OrderGrad", arXiv 2606.06096; Hoeffding (1948);
  PKPO arXiv 2505.15201 Eqs. 12-14 (the max weights).

  Args:
    rewards: ``[..., n]`` float rewards, samples on the last axis (ties allowed).
    weights: ``[k]`` static weights over ascending ranks (a concrete 1-D
      sequence, e.g. from :func:`rank_weights`), 1 <= k <= n.

  Returns:
    ``[...]`` estimates.  A NaN in a group makes only that group's estimate NaN.

  Raises:
    ValueError: if ``weights`` is not 1-D, is empty, non-finite or longer than n,
      or ``rewards`` is a scalar.
  """
  r, w = _prepare(rewards, weights)
  return _order_stat_at_k(r, _as_coeffs(_lifted(w, r.shape[-1]), r.dtype))


def _as_coeffs(c: np.ndarray, dtype: DTypeLike) -> jax.Array:
  """Static float64 coefficients as an array of the rewards' dtype.

  They are passed to the jitted kernels as arguments (not baked in as constants),
  so a new weight vector of the same length does not recompile.
  """
  return jnp.asarray(c, dtype=dtype)


def _scaled(c: jax.Array, r: jax.Array) -> jax.Array:
  """c * r, with 0 where c == 0 (so that -inf rewards outside a sum stay out of it)."""
  return jnp.where(c != 0, c * r, 0)


@jax.jit
def _order_stat_at_k(rewards: jax.Array, coeffs: jax.Array) -> jax.Array:
  r_sorted, _ = sorting.sort_last(rewards)
  return jnp.sum(_scaled(coeffs, r_sorted), axis=-1)


def order_stat_advantages(
  rewards: ArrayLike, weights: ArrayLike, *, baseline: str = "loo_centered"
) -> jax.Array:
  """Transformed rewards a_i whose Σ_i a_i ∇log π(y_i) estimates ∇ E[Σ_j w_j X_(j:k)].

  With L(I) = Σ_j w_j (j-th smallest of I), S(i) = (1/C(n,k)) Σ_{|I|=k, I∋i} L(I)
  and U = :func:`order_stat_at_k`:

  * ``"none"``: a_i = S(i).
  * ``"loo"``: a_i = S(i) − k/(n−1) · U(r_{−i}).
  * ``"loo_centered"`` (default): a_i = S(i) − k/n · U(r_{−i}); sums to 0 in
    every group and is invariant to adding a constant to the rewards.

  All three are unbiased (the baselines do not depend on y_i); for n == k the
  leave-one-out baselines do not exist and both equal ``"none"``.  With
  ``rank_weights("max", k)`` they equal :func:`maxk.max_at_k_advantages` with the
  same baseline.  In sorted order a_(q) = d_q r_(q) + Σ_{m>q} u_m r_(m) −
  Σ_{m<q} p_m r_(m) with static float64 coefficients (module docstring); the
  leave-one-out transforms are evaluated on rewards measured from one of the
  group's own rewards, at the rank where the weight of the estimate lies (the
  maximum for max@k, the minimum for min@k): a constant group gives exactly 0,
  and the differences of the most weighted rewards are exact (Sterbenz).

  Cost: one sort and two cumulative sums, O(n log n) per group, plus O(n k) once
  per (n, weights) for the tables; accurate in float32 (error ≲ 1e-6 · max|a| at
  n = 1024).

  References: Parmas et al., "OrderGrad", arXiv 2606.06096 (the leave-one-out
  transform of L-statistics); PKPO arXiv 2505.15201 Eqs. 18-21, 29-30 (max weights).

  Args:
    rewards: ``[..., n]`` float rewards, samples on the last axis.
    weights: ``[k]`` static weights over ascending ranks, 1 <= k <= n.
    baseline: one of ``"none"``, ``"loo"``, ``"loo_centered"``.

  Returns:
    ``[..., n]`` transformed rewards in the caller's order.  A NaN in one group
    only affects that group.

  Raises:
    ValueError: bad ``weights`` (as in :func:`order_stat_at_k`) or unknown
      ``baseline``.
  """
  r, w = _prepare(rewards, weights)
  baseline = checks.check_option(baseline, "baseline", ORDER_STAT_BASELINES)
  n, k = r.shape[-1], len(w)
  kind = "none" if n == k else baseline
  t = _transform(w, n, kind)
  # Shifting r by c shifts S(i) by c·(k/n)·Σw and U(r_{-i}) by c·Σw, so the
  # transform shifts by c·Σw·(k/n − scale): 0 for "loo_centered".
  restore = math.fsum(w) * (k / n - k / (n - 1)) if kind == "loo" else 0.0
  coeffs = tuple(_as_coeffs(c, r.dtype) for c in (t.diag, t.suffix, t.prefix, np.array(restore)))
  return _order_stat_advantages(r, *coeffs, shift=_shift_rank(w, n) if kind != "none" else None)


@functools.lru_cache(maxsize=256)
def _shift_rank(w: tuple[float, ...], n: int) -> int:
  """The rank (0-based) whose reward the leave-one-out transforms are measured from:
  the weighted median of |lift(w, n)|, i.e. where the estimate's weight lies (the
  top for max@k, the bottom for min@k)."""
  mass = np.cumsum(np.abs(_lifted(w, n)))
  return int(np.searchsorted(mass, 0.5 * mass[-1]))


@functools.partial(jax.jit, static_argnames="shift")
def _order_stat_advantages(
  rewards: jax.Array,
  diag: jax.Array,
  suffix: jax.Array,
  prefix: jax.Array,
  restore: jax.Array,
  *,
  shift: int | None,
) -> jax.Array:
  r_sorted, perm = sorting.sort_last(rewards)
  c = jnp.zeros_like(r_sorted[..., :1])
  if shift is not None:
    c = sorted_kernels.finite_or_zero(r_sorted[..., shift : shift + 1])
  x = r_sorted - c
  a_sorted = (
    _scaled(diag, x)
    + sorted_kernels.exclusive_suffix_sum(_scaled(suffix, x))
    - sorted_kernels.exclusive_prefix_sum(_scaled(prefix, x))
    + c * restore
  )
  return sorting.unsort_last(a_sorted, perm)
