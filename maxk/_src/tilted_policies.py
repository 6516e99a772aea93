"""Best-of-Poisson and the exponential tilt of a categorical reference.

A reference policy is a categorical distribution ``probs [..., L]`` over L outcomes
with ``rewards [..., L]`` (inputs as in :mod:`maxk._src.categorical`).  Two policies
beside best-of-n (:mod:`maxk._src.best_of_n`):

* Best-of-Poisson (BoP) with rate μ >= 0: draw N ~ Poisson(μ) and return the best
  of n = N + 1 i.i.d. draws (ties broken uniformly, as best-of-n).  Mixing the
  best-of-n laws over n with E[x^n] = G(x) = x e^{μ(x−1)} gives

    π_μ(y) = π(y) (G(F(y)) − G(F-(y))) / c(y)
           = π(y) e^{−μ S(y)} (F(y) μ φ(μ c(y)) + e^{−μ c(y)}),

  with F, F-, c = F − F- and S = 1 − F as in :mod:`maxk._src.tie_classes` and
  φ(x) = (1 − e^{−x})/x (φ(0) = 1).  Every term is positive, so there is no
  cancellation, and log(π_μ/π) = −μ S + log(F μ φ(μc) + e^{−μc}) is accurate.  For
  a continuous reward its density in u = F(y) is (1 + μu) e^{μ(u−1)}.
* The exponential tilt with inverse temperature β: π_β(y) = π(y) e^{β r(y)} / Z(β),
  Z(β) = Σ_y π(y) e^{β r(y)}, the maximizer of E_q[r] − KL(q || π)/β (the
  KL-regularised optimum).  Rewards are centred at E_π[r] before exponentiating,
  so KL(π_β || π) = β E_β[r − r̄] − log E_π[e^{β(r − r̄)}] has no first-order
  cancellation for small β, and log Z uses the max-shift of logsumexp with log1p
  (accurate to float32 rounding relative to β² Var_π[r] as β → 0).

μ and β are scalars that may be traced (``jit`` over them, ``jax.grad`` w.r.t. them
and the probabilities).  Cost O(L log L) per distribution (one sort) for BoP and the
win rates, O(L) for the tilt's PMF, KL and log-partition.

References: Khalaf, Verdun, Oesterling, Lakkaraju & Calmon, "Inference-Time Reward
Hacking in Large Language Models", arXiv 2506.19248 (Best-of-Poisson, Algorithm 3);
Korbak, Perez & Buckley, arXiv 2205.11275, and Rafailov et al. (DPO), arXiv
2305.18290, Eq. 4 (the tilt); Balashankar et al. (InfAlign), arXiv 2412.19792.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike
import numpy as np

from maxk._src import categorical
from maxk._src import checks
from maxk._src import sorting
from maxk._src import tie_classes


def scalar_parameter(
  value: ArrayLike, name: str, *, low: float | None = None, strict: bool = False
) -> jax.Array:
  """``value`` as a 0-d float array; eagerly it must be finite and >= ``low`` (> if strict)."""
  arr = checks.as_float_array(value, name, min_ndim=0)
  if arr.ndim != 0:
    raise ValueError(f"{name} must be a scalar; got shape {arr.shape} (vmap over it instead).")
  if checks.is_concrete(arr):
    v = float(np.asarray(arr, np.float64))
    bad = not math.isfinite(v) or (low is not None and (v <= low if strict else v < low))
    if bad:
      bound = "" if low is None else f" {'>' if strict else '>='} {low:g}"
      raise ValueError(f"{name}={v!r} must be a finite real number{bound}.")
  return arr


def check_finite_rewards(r: jax.Array) -> None:
  """Eagerly rejects ±inf rewards, whose values (not only order) enter the policy."""
  if checks.is_concrete(r) and r.size and not np.all(np.isfinite(np.asarray(r))):
    raise ValueError("rewards must be finite (found +-inf); their values enter this policy.")


def bad_row(p: jax.Array, r: jax.Array) -> jax.Array:
  """True for a row with a NaN probability or a non-finite reward (possible under jit)."""
  return jnp.any(jnp.isnan(p)) | jnp.any(~jnp.isfinite(r))


# ----------------------------------------------------------------------------
# Best-of-Poisson.
# ----------------------------------------------------------------------------


def _bop_sorted(classes: tie_classes.Classes, mu: jax.Array) -> tuple[jax.Array, jax.Array]:
  """π_μ and log(π_μ/π) of one row in sorted order.

  log_ratio is finite also where p = 0, so that the derivative of π_μ = p e^{log_ratio}
  (and of the KL terms) w.r.t. a zero probability is right.
  """
  x = mu * classes.c
  positive = x > 0
  xs = jnp.where(positive, x, 1.0)
  phi = jnp.where(positive, -jnp.expm1(-xs) / xs, 1.0)  # (1 − e^{−x})/x, φ(0) = 1.
  inner = classes.F * mu * phi + jnp.exp(-x)
  log_ratio = -mu * classes.S + jnp.log(inner)
  pmf = classes.p * jnp.exp(log_ratio)
  invalid = ~(mu >= 0)  # A traced μ < 0 (or NaN) is not a rate: NaN.
  return jnp.where(invalid, jnp.nan, pmf), jnp.where(invalid, jnp.nan, log_ratio)


def _bop_pmf_row(mu: jax.Array, p: jax.Array, r: jax.Array) -> jax.Array:
  classes = tie_classes.tie_classes(p, r)
  return sorting.unsort_last(_bop_sorted(classes, mu)[0], classes.order)


def _bop_kl_row(mu: jax.Array, p: jax.Array, r: jax.Array) -> jax.Array:
  pmf, log_ratio = _bop_sorted(tie_classes.tie_classes(p, r), mu)
  return jnp.sum(pmf * log_ratio)


def _bop_win_rate_row(mu: jax.Array, p: jax.Array, r: jax.Array) -> jax.Array:
  classes = tie_classes.tie_classes(p, r)
  pmf = _bop_sorted(classes, mu)[0]
  return jnp.sum(pmf * (classes.F_minus + 0.5 * classes.c))


def _bop_args(probs: ArrayLike, rewards: ArrayLike, mu: ArrayLike) -> tuple[jax.Array, ...]:
  m = scalar_parameter(mu, "mu", low=0.0)
  p, r = categorical.prepare(probs, rewards)
  return m.astype(p.dtype), p, r


def bop_pmf(probs: ArrayLike, rewards: ArrayLike, mu: ArrayLike) -> jax.Array:
  """Exact Best-of-Poisson PMF π_μ: the best of N + 1 draws, N ~ Poisson(μ).

  n = N + 1 >= 1 draws, so N = 0 (probability e^{−μ}) returns one reference draw
  and μ = 0 returns the reference itself.  With G(x) = E[x^n] = x e^{μ(x−1)},

    π_μ(y) = π(y) (G(F(y)) − G(F-(y))) / c(y)
           = π(y) e^{−μ S(y)} (F(y) μ φ(μ c(y)) + e^{−μ c(y)}),  φ(x) = (1 − e^{−x})/x,

  F, F-, c, S as for :func:`maxk.bon_pmf` (tied outcomes share their class's
  mass in proportion to ``probs``).  For a continuous reward the density in
  u = F(y) is (1 + μu) e^{μ(u−1)}.  Cost O(L log L) per distribution.

  References: Khalaf et al., arXiv 2506.19248, Algorithm 3 (Best-of-Poisson).

  Args:
    probs: ``[..., L]`` reference probabilities π (leading axes are batch axes).
    rewards: ``[..., L]`` rewards, same shape; only their order and ties matter.
    mu: scalar Poisson rate μ >= 0 (may be traced; ``vmap`` for several).

  Returns:
    ``[..., L]`` probabilities in the caller's order, smooth in ``probs`` and ``mu``.

  Raises:
    ValueError: if ``mu`` is not a scalar or (eagerly only) not finite and >= 0,
      the shapes differ, or (eagerly only) ``probs`` is not a probability vector or
      ``rewards`` holds a NaN.  Under ``jit`` ``probs`` is divided by its sum, a
      NaN reward makes its row NaN, and a traced μ < 0 makes every output NaN.
  """
  m, p, r = _bop_args(probs, rewards, mu)
  return categorical.rowwise(_bop_pmf_row, m, p, r)


def bop_kl(probs: ArrayLike, rewards: ArrayLike, mu: ArrayLike) -> jax.Array:
  """Exact KL(π_μ || π) of Best-of-Poisson.

  Σ_y π_μ(y) [−μ S(y) + log(F(y) μ φ(μ c(y)) + e^{−μ c(y)})] (see :func:`bop_pmf`),
  in log space; 0 log 0 = 0.  For a continuous reward it is
  ∫_0^1 (1 + μu) e^{μ(u−1)} [μ(u−1) + log(1 + μu)] du.  Cost O(L log L) per distribution.

  References: Khalaf et al., arXiv 2506.19248, Algorithm 3.

  Args:
    probs: ``[..., L]`` reference probabilities.
    rewards: ``[..., L]`` rewards.
    mu: scalar μ >= 0.

  Returns:
    ``[...]`` KL divergence in nats.

  Raises:
    ValueError: as for :func:`bop_pmf`.
  """
  m, p, r = _bop_args(probs, rewards, mu)
  return categorical.rowwise(_bop_kl_row, m, p, r)


def bop_win_rate(probs: ArrayLike, rewards: ArrayLike, mu: ArrayLike) -> jax.Array:
  """Win rate of Best-of-Poisson against its reference, ties counting one half.

  P(r(Y_μ) > r(Y)) + 1/2 P(r(Y_μ) = r(Y)), Y_μ ~ π_μ and Y ~ π independent; 1/2 at
  μ = 0.  Cost O(L log L) per distribution.

  References: Khalaf et al., arXiv 2506.19248, Algorithm 3; the win rate of
  Beirami et al., arXiv 2401.01879, Sec. 5.

  Args:
    probs: ``[..., L]`` reference probabilities.
    rewards: ``[..., L]`` rewards.
    mu: scalar μ >= 0.

  Returns:
    ``[...]`` win rates.

  Raises:
    ValueError: as for :func:`bop_pmf`.
  """
  m, p, r = _bop_args(probs, rewards, mu)
  return categorical.rowwise(_bop_win_rate_row, m, p, r)


# ----------------------------------------------------------------------------
# The exponential tilt.
# ----------------------------------------------------------------------------


def _tilt(beta: jax.Array, p: jax.Array, r: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
  """π_β, log(π_β/π) (finite also where p = 0) and log Z(β) of one row, in any order."""
  positive = p > 0
  r0 = jnp.where(jnp.isfinite(r), r, 0.0)
  mean = jnp.sum(jnp.where(positive, p * r0, 0.0))
  a = beta * (r0 - mean)
  shift = jax.lax.stop_gradient(jnp.max(jnp.where(positive, a, -jnp.inf)))
  shift = jnp.where(jnp.isfinite(shift), shift, 0.0)
  # d <= 0 where p > 0.  Where p = 0 it only sets the derivative w.r.t. that p (capped
  # so that e^d stays finite).
  d = jnp.where(positive, a - shift, jnp.minimum(a - shift, 60.0))
  # log Σ π e^d = log1p(Σ π expm1(d)) (a sum of non-positive terms, no cancellation)
  # while that is above −1/2, else the log of the sum itself.
  t = jnp.sum(p * jnp.expm1(d))
  near_one = t > -0.5
  log_sum = jnp.where(
    near_one,
    jnp.log1p(jnp.where(near_one, t, 0.0)),
    jnp.log(jnp.where(near_one, 1.0, jnp.sum(p * jnp.exp(d)))),
  )
  log_z_centred = shift + log_sum
  log_ratio = d - log_sum
  pmf = p * jnp.exp(log_ratio)
  log_z = beta * mean + log_z_centred
  bad = bad_row(p, jnp.where(positive, r, 0.0)) | jnp.isnan(beta)
  nan = jnp.asarray(jnp.nan, p.dtype)
  return jnp.where(bad, nan, pmf), jnp.where(bad, nan, log_ratio), jnp.where(bad, nan, log_z)


def _tilt_pmf_row(beta: jax.Array, p: jax.Array, r: jax.Array) -> jax.Array:
  return _tilt(beta, p, r)[0]


def _tilt_kl_row(beta: jax.Array, p: jax.Array, r: jax.Array) -> jax.Array:
  pmf, log_ratio, _ = _tilt(beta, p, r)
  return jnp.sum(pmf * log_ratio)


def _tilt_log_partition_row(beta: jax.Array, p: jax.Array, r: jax.Array) -> jax.Array:
  return _tilt(beta, p, r)[2]


def _tilt_win_rate_row(beta: jax.Array, p: jax.Array, r: jax.Array) -> jax.Array:
  classes = tie_classes.tie_classes(p, r)
  pmf = _tilt(beta, classes.p, classes.r)[0]
  return jnp.sum(pmf * (classes.F_minus + 0.5 * classes.c))


def _tilt_args(probs: ArrayLike, rewards: ArrayLike, beta: ArrayLike) -> tuple[jax.Array, ...]:
  b = scalar_parameter(beta, "beta")
  p, r = categorical.prepare(probs, rewards)
  check_finite_rewards(r)
  return b.astype(p.dtype), p, r


def tilt_pmf(probs: ArrayLike, rewards: ArrayLike, beta: ArrayLike) -> jax.Array:
  """The exponentially tilted policy π_β(y) = π(y) e^{β r(y)} / Z(β).

  It maximizes E_q[r] − KL(q || π)/β over policies q (β > 0): the KL-regularised
  optimum that RLHF and DPO target.  β may be any real: β = 0 is the reference,
  β < 0 tilts towards low rewards, and β → ∞ approaches the reference restricted
  to its best tie class.  Zero-probability outcomes stay at 0.  Cost O(L).

  References: Korbak et al., arXiv 2205.11275; Rafailov et al. (DPO), arXiv
  2305.18290, Eq. 4; Balashankar et al. (InfAlign), arXiv 2412.19792.

  Args:
    probs: ``[..., L]`` reference probabilities π.
    rewards: ``[..., L]`` finite rewards (their values matter, not only their order).
    beta: scalar inverse temperature β (may be traced).

  Returns:
    ``[..., L]`` probabilities in the caller's order.

  Raises:
    ValueError: if ``beta`` is not a scalar or (eagerly only) not finite, the
      shapes differ, or (eagerly only) ``probs`` is not a probability vector or
      ``rewards`` is not finite.  Under ``jit`` ``probs`` is divided by its sum and a
      row with a NaN, or a +-inf reward of positive probability, is NaN.
  """
  b, p, r = _tilt_args(probs, rewards, beta)
  return categorical.rowwise(_tilt_pmf_row, b, p, r)


def tilt_log_partition(probs: ArrayLike, rewards: ArrayLike, beta: ArrayLike) -> jax.Array:
  """log Z(β) = log Σ_y π(y) e^{β r(y)}, the reward's cumulant generating function.

  Evaluated as β r̄ + log Σ π e^{β(r − r̄)} (r̄ = E_π[r]) with the max-shift of
  logsumexp, so it neither overflows nor loses the small-β behaviour
  log Z ≈ β r̄ + β² Var_π[r]/2.  d log Z/dβ = E_β[r].  Cost O(L).

  References: Korbak et al., arXiv 2205.11275; Rafailov et al. (DPO), arXiv
  2305.18290, Eq. 4.

  Args:
    probs: ``[..., L]`` reference probabilities.
    rewards: ``[..., L]`` finite rewards.
    beta: scalar β (may be traced).

  Returns:
    ``[...]`` log-partition values.

  Raises:
    ValueError: as for :func:`tilt_pmf`.
  """
  b, p, r = _tilt_args(probs, rewards, beta)
  return categorical.rowwise(_tilt_log_partition_row, b, p, r)


def tilt_kl(probs: ArrayLike, rewards: ArrayLike, beta: ArrayLike) -> jax.Array:
  """KL(π_β || π) = β E_β[r] − log Z(β) of the tilted policy.

  Computed as Σ_y π_β(y) [β(r(y) − r̄) − log E_π e^{β(r − r̄)}] with r̄ = E_π[r], so
  both terms are O(β²) for small β (KL ≈ β² Var_π[r]/2) and nothing cancels to
  first order.  Cost O(L).

  References: Korbak et al., arXiv 2205.11275; Rafailov et al. (DPO), arXiv
  2305.18290, Eq. 4.

  Args:
    probs: ``[..., L]`` reference probabilities.
    rewards: ``[..., L]`` finite rewards.
    beta: scalar β (may be traced).

  Returns:
    ``[...]`` KL divergence in nats.

  Raises:
    ValueError: as for :func:`tilt_pmf`.
  """
  b, p, r = _tilt_args(probs, rewards, beta)
  return categorical.rowwise(_tilt_kl_row, b, p, r)


def tilt_win_rate(probs: ArrayLike, rewards: ArrayLike, beta: ArrayLike) -> jax.Array:
  """Win rate of the tilted policy against its reference, ties counting one half.

  P(r(Y_β) > r(Y)) + 1/2 P(r(Y_β) = r(Y)), Y_β ~ π_β and Y ~ π independent; 1/2 at
  β = 0.  Cost O(L log L) per distribution.

  References: Rafailov et al. (DPO), arXiv 2305.18290, Eq. 4; Balashankar et al.
  (InfAlign), arXiv 2412.19792 (win rate of a tilted policy).

  Args:
    probs: ``[..., L]`` reference probabilities.
    rewards: ``[..., L]`` finite rewards.
    beta: scalar β (may be traced).

  Returns:
    ``[...]`` win rates.

  Raises:
    ValueError: as for :func:`tilt_pmf`.
  """
  b, p, r = _tilt_args(probs, rewards, beta)
  return categorical.rowwise(_tilt_win_rate_row, b, p, r)
