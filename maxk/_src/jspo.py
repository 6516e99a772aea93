"""James-Stein shrinkage baselines across the prompts of a batch (JSPO).

Zeng, Zhou, Arora & Zanette, "Shrinking the Variance: Shrinkage Baselines for
Reinforcement Learning with Verifiable Rewards" (arXiv 2511.03710; "James-Stein Policy
Optimization", JSPO).  RLOO's baseline for sample i of prompt p is the mean of the
other n − 1 rewards of its group; with few samples per prompt it is a noisy estimate of
the prompt's value.  JSPO shrinks it toward the mean over the other prompts of the
batch, by how noisy the per-prompt means are compared with their spread.  The formula
here was read from the authors' verl fork (``compute_jspo_outcome_advantage`` and
``compute_jspo_plus_plus_outcome_advantage`` in ``verl/trainer/ppo/core_algos.py`` of
github.com/guanning03/JSPO-Official); the paper's own equations were not reachable, so
none are cited by number.

For a batch of P prompts with groups r_p = (r_{p,1}..r_{p,m_p}) (rewards [..., P, n],
prompts on the second-to-last axis), with μ_q the mean of group q, v_q = s_q² / m_q
the squared standard error of μ_q (s_q² the unbiased sample variance) and Q_p the
prompts whose statistics prompt p uses:

  t_p = mean_{q∈Q_p} μ_q                         (the shrinkage target)
  V_p = mean_{q∈Q_p} v_q,   S_p = mean_{q∈Q_p} (μ_q − t_p)²
  λ_p = V_p / (V_p + S_p + eps)                  (James-Stein coefficient, eps = 1e-6)
  b_{p,i} = (1 − λ_p) · mean_{j≠i} r_{p,j} + λ_p · t_p,   a_{p,i} = r_{p,i} − b_{p,i}.

(The authors' code takes t_p as the mean of the other prompts' samples: the same for
groups of equal size; with ``where=`` each usable prompt counts once here.  It has no
target for a batch of one prompt; here λ_p = 0 then, below.)

* ``variant="jspo"``: Q_p = the other prompts (q ≠ p).  b_{p,i} then depends on the
  other samples of prompt p and on other prompts only, never on r_{p,i}; prompts are
  sampled independently, so every baseline is independent of the sample it is
  subtracted from and the estimate is unbiased (for Σ_p n ∇E[r_p], RLOO's scale).
* ``variant="jspo++"``: Q_p = every prompt of the batch, p included (the authors'
  JSPO++, without its optional moving average over training steps, which needs
  state).  λ_p and t_p then depend on r_{p,i}: a biased peer, kept for comparison.

Max@k form (:func:`jspo_max_at_k_advantages`).  The same construction on the
leave-one-out max@k estimate: μ_q becomes M_q = :func:`maxk.max_at_k` of group q, v_q
its unbiased variance estimate :func:`maxk.max_at_k_variance` (s²/m at k = 1), and the
baseline of ``"loo_centered"`` in :func:`maxk.max_at_k_advantages`,
k/m · M(r_{p,−i}, k), becomes k/m · [(1 − λ_p) M(r_{p,−i}, k) + λ_p t_p]:

  a_{p,i} = S_p(i) − (k/m_p) [(1 − λ_p) M(r_{p,−i}, k) + λ_p t_p]
          = lc_{p,i} + (k/m_p) λ_p (M(r_{p,−i}, k) − t_p),

with S_p(i) the max@k credit and lc the ``"loo_centered"`` advantage.  λ = 0 gives
``"loo_centered"``; at k = 1 it is :func:`jspo_advantages` / m (as ``"loo_centered"``
is RLOO / m), so its scale is that of :func:`maxk.max_at_k_advantages` (Σ a ∇log π
estimates Σ_p ∇ max@k).  The variance estimate needs two disjoint k-subsets, so the
max@k form needs n >= 2k.

Degenerate batches.  A prompt with no other usable prompt (P = 1, or every other
group masked out) has nothing to shrink toward: λ_p = 0 and its baseline is the plain
leave-one-out one (RLOO, or ``"loo_centered"``), still unbiased.  A group with too few
valid samples (m < 2 for :func:`jspo_advantages`, m < 2k for the max@k form: what a
dense call needs) gets advantages 0 and is left out of every other prompt's
statistics.

NaN.  A NaN or ±inf reward of a valid sample makes every advantage of its batch slice
(all P prompts of that [P, n] slice) NaN: the group's mean enters the target and λ of
every other prompt, so any finite answer for them would silently depend on how the
bad value was dropped.  Other slices (leading axes) are unaffected, and masked samples
are ignored whatever their value.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from maxk._src import advantages
from maxk._src import checks
from maxk._src import estimate_variance
from maxk._src import metrics
from maxk._src import ragged

#: The ``variant`` options of :func:`maxk.jspo_advantages` and
#: :func:`maxk.jspo_max_at_k_advantages`: JSPO (unbiased) and JSPO++ (biased).
JSPO_VARIANTS = ("jspo", "jspo++")
_EPS = 1e-6


def _check(
  rewards: ArrayLike, variant: str, eps: float, where: ArrayLike | None
) -> tuple[jax.Array, str, float, jax.Array | None]:
  """rewards [..., P, n] (n >= 2), the variant, eps and the valid mask (None: all)."""
  r = checks.as_float_array(rewards, "rewards", min_ndim=2)
  checks.check_int(r.shape[-1], "n (rewards.shape[-1])", low=2)
  variant = checks.check_option(variant, "variant", JSPO_VARIANTS)
  if isinstance(eps, bool) or not isinstance(eps, (int, float)) or not eps >= 0:
    raise ValueError(f"eps={eps!r} must be a float >= 0.")
  return r, variant, float(eps), ragged.as_valid(where, r.shape)


def _shrinkage(
  mu: jax.Array, v: jax.Array, usable: jax.Array, variant: str, eps: float
) -> tuple[jax.Array, jax.Array]:
  """(λ_p, t_p) for every prompt, ``[..., P]`` each, from per-prompt estimates ``mu``
  and their variance estimates ``v`` (``[..., P]``); ``usable`` marks the prompts
  that enter the statistics."""
  num_prompts = mu.shape[-1]
  mu = jnp.where(usable, mu, 0)
  v = jnp.where(usable, v, 0)
  w = usable.astype(mu.dtype)
  # Q_p as weights over q: [..., P (p), P (q)].
  q = jnp.broadcast_to(w[..., None, :], (*w.shape, num_prompts))
  if variant == "jspo":
    q = q * (1 - jnp.eye(num_prompts, dtype=mu.dtype))
  count = jnp.sum(q, axis=-1)
  safe = jnp.maximum(count, 1)
  target = jnp.sum(q * mu[..., None, :], axis=-1) / safe
  var = jnp.sum(q * v[..., None, :], axis=-1) / safe
  spread = jnp.sum(q * (mu[..., None, :] - target[..., None]) ** 2, axis=-1) / safe
  lam = var / (var + spread + eps)
  lam = jnp.where((count > 0) & (var > 0), lam, 0)
  return lam, jnp.where(count > 0, target, 0)


def _poison(rewards: jax.Array, valid: jax.Array | None, out: jax.Array) -> jax.Array:
  """NaN for every sample of a [P, n] slice with a non-finite valid reward."""
  bad = ~jnp.isfinite(rewards)
  if valid is not None:
    bad = bad & valid
  bad = jnp.any(bad, axis=(-2, -1), keepdims=True)
  return jnp.where(bad, jnp.nan, out)


def jspo_advantages(
  rewards: ArrayLike,
  *,
  variant: str = "jspo",
  eps: float = _EPS,
  where: ArrayLike | None = None,
) -> jax.Array:
  """RLOO with its baseline shrunk toward the other prompts' mean (JSPO, arXiv 2511.03710).

  a_{p,i} = r_{p,i} − [(1 − λ_p) mean_{j≠i} r_{p,j} + λ_p t_p], with t_p the mean of
  the other prompts' group means and λ_p = V_p / (V_p + S_p + eps) their James-Stein
  coefficient (mean squared standard error over mean squared spread); see
  :mod:`maxk._src.jspo` for the definitions, the NaN rule and degenerate batches.
  ``variant="jspo"`` (default) is unbiased for Σ_p n ∇E[r_p] (RLOO's scale);
  ``"jspo++"`` uses statistics of every prompt including p's own (biased).

  Args:
    rewards: ``[..., P, n]`` float rewards: P prompts on the second-to-last axis (one
      batch), n >= 2 samples each on the last axis; leading axes are independent
      batches.
    variant: keyword-only, ``"jspo"`` or ``"jspo++"``.
    eps: keyword-only, the constant in λ's denominator (1e-6, as the authors').
    where: keyword-only, optional bool, broadcastable to ``rewards``: the valid
      samples.  Masked samples get 0 and are ignored; a group with fewer than 2 valid
      samples gets 0 and is left out of the other prompts' statistics.

  Returns:
    ``[..., P, n]`` advantages.  A non-finite valid reward makes its whole [P, n]
    slice NaN.

  Raises:
    ValueError: ``rewards`` with fewer than 2 axes or n < 2, an unknown ``variant``,
      a negative ``eps`` or a bad ``where``.
  """
  r, variant, eps, valid = _check(rewards, variant, eps, where)
  return _jspo(r, valid, variant, eps)


@functools.partial(jax.jit, static_argnums=(2, 3))
def _jspo(rewards: jax.Array, mask: jax.Array | None, variant: str, eps: float) -> jax.Array:
  valid = jnp.ones(rewards.shape, bool) if mask is None else mask
  x = jnp.where(valid, rewards, 0)
  m = jnp.sum(valid, axis=-1).astype(x.dtype)  # [..., P]
  usable = m >= 2
  safe_m = jnp.maximum(m, 2)
  # Each group measured from its own first valid sample: the per-group offsets keep
  # the sums accurate for large common rewards and cancel in every difference.
  first = jnp.argmax(valid, axis=-1)
  offset = jnp.where(usable, jnp.take_along_axis(x, first[..., None], axis=-1)[..., 0], 0)
  y = jnp.where(valid, x - offset[..., None], 0)
  total = jnp.sum(y, axis=-1)
  mu = total / safe_m + offset
  var = jnp.sum(jnp.where(valid, (y - (total / safe_m)[..., None]) ** 2, 0), axis=-1)
  v = var / (safe_m - 1) / safe_m
  lam, target = _shrinkage(mu, v, usable, variant, eps)
  loo = (total[..., None] - y) / (safe_m[..., None] - 1)  # Measured from the offset.
  lam_, t_ = lam[..., None], (target - offset)[..., None]
  a = y - ((1 - lam_) * loo + lam_ * t_)
  a = jnp.where(valid & usable[..., None], a, 0)
  return _poison(rewards, mask, a)


def jspo_max_at_k_advantages(
  rewards: ArrayLike,
  k: int,
  *,
  variant: str = "jspo",
  eps: float = _EPS,
  where: ArrayLike | None = None,
) -> jax.Array:
  """Max@k advantages with the leave-one-out max@k baseline shrunk across prompts.

  a_{p,i} = S_p(i) − (k/m) [(1 − λ_p) M(r_{p,−i}, k) + λ_p t_p], the ``"loo_centered"``
  transform of :func:`maxk.max_at_k_advantages` with its leave-one-out estimate
  M(r_{p,−i}, k) shrunk toward t_p, the mean of the other prompts' max@k estimates,
  by λ_p from their :func:`maxk.max_at_k_variance` estimates and spread (JSPO's
  construction, arXiv 2511.03710, on max@k; see :mod:`maxk._src.jspo`).  Equals
  :func:`jspo_advantages` / n at k = 1 and ``"loo_centered"`` where λ = 0.
  ``variant="jspo"`` is unbiased for Σ_p ∇ max@k of each prompt; ``"jspo++"`` is
  biased.

  Args:
    rewards: ``[..., P, n]`` float rewards, P prompts on the second-to-last axis.
    k: static int, ``1 <= k <= n / 2`` (the variance estimate needs two disjoint
      k-subsets).
    variant: keyword-only, ``"jspo"`` or ``"jspo++"``.
    eps: keyword-only, the constant in λ's denominator (1e-6).
    where: keyword-only, optional bool, broadcastable to ``rewards``: the valid
      samples; a group with fewer than 2k valid samples gets 0 and is left out of
      the other prompts' statistics.

  Returns:
    ``[..., P, n]`` advantages.  A non-finite valid reward makes its whole [P, n]
    slice NaN.

  Raises:
    ValueError: ``rewards`` with fewer than 2 axes, a bad ``k`` (k > n/2 included),
      an unknown ``variant``, a negative ``eps`` or a bad ``where``.
  """
  r, variant, eps, valid = _check(rewards, variant, eps, where)
  k = checks.check_int(k, "k", low=1, high=r.shape[-1] // 2, high_name="n/2")
  return _jspo_max(r, valid, k, variant, eps)


@functools.partial(jax.jit, static_argnums=(2, 3, 4))
def _jspo_max(
  rewards: jax.Array, mask: jax.Array | None, k: int, variant: str, eps: float
) -> jax.Array:
  # Dense batches take the dense kernels (mask None); only ragged ones the where= paths.
  valid = jnp.ones(rewards.shape, bool) if mask is None else mask
  x = rewards if mask is None else jnp.where(mask, rewards, 0)
  m = jnp.sum(valid, axis=-1)
  usable = m >= 2 * k
  s = advantages.max_at_k_advantages(x, k, baseline="none", where=mask)
  lc = advantages.max_at_k_advantages(x, k, baseline="loo_centered", where=mask)
  mf = jnp.maximum(m, 2 * k).astype(x.dtype)[..., None]
  loo = mf / k * (s - lc)  # M(r_{−i}, k), from lc = S − (k/m) M(r_{−i}, k).
  mu = metrics.max_at_k(x, k, where=mask)
  v = estimate_variance.max_at_k_variance(x, k, where=mask)
  lam, target = _shrinkage(mu, v, usable, variant, eps)
  a = lc + k / mf * lam[..., None] * (loo - target[..., None])
  a = jnp.where(valid & usable[..., None], a, 0)
  return _poison(rewards, mask, a)
