"""Argument validation shared by the public functions.

Static arguments (``k``, ``n``, option strings) are checked at call/trace time and
raise ``ValueError`` naming the argument and its allowed range.  Array *values* can
only be checked eagerly (outside ``jit``); see :func:`is_concrete`.
"""

from __future__ import annotations

from collections.abc import Sequence
import numbers

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike
import numpy as np


def check_int(
  value: object,
  name: str,
  *,
  low: int | None = None,
  high: int | None = None,
  high_name: str | None = None,
) -> int:
  """Returns ``value`` as a Python int, or raises ``ValueError`` naming ``name``.

  Booleans and floats (even integral ones such as ``2.0``) are rejected: ``k`` and
  ``n`` are static sizes, and silently truncating a float hides bugs.
  """
  if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
    raise ValueError(f"{name}={value!r} must be a Python int (got {type(value).__name__}).")
  value = int(value)
  if low is not None and high is not None:
    if not low <= value <= high:
      bound = f"{high_name}={high}" if high_name else str(high)
      raise ValueError(f"{name}={value} must satisfy {low} <= {name} <= {bound}.")
  elif low is not None and value < low:
    raise ValueError(f"{name}={value} must satisfy {name} >= {low}.")
  elif high is not None and value > high:
    raise ValueError(f"{name}={value} must satisfy {name} <= {high}.")
  return value


# Static sizes (n, k, draws) must fit the int32 that they become inside jit.
MAX_SIZE = 2**31 - 1


def nan_group(values: jax.Array, out: jax.Array) -> jax.Array:
  """``out`` with every group (last axis) whose ``values`` hold a NaN set entirely to NaN."""
  bad = jnp.any(jnp.isnan(values), axis=-1, keepdims=True)
  return jnp.where(bad, jnp.nan, out)


def check_real(arr: jax.Array, name: str) -> None:
  """Rejects complex (or other non-real) arrays instead of silently dropping a part."""
  if not (
    jnp.issubdtype(arr.dtype, jnp.floating)
    or jnp.issubdtype(arr.dtype, jnp.integer)
    or jnp.issubdtype(arr.dtype, jnp.bool_)
  ):
    raise ValueError(f"{name} must be real (bool, int or float); got dtype {arr.dtype}.")


def check_option(value: object, name: str, valid: Sequence[str]) -> str:
  """Raises ``ValueError`` listing ``valid`` unless ``value`` is one of them."""
  if not isinstance(value, str) or value not in valid:
    raise ValueError(f"Unknown {name}={value!r}; valid options are {list(valid)}.")
  return value


def as_float_array(x: ArrayLike, name: str, *, min_ndim: int = 1) -> jax.Array:
  """Converts ``x`` to a floating JAX array (the default float dtype unless already floating)."""
  try:
    arr = jnp.asarray(x)
  except (TypeError, ValueError) as e:
    raise ValueError(f"{name} must be a real numeric array: {e}") from e
  check_real(arr, name)
  if arr.ndim < min_ndim:
    raise ValueError(
      f"{name} must have at least {min_ndim} dimension(s) with the sample axis last;"
      f" got shape {arr.shape}."
    )
  if not jnp.issubdtype(arr.dtype, jnp.floating):
    arr = arr.astype(jnp.result_type(float))  # float32, or float64 under jax_enable_x64
  return arr


def check_same_shape(a: jax.Array, a_name: str, b: jax.Array, b_name: str) -> None:
  if a.shape != b.shape:
    raise ValueError(f"{b_name} shape {b.shape} must equal {a_name} shape {a.shape}.")


def is_concrete(x: object) -> bool:
  """True when ``x`` holds concrete values (not a tracer), so values can be checked."""
  return not isinstance(x, jax.core.Tracer)
