"""Sorting along the sample axis while remembering how to undo it.

All estimators are computed on rewards sorted ascending along the last axis and
then returned in the caller's order (DESIGN: outputs are never sorted).  Sorting
is stable, so tied rewards keep their relative order; every formula in this
package is invariant to how ties are broken because only reward *values* enter.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax


def sort_last(x: jax.Array, *others: jax.Array):
  """Sorts ``x`` ascending along its last axis, carrying ``others`` along.

  Returns:
    ``(x_sorted, others_sorted..., perm)`` where ``perm[..., j]`` is the original
    index of the j-th smallest entry (NaN sorts last, so it stays in its group).
  """
  axis = x.ndim - 1
  iota = lax.broadcasted_iota(jnp.int32, x.shape, axis)
  out = lax.sort((x, *others, iota), dimension=axis, num_keys=1, is_stable=True)
  return out


def unsort_last(y_sorted: jax.Array, perm: jax.Array) -> jax.Array:
  """Inverse of :func:`sort_last`: ``out[..., perm[..., j]] = y_sorted[..., j]``."""
  axis = perm.ndim - 1
  iota = lax.broadcasted_iota(jnp.int32, perm.shape, axis)
  _, inverse = lax.sort((perm, iota), dimension=axis, num_keys=1, is_stable=True)
  return jnp.take_along_axis(y_sorted, inverse, axis=-1)
