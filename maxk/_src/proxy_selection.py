"""Over-optimisation under a proxy: the true reward of policies that select by a proxy.

Each outcome y of a categorical reference ``probs [..., L]`` has a true reward
``true_rewards [..., L]`` and a proxy reward ``proxy_rewards [..., L]`` (a learned
reward model).  A selection policy (best-of-n, soft best-of-n, Best-of-Poisson,
the tilt, the χ² optimum) built on the proxy is the law π_θ of
:mod:`maxk._src.best_of_n`, :mod:`maxk._src.soft_best_of_n`,
:mod:`maxk._src.tilted_policies` or :mod:`maxk._src.chi2_policy` with the proxy as
its reward (ties in the proxy broken uniformly: a tied proxy class's mass is split
in proportion to ``probs``), and its true value is E_{π_θ}[r_true] = Σ_y π_θ(y)
r_true(y), exactly.  Against n (or λ, μ, β) it first rises and then, when the
proxy's top outcomes are not the true best, falls: reward hacking, the
over-optimisation that Gao et al. measure against KL.  :func:`proxy_bon_best_n`
finds the best integer n by an exact scan (one sort; O(L) per n).

References: Gao, Schulman & Hilton, "Scaling Laws for Reward Model
Overoptimization", arXiv 2210.10760; Khalaf, Verdun, Oesterling, Lakkaraju &
Calmon, "Inference-Time Reward Hacking in Large Language Models" (HedgeTune),
arXiv 2506.19248; Huang et al., arXiv 2503.21878, Sec. 3 (reward hacking of
best-of-n).
"""

from __future__ import annotations

from collections.abc import Callable
import functools

import jax
from jax import lax
import jax.numpy as jnp
from jax.typing import ArrayLike

from maxk._src import best_of_n
from maxk._src import categorical
from maxk._src import checks
from maxk._src import chi2_policy
from maxk._src import soft_best_of_n
from maxk._src import tie_classes
from maxk._src import tilted_policies


def _true(probs: ArrayLike, true_rewards: ArrayLike, proxy_rewards: ArrayLike) -> jax.Array:
  """``true_rewards`` as a finite float array of the shape of ``probs`` (checked first)."""
  p = categorical.as_distribution(probs, "probs")
  t = checks.as_float_array(true_rewards, "true_rewards")
  q = checks.as_float_array(proxy_rewards, "proxy_rewards")
  checks.check_same_shape(p, "probs", t, "true_rewards")
  checks.check_same_shape(p, "probs", q, "proxy_rewards")
  tilted_policies.check_finite_rewards(t)
  return t


def _value(pmf: jax.Array, true: jax.Array) -> jax.Array:
  """Σ π_θ r_true along the last axis (a zero-probability outcome adds 0, whatever its reward)."""
  terms = jnp.where(pmf > 0, pmf * jnp.where(jnp.isfinite(true), true, 0.0), 0.0)
  bad = jnp.any(jnp.isnan(pmf) | jnp.isnan(true), axis=-1)
  return jnp.where(bad, jnp.nan, jnp.sum(terms, axis=-1))


def proxy_bon_reward(
  probs: ArrayLike, true_rewards: ArrayLike, proxy_rewards: ArrayLike, n: int
) -> jax.Array:
  """True reward of best-of-n selected by a proxy: E[r_true(Y_n)], Y_n the proxy's best of n.

  Σ_y π_n(y) r_true(y) with π_n = :func:`maxk.bon_pmf` (probs, proxy_rewards, n):
  exact, ties in the proxy broken uniformly.  n = 1 gives E_π[r_true]; with the
  proxy equal to the true reward it is :func:`maxk.max_at_k_exact`.  Cost
  O(L log L) per distribution.

  References: Gao et al., arXiv 2210.10760 (best-of-n against a proxy reward
  model); Khalaf et al., arXiv 2506.19248.

  Args:
    probs: ``[..., L]`` reference probabilities π (leading axes are batch axes).
    true_rewards: ``[..., L]`` finite true rewards.
    proxy_rewards: ``[..., L]`` proxy rewards that select (only their order and ties matter).
    n: static int >= 1.

  Returns:
    ``[...]`` expected true rewards.

  Raises:
    ValueError: if ``n`` is not an int >= 1, the shapes differ, or (eagerly only)
      ``probs`` is not a probability vector, ``true_rewards`` is not finite or
      ``proxy_rewards`` holds a NaN.
  """
  true = _true(probs, true_rewards, proxy_rewards)
  return _value(best_of_n.bon_pmf(probs, proxy_rewards, n), true)


def proxy_soft_bon_reward(
  probs: ArrayLike,
  true_rewards: ArrayLike,
  proxy_rewards: ArrayLike,
  n: int,
  lam: ArrayLike,
  *,
  num_nodes: int = soft_best_of_n.DEFAULT_NUM_NODES,
) -> jax.Array:
  """True reward of soft best-of-n on a proxy: draw i of n kept with probability ∝ e^{r_proxy,i/λ}.

  Σ_y π_{n,λ}(y) r_true(y) with π_{n,λ} = :func:`maxk.soft_bon_pmf` on the proxy.
  λ → 0 gives :func:`proxy_bon_reward`; large λ the reference's E_π[r_true].
  Cost O(num_nodes · L) per distribution.

  References: Verdun et al., arXiv 2505.03156 (soft best-of-n); Khalaf et al.,
  arXiv 2506.19248 (HedgeTune tunes λ against reward hacking).

  Args:
    probs: ``[..., L]`` reference probabilities.
    true_rewards: ``[..., L]`` finite true rewards.
    proxy_rewards: ``[..., L]`` finite proxy rewards (their values matter).
    n: static int >= 1.
    lam: scalar temperature λ > 0 (may be traced).
    num_nodes: keyword-only static int >= 16, as for :func:`maxk.soft_bon_pmf`.

  Returns:
    ``[...]`` expected true rewards.

  Raises:
    ValueError: as for :func:`maxk.soft_bon_pmf`, or if ``true_rewards`` has
      another shape or (eagerly) is not finite.
  """
  true = _true(probs, true_rewards, proxy_rewards)
  pmf = soft_best_of_n.soft_bon_pmf(probs, proxy_rewards, n, lam, num_nodes=num_nodes)
  return _value(pmf, true)


def proxy_bop_reward(
  probs: ArrayLike, true_rewards: ArrayLike, proxy_rewards: ArrayLike, mu: ArrayLike
) -> jax.Array:
  """True reward of Best-of-Poisson (the proxy's best of N + 1 draws, N ~ Poisson(μ)).

  Σ_y π_μ(y) r_true(y) with π_μ = :func:`maxk.bop_pmf` on the proxy; μ = 0 gives
  E_π[r_true].  Cost O(L log L) per distribution.

  References: Khalaf et al., arXiv 2506.19248 (Best-of-Poisson, HedgeTune).

  Args:
    probs: ``[..., L]`` reference probabilities.
    true_rewards: ``[..., L]`` finite true rewards.
    proxy_rewards: ``[..., L]`` proxy rewards (only their order and ties matter).
    mu: scalar Poisson rate μ >= 0 (may be traced).

  Returns:
    ``[...]`` expected true rewards.

  Raises:
    ValueError: as for :func:`maxk.bop_pmf`, or if ``true_rewards`` has another
      shape or (eagerly) is not finite.
  """
  true = _true(probs, true_rewards, proxy_rewards)
  return _value(tilted_policies.bop_pmf(probs, proxy_rewards, mu), true)


def proxy_tilt_reward(
  probs: ArrayLike, true_rewards: ArrayLike, proxy_rewards: ArrayLike, beta: ArrayLike
) -> jax.Array:
  """True reward of the exponential tilt of the proxy, π_β ∝ π e^{β r_proxy}.

  Σ_y π_β(y) r_true(y) with π_β = :func:`maxk.tilt_pmf` on the proxy (the
  KL-regularised RLHF optimum for a proxy reward model).  Cost O(L) per distribution.

  References: Gao et al., arXiv 2210.10760 (RL against a proxy);
  Rafailov et al., arXiv 2305.18290, Eq. 4.

  Args:
    probs: ``[..., L]`` reference probabilities.
    true_rewards: ``[..., L]`` finite true rewards.
    proxy_rewards: ``[..., L]`` finite proxy rewards.
    beta: scalar β (may be traced).

  Returns:
    ``[...]`` expected true rewards.

  Raises:
    ValueError: as for :func:`maxk.tilt_pmf`, or if ``true_rewards`` has another
      shape or (eagerly) is not finite.
  """
  true = _true(probs, true_rewards, proxy_rewards)
  return _value(tilted_policies.tilt_pmf(probs, proxy_rewards, beta), true)


def proxy_chi2_reward(
  probs: ArrayLike, true_rewards: ArrayLike, proxy_rewards: ArrayLike, beta: ArrayLike
) -> jax.Array:
  """True reward of the χ²-regularised optimum of the proxy (:func:`maxk.chi2_pmf`).

  Σ_y π_β(y) r_true(y), π_β = π (r_proxy − λ_β)_+/β: the target of
  InferenceTimePessimism, whose true reward does not collapse as the compute
  grows the way best-of-n's does.  Cost O(L log L) per distribution.

  References: Huang et al., arXiv 2503.21878, Secs. 3-4.

  Args:
    probs: ``[..., L]`` reference probabilities.
    true_rewards: ``[..., L]`` finite true rewards.
    proxy_rewards: ``[..., L]`` finite proxy rewards.
    beta: scalar β > 0 (may be traced).

  Returns:
    ``[...]`` expected true rewards.

  Raises:
    ValueError: as for :func:`maxk.chi2_pmf`, or if ``true_rewards`` has another
      shape or (eagerly) is not finite.
  """
  true = _true(probs, true_rewards, proxy_rewards)
  return _value(chi2_policy.chi2_pmf(probs, proxy_rewards, beta), true)


_Row = Callable[[object, jax.Array, jax.Array, jax.Array], jax.Array]


@functools.cache
def _best_n_row(max_n: int) -> _Row:
  """The row function of :func:`proxy_bon_best_n` for a static ``max_n``."""
  return functools.partial(_best_n, max_n)


def _best_n(max_n: int, _: object, p: jax.Array, proxy: jax.Array, true: jax.Array) -> jax.Array:
  classes = tie_classes.tie_classes(p, proxy)
  t = true[classes.order.perm]
  t = jnp.where((classes.p > 0) & jnp.isfinite(t), t, 0.0)

  def step(
    carry: tuple[jax.Array, jax.Array], n: jax.Array
  ) -> tuple[tuple[jax.Array, jax.Array], None]:
    best_n, best = carry
    value = jnp.sum(best_of_n._bon_sorted(classes, n)[0] * t)
    better = value > best
    return (jnp.where(better, n, best_n), jnp.where(better, value, best)), None

  init = (jnp.asarray(0, jnp.int32), jnp.asarray(-jnp.inf, p.dtype))
  (best_n, best), _ = lax.scan(step, init, jnp.arange(1, max_n + 1, dtype=jnp.int32))
  bad = jnp.any(jnp.isnan(classes.p)) | jnp.any(jnp.isnan(true))
  return jnp.stack([jnp.where(bad, -1, best_n).astype(p.dtype), jnp.where(bad, jnp.nan, best)])


def proxy_bon_best_n(
  probs: ArrayLike, true_rewards: ArrayLike, proxy_rewards: ArrayLike, *, max_n: int
) -> tuple[jax.Array, jax.Array]:
  """The n in 1..max_n that maximizes the true reward of best-of-n on the proxy.

  An exact scan of :func:`proxy_bon_reward` over every integer n <= ``max_n``
  (the curve need not be unimodal, so a golden-section search could stop at a
  local maximum): one sort, then O(L) per n, O(L (log L + max_n)) in all.  Ties
  in the true reward go to the smallest n.  The hedging point of HedgeTune for
  best-of-n, computed exactly for a categorical reference.

  References: Khalaf et al., arXiv 2506.19248 (HedgeTune: the n before reward
  hacking sets in); Gao et al., arXiv 2210.10760.

  Args:
    probs: ``[..., L]`` reference probabilities.
    true_rewards: ``[..., L]`` finite true rewards.
    proxy_rewards: ``[..., L]`` proxy rewards (only their order and ties matter).
    max_n: keyword-only static int >= 1, the largest n scanned.

  Returns:
    ``(best_n, best_reward)``: ``[...]`` int32 maximizers (−1 for a NaN row) and
    ``[...]`` their true rewards.

  Raises:
    ValueError: if ``max_n`` is not an int in [1, 2^20], the shapes differ, or
      (eagerly only) ``probs`` is not a probability vector, ``true_rewards`` is not
      finite or ``proxy_rewards`` holds a NaN.
  """
  max_n = checks.check_int(max_n, "max_n", low=1, high=2**20)
  true = _true(probs, true_rewards, proxy_rewards)
  p, proxy = categorical.prepare(probs, proxy_rewards)
  true = true.astype(p.dtype)
  out = categorical.rowwise(_best_n_row(max_n), 0, p, proxy, true)
  return out[..., 0].astype(jnp.int32), out[..., 1]
