"""Exact rank objectives of a categorical policy: E[Σ_j w_j X_(j:k)].

For k i.i.d. draws (with replacement) from a categorical policy π over L outcomes
with rewards r, the j-th smallest reward X_(j:k) is at most x exactly when at least
j draws are, so with F(x) = P_π(r <= x)

  P(X_(j:k) <= x) = Σ_{i>=j} C(k, i) F^i (1 − F)^(k−i),
  H(F) := Σ_j w_j P(X_(j:k) <= x) = Σ_{i=0}^k W_i C(k, i) F^i (1 − F)^(k−i),

with W_i = w_1 + ... + w_i the cumulative weights (W_0 = 0): a Bernstein polynomial
in F.  Over the outcomes sorted by reward, with G_e = π(y_1) + ... + π(y_e) and
S_e = 1 − G_e (summed from the top), summation by parts gives

  J = Σ_e H(G_e) (r_e − r_(e+1)) + W_k r_L,

in which tied rewards contribute exactly 0 (no tie classes are needed) and no two
values of H are subtracted.  The Bernstein terms are evaluated in log space from
log G (accurate near 0 and 1) and log S, so nothing overflows for large k; at
G = 0 or S = 0 the terms that vanish keep their exact first derivative, so
``jax.grad`` is exact also for outcomes of zero probability.  Cost: one sort and
O(L k) per distribution.

References: David & Nagaraja, "Order Statistics" (3rd ed., 2003), Sec. 2.1 (the
distribution of the j-th order statistic) and its discrete form; Parmas et al.,
"OrderGrad", arXiv 2606.06096 (rank objectives); the max@k objective of
arXiv 2510.23393, Sec. 3.2 (w = e_k).
"""

from __future__ import annotations

import functools
import math

import jax
from jax import lax
import jax.numpy as jnp
from jax.typing import ArrayLike
import numpy as np

from maxk._src import categorical
from maxk._src import rank_objectives
from maxk._src import sorted_kernels
from maxk._src import sorting
from maxk._src import tie_classes


@functools.lru_cache(maxsize=64)
def _log_binom_row(k: int) -> np.ndarray:
  """log C(k, i) for i = 0..k in float64."""
  lf = np.array([math.lgamma(i + 1.0) for i in range(k + 1)])
  return lf[k] - lf - lf[::-1]


def _mixture_cdf(g: jax.Array, s: jax.Array, cum_w: jax.Array) -> jax.Array:
  """H = Σ_i W_i C(k,i) G^i S^(k−i) for G, S ``[L]`` (G + S = 1), W ``[k+1]``.

  Grad-safe at G = 0 and S = 0: there G^i is written as [i=0] + [i=1]·G (its exact
  value and first derivative), and likewise S^(k−i).
  """
  k = cum_w.shape[0] - 1
  i = np.arange(k + 1)
  log_c = jnp.asarray(_log_binom_row(k), g.dtype)
  g_pos = (g > 0)[:, None]
  s_pos = (s > 0)[:, None]
  log_g = jnp.where(g > 0, tie_classes.log_cdf(g, s), 0.0)[:, None]
  log_s = jnp.log(jnp.where(s > 0, s, 1.0))[:, None]
  g_fac = jnp.where(g_pos, 1.0, (i == 0) + (i == 1) * g[:, None])
  s_fac = jnp.where(s_pos, 1.0, (i == k) + (i == k - 1) * s[:, None])
  vanish = (~g_pos & (i >= 2)) | (~s_pos & (i <= k - 2))
  expo = jnp.where(vanish, 0.0, log_c + i * log_g + (k - i) * log_s)
  return (g_fac * s_fac * jnp.exp(expo)) @ cum_w


def _finite_objective(cum_w: jax.Array, p: jax.Array, r: jax.Array) -> jax.Array:
  r_s, p_s, _ = sorting.sort_last(r, p)
  g = lax.cumsum(p_s)
  at_least = lax.cumsum(p_s, reverse=True)
  s = jnp.concatenate([at_least[1:], jnp.zeros((1,), p.dtype)])
  h = _mixture_cdf(g, s, cum_w)
  step = jnp.where(r_s[:-1] == r_s[1:], 0.0, r_s[:-1] - r_s[1:])
  return jnp.sum(h[:-1] * step) + h[-1] * r_s[-1]


def _row(table: jax.Array, p: jax.Array, r: jax.Array) -> jax.Array:
  """J of one distribution; ``table`` is W_0..W_k followed by two flags, whether
  some w_j > 0 and some w_j < 0 (traced, so one compilation serves all weights)."""
  cum_w, any_pos, any_neg = table[:-2], table[-2] > 0, table[-1] > 0
  p = jnp.where(jnp.any(jnp.isnan(r)), jnp.nan, p)
  # ±inf rewards take the place of the extreme finite ones: a zero-probability
  # outcome then ties with an outcome of the same reward and contributes exactly 0
  # (summation by parts never forms 0 · inf).
  finite = jnp.isfinite(r)
  some = jnp.any(finite)
  lo = jnp.where(some, jnp.min(jnp.where(finite, r, jnp.inf)), 0.0)
  hi = jnp.where(some, jnp.max(jnp.where(finite, r, -jnp.inf)), 0.0)
  value = _finite_objective(cum_w, p, jnp.clip(r, lo, hi))
  # An outcome of positive probability fills every rank j (all k draws equal to
  # it have positive probability), so an infinite reward there makes the value
  # ±inf by the signs of the nonzero w_j, and NaN if they differ.
  live = p > 0
  plus, minus = sorted_kernels.infinite_terms(r, any_pos & live, any_neg & live)
  return sorted_kernels.infinite_overlay(value, jnp.any(plus), jnp.any(minus))


def order_stat_exact(probs: ArrayLike, rewards: ArrayLike, weights: ArrayLike) -> jax.Array:
  """Exact rank objective J = E[Σ_j w_j X_(j:k)] of a categorical policy.

  X_(1:k) <= ... <= X_(k:k) are the sorted rewards of k i.i.d. draws (with
  replacement; ties allowed) from ``probs``, k = len(weights) (any k >= 1).  Uses
  P(X_(j:k) <= x) = Σ_{i>=j} C(k,i) F(x)^i (1 − F(x))^(k−i) and summation by parts
  over the outcomes sorted by reward (module docstring).  ``probs`` is divided by
  its sum, so the function is smooth on positive vectors and ``jax.grad`` (e.g.
  through ``softmax(logits)``) is the exact policy gradient, also at outcomes of
  zero probability.  With ``rank_weights("max", k)`` it equals
  :func:`maxk.max_at_k_exact`; it is the expectation that
  :func:`order_stat_at_k` estimates without bias.  Cost: one sort and O(L k) per
  distribution.

  Infinite rewards are allowed; J is then the expectation of L = Σ_{j: w_j != 0}
  w_j X_(j:k) evaluated in IEEE arithmetic.  An outcome of zero probability
  contributes nothing whatever its reward (its place in the order is taken by the
  nearest finite reward, so ``jax.grad`` there is that of the nearest finite
  reward, not the infinite one-sided derivative).  An infinite reward of positive
  probability fills every rank with positive probability, so J is ±inf by the
  signs of the nonzero w_j times that of the reward, and NaN where these differ
  (+inf and -inf both with positive probability under nonnegative weights, or a
  weight vector of both signs): e.g. with ``rank_weights("max", 2)``,
  ``([0, 1], [-inf, 1])`` gives 1 and ``([0.5, 0.5], [1, inf])`` gives inf, as
  :func:`maxk.max_at_k_exact`.

  References: David & Nagaraja, "Order Statistics" (2003), Sec. 2.1; Parmas et
  al., "OrderGrad", arXiv 2606.06096.

  Args:
    probs: ``[..., L]`` policy probabilities (leading axes are batch axes).
    rewards: ``[..., L]`` rewards, same shape (±inf allowed, see above).
    weights: ``[k]`` static weights over ascending ranks.

  Returns:
    ``[...]`` exact objective values.

  Raises:
    ValueError: bad ``weights`` (not a concrete non-empty finite 1-D sequence),
      mismatched shapes, or (eagerly only) ``probs`` not a probability vector or
      ``rewards`` holding a NaN.  Under ``jit`` a NaN reward makes its row NaN.
  """
  w = rank_objectives.check_weights(weights)
  p, r = categorical.prepare(probs, rewards)
  signs = [any(x > 0 for x in w), any(x < 0 for x in w)]
  table = jnp.asarray(np.concatenate([[0.0], np.cumsum(w), signs]), p.dtype)
  return categorical.rowwise(_row, table, p, r)
