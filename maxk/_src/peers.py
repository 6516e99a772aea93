"""Peer advantage estimators, with the same ``[..., n] -> [..., n]`` shapes.

These are the baselines the max@k estimators are compared against in the studies:
GRPO, RLOO, the max-minus-second estimator of max@n (Tang et al. 2025; verl's
``grpo_passk``) and the analytic advantages of Pass@k Training (arXiv 2508.10751).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike
import numpy as np

from maxk._src import checks
from maxk._src import combinatorics
from maxk._src import metrics
from maxk._src import sorted_kernels
from maxk._src import sorting


def _check_eps(eps: float | jax.Array) -> None:
  """``eps`` may be traced (then it cannot be checked); a concrete value must be >= 0."""
  if checks.is_concrete(eps) and not np.all(np.asarray(eps) >= 0):
    raise ValueError(f"eps={eps!r} must be >= 0.")


def grpo_advantages(rewards: ArrayLike, *, eps: float = 1e-6) -> jax.Array:
  """GRPO advantages (r_i − mean(r)) / (std(r) + eps) within each group.

  Shao et al. 2024 (DeepSeekMath), outcome supervision.  ``std`` is the population
  standard deviation (ddof = 0); a constant group gets exactly zero (and a finite,
  zero gradient through the std).  Computed on rewards measured from the group
  maximum, so a large common offset (say 1e6 + noise) keeps float32 accuracy.

  Args:
    rewards: ``[..., n]`` rewards, samples on the last axis.
    eps: keyword-only, added to the std; must be >= 0.

  Returns:
    ``[..., n]`` advantages.
  """
  rewards = checks.as_float_array(rewards, "rewards")
  _check_eps(eps)
  return _grpo(rewards, eps)


@jax.jit
def _grpo(rewards: jax.Array, eps: float | jax.Array) -> jax.Array:
  return sorted_kernels.zscore(rewards, eps=eps)


def rloo_advantages(rewards: ArrayLike) -> jax.Array:
  """REINFORCE leave-one-out: a_i = r_i − mean_{j≠i} r_j = n/(n−1) (r_i − mean(r)).

  Kool et al. 2019; Ahmadian et al. 2024.  Unbiased for ∇ E[r] (max@1).

  Args:
    rewards: ``[..., n]`` rewards with n >= 2.

  Returns:
    ``[..., n]`` advantages.
  """
  rewards = checks.as_float_array(rewards, "rewards")
  n = rewards.shape[-1]
  checks.check_int(n, "n (rewards.shape[-1])", low=2)
  return _rloo(rewards)


@jax.jit
def _rloo(rewards: jax.Array) -> jax.Array:
  n = rewards.shape[-1]
  # Shift invariant: measured from the group maximum, a constant group gives exactly
  # 0 and a large common offset keeps the differences exact.
  rewards = sorted_kernels.from_group_max(rewards)
  total = jnp.sum(rewards, axis=-1, keepdims=True)
  return rewards - (total - rewards) / (n - 1)


def max_minus_second_advantages(rewards: ArrayLike) -> jax.Array:
  """The top sample gets r_max − r_second, all others 0 (Tang et al. 2025; verl ``grpo_passk``).

  This is max(r) − max(r_{−i}), the leave-one-out estimator of ∇ max@n: only the
  maximum changes when it is removed.  ``r_second`` is the second entry of the
  sorted multiset, so when the top value is tied the value is 0; the value is
  nevertheless split evenly among the tied top samples, so that no tied sample is
  singled out.

  Args:
    rewards: ``[..., n]`` rewards with n >= 2.

  Returns:
    ``[..., n]`` advantages, nonzero only at the (untied) top sample.
  """
  rewards = checks.as_float_array(rewards, "rewards")
  n = rewards.shape[-1]
  checks.check_int(n, "n (rewards.shape[-1])", low=2)
  return _max_minus_second(rewards)


@jax.jit
def _max_minus_second(rewards: jax.Array) -> jax.Array:
  r_sorted, _ = sorting.sort_last(rewards)
  top = r_sorted[..., -1:]
  second = r_sorted[..., -2:-1]
  is_top = rewards == top
  n_top = jnp.sum(is_top, axis=-1, keepdims=True)
  value = (top - second) / jnp.maximum(n_top, 1)
  out = jnp.where(is_top, value, 0)
  # A NaN anywhere in the group makes every entry of that group NaN.
  return jnp.where(jnp.isnan(top), jnp.nan, out)


@functools.lru_cache(maxsize=256)
def _pass_at_k_training_tables(n: int, k: int) -> tuple[np.ndarray, np.ndarray]:
  """For N_neg = 0..n: group mean R̄, and C(N_neg−1, k−1)/C(n−1, k−1)."""
  n_neg = np.arange(n + 1)
  mean = -np.expm1(combinatorics.log_binom(n_neg, k) - combinatorics.log_binom(n, k))
  if n >= 2:
    ratio = combinatorics.binom_ratio(n_neg - 1, k - 1, n - 1, k - 1)
  else:
    ratio = (n_neg >= 1).astype(np.float64)
  return mean, ratio


def pass_at_k_training_advantages(correct: ArrayLike, k: int, *, eps: float = 0.0) -> jax.Array:
  """Analytic Pass@k-Training advantages (Chen et al., arXiv 2508.10751, Eqs. 11-15).

  With N = n rollouts of which N_neg are incorrect, the group's pass@k reward is
  R̄ = 1 − C(N_neg, k)/C(N, k), its std σ = sqrt(R̄(1 − R̄)), and

    Â_pos = (1 − R̄) / σ,
    Â_neg = (1 − R̄ − C(N_neg − 1, k − 1)/C(N − 1, k − 1)) / σ,

  with σ replaced by σ + eps.  Groups with σ = 0 get all zeros (their numerators are
  0 as well).  Every ratio of binomials is a static float64 table indexed by N_neg.

  Args:
    correct: ``[..., n]`` bool or {0, 1}.
    k: static int, ``1 <= k <= n``.
    eps: keyword-only, added to σ; must be >= 0.

  Returns:
    ``[..., n]`` advantages.

  Raises:
    ValueError: bad ``k``, ``eps`` < 0, or non-binary ``correct`` (eagerly).
  """
  _check_eps(eps)
  values, n, k = metrics.validate_correct(correct, k)
  return _pass_at_k_training(values, k, eps)


@functools.partial(jax.jit, static_argnums=1)
def _pass_at_k_training(values: jax.Array, k: int, eps: float | jax.Array) -> jax.Array:
  n = values.shape[-1]
  dtype = values.dtype
  count, index = metrics.count_correct(values)
  mean_table, ratio_table = _pass_at_k_training_tables(n, k)
  n_neg = n - index
  mean = jnp.asarray(mean_table, dtype)[n_neg]
  ratio = jnp.asarray(ratio_table, dtype)[n_neg]
  std = jnp.sqrt(jnp.maximum(mean * (1 - mean), 0))
  pos = 1 - mean
  neg = 1 - mean - ratio
  is_correct = values == 1
  numer = jnp.where(is_correct, pos[..., None], neg[..., None])
  denom = (std + eps)[..., None]
  safe = jnp.where(denom > 0, denom, 1)
  out = jnp.where((std > 0)[..., None], numer / safe, 0)
  return jnp.where(jnp.isfinite(count)[..., None], out, jnp.nan)
