"""Inputs of the categorical-policy functions: validation, normalization, batching.

A categorical policy is ``probs [..., L]`` over L outcomes, with ``rewards
[..., L]`` on the same outcomes; leading axes are batch axes.  Values are
validated only when concrete (eager calls): ``probs`` must be finite,
non-negative and sum to 1 within float tolerance, and ``rewards`` (and reward
thresholds) must not hold NaN (±inf rewards are allowed: only their order
matters).  Under ``jit`` or ``vmap`` values cannot be checked; the functions
then divide ``probs`` by its sum and make a row with a NaN reward NaN.
"""

from __future__ import annotations

from collections.abc import Callable
import functools
import math
from typing import Any

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike
from jax.typing import DTypeLike
import numpy as np

from maxk._src import checks


def _sum_tolerance(dtype: DTypeLike, num_outcomes: int) -> float:
  info = jnp.finfo(dtype)
  base = 1e-4 if info.bits <= 32 else 1e-8
  return max(base, 4.0 * float(info.eps) * math.sqrt(num_outcomes))


def as_distribution(x: ArrayLike, name: str) -> jax.Array:
  """Float array ``[..., L]`` with L >= 1 (values are checked separately)."""
  arr = checks.as_float_array(x, name)
  if arr.shape[-1] < 1:
    raise ValueError(
      f"{name} must have at least one outcome on its last axis; got shape {arr.shape}."
    )
  return arr


def check_probabilities(arr: jax.Array, name: str) -> None:
  """Eagerly checks that ``arr`` holds probability vectors (skipped under jit)."""
  if not checks.is_concrete(arr) or not arr.size:
    return
  a = np.asarray(arr, dtype=np.float64)
  if not np.all(np.isfinite(a)):
    raise ValueError(f"{name} must be finite (found NaN or inf).")
  if np.any(a < 0):
    raise ValueError(f"{name} must be non-negative (min {a.min():.3g}).")
  total = a.sum(axis=-1)
  tol = _sum_tolerance(arr.dtype, arr.shape[-1])
  worst = float(np.max(np.abs(total - 1.0)))
  if worst > tol:
    raise ValueError(
      f"{name} must sum to 1 along the last axis within {tol:.1e}; "
      f"the worst row is off by {worst:.3g}."
    )


def check_not_nan(arr: jax.Array, name: str) -> None:
  """Eagerly rejects NaN, which has no place in the reward order (±inf has)."""
  if checks.is_concrete(arr) and arr.size and np.any(np.isnan(np.asarray(arr))):
    raise ValueError(f"{name} must not contain NaN (+-inf is allowed).")


def check_rewards(rewards: ArrayLike, probs: jax.Array, probs_name: str = "probs") -> jax.Array:
  """``rewards`` as a float array of the shape of ``probs``, without NaN (eagerly)."""
  r = checks.as_float_array(rewards, "rewards")
  checks.check_same_shape(probs, probs_name, r, "rewards")
  check_not_nan(r, "rewards")
  return r


def check_unit_interval(x: ArrayLike, name: str) -> jax.Array:
  """``x`` (any shape) as a float array; eagerly, every value must lie in [0, 1]."""
  arr = checks.as_float_array(x, name, min_ndim=0)
  if checks.is_concrete(arr) and arr.size:
    a = np.asarray(arr, dtype=np.float64)
    if np.any(~((a >= 0) & (a <= 1))):
      raise ValueError(f"{name} must lie in [0, 1].")
  return arr


def common_dtype(*arrays: jax.Array) -> Any:
  """The floating dtype that all ``arrays`` are promoted to."""
  return jnp.result_type(*[a.dtype for a in arrays])


def normalize(p: jax.Array) -> jax.Array:
  """``p`` divided by its sum along the last axis."""
  return p / jnp.sum(p, axis=-1, keepdims=True)


def prepare(probs: ArrayLike, rewards: ArrayLike) -> tuple[jax.Array, jax.Array]:
  """Validated ``(probs / sum(probs), rewards)`` of one floating dtype, ``[..., L]`` each.

  Raises:
    ValueError: if the shapes differ or (eagerly only) ``probs`` is not a
      probability vector or ``rewards`` holds a NaN.
  """
  p = as_distribution(probs, "probs")
  r = check_rewards(rewards, p)
  check_probabilities(p, "probs")
  dtype = common_dtype(p, r)
  return normalize(p.astype(dtype)), r.astype(dtype)


def check_pair(q: ArrayLike, q_name: str, p: ArrayLike, p_name: str) -> tuple[jax.Array, jax.Array]:
  """Two distributions of the same shape; shapes are checked before values."""
  q_arr = as_distribution(q, q_name)
  p_arr = as_distribution(p, p_name)
  checks.check_same_shape(q_arr, q_name, p_arr, p_name)
  check_probabilities(q_arr, q_name)
  check_probabilities(p_arr, p_name)
  return q_arr, p_arr


@functools.partial(jax.jit, static_argnums=0)
def rowwise(fn: Callable[..., Any], n: int | jax.Array, *arrays: jax.Array) -> Any:
  """Applies ``fn(n, *rows)`` to every row of ``[..., L]`` arrays (vmap over rows).

  Jitted with ``fn`` static and ``n`` traced, so that eager calls compile once
  per shape (not per ``n``) instead of dispatching op by op; inside an outer
  ``jit`` it is inlined and ``n`` is a constant.

  Returns:
    ``fn``'s per-row outputs with the batch shape ``arrays[0].shape[:-1]`` in front.
  """
  batch = arrays[0].shape[:-1]
  size = arrays[0].shape[-1]
  flat = [a.reshape((-1, size)) for a in arrays]
  out = jax.vmap(fn, in_axes=(None,) + (0,) * len(flat))(n, *flat)
  return jax.tree_util.tree_map(lambda o: o.reshape(batch + o.shape[1:]), out)
