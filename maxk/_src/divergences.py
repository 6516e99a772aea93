"""Comparisons of any two categorical policies: KL divergence and win rate.

References: Beirami et al., "Theoretical guarantees on the best-of-n alignment
policy", arXiv 2401.01879 (ICML 2025), Secs. 3 and 5 (for best-of-n).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from maxk._src import categorical
from maxk._src import checks
from maxk._src import tie_classes


def kl_divergence(q: ArrayLike, p: ArrayLike) -> jax.Array:
  """KL(q || p) = Σ_y q(y) log(q(y)/p(y)) along the last axis, with 0 log 0 = 0.

  Cost O(L) per distribution.

  References: Cover & Thomas, "Elements of Information Theory", Sec. 2.3.

  Args:
    q: ``[..., L]`` probabilities.
    p: ``[..., L]`` probabilities, same shape.

  Returns:
    ``[...]`` KL in nats; +inf where q > 0 = p.  ``jax.grad`` is finite wherever the
    KL is (zero entries are masked with a double ``where``).

  Raises:
    ValueError: if shapes differ or (eagerly only) q or p is not a probability
      vector.  Under ``jit`` the values are used as given (not renormalized).
  """
  q_arr, p_arr = categorical.check_pair(q, "q", p, "p")
  dtype = categorical.common_dtype(q_arr, p_arr)
  q_arr, p_arr = q_arr.astype(dtype), p_arr.astype(dtype)
  pos = q_arr > 0
  q_safe = jnp.where(pos, q_arr, 1.0)
  p_safe = jnp.where(pos, p_arr, 1.0)
  terms = jnp.where(pos, q_arr * (jnp.log(q_safe) - jnp.log(p_safe)), 0.0)
  bad = jnp.any(jnp.isnan(q_arr) | jnp.isnan(p_arr), axis=-1)
  return jnp.where(bad, jnp.nan, jnp.sum(terms, axis=-1))


def _win_rate_row(_: object, q: jax.Array, p: jax.Array, r: jax.Array) -> jax.Array:
  classes = tie_classes.tie_classes(p, r)
  return jnp.sum(q[classes.order.perm] * (classes.F_minus + 0.5 * classes.c))


def win_rate(q: ArrayLike, p: ArrayLike, rewards: ArrayLike) -> jax.Array:
  """Win rate of policy q against p: P(r(Y_q) > r(Y_p)) + 1/2 P(r(Y_q) = r(Y_p)).

  Y_q ~ q and Y_p ~ p are independent, over the same L outcomes; ties count one
  half (the paper, which studies it for best-of-n, assumes unique rewards).
  Cost O(L log L) per distribution.

  Against best-of-n instead of the reference: the win rate of any aligned policy
  q (e.g. :func:`maxk.chi2_pmf`, :func:`maxk.tilt_pmf`) against best-of-n of π is
  ``win_rate(q, bon_pmf(probs, rewards, n), rewards)``, and best-of-n against
  best-of-m is ``win_rate(bon_pmf(..., n), bon_pmf(..., m), rewards)``, which is
  n/(n + m) for a continuous reward.

  References: Beirami et al. 2401.01879, Sec. 5.

  Args:
    q: ``[..., L]`` probabilities of the challenger.
    p: ``[..., L]`` probabilities of the reference.
    rewards: ``[..., L]`` rewards.

  Returns:
    ``[...]`` win rates in [0, 1]; win_rate(q, p) + win_rate(p, q) = 1.

  Raises:
    ValueError: if shapes differ or (eagerly only) q or p is not a probability
      vector or ``rewards`` holds a NaN; under ``jit`` p is divided by its sum, q
      is used as given, and a NaN reward makes its row NaN.
  """
  q_arr = categorical.as_distribution(q, "q")
  p_arr = categorical.as_distribution(p, "p")
  checks.check_same_shape(q_arr, "q", p_arr, "p")
  r = categorical.check_rewards(rewards, p_arr, "p")
  categorical.check_probabilities(q_arr, "q")
  categorical.check_probabilities(p_arr, "p")
  dtype = categorical.common_dtype(q_arr, p_arr, r)
  q_arr = q_arr.astype(dtype)
  p_arr = categorical.normalize(p_arr.astype(dtype))
  return categorical.rowwise(_win_rate_row, 1, q_arr, p_arr, r.astype(dtype))
