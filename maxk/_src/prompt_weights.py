"""How an advantage transform weights prompts, and objectives that are mixtures of pass@j.

With binary rewards a prompt is described by its success probability p = P(correct)
under the policy π, and for every advantage transform that treats the samples of a
group alike the expected update of one group is a multiple of ∇p:

  E[Σ_i a_i ∇log π(y_i)] = w(p) ∇p.

The weight w(p) says how hard the method pushes on a prompt of difficulty p: an
unbiased estimator of ∇f(p) has w = f', and any other method follows, in
expectation, the gradient of F(p) = ∫ w(p) dp.  :func:`implied_prompt_weight`
computes w(p) of any transform exactly (a sum over the binomial count of correct
samples), and :func:`success_objective_advantages` gives unbiased advantages for
any f(p) = Σ_j c_j pass@j(p), a polynomial in p (min@k = p^k, MaxRL's truncated
log-likelihood, ...), from one table indexed by the count of correct samples.

References: Williams (1992) (the score-function estimator); Walder & Karkhanis,
"Pass@K Policy Optimization", arXiv 2505.15201 (Eqs. 8, 29-30, 33-34: the pass@k
transforms combined here); Tajwar et al., arXiv 2602.02710 (MaxRL, a mixture of
pass@j).
"""

from __future__ import annotations

from collections.abc import Callable
import functools
import math

import jax
import jax.numpy as jnp
from jax.scipy import special
from jax.typing import ArrayLike
from jax.typing import DTypeLike
import numpy as np
import numpy.typing as npt

from maxk._src import advantages
from maxk._src import checks
from maxk._src import metrics
from maxk._src import ragged

#: The ``baseline`` options of :func:`success_objective_advantages` (the unbiased ones
#: of :func:`maxk.max_at_k_advantages`).
SUCCESS_BASELINES = ("none", "loo", "loo_centered", "loo_minus_one")

Transform = Callable[[np.ndarray], ArrayLike]


# ----------------------------------------------------------------------------
# The prompt weight w(p) of an advantage transform.
# ----------------------------------------------------------------------------


@functools.lru_cache(maxsize=64)
def _canonical_groups(n: int) -> np.ndarray:
  """[n + 1, n] float64: row c is [1]*c + [0]*(n − c), for c = 0..n."""
  return (np.arange(n)[None, :] < np.arange(n + 1)[:, None]).astype(np.float64)


@functools.lru_cache(maxsize=64)
def _log_binomials(m: int) -> np.ndarray:
  """log C(m, c) for c = 0..m in float64, from exact integers."""
  return np.array([math.log(math.comb(m, c)) for c in range(m + 1)])


def _check_equivariant(a: np.ndarray, groups: np.ndarray, reversed_a: np.ndarray) -> None:
  """Raises unless equal rewards get equal advantages, in either sample order."""
  n = groups.shape[-1]
  scale = float(np.max(np.abs(a), initial=0.0))
  tol = math.sqrt(float(np.finfo(a.dtype).eps)) * scale
  for c in range(n + 1):
    row = a[c]
    for outcome in (1.0, 0.0):
      values = row[groups[c] == outcome]
      if values.size and np.ptp(values) > tol:
        raise ValueError(
          "transform is not permutation-equivariant: in the group with "
          f"{c} correct of n={n} (correct first), the {'correct' if outcome else 'incorrect'} "
          f"samples get different advantages {values.tolist()}."
        )
    if np.max(np.abs(row - reversed_a[c, ::-1])) > tol:
      raise ValueError(
        "transform is not permutation-equivariant: the group with "
        f"{c} correct of n={n} gets {row.tolist()} with the correct samples first but "
        f"{reversed_a[c, ::-1].tolist()} (reordered) with them last."
      )


def implied_prompt_weight(transform: Transform, p: ArrayLike, n: int) -> jax.Array:
  """The weight w(p) with E[Σ_i a_i ∇log π(y_i)] = w(p) ∇p, for binary rewards.

  ``transform`` maps binary rewards ``[..., n]`` (float 0/1) to advantages, e.g.
  ``lambda r: maxk.max_at_k_advantages(r, 4)`` or ``maxk.grpo_advantages``; the n
  samples of a group are i.i.d. from π with P(correct) = p.  The result is exact
  up to the rounding of the advantages: a sum over the binomial count of correct
  samples, not a Monte Carlo estimate.

  Derivation.  a_1 depends on y_1 only through its outcome o_1 (the reward is
  binary), and given o_1 it is independent of y_1; since
  E[∇log π(y_1) | o_1 = 1] = ∇p / p and E[∇log π(y_1) | o_1 = 0] = −∇p / (1 − p),

    E[a_1 ∇log π(y_1)] = p E[a_1 | o_1 = 1] ∇p / p − (1 − p) E[a_1 | o_1 = 0] ∇p / (1 − p)
                       = (E[a_1 | o_1 = 1] − E[a_1 | o_1 = 0]) ∇p.

  The samples are exchangeable, so every i contributes the same and, with c the
  number of correct samples among the other n − 1, Bin(n − 1, p),

    w(p) = n Σ_{c=0}^{n−1} C(n−1, c) p^c (1 − p)^(n−1−c) (a_success(c + 1) − a_failure(c)),

  where a_success(c) and a_failure(c) are the advantages of a correct and of an
  incorrect sample in a group with c correct.  They are read from one call of
  ``transform`` on the n + 1 canonical groups [1]*c + [0]*(n − c), c = 0..n.

  Assumption: the transform is permutation-equivariant (reordering the samples
  reorders the advantages), so that the advantage of a sample depends only on its
  outcome and the count c.  Checked when the advantages are concrete (not
  traced): ``transform`` is called once on a [2n + 2, n] batch, the canonical
  groups and the same groups with the correct samples last, and the samples of
  equal outcome must get equal advantages, in both orders, to within
  sqrt(eps) · max|a| (float32: 3.5e-4 · max|a|); a smaller dependence on position
  goes undetected.  The transform must also return finite advantages there.

  Scale: w is that of Σ_i a_i ∇log π(y_i).  A trainer that averages its loss over
  the n samples scales every method by the same 1/n, so weights of different
  transforms compare as they are.  Examples at n = 16 (values of this function):

  * an unbiased estimator of ∇f has w = f' whatever its baseline: max@k
    (:func:`maxk.max_at_k_advantages` on binary rewards, i.e. pass@k) gives
    k (1 − p)^(k−1), largest on unsolved prompts (p → 0) for k > 1; RLOO gives
    w = n for every p.
  * GRPO (:func:`maxk.grpo_advantages`) divides by the group's std, which is
    smallest when c is near 0 or n: w(p) is U-shaped and symmetric, 30.9 at
    p = 1/2 (about n / √(p (1 − p)) = 32) rising to n √(n − 1) = 16 √15 ≈ 62.0 at
    p = 0 and p = 1, where a lone correct (incorrect) sample gets ±√(n − 1).  It
    stays finite at finite n; only as n → ∞ does it approach n / √(p (1 − p)).
  * Pass@k Training (:func:`maxk.pass_at_k_training_advantages`) at k = n gives
    w = 0: its group estimate of pass@n is 0 or 1, with std 0.
  * MaxRL (:func:`maxk.maxrl_advantages`, control variate) gives
    n (1 − (1 − p)^(n−1)) / p: n at p = 1, 32 at p = 1/2 and n (n − 1) = 240 at
    p = 0, close to n / p (the log-likelihood's weight) where (1 − p)^(n−1) is small.

  Args:
    transform: a callable from binary rewards ``[T, n]`` (a NumPy array of ``p``'s
      float dtype) to advantages of the same shape (NumPy or JAX).
    p: success probabilities in [0, 1], any shape; p = 0 and p = 1 are exact (the
      binomial mass is then all at c = 0 or c = n − 1).
    n: static int >= 1, the group size.

  Returns:
    ``p.shape`` weights in ``p``'s float dtype (float32 unless x64).  NaN where p is
    NaN, and, under ``jit`` (where the values cannot be checked), where p lies
    outside [0, 1].  Differentiable in p on (0, 1).  Cost: one call of
    ``transform`` on 2n + 2 groups, then O(n) per entry of ``p``.

  Raises:
    ValueError: ``transform`` not callable, or returning another shape,
      non-finite values or advantages that depend on the samples' order
      (concrete calls); bad ``n``; ``p`` not real, or (concrete) outside [0, 1].
  """
  if not callable(transform):
    raise ValueError(f"transform={transform!r} must be callable (rewards -> advantages).")
  n = checks.check_int(n, "n", low=1, high=checks.MAX_SIZE)
  p = checks.as_float_array(p, "p", min_ndim=0)
  if checks.is_concrete(p):
    values = np.asarray(p)
    if np.any((values < 0) | (values > 1)):
      bad = values[(values < 0) | (values > 1)]
      raise ValueError(f"p must lie in [0, 1]; got {bad.ravel()[:4].tolist()}.")
  dtype = p.dtype
  groups = _canonical_groups(n)
  batch = np.concatenate([groups, groups[:, ::-1]]).astype(dtype)
  a = jnp.asarray(transform(batch))
  if a.shape != batch.shape:
    raise ValueError(
      f"transform must return advantages of the rewards' shape {batch.shape}; got {a.shape}."
    )
  a = a.astype(dtype)
  if checks.is_concrete(a):
    host = np.asarray(a)
    if not np.all(np.isfinite(host)):
      count = int(np.argmax(~np.all(np.isfinite(host), axis=-1))) % (n + 1)
      raise ValueError(
        f"transform returned non-finite advantages for the group with {count} correct of n={n}."
      )
    _check_equivariant(host[: n + 1], groups, host[n + 1 :])
  return _weight(p, a[: n + 1], jnp.asarray(groups, dtype), _log_binomials(n - 1).astype(dtype))


@jax.jit
def _weight(p: jax.Array, a: jax.Array, groups: jax.Array, log_binomials: jax.Array) -> jax.Array:
  n = groups.shape[-1]
  count = jnp.arange(n + 1, dtype=p.dtype)
  # Mean over the samples of each outcome: the rounding of tied ranks averages out.
  success = jnp.sum(a * groups, axis=-1) / jnp.maximum(count, 1)
  failure = jnp.sum(a * (1 - groups), axis=-1) / jnp.maximum(n - count, 1)
  delta = success[1:] - failure[:-1]  # a_success(c + 1) − a_failure(c), c = 0..n−1
  c = count[:-1]
  q = p[..., None]
  # xlogy(0, 0) = 0: the edges p = 0 and p = 1 put all the mass on one count, exactly.
  log_pmf = log_binomials + special.xlogy(c, q) + special.xlog1py(n - 1 - c, -q)
  w = n * jnp.sum(jnp.exp(log_pmf) * delta, axis=-1)
  return jnp.where((p >= 0) & (p <= 1), w, jnp.nan)


# ----------------------------------------------------------------------------
# Unbiased advantages of f(p) = Σ_j c_j pass@j(p).
# ----------------------------------------------------------------------------


@functools.lru_cache(maxsize=64)
def _stacked_tables(n: int, size: int, baseline: str) -> np.ndarray:
  """[size, 2, n + 1] float64: the pass@j advantages of binary groups, j = 1..size.

  [j − 1, 0, c] is the advantage of a correct sample and [j − 1, 1, c] that of an
  incorrect one in a group with c correct (0 where no such sample exists).  In
  ascending order a group with c correct is n − c zeros then c ones, so from
  a_(m) = d_m r_(m) + Σ_{l>m} u_l r_(l) − Σ_{l<m} p_l r_(l):
    correct (take m = n): d_n − Σ_{n−c<l<n} p_l;  incorrect: Σ_{l>n−c} u_l.
  """
  out = np.zeros((size, 2, n + 1))
  for j in range(1, size + 1):
    d, u, p = advantages.transform_coefficients(n, j, advantages.reduced_baseline(baseline, n, j))
    u_tail = np.concatenate([[0.0], np.cumsum(u[::-1])])  # Σ of the last t of u
    p_tail = np.concatenate([[0.0], np.cumsum(p[:-1][::-1])])  # of p_1..p_{n−1}
    out[j - 1, 0, 1:] = d[-1] - p_tail[:n]
    out[j - 1, 1, :n] = u_tail[:n]
  return out


@functools.lru_cache(maxsize=16)
def _ragged_stacked_tables(n: int, size: int, baseline: str) -> np.ndarray:
  """[n + 1, size, 2, n + 1] float64: row m is :func:`_stacked_tables` of a group
  of m valid samples (counts c = 0..m), 0 for m < size (too few samples)."""
  out = np.zeros((n + 1, size, 2, n + 1))
  for m in range(size, n + 1):
    out[m, :, :, : m + 1] = _stacked_tables(m, size, baseline)
  return out


@functools.lru_cache(maxsize=64)
def _ragged_combined_operand(
  n: int, coefficients: tuple[float, ...], baseline: str, dtype: DTypeLike
) -> np.ndarray:
  """[n + 1, 2, n + 1]: :func:`_combined_operand` of each group size m (0 for m < J)."""
  out = np.zeros((n + 1, 2, n + 1))
  c = np.asarray(coefficients)
  for m in range(len(coefficients), n + 1):
    out[m, :, : m + 1] = np.tensordot(c, _stacked_tables(m, len(coefficients), baseline), 1)
  return np.asarray(out, np.dtype(dtype))


@functools.lru_cache(maxsize=256)
def _combined_operand(
  n: int, coefficients: tuple[float, ...], baseline: str, dtype: DTypeLike
) -> np.ndarray:
  # Combined in float64 on the host, then rounded once; a host argument of the
  # kernel (not a constant), so other coefficients reuse the compiled program.
  stacked = _stacked_tables(n, len(coefficients), baseline)
  return np.asarray(np.tensordot(np.asarray(coefficients), stacked, 1), np.dtype(dtype))


def _check_coefficients(coefficients: npt.ArrayLike | jax.Array, n: int) -> jax.Array | np.ndarray:
  """Host float64 NumPy coefficients if concrete, else the traced array."""
  c: jax.Array | np.ndarray
  if checks.is_concrete(coefficients):
    try:
      host = np.asarray(coefficients)
    except (TypeError, ValueError) as e:
      raise ValueError(f"coefficients must be a 1-D real array: {e}") from e
    if host.dtype.kind not in "biuf":
      raise ValueError(f"coefficients must be real; got dtype {host.dtype}.")
    c = host.astype(np.float64)
    if not np.all(np.isfinite(c)):
      raise ValueError(f"coefficients must be finite; got {c.tolist()}.")
  else:
    c = jnp.asarray(coefficients)
    checks.check_real(c, "coefficients")
  if c.ndim != 1 or not 1 <= c.shape[0] <= n:
    raise ValueError(
      f"coefficients must be 1-D with 1 <= len(coefficients) <= n={n}; got shape {c.shape}."
    )
  return c


def success_objective_advantages(
  correct: ArrayLike,
  coefficients: npt.ArrayLike | jax.Array,
  *,
  baseline: str = "loo_minus_one",
  where: ArrayLike | None = None,
) -> jax.Array:
  """Unbiased advantages for f(p) = Σ_{j=1}^{J} coefficients[j−1] · pass@j(p).

  The advantages are Σ_j c_j · ``max_at_k_advantages(correct, j, baseline=baseline)``
  (unbiased for ∇pass@j, so the sum is unbiased for ∇f: w(p) = f'(p) in
  :func:`implied_prompt_weight`).  On binary rewards each of them depends only on
  the sample's outcome and the group's count c of correct samples, and the
  transform is linear in its coefficient tables
  (:func:`maxk._src.advantages.transform_coefficients`), so the J transforms fold
  into one table of 2(n + 1) values, indexed by (outcome, c): no sort and no loop
  over j.  ``baseline`` is that of :func:`maxk.max_at_k_advantages` (the unbiased
  options), applied to each pass@j with its reductions (j = 1, j = n):

  * ``"loo_minus_one"`` (default): for j >= 2 a correct sample gets
    C(n−c, j−1)/C(n, j) and an incorrect one 0 (PKPO Eq. 33-34); pass@1 (j = 1)
    gets ``"loo_centered"``, RLOO / n, as in :func:`maxk.max_at_k_advantages`.
  * ``"loo_centered"``: for J < n, a_i = U − U_{−i}, with U the unbiased estimate
    of f from the group and U_{−i} that from the other n − 1 samples: the same as
    :func:`maxk.order_stat_advantages` (``baseline="loo_centered"``) for a rank
    objective that is such a mixture (min@k: ``rank_weights("min", k)``).
  * ``"loo"`` and ``"none"``: as in :func:`maxk.max_at_k_advantages`.  With ``"loo"``
    and ``"loo_centered"`` the pass@n term, which has no leave-one-out estimate,
    gets ``"none"``.

  Every polynomial f of degree <= n with f(0) = 0 is such a mixture, since
  pass@j = 1 − (1 − p)^j.  Examples: e_k gives pass@k; (−1)^(j+1) C(k, j) for
  j = 1..k gives min@k = p^k (all k correct).  MaxRL (:func:`maxk.maxrl_advantages`,
  Tajwar et al. arXiv 2602.02710) estimates n ∇Σ_{j=1}^{T} pass@j / j: coefficients
  n/j for j = 1..T, with T = n without and T = n − 1 with its control variate.  Per
  sample, with K_{−i} the number of other correct samples in the group and
  ``"loo_minus_one"`` (since Σ_{m=0}^{a} C(a, m)/C(b, m) = (b+1)/(b+1−a), the j >= 2
  terms give a correct sample n/c − 1):

    MaxRL without control variate = these advantages (T = n) + K_{−i}/(n − 1),
    MaxRL with control variate    = these advantages (T = n − 1) + K_{−i}/(n − 1)
                                    − 1[K_{−i} >= 1],

  baselines that do not depend on y_i (the RLOO baseline of the pass@1 term, and
  1[K_{−i} >= 1], the estimate of pass@(n−1) from the other n − 1 samples): the
  same expectation, w(p) = n (1 − (1 − p)^T) / p.

  Accuracy.  Host (concrete) coefficients are combined in float64 and rounded
  once to the output dtype.  Mixtures with large alternating coefficients cancel:
  min@k has |c_j| up to C(k, k/2), and the float64 table has absolute errors of
  ~1e-16 · Σ_j |c_j| (2^k) times the pass@j advantages.  Measured against exact
  rationals for min@k, k <= 16, n in {17, 32, 64}: every float32 advantage is
  within 6e-8 · max|a| of its exact value (entries that are exactly 0 come out
  below 2e-12).  Traced coefficients (under ``jit`` or ``grad`` with respect to
  them) are combined in the output dtype instead, where the cancellation costs
  ~eps · 2^k · max|a_j|: up to 5e-4 · max|a| for min@16 in float32; use host
  coefficients or x64 for such mixtures.

  Args:
    correct: ``[..., n]`` bool or {0, 1}, samples on the last axis, n >= 1.
    coefficients: ``[J]`` real, 1 <= J <= n: the weight of pass@j, j = 1..J.  Host
      values (NumPy, a list, a concrete JAX array) are static: the combined table is
      cached per (n, coefficients, baseline, dtype); a traced array is allowed.
    baseline: keyword-only, one of ``"none"``, ``"loo"``, ``"loo_centered"``,
      ``"loo_minus_one"``.
    where: keyword-only, optional bool, broadcastable to ``correct``: the valid
      samples of each group (ragged groups; README's "Ragged groups").  Each
      group's advantages are those of its m valid samples alone (the table of
      group size m, indexed by (outcome, c)); the other samples get 0, as do all
      samples of a group with m < J (no pass@J estimate from fewer than J
      samples).  The tables of every m <= n cost O(n² J) host work once per
      (n, coefficients, baseline) (a [n + 1, J, 2, n + 1] float64 table for
      traced coefficients).

  Returns:
    ``[..., n]`` advantages in ``correct``'s float dtype (float32 for bool/int
    input).  A group with a non-finite (valid) entry is all NaN (its valid
    entries, with ``where=``).  Cost: O(n) per group, plus O(n J) host work once
    per (n, J, baseline) for the tables.

  Raises:
    ValueError: ``correct`` without samples or (concrete) not {0, 1}; bad
      ``coefficients`` (not 1-D real, length outside [1, n], or concrete and not
      finite); unknown ``baseline``.
  """
  values, n, _, valid = metrics.validate_correct(correct, 1, where)
  baseline = checks.check_option(baseline, "baseline", SUCCESS_BASELINES)
  c = _check_coefficients(coefficients, n)
  if valid is not None:
    tables: jax.Array | np.ndarray
    if isinstance(c, np.ndarray):
      tables = _ragged_combined_operand(n, tuple(c.tolist()), baseline, values.dtype)
    else:
      stacked = _ragged_stacked_tables(n, c.shape[0], baseline).astype(values.dtype)
      tables = jnp.einsum("j,mjoc->moc", c.astype(values.dtype), stacked)
    return _apply_ragged_table(values, valid, tables)
  if isinstance(c, np.ndarray):
    table: jax.Array | np.ndarray = _combined_operand(n, tuple(c.tolist()), baseline, values.dtype)
  else:
    stacked = _stacked_tables(n, c.shape[0], baseline).astype(values.dtype)
    table = jnp.tensordot(c.astype(values.dtype), stacked, 1)
  return _apply_table(values, table)


@jax.jit
def _apply_table(values: jax.Array, table: jax.Array) -> jax.Array:
  _, index = metrics.count_correct(values)
  out = jnp.where(values == 1, table[0, index][..., None], table[1, index][..., None])
  # A non-finite entry makes its whole group NaN.
  return jnp.where(jnp.all(jnp.isfinite(values), axis=-1, keepdims=True), out, jnp.nan)


@jax.jit
def _apply_ragged_table(values: jax.Array, valid: jax.Array, tables: jax.Array) -> jax.Array:
  # The table of each group's size m, at its count c of correct valid samples.
  finite, m, c = ragged.count_correct(values, valid)
  out = jnp.where(values == 1, tables[m, 0, c][..., None], tables[m, 1, c][..., None])
  return jnp.where(valid, jnp.where(finite[..., None], out, jnp.nan), 0)
