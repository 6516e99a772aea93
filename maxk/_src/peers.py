"""Peer advantage estimators, with the same ``[..., n] -> [..., n]`` shapes.

These are the baselines the max@k estimators are compared against in the studies:
GRPO, RLOO, the max-minus-second estimator of max@n (Tang et al. 2025; verl's
``grpo_passk``), the analytic advantages of Pass@k Training (arXiv 2508.10751) and
MaxRL's success-averaged estimator (arXiv 2602.02710).
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
from maxk._src import metrics
from maxk._src import ragged
from maxk._src import sorted_kernels


def _check_eps(eps: object) -> None:
  """``eps`` may be traced (then it cannot be checked); a concrete value must be a real >= 0."""
  if not checks.is_concrete(eps):
    return
  try:
    arr = np.asarray(eps)
    ok = arr.dtype.kind in "biuf" and bool(np.all(arr >= 0))
  except (TypeError, ValueError):
    ok = False
  if not ok:
    raise ValueError(f"eps={eps!r} must be a real number >= 0.")


def grpo_advantages(
  rewards: ArrayLike,
  *,
  eps: float = 1e-6,
  std_ddof: int = 0,
  where: ArrayLike | None = None,
) -> jax.Array:
  """GRPO advantages (r_i − mean(r)) / (std(r) + eps) within each group.

  Shao et al. 2024 (DeepSeekMath), outcome supervision.  ``std`` divides by
  n − ``std_ddof``: 0 is the population std (the DeepSeekMath formula as usually
  written), 1 the sample (unbiased-variance) std of ``torch.std``, which the
  reference trainers use:

  * verl (``compute_grpo_outcome_advantage``): ``std_ddof=1, eps=1e-6``;
  * TRL (``GRPOTrainer``): ``std_ddof=1, eps=1e-4``.

  verl's ``grpo_passk`` is :func:`max_minus_second_advantages` with its std
  normalisation turned off.  A constant group gets exactly zero (and a finite,
  zero gradient through the std); so does a group of n = 1 with ``std_ddof=1``,
  whose sample std is undefined (verl instead passes such a score through
  unchanged, and ``torch.std`` gives NaN).  Computed on rewards measured from the
  group maximum and scaled by their range before squaring, so a large common
  offset (1e6 + noise) keeps float32 accuracy and huge spreads do not overflow.

  Args:
    rewards: ``[..., n]`` rewards, samples on the last axis.
    eps: keyword-only, added to the std; must be >= 0.
    std_ddof: keyword-only, 0 (population std, default) or 1 (sample std).
    where: keyword-only, optional bool, broadcastable to the input: the valid
      samples of each group (ragged groups; n is each group's number m of valid
      samples); the others get 0, as does every sample of a group with too few
      (m < 1).

  Returns:
    ``[..., n]`` advantages.  A NaN in a group makes that whole group NaN.

  Raises:
    ValueError: ``eps`` not a real number >= 0, or ``std_ddof`` not 0 or 1.
  """
  rewards = checks.as_float_array(rewards, "rewards")
  _check_eps(eps)
  std_ddof = checks.check_int(std_ddof, "std_ddof", low=0, high=1)
  valid = ragged.as_valid(where, rewards.shape)
  if valid is not None:
    return _grpo_ragged(rewards, valid, eps, std_ddof)
  return _grpo(rewards, eps, std_ddof)


@functools.partial(jax.jit, static_argnums=2)
def _grpo(rewards: jax.Array, eps: float | jax.Array, ddof: int) -> jax.Array:
  return sorted_kernels.zscore(rewards, eps=eps, ddof=ddof)


def rloo_advantages(rewards: ArrayLike, *, where: ArrayLike | None = None) -> jax.Array:
  """REINFORCE leave-one-out: a_i = r_i − mean_{j≠i} r_j = n/(n−1) (r_i − mean(r)).

  Kool et al. 2019; Ahmadian et al. 2024.  Unbiased for ∇ E[r] (max@1).

  Args:
    rewards: ``[..., n]`` rewards with n >= 2.
    where: keyword-only, optional bool, broadcastable to the input: the valid
      samples of each group (ragged groups; n is each group's number m of valid
      samples); the others get 0, as does every sample of a group with too few
      (m < 2).

  Returns:
    ``[..., n]`` advantages.
  """
  rewards = checks.as_float_array(rewards, "rewards")
  n = rewards.shape[-1]
  checks.check_int(n, "n (rewards.shape[-1])", low=2)
  valid = ragged.as_valid(where, rewards.shape)
  if valid is not None:
    return _rloo_ragged(rewards, valid)
  return _rloo(rewards)


@jax.jit
def _rloo(rewards: jax.Array) -> jax.Array:
  n = rewards.shape[-1]
  # Shift invariant: measured from the group maximum, a constant group gives exactly
  # 0 and a large common offset keeps the differences exact.
  rewards = sorted_kernels.from_group_max(rewards)
  total = jnp.sum(rewards, axis=-1, keepdims=True)
  return rewards - (total - rewards) / (n - 1)


def max_minus_second_advantages(rewards: ArrayLike, *, where: ArrayLike | None = None) -> jax.Array:
  """The top sample gets r_max − r_second, all others 0 (Tang et al. 2025; verl ``grpo_passk``).

  This is max(r) − max(r_{−i}), the leave-one-out estimator of ∇ max@n: only the
  maximum changes when it is removed.  ``r_second`` is the second entry of the
  sorted multiset, so when the top value is tied the value is 0; the value is
  nevertheless split evenly among the tied top samples, so that no tied sample is
  singled out.

  Args:
    rewards: ``[..., n]`` rewards with n >= 2.
    where: keyword-only, optional bool, broadcastable to the input: the valid
      samples of each group (ragged groups; n is each group's number m of valid
      samples); the others get 0, as does every sample of a group with too few
      (m < 2).

  Returns:
    ``[..., n]`` advantages, nonzero only at the (untied) top sample.
  """
  rewards = checks.as_float_array(rewards, "rewards")
  n = rewards.shape[-1]
  checks.check_int(n, "n (rewards.shape[-1])", low=2)
  return _max_minus_second(rewards, ragged.as_valid(where, rewards.shape))


@jax.jit
def _max_minus_second(rewards: jax.Array, valid: jax.Array | None) -> jax.Array:
  # Only the top value, its tie count and the largest value below it are needed:
  # two reductions instead of a sort.  With a tied top the value is 0.  (The
  # all-valid mask is made here, not eagerly: an eager op compiles on its own.)
  if valid is None:
    valid = jnp.ones(rewards.shape, bool)
  top = jnp.max(jnp.where(valid, rewards, -jnp.inf), axis=-1, keepdims=True)
  is_top = (rewards == top) & valid
  n_top = jnp.sum(is_top, axis=-1, keepdims=True)
  below = jnp.max(jnp.where(is_top | ~valid, -jnp.inf, rewards), axis=-1, keepdims=True)
  value = jnp.where(n_top == 1, top - below, 0)
  out = jnp.where(is_top & (ragged.count(valid) >= 2), value, 0)
  # A NaN anywhere in the group's valid samples makes every valid entry NaN.
  return jnp.where(jnp.isnan(top) & valid, jnp.nan, out)


@functools.lru_cache(maxsize=256)
def _pass_at_k_training_tables(n: int, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
  """Float64 tables over N_neg = 0..n: (Â_pos, Â_neg) at eps = 0, and 1/σ.

  With f = 1 − R̄ = C(N_neg, k)/C(n, k) and C(N_neg−1, k−1)/C(n−1, k−1) = f·n/N_neg,
  Â_pos = f/σ and Â_neg = (f − f·n/N_neg)/σ = −(n − N_neg)/N_neg · Â_pos, with
  σ = sqrt(f (1 − f)): no difference of nearby numbers is formed.
  """
  n_neg = np.arange(n + 1)
  fail = combinatorics.binom_ratio(n_neg, k, n, k)
  success = combinatorics.binom_ratio_complement(n_neg, k, n, k)
  sigma = np.sqrt(fail * success)
  positive = sigma > 0
  safe = np.where(positive, sigma, 1.0)
  pos = np.where(positive, fail / safe, 0.0)
  neg = -np.where(positive, (n - n_neg) / np.maximum(n_neg, 1), 0.0) * pos
  with np.errstate(divide="ignore"):
    inv_sigma = np.where(positive, 1.0 / safe, np.inf)
  return pos, neg, inv_sigma


def pass_at_k_training_advantages(
  correct: ArrayLike, k: int, *, eps: float = 0.0, where: ArrayLike | None = None
) -> jax.Array:
  """Analytic Pass@k-Training advantages (Chen et al., arXiv 2508.10751, Eqs. 11-15).

  With N = n rollouts of which N_neg are incorrect, the group's pass@k reward is
  R̄ = 1 − C(N_neg, k)/C(N, k), its std σ = sqrt(R̄(1 − R̄)), and

    Â_pos = (1 − R̄) / σ,
    Â_neg = (1 − R̄ − C(N_neg − 1, k − 1)/C(N − 1, k − 1)) / σ,

  with σ replaced by σ + eps.  Groups with σ = 0 get all zeros (their numerators are
  0 as well).  Both advantages at eps = 0 are static float64 tables indexed by
  N_neg (Â_neg = −(N − N_neg)/N_neg · Â_pos, so nothing cancels), cast once; eps
  enters as the factor 1/(1 + eps/σ).  The float32 result is within 1e-6 of the
  group's max |Â| for every n <= 256 and every k and N_neg (also as R̄ → 1).

  Args:
    correct: ``[..., n]`` bool or {0, 1}.
    k: static int, ``1 <= k <= n``.
    eps: keyword-only, added to σ; must be >= 0.
    where: keyword-only, optional bool, broadcastable to the input: the valid
      samples of each group (ragged groups; n is each group's number m of valid
      samples); the others get 0, as does every sample of a group with too few
      (m < k).

  Returns:
    ``[..., n]`` advantages.

  Raises:
    ValueError: bad ``k``, ``eps`` < 0, or non-binary ``correct`` (eagerly).
  """
  _check_eps(eps)
  values, n, k, valid = metrics.validate_correct(correct, k, where)
  if valid is not None:
    max_tables = ragged.max_operands(n, k, values.dtype)
    counts = ragged.pass_at_k_operands(n, k, values.dtype)
    return _pass_at_k_training_ragged(values, valid, max_tables, counts, k, eps)
  tables = _pass_at_k_training_operands(n, k, values.dtype)
  return _pass_at_k_training(values, tables, eps)


@functools.lru_cache(maxsize=256)
def _pass_at_k_training_operands(n: int, k: int, dtype: DTypeLike) -> np.ndarray:
  # One [3, n + 1] host argument (not constants): another k reuses the compiled kernel.
  return np.asarray(np.stack(_pass_at_k_training_tables(n, k)), np.dtype(dtype))


@jax.jit
def _pass_at_k_training(values: jax.Array, tables: jax.Array, eps: float | jax.Array) -> jax.Array:
  n = values.shape[-1]
  dtype = values.dtype
  count, index = metrics.count_correct(values)
  pos, neg, inv_sigma = tables[:, n - index]
  eps = jnp.asarray(eps, dtype)
  factor = jnp.where(eps > 0, 1 / (1 + eps * inv_sigma), 1)
  out = jnp.where(values == 1, (pos * factor)[..., None], (neg * factor)[..., None])
  # A non-finite entry makes its whole group NaN.
  return jnp.where(jnp.all(jnp.isfinite(values), axis=-1, keepdims=True), out, jnp.nan)


def maxrl_advantages(
  correct: ArrayLike, *, control_variate: bool = True, where: ArrayLike | None = None
) -> jax.Array:
  """MaxRL advantages for binary rewards (Tajwar et al., arXiv 2602.02710).

  MaxRL truncates the expansion log p = −Σ_{k>=1} (1 − p)^k / k of the
  log-likelihood of success at order T = n, i.e. it maximises
  J_n = Σ_{k=1}^{n} pass@k / k (up to a constant), and estimates ∇J_n by
  averaging the score over the K successful samples (the paper's estimator of
  the truncated objective's gradient, conditioned on success):
  g = (1/K) Σ_{i: correct} ∇log π(y_i), and 0 when K = 0.  Returned on the
  per-sample loss scale of GRPO (Σ_i a_i ∇log π(y_i) / n estimates the gradient):

  * ``control_variate=False``: a_i = n c_i / K (0 when K = 0).  Unbiased for
    ∇ Σ_{k=1}^{n} pass@k / k.
  * ``control_variate=True`` (the paper's practical form, default):
    a_i = (c_i − c̄) / c̄, GRPO with the std replaced by the mean, and 0 when
    c̄ = 0.  Subtracting the mean score only when K > 0 removes the last term:
    it is unbiased for ∇ Σ_{k=1}^{n−1} pass@k / k (REINFORCE's target, pass@1,
    at n = 2), as exact enumeration confirms.

  Args:
    correct: ``[..., n]`` bool or {0, 1}, samples on the last axis.
    control_variate: keyword-only, see above.
    where: keyword-only, optional bool, broadcastable to the input: the valid
      samples of each group (ragged groups; n is each group's number m of valid
      samples); the others get 0, as does every sample of a group with too few
      (m < 1).

  Returns:
    ``[..., n]`` advantages; a group with a non-finite entry is all NaN.

  Raises:
    ValueError: ``correct`` without samples (n = 0) or non-binary (eagerly), or a
      non-bool ``control_variate``.
  """
  if not isinstance(control_variate, (bool, np.bool_)):
    raise ValueError(f"control_variate={control_variate!r} must be a bool.")
  values, _, _, valid = metrics.validate_correct(correct, 1, where)
  return _maxrl(values, valid, bool(control_variate))


@functools.partial(jax.jit, static_argnums=2)
def _maxrl(values: jax.Array, valid: jax.Array | None, control_variate: bool) -> jax.Array:
  if valid is None:
    n: int | jax.Array = values.shape[-1]
    valid = jnp.ones(values.shape, bool)
  else:
    n = ragged.count(valid).astype(values.dtype)
    values = jnp.where(valid, values, 0)
  count = jnp.sum(values, axis=-1, keepdims=True)
  safe = jnp.where(count > 0, count, 1)
  # n c_i / K − 1 is (n − K)/K for a correct sample and −1 otherwise: written so, an
  # all-correct group gets exactly 0 (n·1/K − 1 may round, or fuse, to 3e-8).
  if control_variate:
    out = jnp.where(values == 1, (n - count) / safe, -1.0)
  else:
    out = jnp.where(values == 1, n / safe, 0.0)
  out = jnp.where((count > 0) & valid, out, 0)
  finite = jnp.all(jnp.isfinite(values), axis=-1, keepdims=True)
  return jnp.where(finite | ~valid, out, jnp.nan)


@functools.partial(jax.jit, static_argnums=3)
def _grpo_ragged(
  rewards: jax.Array, valid: jax.Array, eps: float | jax.Array, ddof: int
) -> jax.Array:
  return sorted_kernels.zscore(rewards, eps=eps, ddof=ddof, valid=valid)


@jax.jit
def _rloo_ragged(rewards: jax.Array, valid: jax.Array) -> jax.Array:
  m = ragged.count(valid)
  x = sorted_kernels.from_group_max(rewards, valid)
  total = jnp.sum(x, axis=-1, keepdims=True)
  out = x - (total - x) / jnp.maximum(m - 1, 1).astype(x.dtype)
  return ragged.nan_group(rewards, valid, jnp.where(valid & (m >= 2), out, 0))


@jax.jit
def _pass_at_k_training_ragged(
  values: jax.Array,
  valid: jax.Array,
  max_tables: ragged.Packed,
  counts: ragged.Packed,
  k: jax.Array,
  eps: float | jax.Array,
) -> jax.Array:
  # f = C(N_neg, k)/C(m, k) = 1 − R̄ from the ragged tables; R̄ (pass@k) as the sum
  # of its positive terms, so that neither σ = sqrt(f R̄) nor Â_pos = sqrt(f / R̄)
  # cancels; Â_neg = −(c / N_neg)·Â_pos.  The tables and k are arguments: another k
  # reuses the program.
  dtype = values.dtype
  tables = ragged.unpack_pass_at_k(counts)
  finite = jnp.isfinite(values)
  v = jnp.where(valid & finite, values, 0)
  m = ragged.count(valid)
  c = jnp.sum(v, axis=-1, keepdims=True)
  n_neg = m - jnp.round(c).astype(jnp.int32)
  f = ragged.gathered_ratio(tables.fail_count, n_neg, tables.inv, m, dtype)
  diag = ragged.unpack_max(max_tables).diag
  success = metrics.ragged_estimate(v, valid, diag, tables.inv, k)[..., None]
  positive = (f > 0) & (success > 0)
  sigma = jnp.sqrt(jnp.where(positive, f * success, 1))
  pos = jnp.where(positive, jnp.sqrt(jnp.where(positive, f / success, 1)), 0)
  neg = -pos * c / jnp.maximum(n_neg, 1).astype(dtype)
  eps = jnp.asarray(eps, dtype)
  factor = jnp.where(eps > 0, sigma / (sigma + eps), 1)
  out = jnp.where(v == 1, pos * factor, neg * factor)
  out = jnp.where(valid & (m >= k), out, 0)
  return jnp.where(jnp.all(finite | ~valid, axis=-1, keepdims=True) | ~valid, out, jnp.nan)
