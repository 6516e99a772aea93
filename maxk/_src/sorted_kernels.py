"""Kernels on rewards sorted along the last axis, shared by the estimators.

Every max@k estimator in this package is linear in the ascending sorted rewards
r_(1) <= ... <= r_(n) with static float64 coefficients (computed by
:mod:`maxk._src.combinatorics`).  The kernels here evaluate such sums
(a weighted sum, or the transform d_j r_(j) + Σ_{m>j} u_m r_(m) − Σ_{m<j} p_m r_(m)
via exclusive cumulative sums) and the shift-invariant standardisations that the
peer estimators share.  All take and return arrays of shape ``[..., n]``.

The coefficients are computed on the host in float64 and enter the jitted
estimators as arguments (:class:`Operand`), not as constants, so that the
compiled program depends only on the shapes: a sweep over k compiles once.

References: Walder & Karkhanis, "Pass@K Policy Optimization", arXiv 2505.15201
(Eqs. 12-14, 18-21).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
from jax import lax
import jax.numpy as jnp
from jax.typing import DTypeLike
import numpy as np

from maxk._src import checks


class SortedTransform(NamedTuple):
  """Static coefficients of a_(j) = d_j r_(j) + Σ_{m>j} u_m r_(m) − Σ_{m<j} p_m r_(m).

  Each field is a float64 NumPy vector of length n over ascending ranks (or, as
  kernel operands, see :func:`transform_operands`, an :class:`Operand` or
  None for a vector that is all zero).
  """

  diag: Any  # d
  suffix: Any  # u
  prefix: Any  # p


class Operand(NamedTuple):
  """A float64 coefficient vector as a kernel operand (host arrays).

  Passed to the jitted kernels as arguments rather than baked in as constants,
  so that a new k of the same group size reuses the compiled program.  The
  fields are NumPy arrays: they can be cached across calls (an array made on the
  device inside a caller's ``jit`` would belong to that trace), and the compiled
  call takes them as they are.
  """

  value: np.ndarray  # in the rewards' dtype
  nonzero: np.ndarray  # bool: the exact coefficient is not 0 (value may underflow)


def operand(c: np.ndarray | Operand, dtype: DTypeLike) -> Operand:
  """``c`` (float64) as an :class:`Operand` in ``dtype`` (unchanged if it is one)."""
  if isinstance(c, Operand):
    return c
  c = np.asarray(c)
  return Operand(np.asarray(c, np.dtype(dtype)), c != 0)


def transform_operands(coeffs: SortedTransform, dtype: DTypeLike) -> SortedTransform:
  """The fields of ``coeffs`` as :class:`Operand` in ``dtype``, None where all zero.

  Which fields are None is part of the operands' tree structure, hence static:
  the cumulative sum of an all-zero vector is never compiled.
  """
  used = (c is not None and np.any(np.asarray(c) != 0) for c in coeffs)
  return SortedTransform(*(operand(c, dtype) if u else None for c, u in zip(coeffs, used)))


def exclusive_prefix_sum(x: jax.Array) -> jax.Array:
  """out[..., j] = Σ_{m<j} x[..., m] along the last axis."""
  incl = jnp.cumsum(x, axis=-1)
  return jnp.concatenate([jnp.zeros_like(incl[..., :1]), incl[..., :-1]], axis=-1)


def exclusive_suffix_sum(x: jax.Array) -> jax.Array:
  """out[..., j] = Σ_{m>j} x[..., m] along the last axis."""
  incl = jnp.flip(jnp.cumsum(jnp.flip(x, -1), axis=-1), -1)
  return jnp.concatenate([incl[..., 1:], jnp.zeros_like(incl[..., :1])], axis=-1)


def scaled(coeffs: np.ndarray | Operand, r: jax.Array) -> jax.Array:
  """coeffs * r, with 0 wherever the float64 coefficient is exactly 0.

  Ranks that never enter a sum have coefficient 0, and must not turn a -inf
  reward into NaN (0 · inf).
  """
  c = operand(coeffs, r.dtype)
  return jnp.where(c.nonzero, c.value * r, 0)


def weighted_sorted_sum(r_sorted: jax.Array, coeffs: np.ndarray | Operand) -> jax.Array:
  """Σ_j coeffs_j r_sorted_j over the last axis ``[..., n] -> [...]``, with 0 · ±inf = 0."""
  return jnp.sum(scaled(coeffs, r_sorted), axis=-1)


def apply_sorted_transform(r_sorted: jax.Array, coeffs: SortedTransform) -> jax.Array:
  """Evaluates a_(j) = d_j r_(j) + Σ_{m>j} u_m r_(m) − Σ_{m<j} p_m r_(m).

  Args:
    r_sorted: ``[..., n]`` rewards sorted ascending along the last axis.
    coeffs: the (d, u, p) coefficient vectors, each of length n: float64 NumPy
      vectors, or their :func:`transform_operands`.

  Returns:
    ``[..., n]`` transformed rewards, in sorted order.  Cost O(n) per group (two
    cumulative sums, skipped where a coefficient vector is all zero).
  """
  if any(isinstance(c, np.ndarray) for c in coeffs):
    coeffs = transform_operands(coeffs, r_sorted.dtype)
  out = jnp.zeros_like(r_sorted) if coeffs.diag is None else scaled(coeffs.diag, r_sorted)
  if coeffs.suffix is not None:
    out = out + exclusive_suffix_sum(scaled(coeffs.suffix, r_sorted))
  if coeffs.prefix is not None:
    out = out - exclusive_prefix_sum(scaled(coeffs.prefix, r_sorted))
  return out


def finite_or_zero(x: jax.Array) -> jax.Array:
  """x where finite, else 0 (a shift that must not turn a group into NaN)."""
  return jnp.where(jnp.isfinite(x), x, 0)


def from_group_max(x: jax.Array, valid: jax.Array | None = None) -> jax.Array:
  """x measured from its group's (finite) maximum, for shift-invariant functions.

  Differences of nearby values are then exact (Sterbenz), so a constant group
  becomes exactly 0 (a float32 mean of equal values need not equal them) and a
  large common offset does not swamp the differences.  The shift carries no
  gradient: only use it where the result does not depend on it.

  Args:
    x: ``[..., n]`` values.
    valid: optional ``[..., n]`` bool: the maximum is over these entries only,
      and the others become exactly 0.

  Returns:
    ``[..., n]`` values x − max(x) (the shift is 0 for a group whose maximum is
    not finite).
  """
  if valid is None:
    top = jnp.max(x, axis=-1, keepdims=True)
    return x - lax.stop_gradient(finite_or_zero(top))
  top = jnp.max(jnp.where(valid, x, -jnp.inf), axis=-1, keepdims=True)
  return jnp.where(valid, x - lax.stop_gradient(finite_or_zero(top)), 0)


def zscore(
  x: jax.Array, *, eps: float | jax.Array, ddof: int = 0, valid: jax.Array | None = None
) -> jax.Array:
  """(x − mean) / (std + eps) over the last axis; std with ``n − ddof`` in the divisor.

  Computed on x measured from its group maximum (:func:`from_group_max`), so a
  constant group gives exactly 0, and divided by the group's largest |x − max|
  before squaring, so that the variance cannot overflow (float32 [0, 1e20, 0, 1e20]
  and float16 [0, 600, 0, 600] give exactly ±1).  The result does not depend on
  that scale, which therefore carries no gradient.  The std's gradient is taken
  as 0 where the group is constant (instead of the NaN that d sqrt(v)/dv = ∞
  times 0 would give), so ``jax.grad`` stays finite.  Where std + eps is 0 (a
  constant group with eps = 0, or n <= ddof) the result is 0, except that a
  group holding a NaN is all NaN (with eps = 0 its NaN std would otherwise pass
  for the 0 of a constant group).

  Args:
    x: ``[..., n]`` values.
    eps: keyword-only, added to the std.
    ddof: keyword-only, 0 (population std) or 1 (sample std).
    valid: keyword-only, optional ``[..., n]`` bool: only these entries form the
      group (n is then their number per group); the others get exactly 0.

  Returns:
    ``[..., n]`` standardised values.
  """
  values = x
  x = from_group_max(x, valid)
  if valid is None:
    n: int | jax.Array = x.shape[-1]
    low = jnp.min(x, axis=-1, keepdims=True)
  else:
    n = jnp.sum(valid, axis=-1, keepdims=True, dtype=jnp.int32)
    low = jnp.min(jnp.where(valid, x, jnp.inf), axis=-1, keepdims=True)
  spread = lax.stop_gradient(jnp.where(jnp.isfinite(low) & (low < 0), -low, 1))
  x = x / spread
  if valid is None:
    centred = x - jnp.mean(x, axis=-1, keepdims=True)
  else:
    mean = jnp.sum(x, axis=-1, keepdims=True) / jnp.maximum(n, 1).astype(x.dtype)
    centred = jnp.where(valid, x - mean, 0)
  sq = jnp.sum(jnp.square(centred), axis=-1, keepdims=True)
  dof = n - ddof
  if isinstance(dof, int):
    var = sq / dof if dof > 0 else jnp.zeros_like(sq)
  else:
    var = jnp.where(dof > 0, sq / jnp.maximum(dof, 1).astype(sq.dtype), 0)
  positive = var > 0
  std = jnp.where(positive, jnp.sqrt(jnp.where(positive, var, 1)), 0)
  denom = std + eps / spread
  safe = jnp.where(denom > 0, denom, 1)
  out = jnp.where(denom > 0, centred / safe, jnp.where(jnp.isnan(denom), jnp.nan, 0))
  if valid is None:
    return checks.nan_group(values, out)
  bad = jnp.any(jnp.isnan(values) & valid, axis=-1, keepdims=True)
  return jnp.where(valid, jnp.where(bad, jnp.nan, out), 0)


def two_sum(
  a: tuple[jax.Array, jax.Array], b: tuple[jax.Array, jax.Array]
) -> tuple[jax.Array, jax.Array]:
  """(sum, error) pairs added with Knuth's TwoSum: the rounding error of s1 + s2 is
  exact and carried into the error term, whatever the order of the pairs."""
  (s1, e1), (s2, e2) = a, b
  total = s1 + s2
  s2_virtual = total - s1
  rounding = (s1 - (total - s2_virtual)) + (s2 - s2_virtual)
  return total, e1 + e2 + rounding


@jax.custom_jvp
def compensated_sum(x: jax.Array) -> jax.Array:
  """Σ_j x_j over the last axis, with the rounding error of every addition carried
  along (TwoSum in one reduction), so the result is within about an ulp of the
  exact sum of the given terms however much they cancel.  Linear: its derivative
  is the plain sum.

  A U-statistic of rewards of both signs can be far smaller than its terms (the
  mean reward near 0); a plain float32 sum then loses digits in proportion.
  """
  zero = jnp.zeros((), x.dtype)
  total, err = lax.reduce((x, jnp.zeros_like(x)), (zero, zero), two_sum, (x.ndim - 1,))
  return total + err


@compensated_sum.defjvp
def _compensated_sum_jvp(
  primals: tuple[jax.Array], tangents: tuple[jax.Array]
) -> tuple[jax.Array, jax.Array]:
  return compensated_sum(primals[0]), jnp.sum(tangents[0], axis=-1)


def infinite_overlay(value: jax.Array, plus: jax.Array, minus: jax.Array) -> jax.Array:
  """``value`` where no infinite term enters; ±inf where the infinite terms all have
  that sign; NaN where terms of both signs are infinite (inf − inf is undefined)
  and wherever ``value`` is NaN."""
  signed = jnp.where(plus, jnp.inf, jnp.where(minus, -jnp.inf, value))
  return jnp.where((plus & minus) | jnp.isnan(value), jnp.nan, signed).astype(value.dtype)


def infinite_terms(r: jax.Array, pos: jax.Array, neg: jax.Array) -> tuple[jax.Array, jax.Array]:
  """(plus, minus): where an infinite ``r`` enters with a coefficient that has a
  positive (``pos``) or a negative (``neg``) part, the term is +inf (``plus``) or
  −inf (``minus``), by the sign of the coefficient times that of ``r``."""
  up, down = r == jnp.inf, r == -jnp.inf
  return (up & pos) | (down & neg), (up & neg) | (down & pos)


def rank_weighted_sum(
  r_sorted: jax.Array, coeffs: jax.Array, pos: jax.Array, neg: jax.Array
) -> jax.Array:
  """Σ_j c_j r_(j) over the last axis ``[..., n] -> [...]``, exact for infinite rewards.

  ``coeffs`` are the float coefficients in the rewards' dtype; ``pos`` and ``neg``
  (``[n]`` bools) say whether the exact coefficient of rank j is a sum with a
  positive or a negative term (a U-statistic weight counts subsets, so this is
  known exactly even where the float coefficient underflows to 0, e.g.
  1/C(200, 100) in float32).  Finite rewards enter as c_j r_(j); an infinite
  reward enters as ±inf by those signs and not at all where both are false, so
  a zero coefficient never turns -inf into NaN and an underflowed positive one
  never drops it; terms of both signs give NaN.  A NaN reward gives NaN.
  """
  finite_sum = compensated_sum(jnp.where(jnp.isinf(r_sorted), 0, coeffs * r_sorted))
  plus, minus = infinite_terms(r_sorted, pos, neg)
  return infinite_overlay(finite_sum, jnp.any(plus, axis=-1), jnp.any(minus, axis=-1))
