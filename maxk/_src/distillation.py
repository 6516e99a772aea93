"""Distillation targets for best-of-n: calibrated rewards and divergences to π_bon.

Two ways to train a policy towards the best-of-n policy π_bon of a reference π.

Reward transforms from reference samples (per prompt).  With m reference samples
z_1..z_m ~ π and their rewards, the reference CDF of a reward r is estimated by
its mid-rank among them,

  F̂(r) = (#{j: r(z_j) < r} + ½ #{j: r(z_j) = r}) / m,

the unbiased estimate of P_π(r(Z) < r) + ½ P_π(r(Z) = r), the win rate of r
against the reference with ties counting one half (InfAlign's calibrated reward).
Since π_bon(y) ∝ π(y) F(r(y))^{n−1} for a continuous reward, log F is the reward
whose KL-regularised optimum is best-of-n (BOND, vBoN); its log needs F̂ > 0, so
:func:`log_calibrated_rewards` uses the smoothed mid-rank
F̃ = (#less + ½ #equal + ½)/(m + 1), in [1/(2(m+1)), 1 − 1/(2(m+1))].  InfAlign's
calibrate-and-transform rewards apply an exponential to F̂ (best-of-n) or a
negated exponential (worst-of-n).  Ragged groups through ``where=`` (policy
samples) and ``reference_where=`` (reference samples), NumPy's convention:
invalid samples are left out; a masked policy sample's output is 0; a group
with no valid reference sample is NaN, and so is every valid output of a group
holding a NaN among its valid samples (policy or reference).  Cost: one sort of
the reference group and a binary search per policy sample, O((n + m) log m).

Divergences of a categorical policy q = softmax(logits) to π_bon, exactly (no
sampling): the forward KL(π_bon || q) (what BOND's and vBoN's distillation
estimates), the backward KL(q || π_bon) and BOND's weighted Jeffreys divergence
(1 − w) KL(π_bon || q) + w KL(q || π_bon), with their gradients in closed form.
log π_bon is evaluated in log space (:mod:`maxk._src.best_of_n`), O(L log L).

References: Sessa et al., "BOND: Aligning LLMs with Best-of-N Distillation",
arXiv 2407.14622; Amini, Vieira & Cotterell, "Variational Best-of-N Alignment"
(vBoN), arXiv 2407.06057; Balashankar et al., "InfAlign: Inference-aware language
model alignment", arXiv 2412.19792.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from maxk._src import best_of_n
from maxk._src import categorical
from maxk._src import checks
from maxk._src import ragged
from maxk._src import sorting
from maxk._src import tie_classes
from maxk._src import tilted_policies

DIVERGENCES = ("forward", "backward", "jeffreys")


# ----------------------------------------------------------------------------
# Reward transforms from reference samples.
# ----------------------------------------------------------------------------


def _counts(
  rewards: ArrayLike,
  reference_rewards: ArrayLike,
  where: ArrayLike | None,
  reference_where: ArrayLike | None,
) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array, jax.Array]:
  """(less + ½ equal, m, valid, bad, dtype-cast rewards) per policy sample."""
  r = checks.as_float_array(rewards, "rewards")
  ref = checks.as_float_array(reference_rewards, "reference_rewards")
  if r.shape[:-1] != ref.shape[:-1]:
    raise ValueError(
      f"rewards {r.shape} and reference_rewards {ref.shape} must have the same leading "
      "(batch) axes; only their last axes (n and m) may differ."
    )
  if ref.shape[-1] < 1:
    raise ValueError(f"reference_rewards must hold at least one sample; got shape {ref.shape}.")
  valid = ragged.as_valid(where, r.shape)
  ref_valid = ragged.as_valid(reference_where, ref.shape)
  if valid is None:
    valid = jnp.ones(r.shape, bool)
  if ref_valid is None:
    ref_valid = jnp.ones(ref.shape, bool)
  dtype = jnp.result_type(r.dtype, ref.dtype)
  r, ref = r.astype(dtype), ref.astype(dtype)
  bad = jnp.any(jnp.isnan(r) & valid, axis=-1) | jnp.any(jnp.isnan(ref) & ref_valid, axis=-1)
  m = jnp.sum(ref_valid, axis=-1)
  # Invalid references sort last as +inf; a NaN is replaced (its group is NaN anyway).
  ref_sorted = jnp.sort(jnp.where(ref_valid & ~jnp.isnan(ref), ref, jnp.inf), axis=-1)
  r_safe = jnp.where(jnp.isnan(r), 0.0, r)
  flat_ref = ref_sorted.reshape(-1, ref.shape[-1])
  flat_r = r_safe.reshape(-1, r.shape[-1])
  search = jax.vmap(jnp.searchsorted, in_axes=(0, 0, None))
  less = search(flat_ref, flat_r, "left").reshape(r.shape)
  leq = jnp.minimum(search(flat_ref, flat_r, "right").reshape(r.shape), m[..., None])
  rank = less.astype(dtype) + 0.5 * (leq - less).astype(dtype)
  return rank, m.astype(dtype), valid, bad | (m == 0), r


def _finish(out: jax.Array, valid: jax.Array, bad: jax.Array) -> jax.Array:
  out = jnp.where(valid, out, 0.0)
  return jnp.where(bad[..., None] & valid, jnp.nan, out)


def calibrated_rewards(
  rewards: ArrayLike,
  reference_rewards: ArrayLike,
  *,
  where: ArrayLike | None = None,
  reference_where: ArrayLike | None = None,
) -> jax.Array:
  """The reference quantile (mid-rank) F̂(r) of each policy reward: InfAlign's calibration.

  F̂(r) = (#{j: r_ref,j < r} + ½ #{j: r_ref,j = r}) / m over the m valid reference
  rewards of the same prompt: an unbiased estimate of the calibrated reward
  P(r(Z) < r) + ½ P(r(Z) = r), Z ~ π, i.e. the win rate of r against the reference
  with ties counting one half.  In [0, 1]; invariant to any increasing map of the
  rewards.  Cost O((n + m) log m) per group.

  References: Balashankar et al. (InfAlign), arXiv 2412.19792 (the calibrated
  reward); Beirami et al., arXiv 2401.01879, Sec. 5 (win rate with ties).

  Args:
    rewards: ``[..., n]`` rewards of policy samples (leading axes are batch axes).
    reference_rewards: ``[..., m]`` rewards of reference samples of the same
      prompts (same leading axes; m may differ from n).
    where: keyword-only bool, broadcastable to ``rewards``: valid policy samples.
    reference_where: keyword-only bool, broadcastable to ``reference_rewards``:
      valid reference samples.

  Returns:
    ``[..., n]`` calibrated rewards; 0 where ``where`` is False; NaN (at valid
    samples) for a group with no valid reference or a NaN among its valid samples.

  Raises:
    ValueError: if the leading axes differ, ``reference_rewards`` has no samples,
      or a mask is not boolean or does not broadcast.
  """
  rank, m, valid, bad, _ = _counts(rewards, reference_rewards, where, reference_where)
  return _finish(rank / jnp.maximum(m, 1.0)[..., None], valid, bad)


def log_calibrated_rewards(
  rewards: ArrayLike,
  reference_rewards: ArrayLike,
  *,
  where: ArrayLike | None = None,
  reference_where: ArrayLike | None = None,
) -> jax.Array:
  """log F̃(r), the BOND / vBoN distillation reward, with smoothed mid-ranks.

  F̃(r) = (#{j: r_ref,j < r} + ½ #{j: r_ref,j = r} + ½) / (m + 1): the mid-rank of
  r among the m valid reference rewards and r itself (so never 0 or 1; the
  smoothing puts half a sample on each side).  For a continuous reward
  π_bon(y) = n π(y) F(r(y))^{n−1}, so (n − 1) log F is the log-likelihood ratio
  log(π_bon/π) up to log n: the reward of BOND's and vBoN's objectives.  Cost
  O((n + m) log m) per group.

  References: Sessa et al. (BOND), arXiv 2407.14622 (the quantile reward log F);
  Amini et al. (vBoN), arXiv 2407.06057 (log F estimated from reference samples).

  Args:
    rewards: ``[..., n]`` rewards of policy samples.
    reference_rewards: ``[..., m]`` rewards of reference samples (same leading axes).
    where: keyword-only bool mask of valid policy samples.
    reference_where: keyword-only bool mask of valid reference samples.

  Returns:
    ``[..., n]`` values in [log(1/(2m+2)), log(1 − 1/(2m+2))]; 0 where ``where``
    is False; NaN as for :func:`calibrated_rewards`.

  Raises:
    ValueError: as for :func:`calibrated_rewards`.
  """
  rank, m, valid, bad, _ = _counts(rewards, reference_rewards, where, reference_where)
  return _finish(jnp.log((rank + 0.5) / (m + 1.0)[..., None]), valid, bad)


def exp_calibrated_rewards(
  rewards: ArrayLike,
  reference_rewards: ArrayLike,
  *,
  t: ArrayLike,
  where: ArrayLike | None = None,
  reference_where: ArrayLike | None = None,
) -> jax.Array:
  """InfAlign's exponential transform of the calibrated reward: sign(t) e^{t F̂(r)}.

  F̂ is :func:`calibrated_rewards`.  t > 0 gives e^{t F̂}, the transform for
  best-of-n at inference time; t < 0 gives −e^{t F̂} = −e^{−|t| F̂}, the form for
  worst-of-n.  Both are increasing in F̂ and, as t → 0, affine in F̂.  Cost
  O((n + m) log m) per group.

  References: Balashankar et al. (InfAlign), arXiv 2412.19792 (the
  calibrate-and-transform reward, exponential transforms for best-of-n and
  worst-of-n).

  Args:
    rewards: ``[..., n]`` rewards of policy samples.
    reference_rewards: ``[..., m]`` rewards of reference samples (same leading axes).
    t: keyword-only scalar, nonzero and finite (may be traced): the transform's
      rate; its sign picks best-of-n (> 0) or worst-of-n (< 0).
    where: keyword-only bool mask of valid policy samples.
    reference_where: keyword-only bool mask of valid reference samples.

  Returns:
    ``[..., n]`` transformed rewards; 0 where ``where`` is False; NaN as for
    :func:`calibrated_rewards` (and everywhere for a traced t = 0).

  Raises:
    ValueError: if ``t`` is not a scalar or (eagerly) is 0 or not finite, or as
      for :func:`calibrated_rewards`.
  """
  t_arr = tilted_policies.scalar_parameter(t, "t")
  if checks.is_concrete(t_arr) and float(t_arr) == 0.0:
    raise ValueError("t=0.0 must be nonzero (t > 0: best-of-n, t < 0: worst-of-n).")
  rank, m, valid, bad, _ = _counts(rewards, reference_rewards, where, reference_where)
  t_arr = t_arr.astype(rank.dtype)
  quantile = rank / jnp.maximum(m, 1.0)[..., None]
  out = jnp.sign(t_arr) * jnp.exp(t_arr * quantile)
  return _finish(out, valid, bad | (t_arr == 0))


# ----------------------------------------------------------------------------
# Divergences of a categorical policy to best-of-n.
# ----------------------------------------------------------------------------


def _log_bon_row(n: jax.Array, p: jax.Array, r: jax.Array) -> jax.Array:
  """log π_bon of one row in the caller's order (−inf where π = 0)."""
  classes = tie_classes.tie_classes(p, r)
  _, log_ratio = best_of_n._bon_sorted(classes, n)
  positive = classes.p > 0
  log_p = jnp.log(jnp.where(positive, classes.p, 1.0))
  log_bon = jnp.where(positive, log_p + log_ratio, -jnp.inf)
  log_bon = jnp.where(jnp.isnan(classes.p), jnp.nan, log_bon)
  return sorting.unsort_last(log_bon, classes.order)


def _parts(
  logits: ArrayLike, probs: ArrayLike, rewards: ArrayLike, n: int, divergence: str, weight: float
) -> tuple[jax.Array, jax.Array, jax.Array, float]:
  """(log q, log π_bon, q, w): w is the weight of the backward KL."""
  n = checks.check_int(n, "n", low=1, high=checks.MAX_SIZE)
  checks.check_option(divergence, "divergence", DIVERGENCES)
  z = checks.as_float_array(logits, "logits")
  p, r = categorical.prepare(probs, rewards)
  checks.check_same_shape(z, "logits", p, "probs")
  if divergence == "jeffreys":
    if not isinstance(weight, (int, float)) or not 0.0 <= weight <= 1.0:
      raise ValueError(f"weight={weight!r} must be a float in [0, 1].")
    w = float(weight)
  else:
    w = 1.0 if divergence == "backward" else 0.0
  dtype = jnp.result_type(z.dtype, p.dtype)
  log_bon = categorical.rowwise(_log_bon_row, n, p.astype(dtype), r.astype(dtype))
  log_q = jax.nn.log_softmax(z.astype(dtype), axis=-1)
  return log_q, log_bon, jnp.exp(log_q), w


def _kl_terms(log_a: jax.Array, log_b: jax.Array) -> jax.Array:
  """a (log a − log b) elementwise with 0 log 0 = 0 (grad-safe where a = 0)."""
  pos = log_a > -jnp.inf
  la = jnp.where(pos, log_a, 0.0)
  lb = jnp.where(pos, log_b, 0.0)
  return jnp.where(pos, jnp.exp(la) * (la - lb), 0.0)


def bon_distillation_loss(
  logits: ArrayLike,
  probs: ArrayLike,
  rewards: ArrayLike,
  n: int,
  *,
  divergence: str = "forward",
  weight: float = 0.5,
) -> jax.Array:
  """Divergence between a policy q = softmax(logits) and best-of-n of the reference.

  * ``"forward"``: KL(π_bon || q) = Σ π_bon (log π_bon − log q), the
    mass-covering objective that BOND and vBoN estimate from samples;
  * ``"backward"``: KL(q || π_bon) = Σ q (log q − log π_bon), mode seeking (+inf if
    q puts mass where π = 0);
  * ``"jeffreys"``: (1 − w) KL(π_bon || q) + w KL(q || π_bon), BOND's weighted
    Jeffreys divergence (w = ``weight``; w = ½ is half the symmetric Jeffreys).

  π_bon is the exact best-of-n policy of π (:func:`maxk.bon_pmf`, ties included),
  with log π_bon from its log-space form.  ``jax.grad`` w.r.t. ``logits`` is exact
  and equals :func:`bon_distillation_grad`.  Cost O(L log L) per distribution.

  References: Sessa et al. (BOND), arXiv 2407.14622 (forward, backward and
  Jeffreys objectives); Amini et al. (vBoN), arXiv 2407.06057; Beirami et al.,
  arXiv 2401.01879, Sec. 2 (π_bon).

  Args:
    logits: ``[..., L]`` logits of the student policy q (leading axes are batch axes).
    probs: ``[..., L]`` reference probabilities π.
    rewards: ``[..., L]`` rewards (only their order and ties matter).
    n: static int >= 1.
    divergence: keyword-only, one of ``"forward"``, ``"backward"``, ``"jeffreys"``.
    weight: keyword-only float in [0, 1], the weight of the backward KL in
      ``"jeffreys"`` (ignored otherwise).

  Returns:
    ``[...]`` divergences in nats.

  Raises:
    ValueError: if ``n`` is not an int >= 1, ``divergence`` or ``weight`` is
      invalid, the shapes differ, or as for :func:`maxk.bon_pmf`.
  """
  log_q, log_bon, _, w = _parts(logits, probs, rewards, n, divergence, weight)
  total = jnp.zeros(log_q.shape[:-1], log_q.dtype)
  if w < 1.0:
    total = total + (1.0 - w) * jnp.sum(_kl_terms(log_bon, log_q), axis=-1)
  if w > 0.0:
    total = total + w * jnp.sum(_kl_terms(log_q, log_bon), axis=-1)
  return total


def bon_distillation_grad(
  logits: ArrayLike,
  probs: ArrayLike,
  rewards: ArrayLike,
  n: int,
  *,
  divergence: str = "forward",
  weight: float = 0.5,
) -> jax.Array:
  """The gradient of :func:`bon_distillation_loss` w.r.t. ``logits``, in closed form.

  With q = softmax(z): ∇_z KL(π_bon || q) = q − π_bon, and
  ∇_z KL(q || π_bon) = q ⊙ (a − E_q[a]), a = log q − log π_bon; the Jeffreys form
  is their (1 − w, w) combination.  The backward gradient is NaN where it is
  undefined (q > 0 = π_bon).  Cost O(L log L) per distribution.

  References: Sessa et al. (BOND), arXiv 2407.14622; Amini et al. (vBoN),
  arXiv 2407.06057.

  Args:
    logits: ``[..., L]`` logits of q.
    probs: ``[..., L]`` reference probabilities π.
    rewards: ``[..., L]`` rewards.
    n: static int >= 1.
    divergence: keyword-only, as for :func:`bon_distillation_loss`.
    weight: keyword-only, as for :func:`bon_distillation_loss`.

  Returns:
    ``[..., L]`` gradients w.r.t. the logits.

  Raises:
    ValueError: as for :func:`bon_distillation_loss`.
  """
  log_q, log_bon, q, w = _parts(logits, probs, rewards, n, divergence, weight)
  grad = jnp.zeros_like(q)
  if w < 1.0:
    grad = grad + (1.0 - w) * (q - jnp.exp(log_bon))
  if w > 0.0:
    pos = q > 0
    a = jnp.where(pos, log_q - log_bon, 0.0)
    grad = grad + w * q * (a - jnp.sum(q * a, axis=-1, keepdims=True))
  return grad
