"""How far best-of-n is from its continuous-reward limits: bounds on the gaps.

For a continuous reward distribution, KL(π_n || π) = log(n) − (n−1)/n and the
win rate of best-of-n is n/(n+1).  For a categorical reference both fall short;
the shortfalls ("gaps") are bounded here by the reward collision probability
e^{−H_2} = Σ_classes P(class)² (:func:`maxk.reward_collision_probability`), or by
a bound δ on every class's probability, and the KL gap is bounded below by the
mass of the top reward class.  The proofs (a coupling with n uniform draws,
ties included) are in docs/best_of_n_bounds.md.

References: Beirami et al., "Theoretical guarantees on the best-of-n alignment
policy", arXiv 2401.01879 (ICML 2025), Secs. 3 and 5.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from maxk._src import categorical
from maxk._src import checks
from maxk._src import tie_classes


def bon_kl_gap_bound(probs: ArrayLike, rewards: ArrayLike, n: int) -> jax.Array:
  """Upper bound 2 n (n−1) e^{−H_2} on the KL gap log(n) − (n−1)/n − KL(π_n || π).

  e^{−H_2} = Σ_classes P(class)² is the collision probability of the reward
  (>= Σ_y π(y)², with equality for unique rewards).  The gap is >= 0, and the
  bound is loose by a factor of about 20 in the worst case found numerically;
  it is informative when n² e^{−H_2} << 1.  Cost O(L log L) per distribution.

  References: Beirami et al. 2401.01879, Sec. 3; proof in
  docs/best_of_n_bounds.md.

  Args:
    probs: ``[..., L]`` reference probabilities.
    rewards: ``[..., L]`` rewards.
    n: static int >= 1.

  Returns:
    ``[...]`` bounds on the gap.

  Raises:
    ValueError: as for :func:`maxk.bon_pmf`.
  """
  n = checks.check_int(n, "n", low=1, high=checks.MAX_SIZE)
  p, r = categorical.prepare(probs, rewards)
  return 2.0 * n * (n - 1) * categorical.rowwise(tie_classes.collision_row, 1, p, r)


def bon_kl_gap_bound_delta(delta: ArrayLike, n: int) -> jax.Array:
  """The δ-bound form of :func:`bon_kl_gap_bound`: gap <= 2 n (n−1) δ.

  Holds when every reward tie class has reference probability at most δ (then
  Σ P(class)² <= δ Σ P(class) = δ); the paper calls such a reference δ-bounded.

  References: Beirami et al. 2401.01879, Sec. 3; docs/best_of_n_bounds.md.

  Args:
    delta: array of probabilities in [0, 1], any shape.
    n: static int >= 1.

  Returns:
    2 n (n−1) δ, same shape as ``delta``.

  Raises:
    ValueError: if ``n`` is not an int >= 1 or (eagerly only) ``delta`` lies
      outside [0, 1].
  """
  n = checks.check_int(n, "n", low=1, high=checks.MAX_SIZE)
  d = categorical.check_unit_interval(delta, "delta")
  return 2.0 * n * (n - 1) * d


def bon_kl_gap_lower_bound(probs: ArrayLike, rewards: ArrayLike, n: int) -> jax.Array:
  """Lower bound max(0, log(n eps_inf) − (n−1)/n) on the KL gap.

  eps_inf is the reference probability of the highest-reward class with positive
  probability.  Every best-of-n likelihood ratio is at most 1/eps_inf, so
  KL <= log(1/eps_inf): the analytical formula overshoots without bound once
  n eps_inf >> 1.  Cost O(L log L) per distribution.

  References: Beirami et al. 2401.01879, Sec. 3 (an asymptotic form); this
  non-asymptotic bound is proved in docs/best_of_n_bounds.md.

  Args:
    probs: ``[..., L]`` reference probabilities.
    rewards: ``[..., L]`` rewards.
    n: static int >= 1.

  Returns:
    ``[...]`` lower bounds on the gap.

  Raises:
    ValueError: as for :func:`maxk.bon_pmf`.
  """
  n = checks.check_int(n, "n", low=1, high=checks.MAX_SIZE)
  p, r = categorical.prepare(probs, rewards)
  eps_inf = categorical.rowwise(tie_classes.top_class_mass_row, 1, p, r)
  gap = jnp.log(n * eps_inf) - (n - 1) / n
  return jnp.maximum(gap, 0.0)


def bon_win_rate_gap_bound(probs: ArrayLike, rewards: ArrayLike, n: int) -> jax.Array:
  """Upper bound (n−1)/2 e^{−H_2} on the win-rate gap n/(n+1) − bon_win_rate.

  e^{−H_2} is summed over tie classes as in :func:`bon_kl_gap_bound`.  The proof
  gives the sharper (n/8) e^{−H_2}; at n = 2 the gap is exactly
  Σ_classes P(class)³ / 6.  Cost O(L log L) per distribution.

  References: Beirami et al. 2401.01879, Sec. 5; proof in
  docs/best_of_n_bounds.md.

  Args:
    probs: ``[..., L]`` reference probabilities.
    rewards: ``[..., L]`` rewards.
    n: static int >= 1.

  Returns:
    ``[...]`` bounds on the win-rate gap.

  Raises:
    ValueError: as for :func:`maxk.bon_pmf`.
  """
  n = checks.check_int(n, "n", low=1, high=checks.MAX_SIZE)
  p, r = categorical.prepare(probs, rewards)
  return 0.5 * (n - 1) * categorical.rowwise(tie_classes.collision_row, 1, p, r)


def bon_win_rate_gap_bound_delta(delta: ArrayLike, n: int) -> jax.Array:
  """The δ-bound form of :func:`bon_win_rate_gap_bound`: gap <= (n−1) δ / 2.

  References: Beirami et al. 2401.01879, Sec. 5; docs/best_of_n_bounds.md.

  Args:
    delta: array in [0, 1] bounding every reward tie class's probability.
    n: static int >= 1.

  Returns:
    (n−1) δ / 2, same shape as ``delta``.

  Raises:
    ValueError: if ``n`` is not an int >= 1 or (eagerly only) ``delta`` lies
      outside [0, 1].
  """
  n = checks.check_int(n, "n", low=1, high=checks.MAX_SIZE)
  d = categorical.check_unit_interval(delta, "delta")
  return 0.5 * (n - 1) * d
