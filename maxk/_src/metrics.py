"""Unbiased estimators of pass@k and max@k from n >= k samples.

pass@k of a policy is the probability that at least one of k i.i.d. samples is
correct; max@k is the expected maximum reward of k i.i.d. samples.  Given n >= k
samples, the unbiased estimators average the k-sample statistic over all C(n, k)
subsets (a U-statistic):

  pass@k ≈ 1 - C(n-c, k) / C(n, k)                       (Chen et al. 2021; PKPO Eq. 3)
  max@k  ≈ (1/C(n,k)) Σ_{|I|=k} max_{i∈I} r_i
         = Σ_j C(j-1, k-1)/C(n, k) · r_(j)               (PKPO Eq. 12-14; max@k App. C.1)

where c is the number of correct samples and r_(1) <= ... <= r_(n) are the sorted
rewards.  For {0, 1} rewards the two estimators coincide.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike
from jax.typing import DTypeLike
import numpy as np

from maxk._src import checks
from maxk._src import combinatorics
from maxk._src import ragged
from maxk._src import sorted_kernels
from maxk._src import sorting


@functools.lru_cache(maxsize=256)
def _pass_at_k_table(n: int, k: int) -> np.ndarray:
  """T[c] = 1 - C(n-c, k)/C(n, k) for c = 0..n, in float64 (exact up to rounding)."""
  c = np.arange(n + 1)
  return combinatorics.binom_ratio_complement(n - c, k, n, k)


def validate_correct(
  correct: ArrayLike, k: int, where: ArrayLike | None = None
) -> tuple[jax.Array, int, int, jax.Array | None]:
  """Validates ``[..., n]`` {0, 1} input, ``k`` and ``where``; returns (values, n, k, valid).

  ``values`` is ``correct`` as a floating array and ``valid`` is ``where`` as a bool
  array of its shape (None stays None).  Values outside {0, 1} raise ``ValueError``
  when concrete (eager calls); under ``jit`` they cannot be seen.  Entries where
  ``valid`` is False are not checked.
  """
  try:
    correct = jnp.asarray(correct)
  except (TypeError, ValueError) as e:
    raise ValueError(f"correct must be a bool or 0/1 numeric array: {e}") from e
  checks.check_real(correct, "correct")
  if correct.ndim < 1:
    raise ValueError(f"correct must have the sample axis last; got shape {correct.shape}.")
  n = correct.shape[-1]
  if n < 1:
    raise ValueError(
      f"correct must hold at least one sample on its last axis; got shape {correct.shape}."
    )
  k = checks.check_int(k, "k", low=1, high=n, high_name="n")
  valid = ragged.as_valid(where, correct.shape)
  dtype = correct.dtype if jnp.issubdtype(correct.dtype, jnp.floating) else jnp.result_type(float)
  values = correct.astype(dtype)
  if checks.is_concrete(values) and (valid is None or checks.is_concrete(valid)):
    v = np.asarray(values)
    finite = np.isfinite(v) & (True if valid is None else np.asarray(valid))
    if not np.all((v[finite] == 0) | (v[finite] == 1)):
      raise ValueError("correct must hold only 0/1 (or bool) values.")
  return values, n, k, valid


def count_correct(values: jax.Array) -> tuple[jax.Array, jax.Array]:
  """Returns (count, index): the float number of correct samples per group (NaN if
  the group has a NaN) and the same as int32 clipped to [0, n] for table look-ups."""
  n = values.shape[-1]
  count = jnp.sum(values, axis=-1)
  index = jnp.clip(jnp.round(jnp.nan_to_num(count)), 0, n).astype(jnp.int32)
  return count, index


def pass_at_k(correct: ArrayLike, k: int, *, where: ArrayLike | None = None) -> jax.Array:
  """Unbiased pass@k estimate from n samples per group (Chen et al. 2021; PKPO Eq. 3).

  pass@k ≈ 1 - C(n - c, k) / C(n, k), with c the number of correct samples.  The
  value is read from a static float64 table indexed by c, so it is correctly
  rounded in float32 for every n and k (no C(n, k) is formed).

  Args:
    correct: ``[..., n]`` bool or {0, 1}; samples on the last axis.
    k: static int, ``1 <= k <= n``.
    where: keyword-only, optional bool, broadcastable to ``correct``: the valid
      samples of each group (ragged groups; see the README's "Ragged groups"):
      the estimate of a group is that of its m valid samples, NaN where m < k.

  Returns:
    ``[...]`` float32 (or the input's floating dtype) estimates in [0, 1].  A group
    with a non-finite entry returns NaN.  Values outside {0, 1} raise ``ValueError``
    when called eagerly; under ``jit`` they cannot be checked and c is taken as the
    rounded sum of the group.

  Raises:
    ValueError: if ``k`` is not an int in [1, n] or ``correct`` is not {0, 1}.
  """
  values, n, k, valid = validate_correct(correct, k, where)
  if valid is not None:
    return _pass_at_k_ragged(values, valid, ragged.max_operands(n, k, values.dtype), k)
  return table_lookup(values, _pass_at_k_operand(n, k, values.dtype))


@functools.lru_cache(maxsize=256)
def _pass_at_k_operand(n: int, k: int, dtype: DTypeLike) -> np.ndarray:
  # A host array (see sorted_kernels.Operand): cacheable, and an argument of the
  # compiled lookup rather than a constant, so another k reuses it.
  return np.asarray(_pass_at_k_table(n, k), np.dtype(dtype))


@jax.jit
def table_lookup(values: jax.Array, table: jax.Array) -> jax.Array:
  """table[c] for each group's number c of correct samples (NaN if it has a NaN).

  The table is an argument, not a constant, so that another k reuses the
  compiled program.
  """
  count, index = count_correct(values)
  return jnp.where(jnp.isfinite(count), table[index], jnp.nan)


def max_at_k(rewards: ArrayLike, k: int, *, where: ArrayLike | None = None) -> jax.Array:
  """Unbiased max@k estimate: the mean over all k-subsets of the subset maximum.

  max@k ≈ (1/C(n,k)) Σ_{|I|=k} max_{i∈I} r_i = Σ_j w_j r_(j), w_j = C(j-1,k-1)/C(n,k)
  (PKPO Eq. 12-14; max@k paper App. C.1).  Cost O(n log n) per group (one sort);
  the weights are static float64 tables and the sum is compensated, so the result
  is accurate in float32 for any n (error ≲ ε·Σ_j w_j |r_(j)| + ε·|max@k|).  For
  {0, 1} rewards this equals :func:`pass_at_k`.

  Infinite rewards are allowed: the value is the mean over subsets in IEEE
  arithmetic, so a -inf reward makes the estimate -inf exactly when some k-subset
  holds only -inf rewards (also where that subset's weight 1/C(n, k) underflows,
  as for 100 rewards -inf and 100 rewards 1 at k = 100 in float32), a +inf reward
  makes it +inf, and both give NaN.

  Args:
    rewards: ``[..., n]`` float rewards; samples on the last axis.  Ties and
      negative or infinite rewards are allowed.
    k: static int, ``1 <= k <= n``.
    where: keyword-only, optional bool, broadcastable to ``rewards``: the valid
      samples of each group; the estimate of a group is that of its m valid
      samples (weights C(j−1, k−1)/C(m, k)), NaN where m < k.

  Returns:
    ``[...]`` estimates.  A NaN in a group makes that group's estimate NaN only.

  Raises:
    ValueError: if ``k`` is not an int in [1, n] or ``rewards`` is a scalar.
  """
  rewards = checks.as_float_array(rewards, "rewards")
  n = rewards.shape[-1]
  k = checks.check_int(k, "k", low=1, high=n, high_name="n")
  valid = ragged.as_valid(where, rewards.shape)
  if valid is not None:
    return _max_at_k_ragged(rewards, valid, ragged.max_operands(n, k, rewards.dtype), k)
  return _max_at_k(rewards, *_max_at_k_operands(n, k, rewards.dtype))


@functools.lru_cache(maxsize=256)
def _max_at_k_operands(n: int, k: int, dtype: DTypeLike) -> tuple[np.ndarray, np.ndarray]:
  # Rank j is the maximum of C(j-1, k-1) > 0 subsets exactly when j >= k, also
  # where that weight underflows (1/C(200, 100) in float32).
  top = np.arange(1, n + 1) >= k
  return np.asarray(combinatorics.max_weights(n, k), np.dtype(dtype)), top


@jax.jit
def _max_at_k(rewards: jax.Array, weights: jax.Array, top: jax.Array) -> jax.Array:
  r_sorted, _ = sorting.sort_last(rewards)
  return sorted_kernels.rank_weighted_sum(r_sorted, weights, top, jnp.zeros_like(top))


def ragged_estimate(
  values: jax.Array, valid: jax.Array, diag: ragged.Pow2, inv: ragged.Pow2, k: int | jax.Array
) -> jax.Array:
  """Σ_{t<=m} C(t−1, k−1)/C(m, k) r_(t) over each group's m valid samples (NaN if m < k).

  ``diag`` and ``inv`` are those of :func:`maxk._src.ragged.max_tables` at (n, k),
  arguments of the caller's kernel (:func:`maxk._src.ragged.max_operands`) like
  ``k`` (which may be traced), so that another k reuses the compiled program.
  """
  r_sorted, _, m, inside = ragged.sort_valid(values, valid)
  weights = ragged.weights_from(diag, inv, m, values.dtype)
  top = inside & (ragged.positions(values.shape) >= k)
  estimate = sorted_kernels.rank_weighted_sum(r_sorted, weights, top, jnp.zeros_like(top))
  return jnp.where(m[..., 0] >= k, estimate, jnp.nan)


@jax.jit
def _max_at_k_ragged(
  rewards: jax.Array, valid: jax.Array, packed: ragged.Packed, k: jax.Array
) -> jax.Array:
  tables = ragged.unpack_max(packed)
  return ragged_estimate(rewards, valid, tables.diag, tables.inv, k)


@jax.jit
def _pass_at_k_ragged(
  values: jax.Array, valid: jax.Array, packed: ragged.Packed, k: jax.Array
) -> jax.Array:
  # Binary rewards: the estimate sums the weights of the c correct samples, the top
  # c valid ranks (= 1 − C(m − c, k)/C(m, k), as a sum of positive terms).
  t = ragged.unpack_max(packed)
  finite = jnp.all(jnp.isfinite(values) | ~valid, axis=-1)
  estimate = ragged_estimate(jnp.where(jnp.isfinite(values), values, 0), valid, t.diag, t.inv, k)
  return jnp.where(finite, estimate, jnp.nan)
