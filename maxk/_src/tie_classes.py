"""Tie classes of a categorical reward distribution, and their CDFs.

Outcomes with equal rewards form a tie class.  For a reference policy π over L
outcomes with rewards r, the best-of-n quantities depend on each outcome's

  F(y)  = P_π(r(Y) <= r(y)),   F-(y) = P_π(r(Y) < r(y)),
  c(y)  = F(y) − F-(y) (its class's mass),   S(y) = P_π(r(Y) > r(y)),

computed here for one row in O(L log L): one sort by reward, a segment sum over
the classes and two cumulative sums (S from the top, so that it is accurate when
small and log F = log1p(−S) is accurate near F = 1).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
from jax import lax
import jax.numpy as jnp
from jax.typing import ArrayLike

from maxk._src import categorical
from maxk._src import sorting


class Classes(NamedTuple):
  """Tie-class quantities of one normalized row ``[L]``, all in reward-sorted order."""

  order: sorting.Order  # order.perm[j] = caller index of the j-th smallest reward.
  p: jax.Array  # π(y).
  r: jax.Array  # r(y).
  c: jax.Array  # Class mass P(r = r(y)).
  F: jax.Array  # P(r <= r(y)).
  F_minus: jax.Array  # P(r < r(y)).
  S: jax.Array  # P(r > r(y)), summed from the top (accurate when small).


def tie_classes(p: jax.Array, r: jax.Array) -> Classes:
  """Sorts one row ``[L]`` by reward and computes its tie-class CDFs.  O(L log L).

  A NaN reward (possible only under jit) has no order: the whole row becomes NaN.
  """
  size = p.shape[0]
  p = jnp.where(jnp.any(jnp.isnan(r)), jnp.nan, p)
  r_s, p_s, order = sorting.sort_last(r, p)
  new_class = jnp.concatenate([jnp.ones((1,), bool), r_s[1:] != r_s[:-1]])
  cid = jnp.cumsum(new_class.astype(jnp.int32)) - 1
  mass = jax.ops.segment_sum(p_s, cid, num_segments=size, indices_are_sorted=True)
  upper = lax.cumsum(mass)  # F of each class.
  lower = jnp.concatenate([jnp.zeros((1,), p.dtype), upper[:-1]])
  at_least = lax.cumsum(mass, reverse=True)  # P(r >= r_class).
  above = jnp.concatenate([at_least[1:], jnp.zeros((1,), p.dtype)])
  return Classes(order, p_s, r_s, mass[cid], upper[cid], lower[cid], above[cid])


def log_cdf(F: jax.Array, S: jax.Array) -> jax.Array:
  """log F, from F where F < 1/2 and from log1p(−S) otherwise (grad-safe)."""
  low = F < 0.5
  f_safe = jnp.where(low & (F > 0), F, 1.0)
  s_safe = jnp.where(low, 0.0, S)
  return jnp.where(low, jnp.log(f_safe), jnp.log1p(-s_safe))


def collision_row(_: object, p: jax.Array, r: jax.Array) -> jax.Array:
  """Σ over tie classes of P(class)² for one normalized row (a ``rowwise`` function)."""
  classes = tie_classes(p, r)
  # Σ_y π(y) c(y) = Σ_classes c · Σ_{y in class} π(y) = Σ_classes c².
  return jnp.sum(classes.p * classes.c)


def top_class_mass_row(_: object, p: jax.Array, r: jax.Array) -> jax.Array:
  """Mass of the highest-reward class with positive probability (a ``rowwise`` function)."""
  classes = tie_classes(p, r)
  mass = jnp.max(jnp.where((classes.p > 0) & (classes.S == 0), classes.c, 0.0))
  return jnp.where(jnp.any(jnp.isnan(classes.p)), jnp.nan, mass)  # NaN row stays NaN.


def reward_collision_probability(probs: ArrayLike, rewards: ArrayLike) -> jax.Array:
  """Collision probability of the reward: e^{−H_2} = Σ_classes π(class)².

  The probability that two independent draws from π have equal rewards, i.e. the
  sum of the squared masses of the tie classes; H_2 is the order-2 Rényi
  (collision) entropy of the reward distribution.  It is >= Σ_y π(y)², with
  equality for unique rewards, and it governs how far best-of-n is from the
  continuous-reward limit (:func:`maxk.bon_kl_gap_bound`,
  :func:`maxk.bon_win_rate_gap_bound`).  Cost O(L log L) per distribution.

  References: Beirami et al., "Theoretical guarantees on the best-of-n alignment
  policy", arXiv 2401.01879 (Sec. 3); docs/best_of_n_bounds.md.

  Args:
    probs: ``[..., L]`` reference probabilities (leading axes are batch axes).
    rewards: ``[..., L]`` rewards, same shape; only their ties matter.

  Returns:
    ``[...]`` collision probabilities in (0, 1].

  Raises:
    ValueError: if the shapes differ or (eagerly only) ``probs`` is not a
      probability vector or ``rewards`` holds a NaN.  Under ``jit`` ``probs`` is
      divided by its sum and a NaN reward makes its row NaN.
  """
  p, r = categorical.prepare(probs, rewards)
  return categorical.rowwise(collision_row, 1, p, r)
