"""Ragged groups: a boolean ``where`` marks the samples that belong to each group.

Filtering (DAPO's dynamic sampling), failed rollouts and adaptive sampling leave
groups with different numbers of valid samples.  Every group-wise function takes
``where=`` (bool, broadcastable to the rewards' shape, NumPy's convention):

* a sample with ``where=False`` is not part of its group: the result on a group is
  the function applied to that group's valid samples alone (its m valid samples,
  in their order), and the sample's own advantage is exactly 0 whatever its value
  (NaN included);
* **too few samples** (one rule for every function): a group with fewer valid
  samples than the function needs on a dense call (m < k, or m < 2 where the
  function needs two samples, as leave-one-out baselines do) has no estimate and
  gives no gradient: estimates are NaN, advantages 0.

The max@k coefficients of a group of m valid samples are binomial ratios
C(t − a, b) / C(m − c, d) of a sorted position t and of m: a product of a static
factor of t and a static factor of m, gathered per group.  Either factor alone can
overflow (C(4096, 2048) ~ 1e1232), so each is kept as a mantissa in [1, 2) and an
integer power of two, both from log2 in float64; a coefficient is one product of
mantissas and an exact scaling by 2^(e_t + e_m) (0 where it is below the dtype's
normal range, 1.2e-38 in float32).  Differences of such ratios that cancel are
rewritten as one ratio times a difference of integers.  The cost over the dense
call is a gather and a few elementwise operations per sample.
"""

from __future__ import annotations

from collections.abc import Sequence
import functools
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike
from jax.typing import DTypeLike
import numpy as np

from maxk._src import combinatorics
from maxk._src import sorted_kernels
from maxk._src import sorting

_LOG2 = np.log(2.0)


def as_valid(where: ArrayLike | None, shape: tuple[int, ...]) -> jax.Array | None:
  """``where`` as a bool array of ``shape`` (None stays None).

  Raises:
    ValueError: ``where`` is not boolean or does not broadcast to ``shape``.
  """
  if where is None:
    return None
  try:
    valid = jnp.asarray(where)
  except (TypeError, ValueError) as e:
    raise ValueError(f"where must be a bool array: {e}") from e
  if valid.dtype != jnp.bool_:
    raise ValueError(f"where must be a bool array (True: the sample is valid); got {valid.dtype}.")
  try:
    return jnp.broadcast_to(valid, shape)
  except ValueError as e:
    raise ValueError(
      f"where of shape {valid.shape} must broadcast to the rewards' shape {shape}."
    ) from e


def count(valid: jax.Array) -> jax.Array:
  """m, the number of valid samples per group, ``[..., 1]`` int32."""
  return jnp.sum(valid, axis=-1, keepdims=True, dtype=jnp.int32)


def count_correct(values: jax.Array, valid: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
  """(finite, m, c) per group of {0, 1} ``values``: whether its valid entries are
  finite, its number m of valid samples and the number c of correct ones among
  them (int32 ``[...]``, c the rounded count clipped to [0, m])."""
  finite = jnp.all(jnp.isfinite(values) | ~valid, axis=-1)
  m = jnp.sum(valid, axis=-1, dtype=jnp.int32)
  total = jnp.sum(jnp.where(valid, jnp.nan_to_num(values), 0), axis=-1)
  c = jnp.clip(jnp.round(total), 0, m).astype(jnp.int32)
  return finite, m, c


def positions(shape: tuple[int, ...]) -> jax.Array:
  """t = 1..n along the last axis (1-based sorted positions), int32 of ``shape``."""
  return jax.lax.broadcasted_iota(jnp.int32, shape, len(shape) - 1) + 1


class Pow2(NamedTuple):
  """Values mant · 2^exp, mant in [1, 2) (0 for a zero value), from float64 log2."""

  mant: np.ndarray | jax.Array  # float64 on the host
  exp: np.ndarray | jax.Array  # int32


def pow2(log_e: np.ndarray) -> Pow2:
  """Splits values given by their natural logs (-inf for 0) into :class:`Pow2`."""
  log2 = np.asarray(log_e, np.float64) / _LOG2
  zero = ~np.isfinite(log2)
  exp = np.floor(np.where(zero, 0.0, log2))
  mant = np.where(zero, 0.0, np.exp2(np.where(zero, 0.0, log2) - exp))
  return Pow2(mant, exp.astype(np.int32))


def gathered_ratio(
  a: Pow2, a_index: jax.Array | slice, b: Pow2, b_index: jax.Array, dtype: jnp.dtype
) -> jax.Array:
  """a[a_index] · b[b_index] elementwise (indices broadcast; int32)."""
  mant = jnp.asarray(a.mant, dtype)[a_index] * jnp.asarray(b.mant, dtype)[b_index]
  return jnp.ldexp(mant, jnp.asarray(a.exp)[a_index] + jnp.asarray(b.exp)[b_index])


def product(a: Pow2, b: Pow2, m: jax.Array, dtype: jnp.dtype) -> jax.Array:
  """``[..., n]``: a[t] · b[m] for every position t of ``a`` ([n]) and each group's m.

  ``b`` is indexed by m = 0..n; ``m`` is ``[..., 1]`` int32.
  """
  return gathered_ratio(a, slice(None), b, m, dtype)


def _log_binom(top: np.ndarray, bottom: np.ndarray | int) -> np.ndarray:
  return combinatorics.log_binom(top, bottom)


class MaxTables(NamedTuple):
  """Static factors of the max@k coefficients of a group of m valid samples.

  Over positions t = 1..n: ``diag`` C(t−1, k−1), ``suffix`` C(t−2, k−2),
  ``minus_one`` C(t−1, k−2), ``pair_suffix`` C(t−3, k−3).  Over m = 0..n: ``inv``
  1/C(m, k) (the estimate's normaliser), ``centred_prefix`` (k/m)/C(m−1, k), ``centred_suffix``
  1/(m (k−1) C(m−1, k)), ``loo_prefix`` (k/(m−1))/C(m−1, k) and ``loo_suffix``
  1/(m (m−1) (k−1) C(m−1, k)) (0 where undefined).
  """

  diag: Pow2
  suffix: Pow2
  minus_one: Pow2
  inv: Pow2
  centred_prefix: Pow2
  centred_suffix: Pow2
  loo_prefix: Pow2
  loo_suffix: Pow2
  pair_suffix: Pow2


@functools.lru_cache(maxsize=256)
def max_tables(n: int, k: int) -> MaxTables:
  t = np.arange(1, n + 1)
  m = np.arange(n + 1)
  with np.errstate(divide="ignore"):
    log_c_m1 = _log_binom(m - 1, k)  # -inf where m − 1 < k
    log_m = np.log(np.maximum(m, 1).astype(np.float64))
    centred_prefix = np.log(k) - log_m - log_c_m1
    centred_suffix = (
      -log_m - np.log(max(k - 1, 1)) - log_c_m1 if k >= 2 else np.full(n + 1, -np.inf)
    )
    log_m1 = np.log(np.maximum(m - 1, 1).astype(np.float64))
    loo_prefix = np.log(k) - log_m1 - log_c_m1
    loo_suffix = centred_suffix - log_m1
  return MaxTables(
    diag=pow2(_log_binom(t - 1, k - 1)),
    suffix=pow2(_log_binom(t - 2, k - 2)),
    minus_one=pow2(_log_binom(t - 1, k - 2)),
    inv=pow2(np.where(m >= k, -_log_binom(m, k), -np.inf)),
    centred_prefix=pow2(np.where(m > k, centred_prefix, -np.inf)),
    centred_suffix=pow2(np.where(m > k, centred_suffix, -np.inf)),
    loo_prefix=pow2(np.where(m > k, loo_prefix, -np.inf)),
    loo_suffix=pow2(np.where(m > k, loo_suffix, -np.inf)),
    pair_suffix=pow2(_log_binom(t - 3, k - 3)),
  )


class Packed(NamedTuple):
  """:class:`Pow2` tables as the operands of a compiled kernel: row i holds table i's
  mantissas (in the rewards' dtype) and exponents, zero-padded to the longest table.

  Host (NumPy) arrays, so that they can be cached across calls (an array made on
  the device inside a caller's ``jit`` would belong to that trace), and two
  arguments however many tables (each argument costs the call a transfer).  Passed
  as arguments rather than built in the trace as constants, with k itself traced,
  so that another k at the same shape reuses the compiled program.
  """

  mant: np.ndarray
  exp: np.ndarray


def pack(tables: Sequence[Pow2], dtype: DTypeLike) -> Packed:
  """``tables`` stacked into one :class:`Packed`."""
  size = max(t.mant.shape[-1] for t in tables)
  mant = np.zeros((len(tables), size), np.dtype(dtype))
  exp = np.zeros((len(tables), size), np.int32)
  for i, t in enumerate(tables):
    mant[i, : t.mant.shape[-1]] = t.mant
    exp[i, : t.exp.shape[-1]] = t.exp
  return Packed(mant, exp)


def unpack(packed: Packed, lengths: Sequence[int]) -> list[Pow2]:
  """The tables of :func:`pack` (row i, its first ``lengths[i]`` entries), in a kernel."""
  return [Pow2(packed.mant[i, :size], packed.exp[i, :size]) for i, size in enumerate(lengths)]


# The MaxTables over positions t = 1..n; the others are over m = 0..n.
_POSITION_TABLES = ("diag", "suffix", "minus_one", "pair_suffix")


@functools.lru_cache(maxsize=256)
def max_operands(n: int, k: int, dtype: DTypeLike) -> Packed:
  """:func:`max_tables` as kernel operands (:class:`Packed`; :func:`unpack_max`)."""
  return pack(max_tables(n, k), dtype)


def unpack_max(packed: Packed) -> MaxTables:
  """The :class:`MaxTables` of :func:`max_operands`, in a kernel."""
  size = packed.mant.shape[-1]  # n + 1
  lengths = [size - 1 if f in _POSITION_TABLES else size for f in MaxTables._fields]
  return MaxTables(*unpack(packed, lengths))


class Coefficients(NamedTuple):
  """Per-sample coefficients ``[..., n]`` of a_(t) = d_t x_(t) + Σ_{s>t} u_s x_(s) −
  Σ_{s<t} p_s x_(s) over sorted positions (0 beyond a group's m valid samples)."""

  diag: jax.Array
  suffix: jax.Array
  prefix: jax.Array


def max_weights(n: int, k: int, m: jax.Array, dtype: jnp.dtype) -> jax.Array:
  """``[..., n]``: w_t = C(t−1, k−1)/C(m, k) for t <= m (the max@k estimate's weights)."""
  tables = max_tables(n, k)
  return weights_from(tables.diag, tables.inv, m, dtype)


def weights_from(diag: Pow2, inv: Pow2, m: jax.Array, dtype: jnp.dtype) -> jax.Array:
  """:func:`max_weights` from the tables ``diag`` and ``inv`` of :class:`MaxTables`."""
  inside = positions(m.shape[:-1] + (diag.mant.shape[-1],)) <= m
  return jnp.where(inside, product(diag, inv, m, dtype), 0)


def max_transform(n: int, k: int, kind: str, m: jax.Array, dtype: jnp.dtype) -> Coefficients:
  """:func:`transform_from` with the tables of (n, k) built in the trace."""
  return transform_from(max_tables(n, k), k, kind, m, dtype, k_is_one=k == 1)


def transform_from(
  tables: MaxTables,
  k: int | jax.Array,
  kind: str,
  m: jax.Array,
  dtype: jnp.dtype,
  *,
  k_is_one: bool,
) -> Coefficients:
  """Coefficients of the max@k transform ``kind`` ("none", "loo", "loo_centered" or
  "loo_minus_one") for groups of m valid samples, ``m`` ``[..., 1]``, from the
  tables of (n, k) (:func:`max_tables`, or :func:`max_operands` passed to a
  kernel); ``k`` may be traced, whether it is 1 is static (``k_is_one``).

  As for the dense transform: S(t) has d_t = C(t−1, k−1)/C(m, k) and u_s =
  C(s−2, k−2)/C(m, k); "loo_centered" subtracts (k/m) max@k(r_{−t}), adding
  p_s = (k/m) C(s−1, k−1)/C(m−1, k) and subtracting (k/m) C(s−2, k−1)/C(m−1, k)
  from u_s, which with C(s−2, k−1) = C(s−2, k−2)(s−k)/(k−1) and 1/C(m, k) =
  (m−k)/(m C(m−1, k)) is

    u_s = C(s−2, k−2) / (m (k−1) C(m−1, k)) · [(m−k)(k−1) − k(s−k)]        (k >= 2),

  an integer difference (exact in float32 for m <= 8192) instead of a cancelling
  one; at k = 1, u_s = −p_s.  "loo_minus_one" has p_s = C(s−1, k−2)/C(m, k) and
  no suffix.  Groups with m == k use "none" (no leave-one-out estimate exists,
  as for the dense call at n == k).
  """
  t = positions(m.shape[:-1] + (tables.diag.mant.shape[-1],))
  zero = jnp.zeros(t.shape, dtype)
  diag = product(tables.diag, tables.inv, m, dtype)
  none_suffix = zero if k_is_one else product(tables.suffix, tables.inv, m, dtype)
  if kind == "none":
    return _inside(m, t, Coefficients(diag, none_suffix, zero))
  if kind == "loo_minus_one":
    minus_one = zero if k_is_one else product(tables.minus_one, tables.inv, m, dtype)
    return _inside(m, t, Coefficients(diag, zero, minus_one))
  if kind == "loo_centered":
    prefix = product(tables.diag, tables.centred_prefix, m, dtype)
    if k_is_one:
      suffix = jnp.where(t >= 2, -prefix, 0)
    else:
      bracket = ((m - k) * (k - 1) - k * (t - k)).astype(dtype)
      suffix = product(tables.suffix, tables.centred_suffix, m, dtype) * bracket
  elif kind == "loo":
    # S − (k/(m−1)) max@k(r_{−t}): p_s = (k/(m−1)) C(s−1, k−1)/C(m−1, k), and u_s as
    # for "loo_centered" with k/(m−1) for k/m:
    #   u_s = C(s−2, k−2) / (m (m−1) (k−1) C(m−1, k)) · [(m−1)(m−k)(k−1) − m k (s−k)],
    # the bracket as m·(A − B) − A with A = (m−k)(k−1), B = k(s−k): integers exact in
    # float32 (m <= 8192), so only m·(A − B) rounds, and only where it is large.
    prefix = product(tables.diag, tables.loo_prefix, m, dtype)
    if k_is_one:
      suffix = jnp.where(t >= 2, -prefix, 0)
    else:
      a = (m - k) * (k - 1)
      bracket = m.astype(dtype) * (a - k * (t - k)).astype(dtype) - a.astype(dtype)
      suffix = product(tables.suffix, tables.loo_suffix, m, dtype) * bracket
  else:
    raise AssertionError(kind)
  at_k = m == k
  return _inside(
    m, t, Coefficients(diag, jnp.where(at_k, none_suffix, suffix), jnp.where(at_k, zero, prefix))
  )


def pair_transform(n: int, k: int, m: jax.Array, dtype: jnp.dtype) -> Coefficients:
  """U_q = [C(q−2, k−2) r_(q) + Σ_{s>q} C(s−3, k−3) r_(s)] / C(m, k), the subsets
  holding a given lower rank and q (the first-order off-policy weights; k >= 2)."""
  tables = max_tables(n, k)
  t = positions(m.shape[:-1] + (n,))
  diag = product(tables.suffix, tables.inv, m, dtype)
  suffix = product(tables.pair_suffix, tables.inv, m, dtype)
  return _inside(m, t, Coefficients(diag, suffix, jnp.zeros(t.shape, dtype)))


def _inside(m: jax.Array, t: jax.Array, c: Coefficients) -> Coefficients:
  """``c`` with every coefficient beyond a group's m valid samples set to 0 (there
  the factors of t and m need not describe any subset, and may overflow)."""
  inside = t <= m
  return Coefficients(*(jnp.where(inside, x, 0) for x in c))


def apply(x_sorted: jax.Array, c: Coefficients) -> jax.Array:
  """a_(t) = d_t x_(t) + Σ_{s>t} u_s x_(s) − Σ_{s<t} p_s x_(s), with 0 · ±inf = 0."""

  def scaled(coeffs: jax.Array) -> jax.Array:
    return jnp.where(coeffs != 0, coeffs * x_sorted, 0)

  out = scaled(c.diag)
  out = out + sorted_kernels.exclusive_suffix_sum(scaled(c.suffix))
  return out - sorted_kernels.exclusive_prefix_sum(scaled(c.prefix))


def sort_valid(rewards: jax.Array, valid: jax.Array, *others: jax.Array) -> tuple[Any, ...]:
  """Sorts each group's valid rewards ascending into positions 1..m, the others after,
  carrying ``others`` along.

  Returns:
    ``(r_sorted, others_sorted..., order, m, inside)``: the sorted arrays with 0
    beyond position m, the :class:`maxk._src.sorting.Order` (for
    :func:`maxk._src.sorting.unsort_last`),
    m ``[..., 1]`` and ``inside`` (position t <= m) ``[..., n]``.
  """
  *arrays, order = sorting.sort_last(rewards, *others, valid=valid)
  m = count(valid)
  inside = positions(rewards.shape) <= m
  return (*(jnp.where(inside, y, 0) for y in arrays), order, m, inside)


def nan_group(rewards: jax.Array, valid: jax.Array, out: jax.Array) -> jax.Array:
  """``out`` with every group holding a NaN among its valid samples set to NaN
  (an estimate ``[...]``, or the valid entries of advantages ``[..., n]``)."""
  bad = jnp.any(jnp.isnan(rewards) & valid, axis=-1)
  if out.ndim == rewards.ndim:
    return jnp.where(bad[..., None] & valid, jnp.nan, out)
  return jnp.where(bad, jnp.nan, out)


class PassAtKTables(NamedTuple):
  """``fail_count`` C(N_neg, k) over N_neg = 0..n and ``inv`` 1/C(m, k) over m = 0..n."""

  fail_count: Pow2
  inv: Pow2


@functools.lru_cache(maxsize=256)
def pass_at_k_tables(n: int, k: int) -> PassAtKTables:
  size = np.arange(n + 1)
  return PassAtKTables(pow2(_log_binom(size, k)), max_tables(n, k).inv)


@functools.lru_cache(maxsize=256)
def pass_at_k_operands(n: int, k: int, dtype: DTypeLike) -> Packed:
  """:func:`pass_at_k_tables` as kernel operands (:class:`Packed`; :func:`unpack_pass_at_k`)."""
  return pack(pass_at_k_tables(n, k), dtype)


def unpack_pass_at_k(packed: Packed) -> PassAtKTables:
  """The :class:`PassAtKTables` of :func:`pass_at_k_operands`, in a kernel."""
  return PassAtKTables(*unpack(packed, [packed.mant.shape[-1]] * 2))


def split(values: np.ndarray, dtype: jnp.dtype) -> tuple[jax.Array, jax.Array]:
  """float64 ``values`` as hi + lo in ``dtype`` (hi rounded, lo the remainder), so that
  differences of nearby entries keep the float64 accuracy (hi − hi is exact by
  Sterbenz's lemma where it matters)."""
  hi, lo = split_host(values, dtype)
  return jnp.asarray(hi), jnp.asarray(lo)


def split_host(values: np.ndarray, dtype: jnp.dtype) -> tuple[np.ndarray, np.ndarray]:
  """:func:`split` as host (NumPy) arrays, to cache and pass to a compiled kernel."""
  values = np.asarray(values, np.float64)
  hi = values.astype(dtype)
  lo = (values - hi.astype(np.float64)).astype(dtype)
  return hi, lo


def split_difference(
  a: tuple[jax.Array, jax.Array], i: jax.Array, b: tuple[jax.Array, jax.Array], j: jax.Array
) -> jax.Array:
  """a[i] − b[j] elementwise from :func:`split` tables."""
  return (a[0][i] - b[0][j]) + (a[1][i] - b[1][j])
