"""Unbiased policy-gradient estimators of max@k as reward transforms (on-policy).

For n i.i.d. samples y_1..y_n ~ π with rewards r_i, the gradient of max@k is
estimated by Σ_i a_i ∇log π(y_i), where the transformed rewards a_i are

  S(i) = (1/C(n,k)) Σ_{|I|=k, I∋i} max_{j∈I} r_j        (PKPO Eq. 18-21; max@k Eq. 8-9)

minus an optional baseline b_i that does not depend on y_i (so it keeps the
estimator unbiased).  In ascending sorted order r_(1) <= ... <= r_(n), a subset
containing rank j has its maximum at j (C(j-1,k-1) subsets) or at some m > j
(C(m-2,k-2) subsets), so

  S_(j) = [C(j-1,k-1) r_(j) + Σ_{m>j} C(m-2,k-2) r_(m)] / C(n,k),

and every leave-one-out baseline is likewise a prefix sum plus a suffix sum over
ranks.  Each transform is therefore

  a_(j) = d_j r_(j) + Σ_{m>j} u_m r_(m) − Σ_{m<j} p_m r_(m)

with static coefficient vectors (d, u, p) computed once in float64: one sort and
two cumulative sums, O(n log n) per group.
"""

from __future__ import annotations

import functools

import jax
from jax import lax
import jax.numpy as jnp
from jax.typing import ArrayLike
from jax.typing import DTypeLike
import numpy as np

from maxk._src import checks
from maxk._src import combinatorics
from maxk._src import ragged
from maxk._src import sorted_kernels
from maxk._src import sorting

#: The ``baseline`` options of :func:`maxk.max_at_k_advantages`, in the order of its docstring.
BASELINES = ("none", "loo", "loo_centered", "loo_minus_one", "leave_two_out", "mean_std")
_STD_EPS = 1e-6


def _loo_coefficients(n: int, kk: int, scale: float) -> tuple[np.ndarray, np.ndarray]:
  """Coefficients of ``scale * max_at_k(r without rank j, kk)`` over n-1 samples.

  Removing rank j leaves ranks m < j in place and shifts ranks m > j down by one:
    max_at_kk(r_{-j}) = [Σ_{m<j} C(m-1,kk-1) r_(m) + Σ_{m>j} C(m-2,kk-1) r_(m)] / C(n-1,kk).
  Returns (prefix, suffix) coefficient vectors over ranks m = 1..n.
  """
  m = np.arange(1, n + 1)
  prefix = combinatorics.binom_ratio(m - 1, kk - 1, n - 1, kk, scale=scale)
  suffix = combinatorics.binom_ratio(m - 2, kk - 1, n - 1, kk, scale=scale)
  return prefix, suffix


@functools.lru_cache(maxsize=256)
def transform_coefficients(n: int, k: int, baseline: str) -> sorted_kernels.SortedTransform:
  """(d, u, p) of a_(j) = d_j r_(j) + Σ_{m>j} u_m r_(m) − Σ_{m<j} p_m r_(m); float64 [n] each.

  ``baseline`` is one of "none", "loo", "loo_centered", "loo_minus_one" (after the
  n == k and k == 1 reductions documented in :func:`max_at_k_advantages`).
  """
  m = np.arange(1, n + 1)
  diag = combinatorics.max_weights(n, k)  # C(j-1,k-1)/C(n,k)
  suffix = combinatorics.binom_ratio(m - 2, k - 2, n, k)  # C(m-2,k-2)/C(n,k)
  prefix = np.zeros(n)
  if baseline == "none":
    pass
  elif baseline in ("loo", "loo_centered"):
    scale = k / (n - 1) if baseline == "loo" else k / n
    loo_prefix, loo_suffix = _loo_coefficients(n, k, scale)
    prefix = loo_prefix
    suffix = suffix - loo_suffix
  elif baseline == "loo_minus_one":
    # S(i) − (k/n)·max_at_k(r_{-i}, k−1): the suffix parts cancel exactly
    # ((k/n)/C(n-1,k-1) = 1/C(n,k)), leaving PKPO's s^(loo-1) (Eq. 33-34):
    #   a_(j) = [C(j-1,k-1) r_(j) − Σ_{m<j} C(m-1,k-2) r_(m)] / C(n,k).
    prefix = combinatorics.binom_ratio(m - 1, k - 2, n, k)
    suffix = np.zeros(n)
  else:
    raise AssertionError(baseline)
  return sorted_kernels.SortedTransform(diag=diag, suffix=suffix, prefix=prefix)


def reduced_baseline(baseline: str, n: int, k: int) -> str:
  """The transform a ``baseline`` of :func:`max_at_k_advantages` computes at (n, k):
  ``"leave_two_out"`` is ``"loo_centered"`` (an identity, see
  :func:`max_at_k_advantages`), ``"loo_minus_one"`` is ``"loo_centered"`` at k = 1,
  and ``"loo"`` and ``"loo_centered"`` are ``"none"`` at n = k (no leave-one-out
  estimate of k samples from n − 1), applied in that order (n = k = 1 gives
  ``"none"``).  Shared by every transform that offers these baselines."""
  if baseline == "leave_two_out":
    baseline = "loo_centered"
  if baseline == "loo_minus_one" and k == 1:
    baseline = "loo_centered"
  if baseline in ("loo", "loo_centered") and n == k:
    baseline = "none"
  return baseline


def max_at_k_advantages(
  rewards: ArrayLike,
  k: int,
  *,
  baseline: str = "loo_minus_one",
  where: ArrayLike | None = None,
) -> jax.Array:
  """Transformed rewards a_i whose Σ_i a_i ∇log π(y_i) estimates ∇ max@k.

  With S(i) = (1/C(n,k)) Σ_{|I|=k, I∋i} max_{j∈I} r_j and M(r, k) = :func:`max_at_k`:

  * ``"none"``: a_i = S(i).  PKPO's s_i (Eq. 18-21), the max@k paper's r̃_i (Eq. 8-9);
    for {0, 1} rewards PKPO Eq. 8.
  * ``"loo"``: a_i = S(i) − k/(n−1) · M(r_{−i}, k).  PKPO's s^(loo) (Eq. 29-30).
  * ``"loo_centered"``: a_i = S(i) − k/n · M(r_{−i}, k); sums to 0 in every group and
    equals RLOO / n at k = 1 (OrderGrad's leave-one-out advantage, arXiv 2606.06096).
  * ``"loo_minus_one"`` (default): a_i = (1/C(n,k)) Σ_{I∋i} (max_I r − max_{I∖i} r)
    = S(i) − k/n · M(r_{−i}, k−1).  PKPO's s^(loo−1) (Eq. 33-34).
  * ``"leave_two_out"``: MaxPO's Leave-Two-Out (L2O) baseline (Takashiro, Nishimori,
    Parmas et al., "On Advantage Estimates for Max@K Policy Gradients", arXiv
    2606.06080), on this function's scale; it is *identically* ``"loo_centered"``
    (derivation below) and is computed by the same kernel.
  * ``"mean_std"``: S z-scored within its group (population std, + 1e-6); the max@k
    paper's "BoN mean".  Biased; kept for comparison.

  Leave-two-out.  Only the paper's abstract and first page were reachable: the name
  and the properties it states (policy-gradient unbiased; the realised advantages of
  a group sum to exactly 0; a quadratic-time implementation) are its, the
  construction below is derived from those properties, not copied from its
  equations, and its "canonical finite-batch advantage" was not reachable and is
  not implemented.  For a pair i ≠ j, compare i and j against the same k − 1 other
  samples, drawn from the n − 2 samples that are neither:

    D_ij = (1/C(n−2,k−1)) Σ_{J ⊆ [n]∖{i,j}, |J|=k−1} [max(r_i, r_J) − max(r_j, r_J)],

  and average over the partners, L_i = (1/(n−1)) Σ_{j≠i} D_ij (O(n²) pairs).  D is
  antisymmetric, so Σ_i L_i = 0 exactly; the subtracted part of D_ij does not involve
  sample i, so it is a baseline and L is unbiased (for (n/k) ∇ max@k, below).  Identity: with
  S_{−j}(i) the credit S of i in the group without j, the first term of D_ij summed
  over j ≠ i counts each k-subset I ∋ i once per j ∉ I (n − k times), and the second
  over j ≠ i counts each k-subset of r_{−i} once per member (k times), so

    Σ_{j≠i} (k/(n−1)) D_ij = Σ_{j≠i} [S_{−j}(i) − S_{−i}(j)] = n S(i) − k M(r_{−i}, k),

  i.e. L_i = (n/k) · [S(i) − k/n · M(r_{−i}, k)] = (n/k) · ``"loo_centered"``.  This
  function returns L · k/n, the scale of its other options (Σ_i a_i ∇log π(y_i)
  estimates ∇ max@k itself; L estimates (n/k) ∇ max@k and is RLOO, r_i − mean_{j≠i}
  r_j, at k = 1).  The other reading of "leave two out", b_i = (1/(n−1)) Σ_{j≠i}
  S_{−i}(j) (each other sample's credit in the group without i), is
  k/(n−1) · M(r_{−i}, k): ``"loo"``, which does not sum to 0.  The identities are
  checked by enumerating the subsets (``tests/maxk/leave_two_out_test.py``).

  Every option except ``"mean_std"`` is unbiased: the baselines do not depend on
  y_i.  For n == k, ``"loo"``, ``"loo_centered"`` and ``"leave_two_out"`` have no
  leave-one-out estimate and equal ``"none"`` (as PKPO Listing 1); for k == 1,
  ``"loo_minus_one"`` equals ``"loo_centered"``.  ``"loo_centered"`` (so
  ``"leave_two_out"``) and ``"loo_minus_one"`` are invariant to adding a constant to
  the rewards, and are computed on rewards measured from the group maximum for
  accuracy (a constant group gives exactly 0, and r_max − r_second at k = n is exact).

  Cost: one sort and two cumulative sums with static float64 coefficients,
  O(n log n) per group; accurate in float32 for any n and k <= n.

  Args:
    rewards: ``[..., n]`` float rewards, samples on the last axis (ties, negative
      values and -inf allowed).
    k: static int, ``1 <= k <= n``.
    baseline: one of ``"none"``, ``"loo"``, ``"loo_centered"``, ``"loo_minus_one"``,
      ``"leave_two_out"``, ``"mean_std"``.
    where: keyword-only, optional bool, broadcastable to ``rewards``: the valid
      samples of each group (ragged groups).  Each group's advantages are those
      of its m valid samples alone (n replaced by m above); the others get 0, as
      do all samples of a group with m < k.

  Returns:
    ``[..., n]`` transformed rewards in the caller's sample order.  A NaN in one
    group only affects that group.

  Raises:
    ValueError: bad ``k`` or unknown ``baseline``.
  """
  rewards = checks.as_float_array(rewards, "rewards")
  n = rewards.shape[-1]
  k = checks.check_int(k, "k", low=1, high=n, high_name="n")
  baseline = checks.check_option(baseline, "baseline", BASELINES)
  valid = ragged.as_valid(where, rewards.shape)
  if valid is not None:
    # The tables and k are arguments (only k == 1 is static): another k reuses the program.
    tables = ragged.max_operands(n, k, rewards.dtype)
    return _max_at_k_advantages_ragged(rewards, valid, tables, k, k == 1, baseline)
  kind = reduced_baseline(baseline, n, k)
  # The coefficients are arguments of the compiled kernel, so another k at the
  # same shape reuses it; only which of them are all zero is static.
  coeffs = _transform_operands(n, k, "none" if kind == "mean_std" else kind, rewards.dtype)
  loo_shift = k / n - k / (n - 1) if kind == "loo" else 0.0
  return _max_at_k_advantages(rewards, coeffs, loo_shift, kind)


@functools.lru_cache(maxsize=256)
def _transform_operands(
  n: int, k: int, kind: str, dtype: DTypeLike
) -> sorted_kernels.SortedTransform:
  return sorted_kernels.transform_operands(transform_coefficients(n, k, kind), dtype)


@functools.partial(jax.jit, static_argnums=3)
def _max_at_k_advantages(
  rewards: jax.Array,
  coeffs: sorted_kernels.SortedTransform,
  loo_shift: float | jax.Array,
  kind: str,
) -> jax.Array:
  r_sorted, order = sorting.sort_last(rewards)
  if kind == "mean_std":
    # z-scoring is shift invariant, and shifting r by c shifts every S(i) by c·k/n.
    # Measuring r from its top entry makes a constant group's S exactly 0 (zscore
    # then measures S from its maximum in the same way), so it maps to 0.  This
    # shift keeps its gradient: at k = n, S is the group maximum for every i, and
    # only with it does the gradient cancel exactly instead of leaving rounding
    # noise for the 1/eps of a zero std to amplify.
    r_sorted = r_sorted - sorted_kernels.finite_or_zero(r_sorted[..., -1:])
    s = sorted_kernels.apply_sorted_transform(r_sorted, coeffs)
    a_sorted = sorted_kernels.zscore(s, eps=_STD_EPS)
  elif kind == "none":
    a_sorted = sorted_kernels.apply_sorted_transform(r_sorted, coeffs)
  else:
    # The leave-one-out transforms are small differences of long sums, so they are
    # evaluated on rewards measured from the group's maximum c: by Sterbenz's lemma
    # the differences of the top rewards (which carry the largest weights) are
    # exact, and a constant group gives exactly 0.  Shifting r by c shifts every
    # a_i by the same c·(k/n − k/(n−1)) (``loo_shift``) for "loo" (and by 0 for
    # the other two), which is added back.
    shift = sorted_kernels.finite_or_zero(r_sorted[..., -1:])
    a_sorted = sorted_kernels.apply_sorted_transform(r_sorted - shift, coeffs)
    if kind == "loo":
      a_sorted = a_sorted + shift * loo_shift
  # A NaN anywhere in a group makes that whole group NaN (other groups untouched).
  return checks.nan_group(rewards, sorting.unsort_last(a_sorted, order))


@functools.partial(jax.jit, static_argnums=(4, 5))
def _max_at_k_advantages_ragged(
  rewards: jax.Array,
  valid: jax.Array,
  packed: ragged.Packed,
  k: jax.Array,
  k_is_one: bool,
  baseline: str,
) -> jax.Array:
  # The dense computation with n replaced by each group's m (see ragged.py): the
  # same shifts, with the coefficients gathered per group.
  dtype, tables = rewards.dtype, ragged.unpack_max(packed)
  r_sorted, order, m, inside = ragged.sort_valid(rewards, valid)
  kind = baseline
  if baseline == "leave_two_out" or (baseline == "loo_minus_one" and k_is_one):
    kind = "loo_centered"

  def transform(name: str) -> ragged.Coefficients:
    return ragged.transform_from(tables, k, name, m, dtype, k_is_one=k_is_one)

  top = jnp.take_along_axis(r_sorted, jnp.maximum(m - 1, 0), axis=-1)
  shift = jnp.where(inside, sorted_kernels.finite_or_zero(top), 0)
  x = jnp.where(inside, r_sorted - shift, 0)
  if kind == "none":
    a_sorted = ragged.apply(r_sorted, transform("none"))
  elif kind == "mean_std":
    s = ragged.apply(x, transform("none"))
    a_sorted = sorted_kernels.zscore(s, eps=_STD_EPS, valid=inside)
  elif kind == "loo":
    mf = m.astype(dtype)
    c = jnp.where(m > k, k / (mf * jnp.maximum(mf - 1, 1)), 0)

    def direct() -> jax.Array:
      # The loo coefficients on x; the shift moves every a_i by shift·(k/m − k/(m−1)).
      return ragged.apply(x, transform("loo")) - c * shift

    def precise() -> jax.Array:
      # (1 + c)·a_lc − c·U with c = k/(m(m−1)) (as a_lc = U − max@k(r_{−i})): its
      # coefficients round less than the loo suffix's.  Used for finite groups; with
      # an infinite reward the direct form keeps the dense call's IEEE values.
      lc = transform("loo_centered")
      u = sorted_kernels.compensated_sum(jnp.where(lc.diag != 0, lc.diag * x, 0))
      return (1 + c) * ragged.apply(x, lc) - c * (u[..., None] + shift)

    infinite = jnp.isinf(r_sorted)
    a_sorted = lax.cond(
      jnp.any(infinite),
      lambda: jnp.where(jnp.any(infinite, axis=-1, keepdims=True), direct(), precise()),
      precise,
    )
  else:
    a_sorted = ragged.apply(x, transform(kind))
  if kind in ("loo", "loo_centered"):
    # At m == k these are S (no leave-one-out estimate), which is not shift
    # invariant: S(r) = S(x) + shift there (every S(i) is the group maximum).
    a_sorted = a_sorted + jnp.where(m == k, shift, 0)
  a_sorted = jnp.where(inside & (m >= k), a_sorted, 0)
  return ragged.nan_group(rewards, valid, sorting.unsort_last(a_sorted, order))
