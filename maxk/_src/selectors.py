"""Best-of-k chosen by a selector: the true reward of the highest-*score* sample.

A verifier or reward model scores each sample (``scores``) and best-of-k returns
the highest-scoring of k i.i.d. draws; what it earns is that sample's true reward
(``rewards``).  Score ties are broken uniformly at random, so a k-subset I earns

  h(I) = mean of r_i over the samples i ∈ I of maximal score

(the expectation of the reward under uniform tie-breaking).  With ``scores ==
rewards`` every function here is its max@k counterpart.

From n >= k samples the unbiased estimate of E[h] is the U-statistic
(1/C(n,k)) Σ_{|I|=k} h(I).  Group the samples into score tie classes c of size
s_c with L_c samples of strictly lower score and class mean reward r̄_c; a subset
is topped by class c in C(L_c+s_c, k) − C(L_c, k) ways and, given which, its
expected h is r̄_c (every member of the class is equally likely to be chosen), so

  selected@k ≈ Σ_c r̄_c [C(L_c+s_c, k) − C(L_c, k)] / C(n, k)
             = Σ_j C(j−1, k−1)/C(n, k) · r̄_(c(j)),

max@k's positional weights applied to the score-sorted class means.  The policy
gradient transforms (:func:`selected_at_k_advantages`) are sums over the same
classes; for a categorical policy the exact value and the PMF of the selected
outcome are the best-of-k PMF of the *scores* (:func:`selected_pmf`).

References: Walder & Karkhanis, "Pass@K Policy Optimization", arXiv 2505.15201
(Eqs. 12-14, 18-21, 29-30, 33-34: the max@k U-statistic and its transforms, here
with the maximum replaced by the reward of the top-scored sample); Beirami et al.,
"Theoretical guarantees on the best-of-n alignment policy", arXiv 2401.01879,
Sec. 2 (the best-of-n PMF with ties).
"""

from __future__ import annotations

from collections.abc import Callable
import functools
from typing import NamedTuple

import jax
from jax import lax
import jax.numpy as jnp
from jax.typing import ArrayLike
from jax.typing import DTypeLike
import numpy as np

from maxk._src import advantages
from maxk._src import best_of_n
from maxk._src import categorical
from maxk._src import checks
from maxk._src import combinatorics
from maxk._src import ragged
from maxk._src import sorted_kernels
from maxk._src import sorting

_STD_EPS = 1e-6  # As max_at_k_advantages' "mean_std".


def _check_pair(scores: ArrayLike, rewards: ArrayLike) -> tuple[jax.Array, jax.Array]:
  """(scores, rewards) as float arrays ``[..., n]`` of one shape and dtype."""
  s = checks.as_float_array(scores, "scores")
  r = checks.as_float_array(rewards, "rewards")
  checks.check_same_shape(s, "scores", r, "rewards")
  dtype = jnp.result_type(s.dtype, r.dtype)
  return s.astype(dtype), r.astype(dtype)


class _Classes(NamedTuple):
  """Score tie classes of groups sorted by score, ``[..., n]`` each (per position)."""

  start: jax.Array  # int32: the first position of the position's class.
  end: jax.Array  # int32: its last position.
  size: jax.Array  # float: its number of samples.
  segment_sum: Callable[
    [jax.Array], jax.Array
  ]  # x [..., n, q] -> per-position class sums [..., n, q].


def _score_classes(s_sorted: jax.Array, boundary: jax.Array | None = None) -> _Classes:
  """Tie classes of ascending scores (NaN never ties, but makes its group NaN anyway).

  ``boundary`` (optional bool ``[..., n]``) forces a new class at those positions.
  """
  n = s_sorted.shape[-1]
  pos = lax.broadcasted_iota(jnp.int32, s_sorted.shape, s_sorted.ndim - 1)
  differs = s_sorted[..., 1:] != s_sorted[..., :-1]
  if boundary is not None:
    differs = differs | boundary[..., 1:]
  ones = jnp.ones(s_sorted.shape[:-1] + (1,), bool)
  first = jnp.concatenate([ones, differs], axis=-1)
  last = jnp.concatenate([differs, ones], axis=-1)
  axis = s_sorted.ndim - 1
  start = lax.cummax(jnp.where(first, pos, 0), axis=axis)
  end = lax.cummin(jnp.where(last, pos, n - 1), axis=axis, reverse=True)
  size = (end - start + 1).astype(s_sorted.dtype)
  return _Classes(start, end, size, functools.partial(_class_sums, first, end))


@jax.custom_jvp
def _class_sums(first: jax.Array, end: jax.Array, x: jax.Array) -> jax.Array:
  """Per position, the sum of ``x [..., n, q]`` over its class, compensated.

  A segmented scan over the positions whose elements are (sum, error) pairs added
  with TwoSum (``sorted_kernels.compensated_sum``'s rule), restarted at each class's
  first position and read at its last: a sum of the class's own terms only (no
  differences of cumulative sums), within about an ulp of their exact sum however
  large the class (a plain float32 sum of one class of 16384 rewards is off by
  up to ~50 ulp).  ``first``/``end`` ``[..., n]``: class starts (bool), each position's
  class end.  Linear: its derivative is the plain class sum.
  """
  flags = jnp.broadcast_to(first[..., None], x.shape)

  def combine(a: tuple[jax.Array, ...], b: tuple[jax.Array, ...]) -> tuple[jax.Array, ...]:
    flag_a, sum_a, err_a = a
    flag_b, sum_b, err_b = b
    total, err = sorted_kernels.two_sum((sum_a, err_a), (sum_b, err_b))
    # An infinite sum has no rounding error to carry (TwoSum's would be inf − inf).
    err = jnp.where(jnp.isfinite(total), err, 0)
    return flag_a | flag_b, jnp.where(flag_b, sum_b, total), jnp.where(flag_b, err_b, err)

  _, sums, errs = lax.associative_scan(combine, (flags, x, jnp.zeros_like(x)), axis=x.ndim - 2)
  return _gather_rows(sums + errs, end)


@_class_sums.defjvp
def _class_sums_jvp(
  primals: tuple[jax.Array, jax.Array, jax.Array], tangents: tuple[jax.Array, ...]
) -> tuple[jax.Array, jax.Array]:
  first, end, x = primals
  cid = jnp.cumsum(first.astype(jnp.int32), axis=-1) - 1
  return _class_sums(first, end, x), _plain_class_sums(cid, tangents[2])


def _gather_rows(x: jax.Array, index: jax.Array) -> jax.Array:
  """x[..., index[..., j], :] for ``x [..., n, q]`` and ``index [..., n]``."""
  return jnp.take_along_axis(x, index[..., None], axis=-2)


def _plain_class_sums(cid: jax.Array, x: jax.Array) -> jax.Array:
  """Per position, the plain (uncompensated) sum of ``x [..., n, q]`` over its class."""
  n, q = x.shape[-2:]
  flat_x, flat_c = x.reshape(-1, n, q), cid.reshape(-1, n)
  seg = jax.vmap(lambda v, c: jax.ops.segment_sum(v, c, num_segments=n, indices_are_sorted=True))(
    flat_x, flat_c
  )
  sums = jnp.take_along_axis(seg, flat_c[..., None], axis=1)
  return sums.reshape(x.shape)


def _gather(x: jax.Array, index: jax.Array) -> jax.Array:
  return jnp.take_along_axis(x, index, axis=-1)


# ----------------------------------------------------------------------------
# selected_at_k


def selected_at_k(
  scores: ArrayLike, rewards: ArrayLike, k: int, *, where: ArrayLike | None = None
) -> jax.Array:
  """Unbiased estimate of the true reward of best-of-k selected by a score.

  The target is E[r of the highest-score sample among k i.i.d. draws], with score
  ties broken uniformly at random (a tied top set earns its mean reward).  The
  estimate is the mean over all k-subsets I of the n samples of h(I), the mean
  reward of the samples of maximal score in I:

    selected@k ≈ (1/C(n,k)) Σ_{|I|=k} h(I) = Σ_c r̄_c [C(L_c+s_c, k) − C(L_c, k)] / C(n, k)

  over score tie classes c (s_c samples of equal score, L_c of lower score, mean
  reward r̄_c): max@k's weights C(j−1, k−1)/C(n, k) applied to the class means in
  score order (PKPO Eq. 12-14 with the maximum replaced by the selected reward).
  With ``scores == rewards`` it is :func:`maxk.max_at_k`.  Cost O(n log n) per
  group (one sort, one compensated sum per class); the weights are static
  float64 tables and the sum over classes is compensated, as in
  :func:`maxk.max_at_k`.

  Args:
    scores: ``[..., n]`` selector scores; only their order and ties matter (±inf
      allowed).
    rewards: ``[..., n]`` true rewards, same shape.  Infinite rewards follow IEEE
      arithmetic as in :func:`maxk.max_at_k`: the estimate is NaN only where
      inf − inf arises in the mean over subsets (a k-subset whose top-score
      samples hold +inf and −inf, or subsets with h = +inf and others with
      h = −inf); a score class that tops no k-subset does not enter.
    k: static int, ``1 <= k <= n``.
    where: keyword-only, optional bool, broadcastable to ``scores``: the valid
      samples of each group (ragged groups); the estimate of a group is that of
      its m valid samples, NaN where m < k.

  Returns:
    ``[...]`` estimates.  A NaN score or reward in a group makes that group's
    estimate NaN only.

  Raises:
    ValueError: if ``k`` is not an int in [1, n], the shapes differ or the inputs
      are scalars.

  References: PKPO, arXiv 2505.15201, Eq. 12-14; Chen et al. 2021 (unbiased
  U-statistics of k-sample metrics).
  """
  s, r = _check_pair(scores, rewards)
  n = s.shape[-1]
  k = checks.check_int(k, "k", low=1, high=n, high_name="n")
  valid = ragged.as_valid(where, s.shape)
  if valid is not None:
    return _selected_at_k_ragged(s, r, valid, k)
  weights, top = _max_at_k_operands(n, k, s.dtype)
  return _selected_at_k(s, r, weights, top)


@functools.lru_cache(maxsize=256)
def _max_at_k_operands(n: int, k: int, dtype: DTypeLike) -> tuple[np.ndarray, np.ndarray]:
  top = np.arange(1, n + 1) >= k  # Positions that top some k-subset (weight may underflow).
  return np.asarray(combinatorics.max_weights(n, k), np.dtype(dtype)), top


def _class_means(classes: _Classes, r_sorted: jax.Array) -> jax.Array:
  return classes.segment_sum(r_sorted[..., None])[..., 0] / classes.size


def _top_weighted_sum(rbar: jax.Array, weights: jax.Array, top: jax.Array) -> jax.Array:
  """Σ_j w_j r̄_(c(j)) over the positions that top some k-subset (``top``).

  A class that tops no k-subset does not enter, so its mean (NaN where it holds
  +inf and −inf rewards) cannot make the estimate NaN; a class that does enter
  with both is NaN, as the mean over subsets then holds inf − inf.
  """
  rbar = jnp.where(top, rbar, 0)
  return sorted_kernels.rank_weighted_sum(rbar, weights, top, jnp.zeros_like(top))


@jax.jit
def _selected_at_k(
  scores: jax.Array, rewards: jax.Array, weights: jax.Array, top: jax.Array
) -> jax.Array:
  s_sorted, r_sorted, _ = sorting.sort_last(scores, rewards)
  rbar = _class_means(_score_classes(s_sorted), r_sorted)
  estimate = _top_weighted_sum(rbar, weights, top)
  bad = jnp.any(jnp.isnan(scores) | jnp.isnan(rewards), axis=-1)
  return jnp.where(bad, jnp.nan, estimate)


@functools.partial(jax.jit, static_argnums=3)
def _selected_at_k_ragged(
  scores: jax.Array, rewards: jax.Array, valid: jax.Array, k: int
) -> jax.Array:
  n = scores.shape[-1]
  s_sorted, r_sorted, _, m, inside = ragged.sort_valid(scores, valid, rewards)
  boundary = jnp.concatenate(
    [jnp.zeros_like(inside[..., :1]), inside[..., 1:] != inside[..., :-1]], -1
  )
  rbar = _class_means(_score_classes(s_sorted, boundary), r_sorted)
  weights = ragged.max_weights(n, k, m, scores.dtype)
  top = inside & (ragged.positions(scores.shape) >= k)
  estimate = _top_weighted_sum(rbar, weights, top)
  estimate = jnp.where(m[..., 0] >= k, estimate, jnp.nan)
  bad = jnp.any((jnp.isnan(scores) | jnp.isnan(rewards)) & valid, axis=-1)
  return jnp.where(bad, jnp.nan, estimate)


# ----------------------------------------------------------------------------
# selected_at_k_advantages


class _Coefficients(NamedTuple):
  """Static vectors over score-sorted positions j = 1..n (see
  :func:`selected_at_k_advantages`): d_j, u_j, v_j, above_j = u_j − v_j, p_j."""

  diag: np.ndarray
  suffix: np.ndarray
  loo_suffix: np.ndarray
  above: np.ndarray
  prefix: np.ndarray


@functools.lru_cache(maxsize=256)
def _coefficients(n: int, k: int, kind: str) -> _Coefficients:
  # max_at_k_advantages' (d, u − v, p) with u = C(j−2, k−2)/C(n, k) and v the
  # baseline's coefficient of the samples above; v is recovered exactly for each
  # baseline rather than as a difference.
  none = advantages.transform_coefficients(n, k, "none")
  coeffs = advantages.transform_coefficients(n, k, kind)
  u = none.suffix
  if kind == "none":
    v = np.zeros(n)
  elif kind == "loo_minus_one":
    v = u  # (k/n) C(j−2, k−2)/C(n−1, k−1) = C(j−2, k−2)/C(n, k): the same numbers.
  else:
    scale = k / (n - 1) if kind == "loo" else k / n
    j = np.arange(1, n + 1)
    v = combinatorics.binom_ratio(j - 2, k - 1, n - 1, k, scale=scale)
  return _Coefficients(coeffs.diag, u, v, coeffs.suffix, coeffs.prefix)


@functools.lru_cache(maxsize=256)
def _operands(n: int, k: int, kind: str, dtype: DTypeLike) -> _Coefficients:
  return _Coefficients(*(np.asarray(c, np.dtype(dtype)) for c in _coefficients(n, k, kind)))


def selected_at_k_advantages(
  scores: ArrayLike,
  rewards: ArrayLike,
  k: int,
  *,
  baseline: str = "loo_minus_one",
  where: ArrayLike | None = None,
) -> jax.Array:
  """Transformed rewards a_i whose Σ_i a_i ∇log π(y_i) estimates ∇ selected@k.

  selected@k is the expected true reward of the highest-score of k i.i.d. draws
  (score ties broken uniformly at random; :func:`selected_at_k`).  With h(I) the
  mean reward of the top-score samples of I, sel(·, k) = :func:`selected_at_k`
  and the group without sample i written −i, the options are those of
  :func:`maxk.max_at_k_advantages` (:data:`maxk.BASELINES`) with max replaced by h:

  * ``"none"``: a_i = S(i) = (1/C(n,k)) Σ_{|I|=k, I∋i} h(I)  (PKPO Eq. 18-21).
  * ``"loo"``: S(i) − k/(n−1) · sel(r_{−i}, k)  (PKPO Eq. 29-30).
  * ``"loo_centered"``: S(i) − k/n · sel(r_{−i}, k); sums to 0 in every group.
  * ``"loo_minus_one"`` (default): (1/C(n,k)) Σ_{I∋i} (h(I) − h(I∖i))
    = S(i) − k/n · sel(r_{−i}, k−1)  (PKPO Eq. 33-34).
  * ``"leave_two_out"``: identically ``"loo_centered"`` (the leave-two-out identity
    of :func:`maxk.max_at_k_advantages` counts subsets only, so it holds for any h).
  * ``"mean_std"``: S z-scored within its group (population std, + 1e-6).  Biased.

  The same reductions apply: for n == k ``"loo"`` and ``"loo_centered"`` equal
  ``"none"``, and for k == 1 ``"loo_minus_one"`` equals ``"loo_centered"``.  With
  ``scores == rewards`` every option equals :func:`maxk.max_at_k_advantages`.

  Closed form.  Sort by score; a sample i of class c (positions st..en, size s,
  class mean reward r̄_c) gets

    a_i = κ_c r̄_c + γ_c (r_i − r̄_c) + Σ_{m>en} (u_m − v_m) r̄_(m) − Σ_{m<st} p_m r̄_(m),
    κ_c = d_en − Σ_{st<m<=en} v_m,
    γ_c = d_st + Σ_{st<m<=en} [(en − m) u_m + v_m] / (s − 1),

  with d_j = C(j−1,k−1)/C(n,k), u_j = C(j−2,k−2)/C(n,k) (S's terms: a uniformly
  random tie order puts i at a uniform position of its class and the other class
  members above it uniformly; d_j + Σ_{j<m<=en} u_m = d_en telescopes), and v, p
  the leave-one-out baseline's terms for the samples above and below (sel of the
  group without i keeps the classes below, shifts those above down by one, and
  leaves class c with s − 1 members of mean (s r̄_c − r_i)/(s − 1)): for
  "loo"/"loo_centered" v_j = λ C(j−2,k−1)/C(n−1,k), p_j = λ C(j−1,k−1)/C(n−1,k)
  (λ = k/(n−1) or k/n); for "loo_minus_one" v_j = u_j (so κ_c = d_st) and
  p_j = C(j−1,k−2)/C(n,k).  Every class sum adds terms of one sign and one class
  only.  A sample's S is exactly its class's where all of a class's rewards
  agree in exact arithmetic (at k = n every S(i) is the same number, so
  ``"mean_std"`` gives exactly 0).  As for max@k, the other options are computed
  on rewards measured from the group's largest reward (a group of equal rewards
  gives exactly 0).

  Cost: one sort, one segment sum over the score classes and two cumulative sums
  with static float64 coefficients, O(n log n) per group.

  Args:
    scores: ``[..., n]`` selector scores (ties and ±inf allowed; only their order
      and ties matter).
    rewards: ``[..., n]`` finite true rewards, same shape.
    k: static int, ``1 <= k <= n``.
    baseline: one of :data:`maxk.BASELINES`.
    where: keyword-only, optional bool, broadcastable to ``scores``: the valid
      samples of each group (ragged groups; README's "Ragged groups").  Each
      group's advantages are those of its m valid samples alone (n replaced by
      m above, with the coefficients of :func:`maxk.max_at_k_advantages`'s
      ``where=``, gathered per group); the others get 0, as do all samples of a
      group with m < k.

  Returns:
    ``[..., n]`` transformed rewards in the caller's sample order.  A NaN score,
    or a NaN or infinite reward, makes its group's advantages NaN (other groups
    are unaffected; with ``where=``, only valid samples count and only they
    become NaN).

  Raises:
    ValueError: bad ``k``, unknown ``baseline``, or shapes that differ.

  References: PKPO, arXiv 2505.15201, Eq. 18-21, 29-30, 33-34.
  """
  s, r = _check_pair(scores, rewards)
  n = s.shape[-1]
  k = checks.check_int(k, "k", low=1, high=n, high_name="n")
  baseline = checks.check_option(baseline, "baseline", advantages.BASELINES)
  valid = ragged.as_valid(where, s.shape)
  if valid is not None:
    return _selected_at_k_advantages_ragged(s, r, valid, k, baseline)
  kind = advantages.reduced_baseline(baseline, n, k)
  coeffs = _operands(n, k, "none" if kind == "mean_std" else kind, s.dtype)
  loo_shift = k / n - k / (n - 1) if kind == "loo" else 0.0
  return _selected_at_k_advantages(s, r, coeffs, loo_shift, kind)


@functools.partial(jax.jit, static_argnums=4)
def _selected_at_k_advantages(
  scores: jax.Array,
  rewards: jax.Array,
  coeffs: _Coefficients,
  loo_shift: float | jax.Array,
  kind: str,
) -> jax.Array:
  s_sorted, r_sorted, order = sorting.sort_last(scores, rewards)
  if kind == "none":
    shift = jnp.zeros_like(r_sorted[..., :1])
  else:
    # Every a_i moves by shift·loo_shift when the rewards move by shift (by 0
    # except for "loo"; "mean_std" z-scores S, which moves by shift·k/n): measured
    # from the largest reward, a constant group gives exactly 0 and the top
    # rewards' differences are exact.
    shift = sorted_kernels.finite_or_zero(jnp.max(r_sorted, axis=-1, keepdims=True))
  x = r_sorted - shift
  classes = _score_classes(s_sorted)
  pos = lax.broadcasted_iota(jnp.int32, x.shape, x.ndim - 1)
  above_start = pos > classes.start
  terms = jnp.stack(
    [
      jnp.where(above_start, (classes.end - pos).astype(x.dtype) * coeffs.suffix, 0),
      jnp.where(above_start, coeffs.loo_suffix, 0),
      x,
    ],
    axis=-1,
  )
  sum_u, sum_v, total = jnp.moveaxis(classes.segment_sum(terms), -1, 0)
  size = classes.size
  rbar = total / size
  d_start = _gather(jnp.broadcast_to(coeffs.diag, x.shape), classes.start)
  if kind == "loo_minus_one":
    kappa = d_start  # d_en − Σ_{st<m<=en} u_m, which telescopes to d_st.
  else:
    kappa = _gather(jnp.broadcast_to(coeffs.diag, x.shape), classes.end) - sum_v
  several = size > 1
  gamma = d_start + jnp.where(several, (sum_u + sum_v) / jnp.where(several, size - 1, 1), 0)
  above = _gather(sorted_kernels.exclusive_suffix_sum(coeffs.above * rbar), classes.end)
  below = _gather(sorted_kernels.exclusive_prefix_sum(coeffs.prefix * rbar), classes.start)
  a_sorted = kappa * rbar + gamma * (x - rbar) + above - below
  if kind == "mean_std":
    a_sorted = sorted_kernels.zscore(a_sorted, eps=_STD_EPS)
  elif kind == "loo":
    a_sorted = a_sorted + shift * loo_shift
  out = sorting.unsort_last(a_sorted, order)
  bad = jnp.any(jnp.isnan(scores) | ~jnp.isfinite(rewards), axis=-1, keepdims=True)
  return jnp.where(bad, jnp.nan, out)


def _shifted(table: ragged.Pow2) -> ragged.Pow2:
  """``table`` over positions t moved up by one: entry t holds entry t − 1 (0 at t = 1)."""
  return ragged.Pow2(
    np.concatenate([[0.0], table.mant[:-1]]), np.concatenate([[0], table.exp[:-1]]).astype(np.int32)
  )


@functools.partial(jax.jit, static_argnums=(3, 4))
def _selected_at_k_advantages_ragged(
  scores: jax.Array, rewards: jax.Array, valid: jax.Array, k: int, baseline: str
) -> jax.Array:
  # The dense kernel with n replaced by each group's m: d, u − v and p are
  # max_at_k_advantages' ragged coefficients, u = C(j−2, k−2)/C(m, k) and v the
  # leave-one-out baseline's coefficient of the samples above, λ C(j−2, k−1)/C(m−1, k)
  # (λ = k/(m−1) or k/m), from static factors of j and m; at m == k "loo" and
  # "loo_centered" are "none" (v = 0), as the dense reduction at n == k.
  n, dtype = scores.shape[-1], scores.dtype
  s_sorted, r_sorted, order, m, inside = ragged.sort_valid(scores, valid, rewards)
  kind = baseline
  if baseline == "leave_two_out" or (baseline == "loo_minus_one" and k == 1):
    kind = "loo_centered"
  transform = "none" if kind == "mean_std" else kind
  coeffs = ragged.max_transform(n, k, transform, m, dtype)
  tables = ragged.max_tables(n, k)
  zero = jnp.zeros(s_sorted.shape, dtype)
  u = jnp.where(inside, ragged.product(tables.suffix, tables.inv, m, dtype), 0) if k >= 2 else zero
  if transform == "none":
    v = zero
  elif transform == "loo_minus_one":
    v = u
  else:
    scale = tables.loo_prefix if transform == "loo" else tables.centred_prefix
    v = jnp.where(inside, ragged.product(_shifted(tables.diag), scale, m, dtype), 0)
  if kind == "none":
    shift = jnp.zeros_like(r_sorted[..., :1])
  else:
    top = jnp.max(jnp.where(inside, r_sorted, -jnp.inf), axis=-1, keepdims=True)
    shift = sorted_kernels.finite_or_zero(top)
  x = jnp.where(inside, r_sorted - shift, 0)
  boundary = jnp.concatenate(
    [jnp.zeros_like(inside[..., :1]), inside[..., 1:] != inside[..., :-1]], -1
  )
  classes = _score_classes(s_sorted, boundary)
  pos = lax.broadcasted_iota(jnp.int32, x.shape, x.ndim - 1)
  above_start = pos > classes.start
  terms = jnp.stack(
    [
      jnp.where(above_start, (classes.end - pos).astype(dtype) * u, 0),
      jnp.where(above_start, v, 0),
      x,
    ],
    axis=-1,
  )
  sum_u, sum_v, total = jnp.moveaxis(classes.segment_sum(terms), -1, 0)
  size = classes.size
  rbar = total / size
  d_start = _gather(coeffs.diag, classes.start)
  if kind == "loo_minus_one":
    kappa = d_start
  else:
    kappa = _gather(coeffs.diag, classes.end) - sum_v
  several = size > 1
  gamma = d_start + jnp.where(several, (sum_u + sum_v) / jnp.where(several, size - 1, 1), 0)
  above = _gather(sorted_kernels.exclusive_suffix_sum(coeffs.suffix * rbar), classes.end)
  below = _gather(sorted_kernels.exclusive_prefix_sum(coeffs.prefix * rbar), classes.start)
  a_sorted = kappa * rbar + gamma * (x - rbar) + above - below
  if kind == "mean_std":
    a_sorted = sorted_kernels.zscore(a_sorted, eps=_STD_EPS, valid=inside)
  elif kind in ("loo", "loo_centered"):
    # At m == k these are S, which moves by the shift (every S(i) by shift·k/m);
    # "loo" moves by shift·(k/m − k/(m−1)) for m > k.
    mf = m.astype(dtype)
    moved = jnp.where(m == k, 1.0, 0.0)
    if kind == "loo":
      moved = moved + jnp.where(m > k, k / mf - k / jnp.maximum(mf - 1, 1), 0)
    a_sorted = a_sorted + shift * moved
  a_sorted = jnp.where(inside & (m >= k), a_sorted, 0)
  out = sorting.unsort_last(a_sorted, order)
  # A NaN makes its group NaN (as ragged.nan_group); an infinite reward does so
  # where the dense call of the valid samples exists (m >= k).
  nan = jnp.any((jnp.isnan(scores) | jnp.isnan(rewards)) & valid, axis=-1, keepdims=True)
  inf = jnp.any(jnp.isinf(rewards) & valid, axis=-1, keepdims=True) & (m >= k)
  return jnp.where((nan | inf) & valid, jnp.nan, out)


# ----------------------------------------------------------------------------
# Exact values for a categorical policy


def _per_arm(x: ArrayLike, name: str, what: str, p: jax.Array) -> jax.Array:
  """``x`` as a float array broadcast to ``p``'s shape, without NaN (eagerly)."""
  arr = checks.as_float_array(x, name)
  try:
    arr = jnp.broadcast_to(arr, p.shape)
  except ValueError as e:
    raise ValueError(
      f"{name} shape {arr.shape} must broadcast to probs shape {p.shape} (one {what} per arm)."
    ) from e
  categorical.check_not_nan(arr, name)
  return arr


def _prepare_exact(probs: ArrayLike, scores: ArrayLike, k: int) -> tuple[jax.Array, jax.Array, int]:
  p = categorical.as_distribution(probs, "probs")
  s = _per_arm(scores, "scores", "score", p)
  k = checks.check_int(k, "k", low=1, high=checks.MAX_SIZE)
  categorical.check_probabilities(p, "probs")
  return p, s, k


def selected_pmf(probs: ArrayLike, scores: ArrayLike, k: int) -> jax.Array:
  """PMF of the arm that best-of-k selects by score from a categorical policy.

  Draw k i.i.d. arms from π and keep one of the highest score, ties broken
  uniformly among the tied top draws; arm a of score class c is kept with
  probability

    π_k(a) = π_a / π_c · (F_c^k − F_{<c}^k),

  π_c the class's mass and F_c = P(score <= score_c), F_{<c} = P(score < score_c):
  the best-of-k PMF of the scores, :func:`maxk.bon_pmf` ``(probs, scores, k)``,
  computed with its float32 accuracy (no F^k − F_{<c}^k cancellation).  Smooth in
  ``probs``.  Its KL from π is :func:`maxk.bon_kl` ``(probs, scores, k)``.  Cost
  O(A log A) per distribution.

  References: Beirami et al., arXiv 2401.01879, Sec. 2.

  Args:
    probs: ``[..., A]`` policy probabilities.
    scores: ``[A]`` or ``[..., A]`` (broadcast to ``probs``) arm scores; ±inf allowed.
    k: static int >= 1, the number of draws.

  Returns:
    ``[..., A]`` selection probabilities in the caller's arm order.

  Raises:
    ValueError: if ``k`` is not an int >= 1, ``scores`` does not broadcast to
      ``probs``, or (eagerly only) ``probs`` is not a probability vector or
      ``scores`` holds a NaN (under ``jit`` a NaN score makes its row NaN).
  """
  p, s, k = _prepare_exact(probs, scores, k)
  return best_of_n.bon_pmf(p, s, k)


def selected_at_k_exact(
  probs: ArrayLike, scores: ArrayLike, rewards: ArrayLike, k: int
) -> jax.Array:
  """Exact true reward of best-of-k selected by score, for a categorical policy.

  E[r of the highest-score of k i.i.d. draws from π] (score ties broken uniformly):

    Σ_c (Σ_{a∈c} π_a r_a / π_c) (F_c^k − F_{<c}^k) = Σ_a selected_pmf(π, scores, k)_a r_a

  over score classes c (see :func:`selected_pmf`).  With ``scores == rewards`` it
  is :func:`maxk.max_at_k_exact`.  ``probs`` is divided by its sum, so the value
  is smooth on positive vectors and ``jax.grad`` through ``softmax(logits)`` is the
  exact policy gradient.  Cost O(A log A) per distribution.

  References: Beirami et al., arXiv 2401.01879, Sec. 2; the max@k objective of
  arXiv 2510.23393, Sec. 3.2 (with the maximum replaced by the selected reward).

  Args:
    probs: ``[..., A]`` policy probabilities.
    scores: ``[A]`` or ``[..., A]`` arm scores (broadcast to ``probs``).
    rewards: ``[A]`` or ``[..., A]`` true rewards of the arms (broadcast likewise);
      an infinite reward of a probability-0 arm does not enter.

  Returns:
    ``[...]`` expected selected rewards.

  Raises:
    ValueError: as for :func:`selected_pmf`, or if ``rewards`` does not broadcast
      to ``probs`` or (eagerly) holds a NaN; under ``jit`` a NaN reward makes its
      row NaN.
  """
  p, s, k = _prepare_exact(probs, scores, k)
  r = _per_arm(rewards, "rewards", "reward", p)
  pmf = best_of_n.bon_pmf(p, s, k)
  return _expected_reward(categorical.normalize(p.astype(pmf.dtype)), pmf, r.astype(pmf.dtype))


@jax.jit
def _expected_reward(p: jax.Array, pmf: jax.Array, r: jax.Array) -> jax.Array:
  # An arm that is never drawn contributes nothing, whatever its (infinite) reward.
  r_eff = jnp.where((p > 0) | jnp.isfinite(r), r, 0.0)
  value = jnp.sum(jnp.where(p > 0, pmf * r_eff, 0.0), axis=-1)
  return jnp.where(jnp.any(jnp.isnan(r), axis=-1), jnp.nan, value)
