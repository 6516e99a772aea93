"""Rewind-and-repeat: draw from the reference until the reward clears a threshold.

References: Beirami et al., "Theoretical guarantees on the best-of-n alignment
policy", arXiv 2401.01879 (ICML 2025), Sec. 6.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from maxk._src import categorical
from maxk._src import checks


def rewind_repeat_pmf(
  probs: ArrayLike, rewards: ArrayLike, threshold: ArrayLike, *, max_tries: int | None = None
) -> jax.Array:
  """PMF of rewind-and-repeat: draw from π until the reward is >= ``threshold``.

  With A = {y : r(y) >= threshold} and P_A = π(A):

  * ``max_tries=None`` (no limit): q(y) = π(y) / P_A on A, 0 elsewhere, so
    KL(q || π) = log(1 / P_A).
  * ``max_tries=m``: after m failed draws the last draw is kept, so
    q(y) = π(y) (1 − (1 − P_A)^m) / P_A on A and π(y) (1 − P_A)^(m−1) off A.

  If no outcome with positive probability reaches the threshold (P_A = 0), every
  draw fails: the m-th draw is kept for finite m, and for ``max_tries=None`` the
  result is defined as the limit m → ∞, i.e. the reference ``probs`` itself
  (normalized).  This is the same eagerly and under ``jit``; nothing is raised.
  Cost O(L) per distribution.

  References: Beirami et al. 2401.01879, Sec. 6.

  Args:
    probs: ``[..., L]`` reference probabilities.
    rewards: ``[..., L]`` rewards.
    threshold: reward threshold, broadcastable to the batch shape ``probs.shape[:-1]``.
    max_tries: keyword-only, ``None`` or a static int >= 1 (``1`` returns the
      reference).

  Returns:
    ``[..., L]`` probabilities in the caller's order.

  Raises:
    ValueError: if ``max_tries`` is not None or an int >= 1, shapes differ or
      ``threshold`` does not broadcast, or (eagerly only) ``probs`` is not a
      probability vector or ``rewards`` or ``threshold`` holds a NaN (under
      ``jit`` such a row comes out NaN).
  """
  if max_tries is not None:
    max_tries = checks.check_int(max_tries, "max_tries", low=1)
  p, r = categorical.prepare(probs, rewards)
  t = checks.as_float_array(threshold, "threshold", min_ndim=0).astype(p.dtype)
  try:
    t = jnp.broadcast_to(t, p.shape[:-1])
  except ValueError as e:
    raise ValueError(
      f"threshold shape {t.shape} must broadcast to the batch shape {p.shape[:-1]} of probs."
    ) from e
  categorical.check_not_nan(t, "threshold")
  # Under jit a NaN threshold or reward makes that row NaN.
  bad = jnp.isnan(t)[..., None] | jnp.any(jnp.isnan(r), -1, keepdims=True)
  return jnp.where(bad, jnp.nan, _rewind_repeat(p, r, t, max_tries))


def _rewind_repeat(p: jax.Array, r: jax.Array, t: jax.Array, max_tries: int | None) -> jax.Array:
  accept = r >= t[..., None]
  p_acc = jnp.sum(jnp.where(accept, p, 0.0), axis=-1, keepdims=True)
  p_rej = jnp.sum(jnp.where(accept, 0.0, p), axis=-1, keepdims=True)
  none = p_acc <= 0
  if max_tries is None:
    scale_acc = 1.0 / jnp.where(none, 1.0, p_acc)
    q = jnp.where(accept, p * scale_acc, 0.0)
    return jnp.where(none, p, q)
  if max_tries == 1:
    return p
  m = max_tries
  # log(1 − P_A), accurately for P_A near 0 and near 1.
  small = p_acc < 0.5
  log_rej = jnp.where(
    small, jnp.log1p(-jnp.where(small, p_acc, 0.0)), jnp.log(jnp.where(small, 1.0, p_rej))
  )
  p_acc_safe = jnp.where(none, 1.0, p_acc)
  factor_acc = jnp.where(none, float(m), -jnp.expm1(m * log_rej) / p_acc_safe)
  factor_rej = jnp.exp((m - 1) * log_rej)
  return p * jnp.where(accept, factor_acc, factor_rej)
