"""Naive jnp formulas of the objectives timed by :mod:`benchmarks.compile_time`.

Each function is what a user would write from the estimator's formula in plain
``jax.numpy``: sort, binomial coefficients from ``gammaln`` (in the rewards' float32,
no host tables, no compensated sums, no care for ties, infinities or NaN), a dot
product or a cumulative sum, jitted with k static.  They compute the same quantity
as the estimator they stand beside (``tests/benchmarks/compile_time_test.py`` checks
that on a small batch), so the benchmark's ``first/naive`` column compares the first
call of each estimator with the first call of the plainest program for the same
number.  Notation: r_(1) <= ... <= r_(n) the sorted rewards of a group, C the
binomial coefficient, prefix/suffix the exclusive cumulative sums over ranks.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
from jax.scipy.special import betainc
from jax.scipy.special import betaln
from jax.scipy.special import gammaln
import numpy as np

_EPS = 1e-6  # GRPO's and "mean_std"'s eps.


def _log_binom(top: jax.Array, bottom: jax.Array) -> jax.Array:
  return gammaln(top + 1.0) - gammaln(bottom + 1.0) - gammaln(top - bottom + 1.0)


def _ratio(a: object, b: object, c: object, d: object) -> jax.Array:
  """C(a, b) / C(c, d) in float32 from gammaln; 0 where C(a, b) is 0 (b < 0 or b > a)."""
  a, b, c, d = (jnp.asarray(x, jnp.float32) for x in (a, b, c, d))
  ok = (b >= 0) & (b <= a)
  log = _log_binom(jnp.where(ok, a, 0.0), jnp.where(ok, b, 0.0)) - _log_binom(c, d)
  return jnp.where(ok, jnp.exp(log), 0.0)


def _ranks(n: int) -> jax.Array:
  return jnp.arange(1, n + 1, dtype=jnp.float32)


def _prefix(x: jax.Array) -> jax.Array:
  return jnp.cumsum(x, axis=-1) - x


def _suffix(x: jax.Array) -> jax.Array:
  return jnp.cumsum(x[..., ::-1], axis=-1)[..., ::-1] - x


def _unsort(a_sorted: jax.Array, order: jax.Array) -> jax.Array:
  return jnp.take_along_axis(a_sorted, jnp.argsort(order, axis=-1), axis=-1)


# ----------------------------------------------------------------------------
# Estimates and their variances.
# ----------------------------------------------------------------------------


@functools.partial(jax.jit, static_argnums=1)
def max_at_k(r: jax.Array, k: int) -> jax.Array:
  """Σ_i C(i−1, k−1)/C(n, k) r_(i)."""
  n = r.shape[-1]
  return jnp.sort(r, axis=-1) @ _ratio(_ranks(n) - 1, k - 1, n, k)


@functools.partial(jax.jit, static_argnums=1)
def pass_at_k(c: jax.Array, k: int) -> jax.Array:
  """1 − C(n − c, k)/C(n, k), c the number correct."""
  n = c.shape[-1]
  return 1 - _ratio(n - jnp.sum(c, axis=-1), k, n, k)


@functools.partial(jax.jit, static_argnums=1)
def max_at_k_variance(r: jax.Array, k: int) -> jax.Array:
  """V̂ = M̂² − T, T the mean of max_I r · max_J r over ordered pairs of disjoint
  k-subsets: T = 2 Σ_{a<b} C(a−1, k−1) C(b−1−k, k−1) r_(a) r_(b) / (C(n,k) C(n−k,k))
  (an n x n matrix)."""
  n = r.shape[-1]
  i = _ranks(n)
  rs = jnp.sort(r, axis=-1)
  pairs = _ratio(i[:, None] - 1, k - 1, n, k) * _ratio(i[None, :] - 1 - k, k - 1, n - k, k)
  pairs = jnp.where(i[:, None] < i[None, :], 2 * pairs, 0.0)
  m = rs @ _ratio(i - 1, k - 1, n, k)
  return m**2 - jnp.einsum("...a,ab,...b->...", rs, pairs, rs)


@functools.partial(jax.jit, static_argnums=1)
def pass_at_k_variance(c: jax.Array, k: int) -> jax.Array:
  """p (p − q), p = C(n−c, k)/C(n, k), q = C(n−c−k, k)/C(n−k, k)."""
  n = c.shape[-1]
  fail = n - jnp.sum(c, axis=-1)
  p = _ratio(fail, k, n, k)
  return p * (p - _ratio(fail - k, k, n - k, k))


# ----------------------------------------------------------------------------
# Advantages.
# ----------------------------------------------------------------------------


def _credit(rs: jax.Array, k: int) -> jax.Array:
  """S_(p) = [C(p−1, k−1) r_(p) + Σ_{m>p} C(m−2, k−2) r_(m)] / C(n, k)."""
  n = rs.shape[-1]
  i = _ranks(n)
  return _ratio(i - 1, k - 1, n, k) * rs + _suffix(_ratio(i - 2, k - 2, n, k) * rs)


def _leave_one_out(rs: jax.Array, k: int) -> jax.Array:
  """M(r_{−p}, k) = [Σ_{m<p} C(m−1, k−1) r_(m) + Σ_{m>p} C(m−2, k−1) r_(m)] / C(n−1, k)."""
  n = rs.shape[-1]
  i = _ranks(n)
  return _prefix(_ratio(i - 1, k - 1, n - 1, k) * rs) + _suffix(_ratio(i - 2, k - 1, n - 1, k) * rs)


@functools.partial(jax.jit, static_argnums=(1, 2))
def max_at_k_advantages(r: jax.Array, k: int, baseline: str) -> jax.Array:
  """S(i) minus the baseline: "none" 0, "loo" k/(n−1) M(r_{−i}, k), "loo_centered"
  k/n M(r_{−i}, k), "loo_minus_one" k/n M(r_{−i}, k−1); "mean_std" z-scores S."""
  n = r.shape[-1]
  order = jnp.argsort(r, axis=-1)
  rs = jnp.take_along_axis(r, order, axis=-1)
  a = _credit(rs, k)
  if baseline == "loo":
    a = a - k / (n - 1) * _leave_one_out(rs, k)
  elif baseline == "loo_centered":
    a = a - k / n * _leave_one_out(rs, k)
  elif baseline == "loo_minus_one" and k > 1:
    a = a - k / n * _leave_one_out(rs, k - 1)
  elif baseline == "mean_std":
    a = (a - a.mean(-1, keepdims=True)) / (a.std(-1, keepdims=True) + _EPS)
  return _unsort(a, order)


def _surrogate(lr: jax.Array, r: jax.Array, k: int) -> jax.Array:
  """J = Σ_j ρ_(j) e_{k−1}(ρ_(1), ..., ρ_(j−1)) r_(j) / C(n, k), ρ = exp(lr) in the
  rewards' order; e_t of the lower ranks by k − 1 prefix sums,
  e_t(j) = Σ_{l<j} ρ_(l) e_{t−1}(l)."""
  n = r.shape[-1]
  order = jnp.argsort(r, axis=-1)
  rs = jnp.take_along_axis(r, order, axis=-1)
  rho = jnp.exp(jnp.take_along_axis(lr, order, axis=-1))
  e = jnp.ones_like(rho)
  for _ in range(k - 1):
    e = _prefix(rho * e)
  return jnp.sum(rho * e * rs, axis=-1) * _ratio(0, 0, n, k)


@functools.partial(jax.jit, static_argnums=3)
def max_at_k_surrogate(logp: jax.Array, logp_old: jax.Array, r: jax.Array, k: int) -> jax.Array:
  """(1/C(n,k)) Σ_{|I|=k} Π_{j∈I} exp(logp_j − logp_old_j) max_I r (:func:`_surrogate`)."""
  return _surrogate(logp - logp_old, r, k)


@functools.partial(jax.jit, static_argnums=2)
def off_policy_exact(r: jax.Array, lr: jax.Array, k: int) -> jax.Array:
  """∂J/∂lr of the surrogate J, by ``jax.grad``."""
  return jax.grad(lambda x: jnp.sum(_surrogate(x, r, k)))(lr)


@functools.partial(jax.jit, static_argnums=2)
def off_policy_first_order(r: jax.Array, lr: jax.Array, k: int) -> jax.Array:
  """a_i = (1/C(n,k)) Σ_{I∋i} (1 + Σ_{j∈I} δ_j) max_I r, δ = expm1(lr): in sorted order
  with c1 = C(p−1, k−1), c2 = C(p−2, k−2), c3 = C(p−3, k−3) over C(n, k) and D_p =
  Σ_{l<p} δ_(l),

    a_(p) = (c1_p (1 + δ_p) + c2_p D_p) r_(p) + (1 + δ_p) Σ_{m>p} c2_m r_(m)
            + Σ_{m>p} (c2_m δ_m + c3_m D_m) r_(m) − δ_p Σ_{m>p} c3_m r_(m).
  """
  n = r.shape[-1]
  i = _ranks(n)
  order = jnp.argsort(r, axis=-1)
  rs = jnp.take_along_axis(r, order, axis=-1)
  d = jnp.expm1(jnp.take_along_axis(lr, order, axis=-1))
  below = _prefix(d)
  c1, c2, c3 = (_ratio(i - j, k - j, n, k) for j in (1, 2, 3))
  a = (c1 * (1 + d) + c2 * below) * rs + (1 + d) * _suffix(c2 * rs)
  a = a + _suffix((c2 * d + c3 * below) * rs) - d * _suffix(c3 * rs)
  return _unsort(a, order)


@jax.jit
def grpo_advantages(r: jax.Array) -> jax.Array:
  """(r − mean(r)) / (std(r) + eps)."""
  return (r - r.mean(-1, keepdims=True)) / (r.std(-1, keepdims=True) + _EPS)


@jax.jit
def rloo_advantages(r: jax.Array) -> jax.Array:
  """r_i − mean_{j≠i} r_j."""
  return r - (r.sum(-1, keepdims=True) - r) / (r.shape[-1] - 1)


@jax.jit
def max_minus_second_advantages(r: jax.Array) -> jax.Array:
  """r_(n) − r_(n−1) for the top sample, 0 for the others."""
  rs = jnp.sort(r, axis=-1)
  return jnp.where(r == rs[..., -1:], rs[..., -1:] - rs[..., -2:-1], 0.0)


@functools.partial(jax.jit, static_argnums=1)
def pass_at_k_training_advantages(c: jax.Array, k: int) -> jax.Array:
  """R̄ = 1 − C(N_neg, k)/C(n, k), σ = sqrt(R̄ (1 − R̄)); (1 − R̄)/σ for a correct
  sample, (1 − R̄ − C(N_neg − 1, k − 1)/C(n − 1, k − 1))/σ for the others (0 where
  σ = 0: N_neg < k or N_neg = n)."""
  n = c.shape[-1]
  neg = n - jnp.sum(c, axis=-1, keepdims=True)
  fail = _ratio(neg, k, n, k)
  positive = (neg >= k) & (neg < n)
  sigma = jnp.where(positive, jnp.sqrt(fail * (1 - fail)), 1.0)
  wrong = fail - _ratio(neg - 1, k - 1, n - 1, k - 1)
  return jnp.where(positive, jnp.where(c, fail, wrong) / sigma, 0.0)


@jax.jit
def maxrl_advantages(c: jax.Array) -> jax.Array:
  """(c_i − c̄)/c̄, 0 where c̄ = 0."""
  c = c.astype(jnp.float32)
  mean = jnp.mean(c, axis=-1, keepdims=True)
  return jnp.where(mean > 0, (c - mean) / jnp.where(mean > 0, mean, 1), 0.0)


# ----------------------------------------------------------------------------
# Rank objectives and the pass@k posterior.
# ----------------------------------------------------------------------------


def _lift(w: tuple[float, ...], n: int) -> jax.Array:
  """c_i = Σ_j w_j C(i−1, j−1) C(n−i, k−j) / C(n, k), i = 1..n (an [n, k] matrix)."""
  k = len(w)
  i, j = _ranks(n)[:, None], jnp.arange(1, k + 1, dtype=jnp.float32)[None, :]
  terms = _ratio(i - 1, j - 1, n, k) * _ratio(n - i, k - j, 0, 0)
  return terms @ jnp.asarray(w, jnp.float32)


@functools.partial(jax.jit, static_argnums=1)
def _order_stat_at_k(r: jax.Array, w: tuple[float, ...]) -> jax.Array:
  return jnp.sort(r, axis=-1) @ _lift(w, r.shape[-1])


def order_stat_at_k(r: jax.Array, weights: np.ndarray) -> jax.Array:
  """U = Σ_i c_i r_(i), c = lift(w, n) (:func:`_lift`)."""
  return _order_stat_at_k(r, tuple(float(x) for x in weights))


@functools.partial(jax.jit, static_argnums=1)
def _order_stat_advantages(r: jax.Array, w: tuple[float, ...]) -> jax.Array:
  n = r.shape[-1]
  order = jnp.argsort(r, axis=-1)
  rs = jnp.take_along_axis(r, order, axis=-1)
  c, v = _lift(w, n), jnp.append(_lift(w, n - 1), 0.0)
  loo = _prefix(v * rs) + _suffix(jnp.roll(v, 1) * rs)
  return _unsort((rs @ c)[..., None] - loo, order)


def order_stat_advantages(r: jax.Array, weights: np.ndarray) -> jax.Array:
  """The "loo_centered" advantages U − U(r_{−i}), with U(r_{−q}) = Σ_{m<q} v_m r_(m) +
  Σ_{m>q} v_{m−1} r_(m) and v = lift(w, n − 1)."""
  return _order_stat_advantages(r, tuple(float(x) for x in weights))


def _beta_quantile(q: float, a: jax.Array, b: jax.Array) -> jax.Array:
  """The q-quantile of Beta(a, b) by 40 bisections of ``betainc``."""

  def step(_: int, bounds: tuple[jax.Array, jax.Array]) -> tuple[jax.Array, jax.Array]:
    lo, hi = bounds
    mid = (lo + hi) / 2
    below = betainc(a, b, mid) < q
    return jnp.where(below, mid, lo), jnp.where(below, hi, mid)

  lo, hi = jax.lax.fori_loop(0, 40, step, (jnp.zeros_like(a), jnp.ones_like(a)))
  return (lo + hi) / 2


@functools.partial(jax.jit, static_argnums=1)
def pass_at_k_posterior(c: jax.Array, k: int) -> tuple[jax.Array, ...]:
  """Under the Beta(1 + c, 1 + n − c) posterior of p, pass@k = 1 − (1 − p)^k has mean
  1 − B(a, b + k)/B(a, b), variance B(a, b + 2k)/B(a, b) − (B(a, b + k)/B(a, b))² and
  95% interval 1 − (1 − p_q)^k at the Beta quantiles p_q, q = 0.025, 0.975."""
  a = 1.0 + jnp.sum(c, axis=-1)
  b = 2.0 + c.shape[-1] - a
  fail = jnp.exp(betaln(a, b + k) - betaln(a, b))
  std = jnp.sqrt(jnp.exp(betaln(a, b + 2 * k) - betaln(a, b)) - fail**2)
  lo, hi = (1 - (1 - _beta_quantile(q, a, b)) ** k for q in (0.025, 0.975))
  return 1 - fail, std, lo, hi
