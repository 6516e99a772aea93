"""The χ²-regularised optimum of a categorical reference: its PMF, KL and win rate.

A reference policy is a categorical distribution ``probs [..., L]`` with ``rewards
[..., L]`` (inputs as in :mod:`maxk._src.categorical`).  With the χ² divergence

  χ²(q || π) = ½ E_π[(q/π − 1)²] = ½ (Σ_y q(y)²/π(y) − 1),

the maximizer of E_q[r] − β χ²(q || π) over policies q (β > 0) is

  π_β(y) = π(y) (r(y) − λ_β)_+ / β,   λ_β such that Σ_y π(y) (r(y) − λ_β)_+ = β,

the closed form of the χ²-regularised target that InferenceTimePessimism samples by
rejection (Huang et al. 2025, Sec. 4): the density ratio is linear in the reward
above a threshold and zero below it, where the tilt's e^{βr} grows without bound.
(Stationarity of the Lagrangian gives q/π − 1 = (r − ν)/β on the support; the ½
in χ² is the convention under which the ratio reads (r − λ)_+/β.)

The threshold in closed form.  g(λ) = E_π[(r − λ)_+] is convex, piecewise linear
and decreasing, and for every upper set A_j of the outcomes sorted by reward
(mass P_j, reward mass R_j = Σ_{A_j} π r) g(λ) >= R_j − λ P_j with equality when
A_j = {r > λ}; so λ_β = max_j (R_j − β)/P_j over the upper sets of positive mass,
one sort and two cumulative sums, O(L log L), and exactly differentiable.  Rewards
are shifted by their top value so that R_j <= 0 and nothing cancels; the density
ratio is kept as x = π_β/π − 1, and the KL is summed as
Σ π [(1 + x) log(1 + x) − x] (every term >= 0; a series for small |x|), accurate
also for large β where KL ≈ Var_π[r]/(2β²).

Limits: β → ∞ gives π (for β >= max r − E_π[r], λ_β = E_π[r] − β and
π_β = π (1 + (r − E_π r)/β): every outcome stays in); β → 0 gives π restricted to
its top reward class, as best-of-n does for n → ∞.  Ties share the same ratio.

References: Huang, Block, Liu, Jiang, Krishnamurthy & Foster, "Is Best-of-N the
Best of Them? Coverage, Scaling, and Optimality in Inference-Time Alignment",
arXiv 2503.21878, Sec. 4 (InferenceTimePessimism's target); Huang et al.,
"Correcting the Mythos of KL-Regularization" (χPO), arXiv 2407.13399.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from maxk._src import categorical
from maxk._src import sorting
from maxk._src import tie_classes
from maxk._src import tilted_policies


def _x_log_x_term(x: jax.Array) -> jax.Array:
  """(1 + x) log(1 + x) − x for x >= −1 (1 at x = −1), accurate for small |x|."""
  small = jnp.abs(x) < 0.1
  xs = jnp.where(small, x, 0.0)
  # Σ_{k>=2} (−1)^k x^k / (k(k−1)), to x^8 (relative error < 1e-8 for |x| < 0.1).
  series = (
    xs * xs * (1 / 2 - xs * (1 / 6 - xs * (1 / 12 - xs * (1 / 20 - xs * (1 / 30 - xs / 42)))))
  )
  xl = jnp.where(small, 0.5, x)
  one_plus = 1.0 + xl
  pos = one_plus > 0
  large = jnp.where(pos, one_plus * jnp.log(jnp.where(pos, one_plus, 1.0)), 0.0) - xl
  return jnp.where(small, series, large)


def _chi2_sorted(beta: jax.Array, p: jax.Array, r: jax.Array) -> tuple[jax.Array, jax.Array]:
  """(π_β, x = π_β/π − 1) of one row whose rewards ``r`` are sorted ascending."""
  positive = p > 0
  r0 = jnp.where(jnp.isfinite(r), r, 0.0)
  top = jax.lax.stop_gradient(jnp.max(jnp.where(positive, r0, -jnp.inf)))
  top = jnp.where(jnp.isfinite(top), top, 0.0)
  rs = jnp.where(positive, r0 - top, 0.0)  # <= 0 where p > 0.
  upper_mass = jax.lax.cumsum(p, reverse=True)  # P_j: mass of positions >= j.
  lower_mass = jnp.concatenate([jnp.zeros((1,), p.dtype), jax.lax.cumsum(p)[:-1]])  # 1 − P_j.
  upper_reward = jax.lax.cumsum(p * rs, reverse=True)  # R_j <= 0.
  # d = λ_β + β = max_j (R_j − β (1 − P_j)) / P_j, over upper sets of positive mass.
  has_mass = upper_mass > 0
  cand = (upper_reward - beta * lower_mass) / jnp.where(has_mass, upper_mass, 1.0)
  d = jnp.max(jnp.where(has_mass, cand, -jnp.inf))
  x = jnp.maximum((rs - d) / beta, -1.0)  # π_β/π − 1 = (r − λ_β)_+/β − 1.
  pmf = p * (1.0 + x)
  bad = tilted_policies.bad_row(p, jnp.where(positive, r, 0.0)) | ~(beta > 0)
  nan = jnp.asarray(jnp.nan, p.dtype)
  return jnp.where(bad, nan, pmf), jnp.where(bad, nan, x)


def _sorted_row(p: jax.Array, r: jax.Array) -> tuple[sorting.Order, jax.Array, jax.Array]:
  r_s, p_s, order = sorting.sort_last(r, p)
  return order, p_s, r_s


def _pmf_row(beta: jax.Array, p: jax.Array, r: jax.Array) -> jax.Array:
  order, p_s, r_s = _sorted_row(p, r)
  return sorting.unsort_last(_chi2_sorted(beta, p_s, r_s)[0], order)


def _kl_row(beta: jax.Array, p: jax.Array, r: jax.Array) -> jax.Array:
  _, p_s, r_s = _sorted_row(p, r)
  _, x = _chi2_sorted(beta, p_s, r_s)
  return jnp.sum(jnp.where(p_s > 0, p_s * _x_log_x_term(x), 0.0)) + jnp.where(
    jnp.isnan(x[0]), jnp.nan, 0.0
  )


def _win_rate_row(beta: jax.Array, p: jax.Array, r: jax.Array) -> jax.Array:
  classes = tie_classes.tie_classes(p, r)
  pmf = _chi2_sorted(beta, classes.p, classes.r)[0]
  return jnp.sum(pmf * (classes.F_minus + 0.5 * classes.c))


def chi2_args(probs: ArrayLike, rewards: ArrayLike, beta: ArrayLike) -> tuple[jax.Array, ...]:
  """Validated (β, probs, rewards) of one dtype; β a scalar > 0, rewards finite."""
  b = tilted_policies.scalar_parameter(beta, "beta", low=0.0, strict=True)
  p, r = categorical.prepare(probs, rewards)
  tilted_policies.check_finite_rewards(r)
  return b.astype(p.dtype), p, r


def chi2_pmf(probs: ArrayLike, rewards: ArrayLike, beta: ArrayLike) -> jax.Array:
  """The χ²-regularised optimum π_β(y) = π(y) (r(y) − λ_β)_+ / β.

  The maximizer of E_q[r] − β χ²(q || π), χ²(q || π) = ½ E_π[(q/π − 1)²], with
  λ_β the threshold at which Σ π (r − λ_β)_+ = β, found in closed form (module
  docstring).  Outcomes with r <= λ_β get probability 0; tied outcomes share one
  ratio.  β → ∞ gives π, β → 0 the reference restricted to its top reward class.
  With the χ² convention E_π[(q/π − 1)²] (no ½) the same policy is reached at β/2.
  Cost O(L log L) per distribution.

  References: Huang et al., arXiv 2503.21878, Sec. 4 (the χ²-regularised target
  of InferenceTimePessimism); χPO, arXiv 2407.13399.

  Args:
    probs: ``[..., L]`` reference probabilities π (leading axes are batch axes).
    rewards: ``[..., L]`` finite rewards, same shape (their values matter).
    beta: scalar regularisation strength β > 0 (may be traced; ``vmap`` for several).

  Returns:
    ``[..., L]`` probabilities in the caller's order, piecewise smooth in ``probs``,
    ``rewards`` and ``beta`` (``jax.grad`` is the exact one-sided derivative where
    λ_β crosses a reward).

  Raises:
    ValueError: if ``beta`` is not a scalar or (eagerly only) not finite and > 0,
      the shapes differ, or (eagerly only) ``probs`` is not a probability vector or
      ``rewards`` is not finite.  Under ``jit`` ``probs`` is divided by its sum, a
      row with a NaN, or a +-inf reward of positive probability, is NaN, and so is
      every output for a traced β <= 0.
  """
  b, p, r = chi2_args(probs, rewards, beta)
  return categorical.rowwise(_pmf_row, b, p, r)


def chi2_kl(probs: ArrayLike, rewards: ArrayLike, beta: ArrayLike) -> jax.Array:
  """KL(π_β || π) of the χ²-regularised optimum (:func:`chi2_pmf`).

  Σ_y π(y) [(1 + x) log(1 + x) − x] with x = π_β/π − 1 (so 1 for an outcome
  below the threshold): every term >= 0, so it is accurate for large β too, where
  KL ≈ Var_π[r]/(2β²).  Cost O(L log L) per distribution.

  References: Huang et al., arXiv 2503.21878, Sec. 4.

  Args:
    probs: ``[..., L]`` reference probabilities.
    rewards: ``[..., L]`` finite rewards.
    beta: scalar β > 0.

  Returns:
    ``[...]`` KL divergence in nats.

  Raises:
    ValueError: as for :func:`chi2_pmf`.
  """
  b, p, r = chi2_args(probs, rewards, beta)
  return categorical.rowwise(_kl_row, b, p, r)


def chi2_win_rate(probs: ArrayLike, rewards: ArrayLike, beta: ArrayLike) -> jax.Array:
  """Win rate of the χ²-regularised optimum against its reference, ties counting one half.

  P(r(Y_β) > r(Y)) + 1/2 P(r(Y_β) = r(Y)), Y_β ~ π_β and Y ~ π independent; 1/2 as
  β → ∞.  Cost O(L log L) per distribution.

  References: Huang et al., arXiv 2503.21878, Sec. 4; the win rate of Beirami et
  al., arXiv 2401.01879, Sec. 5.

  Args:
    probs: ``[..., L]`` reference probabilities.
    rewards: ``[..., L]`` finite rewards.
    beta: scalar β > 0.

  Returns:
    ``[...]`` win rates.

  Raises:
    ValueError: as for :func:`chi2_pmf`.
  """
  b, p, r = chi2_args(probs, rewards, beta)
  return categorical.rowwise(_win_rate_row, b, p, r)
