"""The best-of-n policy of a categorical reference: its PMF, KL and win rate.

A reference policy is a categorical distribution ``probs [..., L]`` over L outcomes
with ``rewards [..., L]``.  The best-of-n policy π_n draws n i.i.d. outcomes from π
and returns one with the highest reward; with ties it picks uniformly among the
tied maximal draws, which splits a tie class's mass in proportion to ``probs``:

  π_n(y) = π(y) (F(y)^n − F-(y)^n) / c(y),   c(y) = F(y) − F-(y),

with F(y) = P(r <= r(y)) and F-(y) = P(r < r(y)) (:mod:`maxk._src.tie_classes`).
For unique rewards this is F(y)^n − F-(y)^n (Beirami et al., Sec. 2).

Numerics.  With x = c/F, F^n − F-^n = F^n (1 − (1 − x)^n), so

  π_n(y) / π(y) = F^(n−1) h_n(x),      h_n(x) = (1 − (1 − x)^n) / x in [1, n],

with log F accurate near 0 and near 1 and h_n evaluated with expm1/log1p, so
every quantity keeps float32 relative accuracy for n = 10^4 and L = 10^6 (no
F^n − F-^n cancellation).  Cost: one sort, a few cumulative sums and gathers per
distribution, O(L log L); no L x L arrays.

Inputs are validated as described in :mod:`maxk._src.categorical`; static
integers (``n``, ``k``) are always validated.  The derivations of the estimator
d_n and of the bounds, and what was checked against the paper, are in
docs/best_of_n_bounds.md.

References: Beirami et al., "Theoretical guarantees on the best-of-n alignment
policy", arXiv 2401.01879 (ICML 2025), Secs. 2-5.
"""

from __future__ import annotations

import math

import jax
from jax import lax
import jax.numpy as jnp
from jax.typing import ArrayLike
import numpy as np

from maxk._src import categorical
from maxk._src import checks
from maxk._src import sorting
from maxk._src import tie_classes


def _h(x: jax.Array, n: int | jax.Array) -> jax.Array:
  """h_n(x) = (1 − (1−x)^n) / x for x in [0, 1], h_n(0) = n; grad-safe.

  ``n`` may be traced (an int scalar); no branch depends on its value.
  """
  small = x < 0.5
  xs = jnp.where(small & (x > 0), x, 0.25)
  h_small = -jnp.expm1(n * jnp.log1p(-xs)) / xs
  xl = jnp.where(small, 0.75, x)
  xl_safe = jnp.where(xl < 1, xl, 0.75)
  # (1 − x)^n for x in [1/2, 1]; 1 − x is exact there.  At x = 1 its derivative
  # is −1 for n = 1 and 0 for n >= 2.
  pow_large = jnp.where(n == 1, 1.0 - xl, jnp.where(xl < 1, jnp.exp(n * jnp.log1p(-xl_safe)), 0.0))
  h_large = (1.0 - pow_large) / xl
  return jnp.where(small, jnp.where(x > 0, h_small, n), h_large)


def _bon_sorted(classes: tie_classes.Classes, n: int | jax.Array) -> tuple[jax.Array, jax.Array]:
  """π_n and log(π_n/π) of one row in sorted order (``n`` may be traced).

  log_ratio is valid where p > 0 and 0 elsewhere.
  """
  log_f = tie_classes.log_cdf(classes.F, classes.S)
  # x = c/F is in [0, 1] up to rounding.  Cap rounding above 1 without touching the
  # gradient: jnp.clip/minimum would halve it where x == 1 exactly (the lowest class
  # of positive mass when every lower class has π = 0).
  x = classes.c / jnp.where(classes.F > 0, classes.F, 1.0)
  x = x - lax.stop_gradient(jnp.maximum(x - 1.0, 0.0))
  h = _h(x, n)
  # F^(n−1); where F = 0 (a zero-probability bottom class) it is 0, or 1 if n = 1.
  f_pow = jnp.where(classes.F > 0, jnp.exp((n - 1) * log_f), jnp.where(n == 1, 1.0, 0.0))
  pmf = classes.p * f_pow * h
  log_ratio = jnp.where(classes.p > 0, (n - 1) * log_f + jnp.log(h), 0.0)
  return pmf, log_ratio


def _pmf_row(n: int | jax.Array, p: jax.Array, r: jax.Array) -> jax.Array:
  classes = tie_classes.tie_classes(p, r)
  return sorting.unsort_last(_bon_sorted(classes, n)[0], classes.order)


def _kl_row(n: int | jax.Array, p: jax.Array, r: jax.Array) -> jax.Array:
  pmf, log_ratio = _bon_sorted(tie_classes.tie_classes(p, r), n)
  return jnp.sum(pmf * log_ratio)


def _win_rate_row(n: int | jax.Array, p: jax.Array, r: jax.Array) -> jax.Array:
  classes = tie_classes.tie_classes(p, r)
  pmf = _bon_sorted(classes, n)[0]
  return jnp.sum(pmf * (classes.F_minus + 0.5 * classes.c))


def _estimate_row(n: int | jax.Array, p: jax.Array, r: jax.Array) -> jax.Array:
  classes = tie_classes.tie_classes(p, r)
  pmf = _bon_sorted(classes, n)[0]
  positive = classes.p > 0
  d = _d_n(jnp.where(positive, classes.p, 1.0), n)
  value = jnp.sum(jnp.where(positive, pmf * d, 0.0))
  return jnp.where(jnp.any(jnp.isnan(classes.p)), jnp.nan, value)  # NaN row stays NaN.


def _max_at_k_row(k: int | jax.Array, p: jax.Array, r: jax.Array) -> jax.Array:
  classes = tie_classes.tie_classes(p, r)
  # A ±inf reward of a zero-probability outcome does not enter the value (its
  # pmf is 0, and 0 · inf must not make it NaN).
  r_eff = jnp.where((classes.p > 0) | jnp.isfinite(classes.r), classes.r, 0.0)
  return jnp.sum(_bon_sorted(classes, k)[0] * r_eff)


def bon_pmf(probs: ArrayLike, rewards: ArrayLike, n: int) -> jax.Array:
  """Exact best-of-n PMF π_n.

  π_n(y) = π(y) (F(y)^n − F-(y)^n) / (F(y) − F-(y)), with F(y) = P(r <= r(y)) and
  F-(y) = P(r < r(y)).  For unique rewards this is F(y)^n − F-(y)^n; tied
  outcomes share their class's mass in proportion to ``probs`` (best-of-n picks
  uniformly among the tied maximal draws).  Cost O(L log L) per distribution.

  References: Beirami et al. 2401.01879, Sec. 2.

  Args:
    probs: ``[..., L]`` reference probabilities π (leading axes are batch axes).
    rewards: ``[..., L]`` rewards, same shape; only their order and ties matter.
    n: static int >= 1, the number of draws.

  Returns:
    ``[..., L]`` best-of-n probabilities in the caller's order.  Smooth in
    ``probs`` (``jax.grad`` is finite, also with ties and zero probabilities).

  Raises:
    ValueError: if ``n`` is not an int >= 1, the shapes differ, or (eagerly only)
      ``probs`` is not a probability vector or ``rewards`` holds a NaN.  Under
      ``jit`` ``probs`` is divided by its sum and not otherwise checked, and a NaN
      reward makes its row NaN.
  """
  n = checks.check_int(n, "n", low=1, high=checks.MAX_SIZE)
  p, r = categorical.prepare(probs, rewards)
  return categorical.rowwise(_pmf_row, n, p, r)


def bon_kl(probs: ArrayLike, rewards: ArrayLike, n: int) -> jax.Array:
  """Exact KL(π_n || π) of the best-of-n policy.

  Computed as Σ_y π_n(y) log(π_n(y)/π(y)) with the log-ratio
  (n−1) log F(y) + log h_n(c/F) evaluated in log space (see the module
  docstring), so it is accurate in float32 for n up to 10^4 and beyond and
  L = 10^6; 0 log 0 = 0.  With ties the KL equals that of the tie-class
  distribution (tie classes are split in proportion to ``probs``, so within-class
  terms cancel).  Cost O(L log L) per distribution.

  References: Beirami et al. 2401.01879, Sec. 3.

  Args:
    probs: ``[..., L]`` reference probabilities.
    rewards: ``[..., L]`` rewards.
    n: static int >= 1.

  Returns:
    ``[...]`` KL divergence in nats; it is <= ``bon_kl_bound(n)``.

  Raises:
    ValueError: as for :func:`bon_pmf`.
  """
  n = checks.check_int(n, "n", low=1, high=checks.MAX_SIZE)
  p, r = categorical.prepare(probs, rewards)
  return categorical.rowwise(_kl_row, n, p, r)


def bon_kl_bound(n: int) -> jax.Array:
  """The "analytical formula" log(n) − (n−1)/n, an upper bound on the KL.

  KL(π_n || π) <= log(n) − (n−1)/n for every reference policy.  It is the KL of
  best-of-n for a continuous reward distribution (the limit of ever finer
  uniform references); near-equality needs every reward class to have small
  probability (:func:`bon_kl_gap_bound`).

  References: Beirami et al. 2401.01879 (abstract; Sec. 3); proof in
  docs/best_of_n_bounds.md.

  Args:
    n: static int >= 1.

  Returns:
    A scalar of the default float dtype (float32 unless x64 is enabled).

  Raises:
    ValueError: if ``n`` is not an int >= 1.
  """
  n = checks.check_int(n, "n", low=1, high=checks.MAX_SIZE)
  return jnp.asarray(math.log(n) - (n - 1) / n, jnp.result_type(float))


def bon_kl_estimate(eps: ArrayLike, n: int) -> jax.Array:
  """The KL estimator d_n(eps) of best-of-n.

  d_n(eps) = (1−eps)^n [log n + (n−1) log(1−eps) − (n−1)/n]
             + (1 − (1−eps)^n) log((1 − (1−eps)^n) / eps),

  where eps = π(y) is the reference probability of the outcome y returned by
  best-of-n (with ties, the outcome's own probability, not its class's).
  Average d_n over draws y ~ π_n to estimate KL(π_n || π);
  :func:`bon_kl_estimate_expectation` gives that average exactly.  d_n(eps) is
  the exact KL of a reference whose top outcome has probability eps above a
  continuum (derivation in docs/best_of_n_bounds.md).  Evaluated with
  log1p/expm1: accurate as eps → 0 (d_n → log n − (n−1)/n, returned at eps = 0)
  and as eps → 1 (d_n(1) = 0).  Always 0 <= d_n(eps) <= log n − (n−1)/n.

  References: Beirami et al. 2401.01879, Sec. 4.

  Args:
    eps: array of probabilities in [0, 1], any shape.
    n: static int >= 1.

  Returns:
    d_n(eps), same shape as ``eps``.

  Raises:
    ValueError: if ``n`` is not an int >= 1 or (eagerly only) some eps lies
      outside [0, 1]; under ``jit`` such values give NaN.
  """
  n = checks.check_int(n, "n", low=1, high=checks.MAX_SIZE)
  e = checks.as_float_array(eps, "eps", min_ndim=0)
  if checks.is_concrete(e) and e.size:
    a = np.asarray(e, dtype=np.float64)
    if np.any(~((a >= 0) & (a <= 1))):
      raise ValueError("eps must hold probabilities in [0, 1].")
  return _d_n(e, n)


def _d_n(e: jax.Array, n: int | jax.Array) -> jax.Array:
  """d_n(e) elementwise; ``n`` may be a Python int or a traced int scalar."""
  bound = (jnp.log(n) - (n - 1) / n).astype(e.dtype)
  inside = (e > 0) & (e < 1)
  es = jnp.where(inside, e, 0.5)
  log_q = jnp.log1p(-es)  # log(1 − eps)
  a = n * log_q  # log (1 − eps)^n
  qn = jnp.exp(a)  # (1 − eps)^n
  b = -jnp.expm1(a)  # 1 − (1 − eps)^n
  value = qn * (bound + (n - 1) * log_q) + b * (jnp.log(b) - jnp.log(es))
  value = jnp.where(n == 1, 0.0, value)  # d_1 = 0 (value is 0 up to rounding).
  value = jnp.where(e <= 0, bound, jnp.where(e >= 1, 0.0, value))
  return jnp.where((e < 0) | (e > 1) | jnp.isnan(e), jnp.nan, value)


def bon_kl_estimate_expectation(probs: ArrayLike, rewards: ArrayLike, n: int) -> jax.Array:
  """Exact expectation E_{y ~ π_n}[d_n(π(y))] of the KL estimator.

  The paper conjectures that this expectation upper-bounds KL(π_n || π); a float64
  search over random references (unique rewards) found no counterexample.  Cost
  O(L log L) per distribution.

  References: Beirami et al. 2401.01879, Sec. 4; docs/best_of_n_bounds.md.

  Args:
    probs: ``[..., L]`` reference probabilities.
    rewards: ``[..., L]`` rewards.
    n: static int >= 1.

  Returns:
    ``[...]`` expected estimator values.

  Raises:
    ValueError: as for :func:`bon_pmf`.
  """
  n = checks.check_int(n, "n", low=1, high=checks.MAX_SIZE)
  p, r = categorical.prepare(probs, rewards)
  return categorical.rowwise(_estimate_row, n, p, r)


def bon_win_rate(probs: ArrayLike, rewards: ArrayLike, n: int) -> jax.Array:
  """Win rate of best-of-n against its reference.

  P(r(Y_n) > r(Y)) + 1/2 P(r(Y_n) = r(Y)), Y_n ~ π_n, Y ~ π independent; at most
  n/(n+1) (:func:`bon_win_rate_bound`), equal to 1/2 at n = 1.  Ties count one
  half (the paper assumes unique rewards).  Cost O(L log L) per distribution.

  References: Beirami et al. 2401.01879, Sec. 5.

  Args:
    probs: ``[..., L]`` reference probabilities.
    rewards: ``[..., L]`` rewards.
    n: static int >= 1.

  Returns:
    ``[...]`` win rates.

  Raises:
    ValueError: as for :func:`bon_pmf`.
  """
  n = checks.check_int(n, "n", low=1, high=checks.MAX_SIZE)
  p, r = categorical.prepare(probs, rewards)
  return categorical.rowwise(_win_rate_row, n, p, r)


def bon_win_rate_bound(n: int) -> jax.Array:
  """n / (n + 1), the upper bound on the best-of-n win rate.

  Holds with ties counted one half, and is attained in the continuous limit.

  References: Beirami et al. 2401.01879 (abstract; Sec. 5); proof in
  docs/best_of_n_bounds.md.

  Args:
    n: static int >= 1.

  Returns:
    A scalar of the default float dtype.

  Raises:
    ValueError: if ``n`` is not an int >= 1.
  """
  n = checks.check_int(n, "n", low=1, high=checks.MAX_SIZE)
  return jnp.asarray(n / (n + 1), jnp.result_type(float))


def max_at_k_exact(probs: ArrayLike, rewards: ArrayLike, k: int) -> jax.Array:
  """Exact max@k of a categorical policy: E[max of k i.i.d. rewards].

  Equals Σ_y bon_pmf(probs, rewards, k)(y) r(y) = Σ over reward classes of
  r (F^k − F-^k).  ``probs`` is divided by its sum, so the function is defined
  (and smooth) on all positive vectors and its ``jax.grad`` is the exact gradient
  of the normalized objective; composed with ``softmax(logits)`` it is the exact
  policy gradient.  Gradients are finite with ties and zero-probability outcomes.
  Cost O(L log L) per distribution.

  References: Beirami et al. 2401.01879, Sec. 2; the max@k objective of
  arXiv 2510.23393, Sec. 3.2.

  Args:
    probs: ``[..., L]`` policy probabilities.
    rewards: ``[..., L]`` finite rewards.
    k: static int >= 1 (any k; draws are with replacement).

  Returns:
    ``[...]`` max@k values.

  Raises:
    ValueError: as for :func:`bon_pmf` (with ``k`` in place of ``n``).
  """
  k = checks.check_int(k, "k", low=1, high=checks.MAX_SIZE)
  p, r = categorical.prepare(probs, rewards)
  return categorical.rowwise(_max_at_k_row, k, p, r)
