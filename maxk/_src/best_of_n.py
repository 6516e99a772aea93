"""Exact mathematics of the best-of-n policy (Beirami et al., arXiv 2401.01879).

Provenance of the paper citations.  Only the abstract (arXiv v1, 3 Jan 2024, and
v3, 29 May 2025, the ICML 2025 version) and the v3 section titles could be read
from the paper itself: Sec. 2 "Derivation of the Best-of-n Policy", Sec. 3
"Relations Between the KL Divergence and the Analytical Formula", Sec. 4
"Proposed Estimator for KL Divergence", Sec. 5 "Win Rate of the Best-of-n
Policy", Sec. 6 "Rewind-and-Repeat: Rejection Sampling Beyond Best-of-n", Sec. 7
"Win rate vs KL Divergence Tradeoffs".  The abstract states that
log(n) - (n-1)/n upper-bounds KL(pi_n || pi) and that the win rate is at most
n/(n+1) (v3; the v1 abstract has the KL bound and the estimator, not the win
rate).  Theorem and conjecture numbers below (3.1, 3.4, 3.6, 4.4, 5.3, 5.4, all
v3), the exact constants of the gap bounds, the estimator's formula and the
unique-reward assumption come from a secondary summary of v3 and were NOT
checked against the paper text.  Independently of the paper, every inequality
implemented here is proved in its docstring (the gap bounds by a coupling with n
uniform draws, ties included) and checked numerically in
``tests/best_of_n_test.py`` (float64 references and quadrature, random and
tie-heavy distributions), and d_n(eps) is derived in :func:`bon_kl_estimate`.
Conjecture 4.4 (E[d_n] >= KL) is the one statement that is only checked
numerically.  Section numbers are those of v3.

A reference policy is a categorical distribution ``probs [..., L]`` over L outcomes
with rewards ``rewards [..., L]``.  The best-of-n policy pi_n draws n i.i.d.
outcomes from pi and returns one with the highest reward.  With the reward CDFs

  F(y)  = P_pi(r(Y) <= r(y)),     F-(y) = P_pi(r(Y) < r(y)),

the probability that the best of n draws lies in the tie class of y is
F(y)^n - F-(y)^n (paper Sec. 2, "Derivation of the best-of-n policy").  The paper
assumes unique rewards; here ties are allowed and best-of-n picks uniformly among
the tied maximal draws, which splits a class's mass in proportion to ``probs``:

  pi_n(y) = pi(y) * (F(y)^n - F-(y)^n) / c(y),   c(y) = F(y) - F-(y).

Numerics.  With x = c/F, F^n - F-^n = F^n (1 - (1 - x)^n), so

  pi_n(y) / pi(y) = F^(n-1) * h_n(x),      h_n(x) = (1 - (1 - x)^n) / x in [1, n].

log F is taken from the lower cumulative sum where F < 1/2 and as log1p(-S), with
S = P(r > r(y)) from the upper cumulative sum, where F >= 1/2; c is a segment sum
and h_n uses expm1/log1p.  Every quantity is therefore computed to float32
relative accuracy even for n = 10^4 and L = 10^6 (no F^n - F-^n cancellation, no
1 - F rounding).  Cost: one sort, a few cumulative sums and gathers per
distribution, O(L log L); no L x L arrays.

Inputs.  ``probs`` are validated when called eagerly (finite, non-negative,
summing to 1 within float tolerance; ``ValueError`` otherwise), and so are
``rewards`` and ``threshold`` (no NaN; +-inf rewards are allowed, only their order
matters to the PMF).  Under ``jit`` or ``vmap`` values cannot be checked: every
function divides ``probs`` by its sum, so any positive scale gives the normalized
answer; negative or non-finite probabilities give meaningless (typically NaN)
outputs for that distribution only, and a NaN reward or threshold makes that
distribution's outputs NaN.  Static
integers (``n``, ``k``, ``max_tries``) are always validated.
"""

from __future__ import annotations

from collections.abc import Callable
import functools
import math
from typing import NamedTuple

import jax
from jax import lax
import jax.numpy as jnp
from jax.typing import ArrayLike
import numpy as np

from maxk._src import checks
from maxk._src import sorting

# ----------------------------------------------------------------------------
# Validation and batching helpers.
# ----------------------------------------------------------------------------


def _sum_tolerance(dtype, num_outcomes: int) -> float:
  eps = float(jnp.finfo(dtype).eps)
  base = 1e-4 if jnp.finfo(dtype).bits <= 32 else 1e-8
  return max(base, 4.0 * eps * math.sqrt(num_outcomes))


def _as_distribution(x: ArrayLike, name: str) -> jax.Array:
  """Float array ``[..., L]`` with L >= 1 (values are checked separately)."""
  arr = checks.as_float_array(x, name)
  if arr.shape[-1] < 1:
    raise ValueError(
      f"{name} must have at least one outcome on its last axis; got shape {arr.shape}."
    )
  return arr


def _check_values(arr: jax.Array, name: str) -> None:
  """Eagerly checks that ``arr`` holds probability vectors (skipped under jit)."""
  if not checks.is_concrete(arr) or not arr.size:
    return
  a = np.asarray(arr, dtype=np.float64)
  if not np.all(np.isfinite(a)):
    raise ValueError(f"{name} must be finite (found NaN or inf).")
  if np.any(a < 0):
    raise ValueError(f"{name} must be non-negative (min {a.min():.3g}).")
  total = a.sum(axis=-1)
  tol = _sum_tolerance(arr.dtype, arr.shape[-1])
  worst = float(np.max(np.abs(total - 1.0)))
  if worst > tol:
    raise ValueError(
      f"{name} must sum to 1 along the last axis within {tol:.1e}; "
      f"the worst row is off by {worst:.3g}."
    )


def _check_pair(q: ArrayLike, q_name: str, p: ArrayLike, p_name: str):
  """Two distributions of the same shape; shapes are checked before values."""
  q = _as_distribution(q, q_name)
  p = _as_distribution(p, p_name)
  checks.check_same_shape(q, q_name, p, p_name)
  _check_values(q, q_name)
  _check_values(p, p_name)
  return q, p


def _check_rewards(rewards: ArrayLike, probs: jax.Array, probs_name: str = "probs") -> jax.Array:
  r = checks.as_float_array(rewards, "rewards")
  checks.check_same_shape(probs, probs_name, r, "rewards")
  _check_not_nan(r, "rewards")
  return r


def _check_not_nan(arr: jax.Array, name: str) -> None:
  """Eagerly rejects NaN, which has no place in the reward order (+-inf has)."""
  if checks.is_concrete(arr) and arr.size and np.any(np.isnan(np.asarray(arr))):
    raise ValueError(f"{name} must not contain NaN (+-inf is allowed).")


def _common_dtype(*arrays: jax.Array):
  return jnp.result_type(*[a.dtype for a in arrays])


@functools.partial(jax.jit, static_argnums=0)
def _rowwise(fn: Callable, n, *arrays: jax.Array):
  """Applies ``fn(n, *rows)`` to every row of ``[..., L]`` arrays (vmap over rows).

  Jitted with ``fn`` static and ``n`` traced, so that eager calls compile once
  per shape (not per ``n``) instead of dispatching op by op; inside an outer
  ``jit`` it is inlined and ``n`` is a constant.
  """
  batch = arrays[0].shape[:-1]
  size = arrays[0].shape[-1]
  flat = [a.reshape((-1, size)) for a in arrays]
  out = jax.vmap(fn, in_axes=(None,) + (0,) * len(flat))(n, *flat)
  return jax.tree_util.tree_map(lambda o: o.reshape(batch + o.shape[1:]), out)


def _normalize(p: jax.Array) -> jax.Array:
  return p / jnp.sum(p, axis=-1, keepdims=True)


# ----------------------------------------------------------------------------
# Core: tie classes, CDFs and the best-of-n likelihood ratio for one row.
# ----------------------------------------------------------------------------


class _Classes(NamedTuple):
  """Tie-class quantities of one normalized row, all in reward-sorted order."""

  perm: jax.Array  # perm[j] = caller index of the j-th smallest reward.
  p: jax.Array  # pi(y).
  r: jax.Array  # r(y).
  c: jax.Array  # Class mass P(r = r(y)).
  F: jax.Array  # P(r <= r(y)).
  F_minus: jax.Array  # P(r < r(y)).
  S: jax.Array  # P(r > r(y)), summed from the top (accurate when small).


def _tie_classes(p: jax.Array, r: jax.Array) -> _Classes:
  """Sorts one row by reward and computes its tie-class CDFs.  O(L log L)."""
  size = p.shape[0]
  # A NaN reward (possible only under jit) has no order: the whole row becomes NaN.
  p = jnp.where(jnp.any(jnp.isnan(r)), jnp.nan, p)
  r_s, p_s, perm = sorting.sort_last(r, p)
  new_class = jnp.concatenate([jnp.ones((1,), bool), r_s[1:] != r_s[:-1]])
  cid = jnp.cumsum(new_class.astype(jnp.int32)) - 1
  mass = jax.ops.segment_sum(p_s, cid, num_segments=size, indices_are_sorted=True)
  upper = lax.cumsum(mass)  # F of each class.
  lower = jnp.concatenate([jnp.zeros((1,), p.dtype), upper[:-1]])
  at_least = lax.cumsum(mass, reverse=True)  # P(r >= r_class).
  above = jnp.concatenate([at_least[1:], jnp.zeros((1,), p.dtype)])
  return _Classes(perm, p_s, r_s, mass[cid], upper[cid], lower[cid], above[cid])


def _log_cdf(F: jax.Array, S: jax.Array) -> jax.Array:
  """log F, from F where F < 1/2 and from log1p(-S) otherwise (grad-safe)."""
  low = F < 0.5
  f_safe = jnp.where(low & (F > 0), F, 1.0)
  s_safe = jnp.where(low, 0.0, S)
  return jnp.where(low, jnp.log(f_safe), jnp.log1p(-s_safe))


def _h(x: jax.Array, n) -> jax.Array:
  """h_n(x) = (1 - (1-x)^n) / x for x in [0, 1], h_n(0) = n; grad-safe.

  ``n`` may be traced (an int scalar); no branch depends on its value.
  """
  small = x < 0.5
  xs = jnp.where(small & (x > 0), x, 0.25)
  h_small = -jnp.expm1(n * jnp.log1p(-xs)) / xs
  xl = jnp.where(small, 0.75, x)
  xl_safe = jnp.where(xl < 1, xl, 0.75)
  # (1 - x)^n for x in [1/2, 1]; 1 - x is exact there.  At x = 1 its derivative
  # is -1 for n = 1 and 0 for n >= 2.
  pow_large = jnp.where(n == 1, 1.0 - xl, jnp.where(xl < 1, jnp.exp(n * jnp.log1p(-xl_safe)), 0.0))
  h_large = (1.0 - pow_large) / xl
  return jnp.where(small, jnp.where(x > 0, h_small, n), h_large)


def _bon_sorted(k: _Classes, n):
  """pi_n and log(pi_n/pi) in sorted order (``n`` may be traced).

  log_ratio is valid where p > 0 and 0 elsewhere.
  """
  log_f = _log_cdf(k.F, k.S)
  # x = c/F is in [0, 1] up to rounding.  Cap rounding above 1 without touching the
  # gradient: jnp.clip/minimum would halve it where x == 1 exactly (the lowest class
  # of positive mass when every lower class has pi = 0).
  x = k.c / jnp.where(k.F > 0, k.F, 1.0)
  x = x - lax.stop_gradient(jnp.maximum(x - 1.0, 0.0))
  h = _h(x, n)
  # F^(n-1); where F = 0 (a zero-probability bottom class) it is 0, or 1 if n = 1.
  f_pow = jnp.where(k.F > 0, jnp.exp((n - 1) * log_f), jnp.where(n == 1, 1.0, 0.0))
  pmf = k.p * f_pow * h
  log_ratio = jnp.where(k.p > 0, (n - 1) * log_f + jnp.log(h), 0.0)
  return pmf, log_ratio


def _prepare(probs: ArrayLike, rewards: ArrayLike):
  p = _as_distribution(probs, "probs")
  r = _check_rewards(rewards, p)
  _check_values(p, "probs")
  dtype = _common_dtype(p, r)
  return _normalize(p.astype(dtype)), r.astype(dtype)


def _pmf_row(n, p, r):
  k = _tie_classes(p, r)
  return sorting.unsort_last(_bon_sorted(k, n)[0], k.perm)


def _kl_row(n, p, r):
  pmf, log_ratio = _bon_sorted(_tie_classes(p, r), n)
  return jnp.sum(pmf * log_ratio)


def _bon_win_rate_row(n, p, r):
  k = _tie_classes(p, r)
  pmf = _bon_sorted(k, n)[0]
  return jnp.sum(pmf * (k.F_minus + 0.5 * k.c))


def _win_rate_row(_, q, p, r):
  k = _tie_classes(p, r)
  return jnp.sum(q[k.perm] * (k.F_minus + 0.5 * k.c))


def _estimate_row(n, p, r):
  k = _tie_classes(p, r)
  pmf = _bon_sorted(k, n)[0]
  d = _d_n(jnp.where(k.p > 0, k.p, 1.0), n)
  return jnp.sum(jnp.where(k.p > 0, pmf * d, 0.0))


def _max_at_k_row(n, p, r):
  k = _tie_classes(p, r)
  return jnp.sum(_bon_sorted(k, n)[0] * k.r)


def _collision(_, p, r):
  """exp(-H_2) of the reward distribution: sum over tie classes of P(class)^2."""
  k = _tie_classes(p, r)
  return jnp.sum(k.p * k.c)


def _top_class_mass(_, p, r):
  """Mass of the highest-reward class with positive probability."""
  k = _tie_classes(p, r)
  return jnp.max(jnp.where((k.p > 0) & (k.S == 0), k.c, 0.0))


# ----------------------------------------------------------------------------
# Public API.
# ----------------------------------------------------------------------------


def bon_pmf(probs: ArrayLike, rewards: ArrayLike, n: int) -> jax.Array:
  """Exact best-of-n PMF pi_n (Beirami et al. 2401.01879, Sec. 2).

  pi_n(y) = pi(y) (F(y)^n - F-(y)^n) / (F(y) - F-(y)), with F(y) = P(r <= r(y)) and
  F-(y) = P(r < r(y)).  For unique rewards this is the paper's
  F(y)^n - F-(y)^n; tied outcomes share their class's mass in proportion to
  ``probs`` (best-of-n picks uniformly among the tied maximal draws).

  Args:
    probs: ``[..., L]`` reference probabilities pi (leading axes are batch axes).
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
  n = checks.check_int(n, "n", low=1)
  p, r = _prepare(probs, rewards)
  return _rowwise(_pmf_row, n, p, r)


def bon_kl(probs: ArrayLike, rewards: ArrayLike, n: int) -> jax.Array:
  """Exact KL(pi_n || pi) of the best-of-n policy (Beirami et al. Sec. 3).

  Computed as sum_y pi_n(y) log(pi_n(y)/pi(y)) with the log-ratio
  (n-1) log F(y) + log h_n(c/F) evaluated in log space (see module docstring), so
  it is accurate in float32 for n up to 10^4 and beyond and L = 10^6.  0 log 0 = 0.
  Ties: the KL equals that of the tie-class distribution (tie classes are split in
  proportion to ``probs``, so within-class terms cancel).

  Args:
    probs: ``[..., L]`` reference probabilities.
    rewards: ``[..., L]`` rewards.
    n: static int >= 1.

  Returns:
    ``[...]`` KL divergence in nats; it is <= ``bon_kl_bound(n)``.

  Raises:
    ValueError: as for :func:`bon_pmf`.
  """
  n = checks.check_int(n, "n", low=1)
  p, r = _prepare(probs, rewards)
  return _rowwise(_kl_row, n, p, r)


def bon_kl_bound(n: int) -> jax.Array:
  """The "analytical formula" log(n) - (n-1)/n, an upper bound on the KL.

  KL(pi_n || pi) <= log(n) - (n-1)/n for every reference policy: stated in the
  paper's abstract (v1 and v3; Theorem 3.1 of v3 according to a secondary
  summary, number not checked against the text).  Near-equality needs every
  reward class to have small probability (see :func:`bon_kl_gap_bound`).  The
  value is the KL of best-of-n for a continuous reward distribution, the limit of
  ever finer uniform references (checked in the tests).

  Args:
    n: static int >= 1.

  Returns:
    A scalar of the default float dtype (float32 unless x64 is enabled).

  Raises:
    ValueError: if ``n`` is not an int >= 1.
  """
  n = checks.check_int(n, "n", low=1)
  return jnp.asarray(math.log(n) - (n - 1) / n, jnp.result_type(float))


def bon_kl_estimate(eps: ArrayLike, n: int) -> jax.Array:
  """The paper's KL estimator d_n(eps) (Beirami et al. Sec. 4, v3).

  d_n(eps) = (1-eps)^n [log n + (n-1) log(1-eps) - (n-1)/n]
             + (1 - (1-eps)^n) log((1 - (1-eps)^n) / eps),

  where eps = pi(y) is the reference probability of the outcome y returned by
  best-of-n.  (The formula is taken from a secondary summary of Sec. 4; it was not
  checked against the paper text.)  Derivation, independent of the paper: d_n(eps)
  is the exact KL(pi_n || pi) of a reference whose top-reward outcome has
  probability eps and whose remaining mass 1 - eps is spread over infinitely many
  infinitesimal outcomes.  The top outcome contributes the second term,
  (1 - (1-eps)^n) log((1 - (1-eps)^n)/eps); the continuum contributes
  int_0^(1-eps) n u^(n-1) log(n u^(n-1)) du, which is the first term (checked in
  the tests against :func:`bon_kl` on such references).  With ties, ``eps`` is the outcome's
  own probability, not its tie class's (the paper assumes unique rewards).
  Average d_n over draws y ~ pi_n to estimate KL(pi_n || pi);
  :func:`bon_kl_estimate_expectation` gives that average exactly.  Evaluated with
  log1p/expm1: accurate as eps -> 0 (d_n -> log n - (n-1)/n, returned at eps = 0)
  and as eps -> 1 (d_n(1) = 0).  Always 0 <= d_n(eps) <= log n - (n-1)/n.

  Args:
    eps: array of probabilities in [0, 1], any shape.
    n: static int >= 1.

  Returns:
    d_n(eps), same shape as ``eps``.

  Raises:
    ValueError: if ``n`` is not an int >= 1 or (eagerly only) some eps lies
      outside [0, 1]; under ``jit`` such values give NaN.
  """
  n = checks.check_int(n, "n", low=1)
  e = checks.as_float_array(eps, "eps", min_ndim=0)
  if checks.is_concrete(e) and e.size:
    a = np.asarray(e, dtype=np.float64)
    if np.any(~((a >= 0) & (a <= 1))):
      raise ValueError("eps must hold probabilities in [0, 1].")
  return _d_n(e, n)


def _d_n(e: jax.Array, n) -> jax.Array:
  """d_n(e) elementwise; ``n`` may be a Python int or a traced int scalar."""
  bound = (jnp.log(n) - (n - 1) / n).astype(e.dtype)
  inside = (e > 0) & (e < 1)
  es = jnp.where(inside, e, 0.5)
  log_q = jnp.log1p(-es)  # log(1 - eps)
  a = n * log_q  # log (1 - eps)^n
  qn = jnp.exp(a)  # (1 - eps)^n
  b = -jnp.expm1(a)  # 1 - (1 - eps)^n
  value = qn * (bound + (n - 1) * log_q) + b * (jnp.log(b) - jnp.log(es))
  value = jnp.where(n == 1, 0.0, value)  # d_1 = 0 (value is 0 up to rounding).
  value = jnp.where(e <= 0, bound, jnp.where(e >= 1, 0.0, value))
  return jnp.where((e < 0) | (e > 1) | jnp.isnan(e), jnp.nan, value)


def bon_kl_estimate_expectation(probs: ArrayLike, rewards: ArrayLike, n: int) -> jax.Array:
  """Exact expectation E_{y ~ pi_n}[d_n(pi(y))] of the KL estimator (Sec. 4, v3).

  According to a secondary summary of v3 (not checked against the paper text),
  the paper conjectures (Conjecture 4.4) that this expectation upper-bounds the
  KL; ``experiments/best_of_n.py`` and a float64 search over random references
  (unique rewards) found no counterexample.

  Args:
    probs: ``[..., L]`` reference probabilities.
    rewards: ``[..., L]`` rewards.
    n: static int >= 1.

  Returns:
    ``[...]`` expected estimator values.

  Raises:
    ValueError: as for :func:`bon_pmf`.
  """
  n = checks.check_int(n, "n", low=1)
  p, r = _prepare(probs, rewards)
  return _rowwise(_estimate_row, n, p, r)


def kl_divergence(q: ArrayLike, p: ArrayLike) -> jax.Array:
  """KL(q || p) = sum_y q(y) log(q(y)/p(y)) along the last axis, with 0 log 0 = 0.

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
  q, p = _check_pair(q, "q", p, "p")
  dtype = _common_dtype(q, p)
  q, p = q.astype(dtype), p.astype(dtype)
  pos = q > 0
  q_safe = jnp.where(pos, q, 1.0)
  p_safe = jnp.where(pos, p, 1.0)
  terms = jnp.where(pos, q * (jnp.log(q_safe) - jnp.log(p_safe)), 0.0)
  return jnp.sum(terms, axis=-1)


def win_rate(q: ArrayLike, p: ArrayLike, rewards: ArrayLike) -> jax.Array:
  """Win rate of policy q against p: P(r(Y_q) > r(Y_p)) + 1/2 P(r(Y_q) = r(Y_p)).

  Y_q ~ q and Y_p ~ p independent, over the same L outcomes (Beirami et al.
  Sec. 5 studies it for best-of-n; here ties count one half, a choice of this
  library: the paper assumes unique rewards).

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
  q = _as_distribution(q, "q")
  p = _as_distribution(p, "p")
  checks.check_same_shape(q, "q", p, "p")
  r = _check_rewards(rewards, p, "p")
  _check_values(q, "q")
  _check_values(p, "p")
  dtype = _common_dtype(q, p, r)
  q, p, r = q.astype(dtype), _normalize(p.astype(dtype)), r.astype(dtype)

  return _rowwise(_win_rate_row, 1, q, p, r)


def bon_win_rate(probs: ArrayLike, rewards: ArrayLike, n: int) -> jax.Array:
  """Win rate of best-of-n against its reference (Beirami et al. Sec. 5).

  P(r(Y_n) > r(Y)) + 1/2 P(r(Y_n) = r(Y)), Y_n ~ pi_n, Y ~ pi; at most n/(n+1)
  (:func:`bon_win_rate_bound`), equal to 1/2 at n = 1.

  Args:
    probs: ``[..., L]`` reference probabilities.
    rewards: ``[..., L]`` rewards.
    n: static int >= 1.

  Returns:
    ``[...]`` win rates.

  Raises:
    ValueError: as for :func:`bon_pmf`.
  """
  n = checks.check_int(n, "n", low=1)
  p, r = _prepare(probs, rewards)
  return _rowwise(_bon_win_rate_row, n, p, r)


def bon_win_rate_bound(n: int) -> jax.Array:
  """n / (n + 1), the upper bound on the best-of-n win rate.

  Stated in the paper's abstract (v3; Theorem 5.3 of v3 according to a secondary
  summary, number not checked against the text).  Proof, with ties counted one
  half: per reward class with CDF values G < F, the class's contribution
  (F^n - G^n)(F + G)/2 is at most n/(n+1) (F^(n+1) - G^(n+1)) by Chebyshev's
  integral inequality for u and u^(n-1) on [G, F]; summing over classes gives
  n/(n+1).  It is attained in the continuous limit.

  Args:
    n: static int >= 1.

  Returns:
    A scalar of the default float dtype.

  Raises:
    ValueError: if ``n`` is not an int >= 1.
  """
  n = checks.check_int(n, "n", low=1)
  return jnp.asarray(n / (n + 1), jnp.result_type(float))


def bon_kl_gap_bound(probs: ArrayLike, rewards: ArrayLike, n: int) -> jax.Array:
  """Upper bound on the KL gap, 2 n (n-1) exp(-H_2).

  The gap is log(n) - (n-1)/n - KL(pi_n || pi) >= 0.  H_2 is the order-2 Renyi
  (collision) entropy of the reference, exp(-H_2) = sum_y pi(y)^2.  The paper
  assumes unique rewards; with ties the KL is that of the tie-class distribution,
  so here the sum runs over tie classes, sum_classes P(class)^2 (>= sum_y pi(y)^2).
  The form 2 n (n-1) exp(-H_2) is Theorem 3.4 of v3 according to a secondary
  summary; that attribution (number and constant) was not checked against the
  paper text.  The inequality itself is proved here:

  Proof.  Order the classes by reward, with probabilities p_i and CDF values
  F_i = p_1 + ... + p_i.  Let U_1, ..., U_n be i.i.d. uniform on [0, 1] and put u
  in class i when F_(i-1) <= u < F_i.  One U falls in class i with probability
  p_i and the largest, M = max_j U_j, in the highest class drawn, i.e. with law
  pi_n.  M has density n u^(n-1), whose KL to the uniform density is
  integral_0^1 n u^(n-1) log(n u^(n-1)) du = log(n) - (n-1)/n.  The chain rule of
  KL splits it into the KL of the class marginals, KL(pi_n || pi), plus the
  pi_n-weighted KLs within classes, so

    gap = sum_i (b^n - a^n) D_i,   D_i = KL(g_i || Uniform[a, b]),

  with [a, b] = [F_(i-1), F_i], p = b - a and g_i(u) = n u^(n-1) / (b^n - a^n) on
  [a, b].  Always D_i <= log sup_u p g_i(u) = log(n p b^(n-1) / (b^n - a^n)).
  (a) If a >= b/2: b^n - a^n >= n p a^(n-1), so D_i <= (n-1) log(b/a)
      <= (n-1) p/a, and b^n - a^n <= n p b^(n-1); the term is at most
      n (n-1) p^2 b^(n-1)/a <= 2 n (n-1) p^2, as b/a <= 2 and b <= 1.
  (b) If a < b/2, so p > b/2: b^n - a^n >= p b^(n-1), so D_i <= log n, and
      b^n - a^n <= b^2; the term is at most b^2 log n < 4 p^2 n (n-1)/2, using
      log n <= n (n-1)/2.
  Summing, gap <= 2 n (n-1) sum_i p_i^2 (n = 1: the gap is 0).  The per-class
  decomposition and bounds are checked by quadrature in the tests; the largest
  gap / (n (n-1) exp(-H_2)) found by a float64 adversarial search is 0.097 (a
  point mass at n = 2), so the bound is loose by a factor of about 20.

  Args:
    probs: ``[..., L]`` reference probabilities.
    rewards: ``[..., L]`` rewards.
    n: static int >= 1.

  Returns:
    ``[...]`` bounds on the gap (loose unless n^2 exp(-H_2) << 1).

  Raises:
    ValueError: as for :func:`bon_pmf`.
  """
  n = checks.check_int(n, "n", low=1)
  p, r = _prepare(probs, rewards)
  return 2.0 * n * (n - 1) * _rowwise(_collision, 1, p, r)


def bon_kl_gap_bound_delta(delta: ArrayLike, n: int) -> jax.Array:
  """The delta-bound form of :func:`bon_kl_gap_bound`: gap <= 2 n (n-1) delta.

  Holds when every reward class has reference probability at most ``delta``
  (then sum P(class)^2 <= delta * sum P(class) = delta).  The summary of v3 calls
  such a reference "delta-bounded" (max_y pi(y) <= delta); with ties the maximum
  must be taken over tie classes.

  Args:
    delta: array of probabilities in [0, 1], any shape.
    n: static int >= 1.

  Returns:
    2 n (n-1) delta, same shape as ``delta``.
  """
  n = checks.check_int(n, "n", low=1)
  d = _check_unit_interval(delta, "delta")
  return 2.0 * n * (n - 1) * d


def bon_kl_gap_lower_bound(probs: ArrayLike, rewards: ArrayLike, n: int) -> jax.Array:
  """Lower bound on the KL gap, max(0, log(n eps_inf) - (n-1)/n).

  eps_inf is the reference probability of the highest-reward class with positive
  probability.  Every best-of-n likelihood ratio is at most 1/eps_inf
  (pi_n/pi <= n F^(n-1) <= sum_{j<n} F^j <= 1/(1 - F) for non-top classes and
  <= 1/eps_inf for the top one), so KL <= log(1/eps_inf) and the gap is at least
  log(n eps_inf) - (n-1)/n: the analytical formula overshoots without bound once
  n eps_inf >> 1.  This explicit, non-asymptotic bound is proved here, not taken
  from the paper; a secondary summary of v3 attributes to its Theorem 3.6 the
  asymptotic statement gap >= log(n eps_inf) + o(log n), which this implies
  (not checked against the paper text).

  Args:
    probs: ``[..., L]`` reference probabilities.
    rewards: ``[..., L]`` rewards.
    n: static int >= 1.

  Returns:
    ``[...]`` lower bounds on the gap.

  Raises:
    ValueError: as for :func:`bon_pmf`.
  """
  n = checks.check_int(n, "n", low=1)
  p, r = _prepare(probs, rewards)
  eps_inf = _rowwise(_top_class_mass, 1, p, r)
  gap = jnp.log(n * eps_inf) - (n - 1) / n
  return jnp.maximum(gap, 0.0)


def bon_win_rate_gap_bound(probs: ArrayLike, rewards: ArrayLike, n: int) -> jax.Array:
  """Upper bound on the win-rate gap, (n-1)/2 exp(-H_2).

  The gap is n/(n+1) - bon_win_rate >= 0; exp(-H_2) is summed over tie classes as
  in :func:`bon_kl_gap_bound`.  The form is Theorem 5.4 of v3 according to a
  secondary summary; that attribution (number and constant) was not checked
  against the paper text.  The inequality itself is proved here, in a sharper
  form:

  Proof.  With the coupling of :func:`bon_kl_gap_bound` (classes as intervals
  [a, b] of [0, 1], M = max of n uniforms, V one more independent uniform for the
  reference draw), P(V < M) = E[M] = n/(n+1).  When V and M fall in different
  classes, V < M exactly when best-of-n wins; when both fall in class i the win
  rate counts 1/2.  So, with m = (a + b)/2 and phi(u) = n u^(n-1),

    gap = sum_i integral_a^b phi(u) (u - m) du
        = sum_i integral_m^b (phi(u) - phi(2m - u)) (u - m) du,

  each term lying in [0, (phi(b) - phi(a)) p_i^2 / 8] as phi increases, and
  phi(b) - phi(a) <= n.  Hence 0 <= gap <= (n/8) sum_i p_i^2, which is at most
  (n-1)/2 sum_i p_i^2 for n >= 2 (n = 1: the gap is 0).  For n = 2 the gap is
  exactly sum_i p_i^3 / 6 (tested), so the ratio to (n-1)/2 exp(-H_2) reaches 1/3
  at a point mass.

  Args:
    probs: ``[..., L]`` reference probabilities.
    rewards: ``[..., L]`` rewards.
    n: static int >= 1.

  Returns:
    ``[...]`` bounds on the win-rate gap.

  Raises:
    ValueError: as for :func:`bon_pmf`.
  """
  n = checks.check_int(n, "n", low=1)
  p, r = _prepare(probs, rewards)
  return 0.5 * (n - 1) * _rowwise(_collision, 1, p, r)


def bon_win_rate_gap_bound_delta(delta: ArrayLike, n: int) -> jax.Array:
  """The delta-bound form of :func:`bon_win_rate_gap_bound`: gap <= (n-1) delta / 2.

  Args:
    delta: array in [0, 1] bounding every reward class's probability.
    n: static int >= 1.

  Returns:
    (n-1) delta / 2, same shape as ``delta``.
  """
  n = checks.check_int(n, "n", low=1)
  d = _check_unit_interval(delta, "delta")
  return 0.5 * (n - 1) * d


def _check_unit_interval(x: ArrayLike, name: str) -> jax.Array:
  arr = checks.as_float_array(x, name, min_ndim=0)
  if checks.is_concrete(arr) and arr.size:
    a = np.asarray(arr, dtype=np.float64)
    if np.any(~((a >= 0) & (a <= 1))):
      raise ValueError(f"{name} must lie in [0, 1].")
  return arr


def rewind_repeat_pmf(
  probs: ArrayLike, rewards: ArrayLike, threshold: ArrayLike, *, max_tries: int | None = None
) -> jax.Array:
  """PMF of rewind-and-repeat (Beirami et al. Sec. 6, v3).

  Draw from pi until the reward is >= ``threshold``.  (The paper's exact
  parametrization of rewind-and-repeat was not checked against its text; the
  formulas below follow from this definition and are tested by enumeration.)
  With A = {y : r(y) >= threshold} and P_A = pi(A):

  * ``max_tries=None`` (no limit): q(y) = pi(y) / P_A on A, 0 elsewhere, so
    KL(q || pi) = log(1 / P_A).
  * ``max_tries=m``: after m failed draws the last draw is kept, so
    q(y) = pi(y) (1 - (1 - P_A)^m) / P_A on A and pi(y) (1 - P_A)^(m-1) off A.

  If no outcome with positive probability reaches the threshold (P_A = 0), every
  draw fails: the m-th draw is kept for finite m, and for ``max_tries=None`` the
  result is defined as the limit m -> infinity, i.e. the reference ``probs``
  itself (normalized).  This is the same eagerly and under ``jit``; nothing is
  raised.

  Args:
    probs: ``[..., L]`` reference probabilities.
    rewards: ``[..., L]`` rewards.
    threshold: reward threshold, broadcastable to the batch shape ``probs.shape[:-1]``.
    max_tries: ``None`` or a static int >= 1 (``1`` returns the reference).

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
  p, r = _prepare(probs, rewards)
  t = checks.as_float_array(threshold, "threshold", min_ndim=0).astype(p.dtype)
  try:
    t = jnp.broadcast_to(t, p.shape[:-1])
  except ValueError as e:
    raise ValueError(
      f"threshold shape {t.shape} must broadcast to the batch shape {p.shape[:-1]} of probs."
    ) from e
  _check_not_nan(t, "threshold")
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
  # log(1 - P_A), accurately for P_A near 0 and near 1.
  small = p_acc < 0.5
  log_rej = jnp.where(
    small, jnp.log1p(-jnp.where(small, p_acc, 0.0)), jnp.log(jnp.where(small, 1.0, p_rej))
  )
  p_acc_safe = jnp.where(none, 1.0, p_acc)
  factor_acc = jnp.where(none, float(m), -jnp.expm1(m * log_rej) / p_acc_safe)
  factor_rej = jnp.exp((m - 1) * log_rej)
  return p * jnp.where(accept, factor_acc, factor_rej)


def max_at_k_exact(probs: ArrayLike, rewards: ArrayLike, k: int) -> jax.Array:
  """Exact max@k of a categorical policy: E[max of k i.i.d. rewards].

  Equals sum_y bon_pmf(probs, rewards, k)(y) r(y) = sum over reward classes of
  r (F^k - F-^k) (Beirami et al. Sec. 2; the max@k objective of arXiv 2510.23393
  Sec. 3.2).  ``probs`` is divided by its sum, so the function is defined (and
  smooth) on all positive vectors and its ``jax.grad`` is the exact gradient of
  the normalized objective; composed with ``softmax(logits)`` it is the exact
  policy gradient.  Gradients are finite with ties and zero-probability outcomes.

  Args:
    probs: ``[..., L]`` policy probabilities.
    rewards: ``[..., L]`` finite rewards.
    k: static int >= 1 (any k; draws are with replacement).

  Returns:
    ``[...]`` max@k values.

  Raises:
    ValueError: as for :func:`bon_pmf` (with ``k`` in place of ``n``).
  """
  k = checks.check_int(k, "k", low=1)
  p, r = _prepare(probs, rewards)
  return _rowwise(_max_at_k_row, k, p, r)
