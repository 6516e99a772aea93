"""Majority vote (self-consistency): maj@k estimates, their policy gradient, exact values.

Each sample carries a final answer (an integer id; equal ids are the same answer)
and whether that answer is correct.  maj@k (cons@k) is the probability that the
plurality answer among k i.i.d. samples is correct (Wang et al., self-consistency,
arXiv 2203.11171).  From n >= k samples its unbiased estimate is the mean over all
C(n, k) subsets (a U-statistic), and Σ_i a_i ∇log π(y_i) with the transforms below
is an unbiased estimate of its gradient (Tang et al., arXiv 2503.19595, optimise it).

Counting.  Group the samples into m distinct answers with counts c_b and let a
k-subset draw x_b of answer b.  With the top count t = max_b x_b, the subset's
credit under tie rule "uniform" is (#correct answers at t)/(#answers at t).  For a
fixed t, let f_b(z, v) = Σ_{x<t} w_b(x) z^x + v·w_b(t) z^t (w_b(x) the weight of
drawing x of answer b; v marks a tie at the top).  The credit-weighted count of
subsets whose top count is t is the coefficient of z^k in

  ∫_0^1 Σ_{a correct} w_a(t) z^t Π_{b≠a} f_b(z, u) du,

because 1/(1+J) = ∫_0^1 u^J du for J other answers tied at t.  The u-degree is at
most ⌊k/t⌋ − 1, so Gauss-Legendre with ⌈⌊k/t⌋/2⌉ nodes integrates it exactly; rule
"wrong" (a tie at the top is wrong) is the single node u = 0.  The sum over a is the
derivative of Π_b f_b with respect to the correct answers' marks, carried alongside
the product (forward mode) while the answers are multiplied in one at a time, so no
answer is left out separately.  For the exact value (A outcomes) this is a scan over
the A answers, each step a truncated polynomial product of degree k for every
(t, node) pair: O(A · k² · Σ_t ⌈⌊k/t⌋/2⌉) = O(A k³ log k).

Samples.  At top count t an answer with c_b < t samples never reaches t, so its
f_b is its whole (untruncated) weight polynomial, and all such answers together
with the abstentions are one pool factor: for the binomial weights below, the
product of their polynomials is the binomial pmf of their total count.  Only the
answers with c_b >= t, at most ⌊n/t⌋ of them, need a factor of their own, and that
factor has degree t.  Sorting the answers by count (largest first) gives level t
exactly ⌊n/t⌋ static slots (masked where c_b < t).  Per group the cost is
Σ_t ⌊n/t⌋ · ⌈⌊k/t⌋/2⌉ · (t + 1)(k + 1) = O(n k² log k).  The advantages need the
DP of every distinct answer with one vote forced for (or removed from) it: for an
answer with its own slot, the product over all the other slots comes from the
prefix and suffix products along the slot axis (the derivative carried in both),
read off at one coefficient; for an answer in the pool, or an abstention, the
change only moves one draw in or out of the pool.  That is a few times the cost of
maj@k, O(n k² log k) per group.

Weights.  For n samples w_b(x) = C(c_b, x) q^x (1 − q)^(c_b − x) with q = k/n (a
binomial pmf, so nothing overflows), and the product over answers, divided by
C(n, k) q^k (1 − q)^(n − k), is the hypergeometric probability of the draw.  For a
categorical policy (exact value) w_b(x) = p_b^x and the products are binomial
convolutions Σ_x C(s, x) w(x) F(s − x), which give the multinomial probabilities.
All coefficient tables are float64 on the host, cast to the input's dtype.
"""

from __future__ import annotations

import functools
import math
import numbers
from typing import NamedTuple

import jax
from jax import lax
import jax.numpy as jnp
from jax.typing import ArrayLike
from jax.typing import DTypeLike
import numpy as np

from maxk._src import advantages
from maxk._src import categorical
from maxk._src import checks
from maxk._src import combinatorics
from maxk._src import metrics
from maxk._src import ragged

#: The ``tie`` rules of the majority-vote functions.
TIE_RULES = ("uniform", "wrong")
#: The ``baseline`` options of :func:`maj_at_k_advantages`.
MAJ_BASELINES = ("none", "loo", "loo_centered", "loo_minus_one")
# The baseline enters the advantages' compiled kernel as a traced code (its index in
# MAJ_BASELINES), so every baseline at one (shape, k, tie) shares one compilation.
_NONE, _LOO, _LOO_CENTERED, _LOO_MINUS_ONE = range(len(MAJ_BASELINES))


class _Pairs(NamedTuple):
  """The (top count t, quadrature node u, weight) pairs and their masks over x = 0..k."""

  below: np.ndarray  # [P, k+1]: x < t.
  at: np.ndarray  # [P, k+1]: x == t.
  u: np.ndarray  # [P]
  weight: np.ndarray  # [P]


@functools.lru_cache(maxsize=128)
def _pairs(k: int, tie: str, dtype: np.dtype) -> _Pairs:
  ts, us, ws = [], [], []
  for t in range(1, k + 1):
    if tie == "wrong":
      nodes, weights = np.zeros(1), np.ones(1)
    else:
      # Exact for the u-degree ⌊k/t⌋ − 1 of the tie polynomial: 2G − 1 >= ⌊k/t⌋ − 1.
      g = max(1, -(-(k // t) // 2))
      xi, wi = np.polynomial.legendre.leggauss(g)
      nodes, weights = (xi + 1) / 2, wi / 2
    ts += [t] * len(nodes)
    us += list(nodes)
    ws += list(weights)
  t_arr = np.asarray(ts)[:, None]
  x = np.arange(k + 1)[None, :]
  dt = np.dtype(dtype)
  return _Pairs(
    (x < t_arr).astype(dt), (x == t_arr).astype(dt), np.asarray(us, dt), np.asarray(ws, dt)
  )


@functools.lru_cache(maxsize=128)
def _binomial_pmf_table(n: int, k: int, dtype: np.dtype) -> np.ndarray:
  """W[c, x] = C(c, x) q^x (1 − q)^(c − x), q = k/n, for c = 0..n, x = 0..k (float64 math)."""
  q = k / n
  c = np.arange(n + 1)[:, None].astype(np.float64)
  x = np.arange(k + 1)[None, :].astype(np.float64)
  lg = np.vectorize(math.lgamma)
  valid = x <= c
  cc, xx = np.broadcast_arrays(c, x)
  log_comb = np.where(valid, lg(cc + 1) - lg(xx + 1) - lg(np.maximum(cc - xx, 0) + 1), 0.0)
  log_q = xx * math.log(q)
  # q = 1 (k = n): only x = c has weight (0^0 = 1).
  rest = cc - xx
  log_1mq = rest * math.log1p(-q) if q < 1 else np.where(rest > 0, -np.inf, 0.0)
  table = np.where(valid, np.exp(log_comb + log_q + log_1mq), 0.0)
  return np.asarray(table, np.dtype(dtype))


class _Tables(NamedTuple):
  pairs: _Pairs
  pmf: np.ndarray  # [n+1, k+1] binomial pmf table (samples) or unused.
  kernel: np.ndarray  # [k+1, k+1]: K[s, x], 0 for x > s.
  shift: np.ndarray  # [k+1, k+1] int: max(s − x, 0).


def _shift(k: int) -> np.ndarray:
  s, x = np.arange(k + 1)[:, None], np.arange(k + 1)[None, :]
  return np.maximum(s - x, 0).astype(np.int32)


@functools.lru_cache(maxsize=128)
def _exact_tables(k: int, tie: str, dtype: DTypeLike) -> _Tables:
  kernel = np.array(
    [[math.comb(s, x) if x <= s else 0 for x in range(k + 1)] for s in range(k + 1)], np.float64
  )
  if kernel.max() > np.finfo(np.dtype(dtype)).max:
    raise ValueError(
      f"k={k} is too large for {np.dtype(dtype).name}: C(k, k/2) overflows; use float64"
      " (jax_enable_x64)."
    )
  cast = np.asarray(kernel, np.dtype(dtype))
  dt = np.dtype(dtype)
  return _Tables(_pairs(k, tie, dt), np.zeros((1, k + 1), dt), cast, _shift(k))


def _vote_credit(
  init: jax.Array,
  rows: jax.Array,
  corr: jax.Array,
  free: jax.Array,
  slot: jax.Array,
  alt_row: jax.Array,
  tables: _Tables,
) -> jax.Array:
  """Credit polynomials of V variants of one group: [V, k+1], its coefficient s of z^s.

  Coefficient s is Σ over (t, u) pairs of weight · [z^s] Σ_{a correct} w_a(t) z^t
  Π_{b≠a} f_b(z, u).  init: [V, k+1] the weights of the pool that never wins
  (abstentions).  rows: [M, k+1] each answer's w_b(x), except that variant v uses
  ``alt_row[v]`` for answer ``slot[v]`` (no answer where slot is -1).  corr: [M] 1
  for a correct answer.  free: [M] 1 for an answer that never wins (its row enters
  untruncated).
  """
  pairs = tables.pairs
  below, at, u = jnp.asarray(pairs.below), jnp.asarray(pairs.at), jnp.asarray(pairs.u)
  kernel, shift = jnp.asarray(tables.kernel), jnp.asarray(tables.shift)
  mask = below + u[:, None] * at  # [P, k+1]

  def product(g: jax.Array, f: jax.Array) -> jax.Array:
    # out[v, p, s] = Σ_x K[s, x] f[v, p, x] g[v, p, s − x] (truncated at degree k).
    return jnp.einsum("vpsx,sx,vpx->vps", g[..., shift], kernel, f)

  def step(carry: tuple[jax.Array, jax.Array], xs: tuple[jax.Array, ...]) -> tuple:
    f_prod, d_prod = carry
    b, row, c, fr = xs
    row = jnp.where((slot == b)[:, None], alt_row, row[None, :])[:, None, :]  # [V, 1, k+1]
    factor = row * jnp.where(fr > 0, 1.0, mask)
    tie_factor = (c * (1 - fr)) * row * at
    return (product(f_prod, factor), product(d_prod, factor) + product(f_prod, tie_factor)), None

  f0 = jnp.broadcast_to(init[:, None, :], (init.shape[0], *mask.shape)).astype(rows.dtype)
  slots = jnp.arange(rows.shape[0], dtype=jnp.int32)
  (_, d_prod), _ = lax.scan(step, (f0, jnp.zeros_like(f0)), (slots, rows, corr, free))
  return jnp.einsum("p,vps->vs", jnp.asarray(pairs.weight), d_prod)


def _classes(ids: jax.Array, corr: jax.Array) -> tuple[jax.Array, ...]:
  """Distinct answers of one group [n] by sorting the ids.

  Returns (cid [n] class slot of each sample, counts [n], correct [n] of each class
  slot, abstain count, inconsistent flag).  Negative ids are abstentions (no class).
  """
  n = ids.shape[0]
  iota = jnp.arange(n, dtype=jnp.int32)
  ids_s, perm = lax.sort((ids, iota), num_keys=1)
  new = jnp.concatenate([jnp.ones((1,), bool), ids_s[1:] != ids_s[:-1]])
  cid_s = jnp.cumsum(new.astype(jnp.int32)) - 1
  cid = jnp.zeros((n,), jnp.int32).at[perm].set(cid_s)
  answered = ids >= 0
  counts = jax.ops.segment_sum(answered.astype(jnp.int32), cid, num_segments=n)
  n_correct = jax.ops.segment_sum(jnp.where(answered, corr, 0), cid, num_segments=n)
  mixed = jnp.any((n_correct > 0) & (n_correct < counts))
  abstain_correct = jnp.any(~answered & (corr > 0))
  abstain = jnp.sum(~answered).astype(jnp.int32)
  return cid, counts, (n_correct > 0).astype(corr.dtype), abstain, mixed | abstain_correct


class _Level(NamedTuple):
  """One top count t of the sample DP: its answer slots, quadrature and index tables."""

  t: int
  slots: int  # ⌊n/t⌋: at most this many answers have a count >= t.
  mask: np.ndarray  # [G, t+1]: 1 for x < t, the node u at x = t.
  weight: np.ndarray  # [G] quadrature weights.
  gather: np.ndarray  # [k+1, t+1] int: max(s − x, 0).
  inside: np.ndarray  # [k+1, t+1]: 1 where x <= s.


@functools.lru_cache(maxsize=128)
def _levels(n: int, k: int, tie: str, dtype: np.dtype) -> tuple[_Level, ...]:
  pairs = _pairs(k, tie, dtype)
  t_of_pair = np.argmax(pairs.at, axis=1)
  s = np.arange(k + 1)[:, None]
  levels = []
  for t in range(1, k + 1):
    rows = t_of_pair == t
    mask = pairs.below[rows, : t + 1] + pairs.u[rows, None] * pairs.at[rows, : t + 1]
    x = np.arange(t + 1)[None, :]
    levels.append(
      _Level(
        t,
        n // t,
        np.asarray(mask, dtype),
        pairs.weight[rows],
        np.maximum(s - x, 0).astype(np.int32),
        (x <= s).astype(dtype),
      )
    )
  return tuple(levels)


def _times_short(poly: jax.Array, factor: jax.Array, level: _Level) -> jax.Array:
  """poly [..., k+1] times factor [..., t+1] (same leading shape), truncated at degree k."""
  gathered = poly[..., level.gather]  # [..., k+1, t+1]: poly[s − x]
  return jnp.einsum("...sx,sx,...x->...s", gathered, jnp.asarray(level.inside), factor)


def _times_power(poly: jax.Array, t: int) -> jax.Array:
  """poly · z^t truncated at degree k."""
  pad = [(0, 0)] * (poly.ndim - 1) + [(t, 0)]
  return jnp.pad(poly[..., : poly.shape[-1] - t], pad)


def _coefficient(a: jax.Array, b: jax.Array, degree: int) -> jax.Array:
  """[z^degree] of a · b over the last axis (0 for a negative degree)."""
  if degree < 0:
    return jnp.zeros(a.shape[:-1], a.dtype)
  return jnp.sum(a[..., : degree + 1] * jnp.flip(b[..., : degree + 1], -1), -1)


def _coefficient_at(a: jax.Array, b: jax.Array, degree: int | jax.Array) -> jax.Array:
  """:func:`_coefficient` at a ``degree`` in [0, k] that may be traced (k + 1 = the
  last axis)."""
  lag = degree - jnp.arange(a.shape[-1])
  b_lagged = jnp.take(b, jnp.maximum(lag, 0), axis=-1)  # b[..., degree − x]
  return jnp.sum(jnp.where(lag >= 0, a * b_lagged, 0), -1)


def _slot_factors(
  rows: jax.Array, corr: jax.Array, valid: jax.Array, level: _Level
) -> tuple[jax.Array, jax.Array]:
  """Each slot's f_b(z, u) [J, G, t+1] and tie coefficient corr_b · w_b(t) [J].

  An invalid slot (no answer with count >= t there) is the factor 1.
  """
  t = level.t
  f = rows[:, None, : t + 1] * jnp.asarray(level.mask)
  one = np.zeros(t + 1)
  one[0] = 1
  f = jnp.where(valid[:, None, None], f, jnp.asarray(one, f.dtype))
  return f, jnp.where(valid, corr * rows[:, t], 0)


def _scan_slots(
  f: jax.Array, tie: jax.Array, init: jax.Array, level: _Level, *, reverse: bool = False
) -> tuple[tuple[jax.Array, jax.Array], tuple[jax.Array, jax.Array]]:
  """Multiplies the slots' factors into (F, D) = (init, 0), D the tie derivative.

  Returns the final (F, D) [G, k+1] and, per slot, the (F, D) before that slot's
  factor [J, G, k+1] (the product over the slots before it, or after it with
  ``reverse``).
  """

  def step(carry: tuple[jax.Array, jax.Array], xs: tuple[jax.Array, jax.Array]) -> tuple:
    prod, deriv = carry
    fj, cj = xs
    new = (
      _times_short(prod, fj, level),
      _times_short(deriv, fj, level) + cj * _times_power(prod, level.t),
    )
    return new, carry

  start = jnp.broadcast_to(init, (f.shape[1], init.shape[-1]))
  return lax.scan(step, (start, jnp.zeros_like(start)), (f, tie), reverse=reverse)


def _sorted_classes(counts: jax.Array, corr: jax.Array) -> tuple[jax.Array, ...]:
  """The answer classes by count, largest first: (perm, counts, correct)."""
  iota = jnp.arange(counts.shape[0], dtype=jnp.int32)
  _, perm = lax.sort((-counts, iota), num_keys=1)
  return perm, counts[perm], corr[perm]


def _sample_value(
  counts: jax.Array,
  corr: jax.Array,
  pmf: jax.Array,
  n: int,
  k: int,
  tie: str,
  size: int | jax.Array | None = None,
) -> jax.Array:
  """maj@k of one group of ``size`` <= n samples (default n) from its class counts
  (abstentions: size − Σ counts); ``pmf`` holds the weights of that size."""
  size = n if size is None else size
  _, cs, corr_s = _sorted_classes(counts, corr)
  total = jnp.zeros((), pmf.dtype)
  for level in _levels(n, k, tie, np.dtype(pmf.dtype)):
    valid = cs[: level.slots] >= level.t
    pool = size - jnp.sum(jnp.where(valid, cs[: level.slots], 0))
    f, tie_coef = _slot_factors(pmf[cs[: level.slots]], corr_s[: level.slots], valid, level)
    (_, deriv), _ = _scan_slots(f, tie_coef, pmf[pool], level)
    total = total + jnp.asarray(level.weight) @ deriv[:, k]
  return total / pmf[size, k]


class _PmfFactors(NamedTuple):
  """Static factors of the weights W_m[c, x] = C(c, x) q^x (1 − q)^(c − x), q = k/m,
  of a group of m <= n valid samples (:class:`maxk._src.ragged.Pow2`, host arrays)."""

  binom: ragged.Pow2  # [n + 1, k + 1]: C(c, x).
  q_power: ragged.Pow2  # [n + 1, k + 1]: q^x at [m, x] (0 for m < k).
  rest_power: ragged.Pow2  # [n + 1, n + 1]: (1 − q)^y at [m, y] (0^0 = 1 at m = k).


@functools.lru_cache(maxsize=32)
def _pmf_factors(n: int, k: int, dtype: DTypeLike) -> _PmfFactors:
  c = np.arange(n + 1)[:, None]
  x = np.arange(k + 1)[None, :]
  y = np.arange(n + 1)[None, :].astype(np.float64)
  m = np.arange(n + 1, dtype=np.float64)[:, None]
  with np.errstate(divide="ignore", invalid="ignore"):
    log_q = np.where(m >= k, x * np.log(k / np.maximum(m, 1)), -np.inf)
    log_rest = np.where(m > k, y * np.log1p(-k / np.maximum(m, 1)), -np.inf)
  log_rest = np.where((y == 0) & (m >= k), 0.0, log_rest)

  def host(log_values: np.ndarray) -> ragged.Pow2:
    mant, exp = ragged.pow2(log_values)
    return ragged.Pow2(np.asarray(mant, np.dtype(dtype)), exp)

  return _PmfFactors(host(combinatorics.log_binom(c, x)), host(log_q), host(log_rest))


def _group_pmf(factors: _PmfFactors, m: jax.Array, dtype: jnp.dtype) -> jax.Array:
  """W_m [n + 1, k + 1] of one group of m valid samples (:func:`_binomial_pmf_table`
  at size m, as a product of three mantissas and a power of two)."""
  c = jnp.arange(factors.binom.mant.shape[0])[:, None]
  x = jnp.arange(factors.binom.mant.shape[1])[None, :]
  y = jnp.maximum(c - x, 0)
  binom, q_power, rest_power = factors
  mant = binom.mant * q_power.mant[m][None, :] * rest_power.mant[m][y]
  exp = binom.exp + q_power.exp[m][None, :] + rest_power.exp[m][y]
  return jnp.where(x <= c, jnp.ldexp(mant.astype(dtype), exp), 0)


def _valid_only(
  ids_row: jax.Array, v_row: jax.Array, valid_row: jax.Array
) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
  """(ids, correct, m, bad) of one group's valid samples: an invalid sample becomes an
  abstention flagged wrong (it joins no answer; its place is not counted, as the
  pool of a group of m samples is m − Σ counts); bad: a NaN among the valid ones."""
  bad = jnp.any(jnp.isnan(v_row) & valid_row)
  ids = jnp.where(valid_row, ids_row, -1)
  corr = jnp.where(valid_row, jnp.nan_to_num(v_row), 0)
  return ids, corr, jnp.sum(valid_row, dtype=jnp.int32), bad


def _answer_ids(answer_ids: ArrayLike) -> jax.Array:
  """``answer_ids`` as an integer JAX array whose equalities and signs are the caller's.

  A JAX array (also a traced one) is used as it is.  Host ids (NumPy arrays,
  Python ints of any size, e.g. from ``hash()``) that JAX would narrow (64-bit
  ints without ``jax_enable_x64``, Python ints beyond int64) are factorised on the
  host instead: each distinct non-negative id becomes its int32 rank among them and
  every negative id becomes -1, which keeps which samples share an answer and
  which abstain.
  """
  if isinstance(answer_ids, jax.Array):
    ids = answer_ids
    if not jnp.issubdtype(ids.dtype, jnp.integer):
      raise ValueError(f"answer_ids must be an integer array; got dtype {ids.dtype}.")
    return ids
  try:
    host = np.asarray(answer_ids)
  except (TypeError, ValueError, OverflowError) as e:
    raise ValueError(f"answer_ids must be an integer array: {e}") from e
  if host.dtype == object:
    flat = host.reshape(-1)
    if not all(isinstance(a, numbers.Integral) and not isinstance(a, bool) for a in flat):
      raise ValueError("answer_ids must be an integer array; got non-integer objects.")
  elif not np.issubdtype(host.dtype, np.integer):
    raise ValueError(f"answer_ids must be an integer array; got dtype {host.dtype}.")
  elif jax.dtypes.canonicalize_dtype(host.dtype) == host.dtype:
    return jnp.asarray(host)
  answered = host >= 0
  distinct, codes = np.unique(host[answered], return_inverse=True)
  if distinct.size > np.iinfo(np.int32).max:
    raise ValueError(
      f"answer_ids has {distinct.size} distinct answers; at most {np.iinfo(np.int32).max}."
    )
  out = np.full(host.shape, -1, np.int32)
  out[answered] = codes.reshape(-1)
  return jnp.asarray(out)


def _prepare(
  answer_ids: ArrayLike, correct: ArrayLike, k: int, tie: str, where: ArrayLike | None = None
) -> tuple[jax.Array, jax.Array, int, int, jax.Array | None]:
  ids = _answer_ids(answer_ids)
  if ids.ndim < 1:
    raise ValueError(f"answer_ids must have the sample axis last; got shape {ids.shape}.")
  try:
    corr_arr = jnp.asarray(correct)
  except (TypeError, ValueError) as e:
    raise ValueError(f"correct must be a bool or 0/1 numeric array: {e}") from e
  checks.check_same_shape(ids, "answer_ids", corr_arr, "correct")
  values, n, k, valid = metrics.validate_correct(corr_arr, k, where)
  checks.check_option(tie, "tie", TIE_RULES)
  return ids, values, n, k, valid


def _flat(x: jax.Array) -> jax.Array:
  return x.reshape((-1, x.shape[-1]))


def maj_at_k(
  answer_ids: ArrayLike,
  correct: ArrayLike,
  k: int,
  *,
  tie: str = "uniform",
  where: ArrayLike | None = None,
) -> jax.Array:
  """Unbiased maj@k estimate: the mean over all k-subsets of "the plurality answer is correct".

  maj@k ≈ (1/C(n,k)) Σ_{|I|=k} h(I), where h(I) is 1 when the most frequent answer
  among the samples I is correct (self-consistency, Wang et al. arXiv 2203.11171,
  Sec. 2; cons@k).  Computed by counting, without enumerating subsets (module
  docstring, "Samples"): cost O(Σ_{t<=k} ⌊n/t⌋ · ⌈⌊k/t⌋/2⌉ · t k) = O(n k² log k)
  per group, all sums of positive terms with float64 coefficient tables.  k = 1 gives the mean
  of ``correct`` (pass@1).

  Ties at the top (``tie``):

  * ``"uniform"`` (default): the tie is broken uniformly at random; h(I) is the
    fraction of the tied top answers that are correct.
  * ``"wrong"``: any tie at the top counts as wrong.

  Abstentions: a negative id means "no answer extracted".  It takes a place in the
  subset but never wins the vote; a subset of abstentions only has h = 0.  Its
  ``correct`` flag must be False.

  Ids of any width are compared exactly: host ids (NumPy int64/uint64, Python
  ints of any size) that JAX would narrow without ``jax_enable_x64`` are
  factorised on the host into int32 codes first (equal ids stay equal, negative
  ids stay abstentions).  A JAX array is used as it is (it cannot hold 64-bit ids
  without x64).  Python's ``hash()`` is negative for about half of all values,
  which would abstain: use e.g. ``hash(answer) % 2**63`` as the id.

  Args:
    answer_ids: ``[..., n]`` integer answer labels; samples on the last axis.
    correct: ``[..., n]`` bool or {0, 1}: whether each sample's answer is correct.
    k: static int, ``1 <= k <= n``.
    tie: keyword-only, ``"uniform"`` or ``"wrong"``.
    where: keyword-only, optional bool, broadcastable to ``correct``: the valid
      samples of each group (ragged groups; README's "Ragged groups").  A
      group's estimate is that of its m valid samples alone (an invalid sample
      takes no place in any subset, unlike an abstention), NaN where m < k.  The
      weights of q = k/m are products of static factors of (c, x) and of m
      (as mantissas and powers of two), O(nk) per group on top of the DP.

  Returns:
    ``[...]`` estimates in [0, 1], in ``correct``'s floating dtype (float32 for
    bool).  NaN for a group where one answer id carries both correct and incorrect
    flags, where an abstention is flagged correct (there is then no right answer),
    or where ``correct`` holds NaN; other groups are unaffected.

  Raises:
    ValueError: non-integer ``answer_ids`` (or more than 2^31 − 1 distinct ones),
      shapes that differ, ``k`` not an int in [1, n], an unknown ``tie``, or
      (eagerly) ``correct`` outside {0, 1}.

  References: Wang et al. arXiv 2203.11171 (Sec. 2); Tang et al. arXiv 2503.19595.
  """
  ids, values, n, k, valid = _prepare(answer_ids, correct, k, tie, where)
  if valid is not None:
    factors = _pmf_factors(n, k, values.dtype)
    return _maj_at_k_ragged(ids, values, valid, factors, k, tie).reshape(ids.shape[:-1])
  pmf = _binomial_pmf_table(n, k, values.dtype)
  return _maj_at_k(ids, values, pmf, k, tie).reshape(ids.shape[:-1])


@functools.partial(jax.jit, static_argnums=(3, 4))
def _maj_at_k(ids: jax.Array, values: jax.Array, pmf: jax.Array, k: int, tie: str) -> jax.Array:
  n = ids.shape[-1]

  def one(ids_row: jax.Array, v_row: jax.Array) -> jax.Array:
    bad = jnp.any(jnp.isnan(v_row))
    _, counts, corr, _, mixed = _classes(ids_row, jnp.nan_to_num(v_row))
    value = _sample_value(counts, corr, pmf, n, k, tie)
    return jnp.where(bad | mixed, jnp.nan, value)

  return jax.vmap(one)(_flat(ids), _flat(values))


@functools.partial(jax.jit, static_argnums=(4, 5))
def _maj_at_k_ragged(
  ids: jax.Array, values: jax.Array, valid: jax.Array, factors: _PmfFactors, k: int, tie: str
) -> jax.Array:
  n = ids.shape[-1]

  def one(ids_row: jax.Array, v_row: jax.Array, valid_row: jax.Array) -> jax.Array:
    ids_row, corr_row, m, bad = _valid_only(ids_row, v_row, valid_row)
    _, counts, corr, _, mixed = _classes(ids_row, corr_row)
    size = jnp.maximum(m, k)  # groups with m < k are NaN
    value = _sample_value(counts, corr, _group_pmf(factors, size, values.dtype), n, k, tie, size)
    return jnp.where(bad | mixed | (m < k), jnp.nan, value)

  return jax.vmap(one)(_flat(ids), _flat(values), _flat(valid))


def maj_at_k_advantages(
  answer_ids: ArrayLike,
  correct: ArrayLike,
  k: int,
  *,
  tie: str = "uniform",
  baseline: str = "loo_minus_one",
  where: ArrayLike | None = None,
) -> jax.Array:
  """Transformed rewards a_i whose Σ_i a_i ∇log π(y_i) is an unbiased estimate of ∇ maj@k.

  With h(I) as in :func:`maj_at_k` and S(i) = (1/C(n,k)) Σ_{|I|=k, I∋i} h(I) (the
  reward transform of PKPO, arXiv 2505.15201, Eq. 18-21, with the subset maximum
  replaced by the vote) and M(·, k) = :func:`maj_at_k`:

  * ``"none"``: a_i = S(i).
  * ``"loo"``: a_i = S(i) − k/(n−1) · M(samples without i, k).
  * ``"loo_centered"``: a_i = S(i) − k/n · M(samples without i, k); sums to 0.
  * ``"loo_minus_one"`` (default): a_i = (1/C(n,k)) Σ_{I∋i} (h(I) − h(I∖i))
    = S(i) − k/n · M(samples without i, k−1).

  Each baseline is a function of the other samples only, so every option is
  unbiased (the score-function estimator of Williams 1992; maj@k is optimised this
  way by Tang et al. arXiv 2503.19595).  As for :func:`maxk.max_at_k_advantages`,
  ``"loo"`` and ``"loo_centered"`` equal ``"none"`` at n == k, and
  ``"loo_minus_one"`` equals ``"loo_centered"`` at k == 1.

  Samples with the same answer id have the same a_i, so everything is computed per
  distinct answer: S(i) = (k/n) · E[h(J ∪ {i})] over the (k−1)-subsets J of the
  other samples is the counting DP of :func:`maj_at_k` over the n − 1 others with
  one vote forced for i's answer, and the leave-one-out value is the same DP
  without that vote.  All of these come from one pass of that DP over the answers
  (prefix and suffix products of the answers' factors; module docstring,
  "Samples"), so the cost per group is O(n k² log k), a few times that of
  :func:`maj_at_k`.

  Args:
    answer_ids: ``[..., n]`` integer answer labels of any width (negative: no
      answer; 64-bit host ids factorised, as in :func:`maj_at_k`).
    correct: ``[..., n]`` bool or {0, 1}.
    k: static int, ``1 <= k <= n``.
    tie: keyword-only, ``"uniform"`` or ``"wrong"`` (as in :func:`maj_at_k`).
    baseline: keyword-only, one of ``"none"``, ``"loo"``, ``"loo_centered"``,
      ``"loo_minus_one"``.
    where: keyword-only, optional bool, broadcastable to ``correct``: the valid
      samples of each group (ragged groups).  Each group's advantages are those
      of its m valid samples alone (n replaced by m above, as in
      :func:`maj_at_k`); the others get 0, as do all samples of a group with
      m < k.

  Returns:
    ``[..., n]`` advantages in the caller's sample order; a group that
    :func:`maj_at_k` makes NaN is all NaN (its valid samples, with ``where=``).

  Raises:
    ValueError: as :func:`maj_at_k`, or an unknown ``baseline``.

  References: Wang et al. arXiv 2203.11171; Tang et al. arXiv 2503.19595; Walder &
  Karkhanis, PKPO, arXiv 2505.15201 (Eq. 18-21, 29-30, 33-34).
  """
  ids, values, n, k, valid = _prepare(answer_ids, correct, k, tie, where)
  baseline = checks.check_option(baseline, "baseline", MAJ_BASELINES)
  if valid is not None:
    # The reductions that depend on k only; those at m == k are made per group.
    kind = "loo_centered" if baseline == "loo_minus_one" and k == 1 else baseline
    factors = _pmf_factors(n, k, values.dtype)
    code = np.int32(MAJ_BASELINES.index(kind))
    out = _maj_at_k_advantages_ragged(ids, values, valid, factors, code, k, tie)
    return out.reshape(ids.shape)
  kind = advantages.reduced_baseline(baseline, n, k)
  pmf = _binomial_pmf_table(n, k, values.dtype)
  # "loo" and "loo_centered" differ only in the leave-one-out estimate's scale.
  scale = k / (n - 1) if kind == "loo" else k / n
  code = np.int32(MAJ_BASELINES.index(kind))
  return _maj_at_k_advantages(ids, values, pmf, scale, code, k, tie).reshape(ids.shape)


@functools.partial(jax.jit, static_argnums=(5, 6))
def _maj_at_k_advantages(
  ids: jax.Array,
  values: jax.Array,
  pmf: jax.Array,
  scale: float | jax.Array,
  code: jax.Array,
  k: int,
  tie: str,
) -> jax.Array:
  n = ids.shape[-1]
  # S(i) = (k/n) · E[h(J ∪ {i})] over (k−1)-subsets J of the other n − 1 samples: the
  # DP of the other samples with one vote forced for i's answer (its row shifted by
  # one draw), read at z^k.  The leave-one-out values are the same DP without that
  # vote, read at z^(k−1) ("loo_minus_one") or z^k.  Both use the binomial weights of
  # q = k/n on the n − 1 others (any q gives the same ratio; this one keeps the
  # values in range).

  def one(ids_row: jax.Array, v_row: jax.Array) -> jax.Array:
    bad = jnp.any(jnp.isnan(v_row))
    cid, counts, corr, _, mixed = _classes(ids_row, jnp.nan_to_num(v_row))
    a = _advantage_row(ids_row, cid, counts, corr, pmf, n, scale, None, code, k, tie)
    return jnp.where(bad | mixed, jnp.nan, a)

  return jax.vmap(one)(_flat(ids), _flat(values))


@functools.partial(jax.jit, static_argnums=(5, 6))
def _maj_at_k_advantages_ragged(
  ids: jax.Array,
  values: jax.Array,
  valid: jax.Array,
  factors: _PmfFactors,
  code: jax.Array,
  k: int,
  tie: str,
) -> jax.Array:
  # The dense transform of each group's m valid samples: weights of q = k/m, S's
  # scale k/m and the leave-one-out scale of m; at m == k "loo" and
  # "loo_centered" are "none" (as the dense reduction at n == k).
  def one(ids_row: jax.Array, v_row: jax.Array, valid_row: jax.Array) -> jax.Array:
    ids_row, corr_row, m, bad = _valid_only(ids_row, v_row, valid_row)
    cid, counts, corr, _, mixed = _classes(ids_row, corr_row)
    size = jnp.maximum(m, k)
    pmf = _group_pmf(factors, size, values.dtype)
    mf = size.astype(values.dtype)
    scale = jnp.where(code == _LOO, k / jnp.maximum(mf - 1, 1), k / mf)
    a = _advantage_row(ids_row, cid, counts, corr, pmf, size, scale, size == k, code, k, tie)
    a = jnp.where(valid_row & (m >= k), a, 0)
    return jnp.where(valid_row & (bad | mixed), jnp.nan, a)

  return jax.vmap(one)(_flat(ids), _flat(values), _flat(valid))


def _advantage_row(
  ids_row: jax.Array,
  cid: jax.Array,
  counts: jax.Array,
  corr: jax.Array,
  pmf: jax.Array,
  size: int | jax.Array,
  scale: float | jax.Array,
  plain: jax.Array | None,
  code: jax.Array,
  k: int,
  tie: str,
) -> jax.Array:
  """The advantages of one group of ``size`` <= n samples (n = ``ids_row``'s length)
  from its classes (:func:`_classes`) and the weights ``pmf`` of that size, for the
  baseline ``code`` (traced; "loo" and "loo_centered" differ only in ``scale``); with
  ``plain`` True, they give "none" (no leave-one-out estimate at size == k)."""
  n = ids_row.shape[0]
  # S(i) = (k/n) · E[h(J ∪ {i})] over (k−1)-subsets J of the other n − 1 samples: the
  # DP of the other samples with one vote forced for i's answer (its row shifted by
  # one draw), read at z^k.  The leave-one-out values are the same DP without that
  # vote, read at z^(k−1) ("loo_minus_one") or z^k.  Both use the binomial weights of
  # q = k/n on the n − 1 others (any q gives the same ratio; this one keeps the
  # values in range).  Here n is the group's size.
  removed_degree = jnp.where(code == _LOO_MINUS_ONE, k - 1, k)
  levels = _levels(n, k, tie, np.dtype(pmf.dtype))
  perm, cs, corr_s = _sorted_classes(counts, corr)
  forced_s = jnp.zeros((n,), pmf.dtype)  # per class, largest first
  removed_s = jnp.zeros((n,), pmf.dtype)
  forced_pool = jnp.zeros((), pmf.dtype)  # an abstention's (or small answer's) share
  removed_pool = jnp.zeros((), pmf.dtype)
  for level in levels:
    j_slots, t = level.slots, level.t
    c = cs[:j_slots]
    valid = c >= t
    pool = size - jnp.sum(jnp.where(valid, c, 0))
    weight = jnp.asarray(level.weight)
    f, tie_coef = _slot_factors(pmf[c], corr_s[:j_slots], valid, level)
    (_, deriv_all), (pre, pre_d) = _scan_slots(
      f, tie_coef, jnp.zeros((k + 1,), pmf.dtype).at[0].set(1), level
    )
    _, (suf, suf_d) = _scan_slots(f, tie_coef, pmf[pool], level, reverse=True)
    # A sample whose answer has a count < t (or no answer) only moves one draw
    # into or out of the pool: the others' polynomial times pmf[pool − 1].
    rest = pmf[jnp.maximum(pool - 1, 0)]
    level_forced_pool = weight @ _coefficient(deriv_all, rest, k - 1)
    level_removed_pool = weight @ _coefficient_at(deriv_all, rest, removed_degree)
    # An answer with its own slot: all-but-one products from the prefix and suffix.
    less = pmf[jnp.maximum(c - 1, 0)]
    slot_values = []
    for rows, degree in ((_shift_right(less), k), (less, removed_degree)):
      fv, tv = _slot_factors(rows, corr_s[:j_slots], valid, level)
      a = _times_short(pre_d, fv, level) + tv[:, None, None] * _times_power(pre, t)
      b = _times_short(pre, fv, level)
      both = _coefficient_at(a, suf, degree) + _coefficient_at(b, suf_d, degree)
      slot_values.append(jnp.pad(both @ weight, (0, n - j_slots)))
    in_slot = (jnp.arange(n) < j_slots) & (cs >= t)
    forced_s += jnp.where(in_slot, slot_values[0], level_forced_pool)
    removed_s += jnp.where(in_slot, slot_values[1], level_removed_pool)
    forced_pool += level_forced_pool
    removed_pool += level_removed_pool
  forced = jnp.append(jnp.zeros((n,), pmf.dtype).at[perm].set(forced_s), forced_pool)
  removed = jnp.append(jnp.zeros((n,), pmf.dtype).at[perm].set(removed_s), removed_pool)
  answered = ids_row >= 0
  pick = lambda part: jnp.where(answered, part[cid], part[n])  # per sample
  s_scaled = pick(forced)  # S(i) · (size/k) · pmf[size − 1, k − 1]
  share = k / size  # k/n, or k/m per group
  s_val = share * s_scaled / pmf[size - 1, k - 1]
  # "loo_minus_one": one ratio for both terms, their difference formed before dividing.
  s_removed = pick(removed)
  minus_one = share * (s_scaled - s_removed) / pmf[size - 1, k - 1]
  loo = s_val - scale * s_removed / pmf[size - 1, k]
  loo = loo if plain is None else jnp.where(plain, s_val, loo)
  return jnp.where(code == _NONE, s_val, jnp.where(code == _LOO_MINUS_ONE, minus_one, loo))


def _shift_right(rows: jax.Array) -> jax.Array:
  """rows[..., x − 1] at x >= 1 and 0 at x = 0: one more draw of that answer."""
  return jnp.concatenate([jnp.zeros_like(rows[..., :1]), rows[..., :-1]], axis=-1)


def maj_at_k_exact(
  probs: ArrayLike,
  correct: ArrayLike,
  k: int,
  *,
  tie: str = "uniform",
  answered: ArrayLike | None = None,
) -> jax.Array:
  """Exact maj@k of a categorical policy over distinct answers.

  P(the plurality answer among k i.i.d. draws from ``probs`` is correct), with the
  tie rules of :func:`maj_at_k`: Σ over count vectors x with Σ x = k of the
  multinomial probability k!/Π x_b! Π p_b^{x_b} times the credit of x, computed by
  the counting DP of the module docstring (binomial convolutions of p_b^x) in
  O(A · k² · Σ_{t<=k} ⌈⌊k/t⌋/2⌉) = O(A k³ log k) per distribution.  It is the
  expectation of :func:`maj_at_k` over n >= k samples, and differentiable in
  ``probs`` (also at zero probabilities).

  Args:
    probs: ``[..., A]`` probabilities of A distinct answers (leading axes are batch
      axes).
    correct: bool or {0, 1}, broadcastable to ``probs``: whether each answer is
      correct.
    k: static int >= 1.  In float32 k <= 125 (C(k, k/2) must not overflow).
    tie: keyword-only, ``"uniform"`` or ``"wrong"``.
    answered: keyword-only, optional bool or probabilities in [0, 1],
      broadcastable to ``probs``: the probability that a draw of each outcome
      carries an answer.  False (0) marks an outcome with no answer, which never
      wins the vote (as a negative id in :func:`maj_at_k`); a value a in (0, 1)
      splits the outcome into its answer (probability p·a) and no answer
      (p·(1 − a)).  ``correct`` says whether the answer is right.  Default: all
      answered.

  Returns:
    ``[...]`` probabilities in [0, 1].  NaN for a distribution where an outcome
    that never answers (``answered`` 0) is flagged correct, as :func:`maj_at_k`
    gives NaN where an abstention is flagged correct (there is then no right
    answer), or where ``answered`` holds NaN; other distributions are unaffected.

  Raises:
    ValueError: bad ``k`` or ``tie``, shapes that do not broadcast, or (eagerly
      only) ``probs`` that is not a probability vector, ``correct`` outside
      {0, 1} or ``answered`` outside [0, 1].  Under ``jit`` ``probs`` is divided
      by its sum and ``answered`` is clipped to [0, 1].

  References: Wang et al. arXiv 2203.11171 (Sec. 2); Tang et al. arXiv 2503.19595.
  """
  p = categorical.as_distribution(probs, "probs")
  corr = _real_like(correct, "correct", "a bool or 0/1 numeric array", p.shape)
  k = checks.check_int(k, "k", low=1, high=checks.MAX_SIZE)
  checks.check_option(tie, "tie", TIE_RULES)
  categorical.check_probabilities(p, "probs")
  if checks.is_concrete(corr):
    c = np.asarray(corr, np.float64)
    if not np.all((c == 0) | (c == 1)):
      raise ValueError("correct must hold only 0/1 (or bool) values.")
  tables = _exact_tables(k, tie, p.dtype)
  p = categorical.normalize(p)
  corr = corr.astype(p.dtype)
  if answered is None:
    mask = jnp.ones(p.shape, p.dtype)
    out = _maj_at_k_exact(_flat(p), _flat(corr), _flat(mask), tables, k)
    return out.reshape(p.shape[:-1])
  a = _answer_probabilities(answered, p)
  # The unanswered share of every outcome is one pooled outcome that never wins.
  no_answer = jnp.sum(p * (1 - a), axis=-1, keepdims=True)
  split = jnp.concatenate([p * a, no_answer], axis=-1)
  zero = jnp.zeros_like(no_answer)
  corr_split = jnp.concatenate([corr, zero], axis=-1)
  mask = jnp.concatenate([jnp.ones_like(p), zero], axis=-1)
  out = _maj_at_k_exact(_flat(split), _flat(corr_split), _flat(mask), tables, k)
  # An outcome that never answers but is flagged correct: no right answer (maj_at_k's
  # rule for an abstention flagged correct).
  bad = jnp.any(((a == 0) & (corr > 0)) | jnp.isnan(a), axis=-1)
  return jnp.where(bad, jnp.nan, out.reshape(p.shape[:-1]))


def _real_like(x: ArrayLike, name: str, kind: str, shape: tuple[int, ...]) -> jax.Array:
  """``x`` as a real array broadcast to ``probs``' ``shape``; ValueError naming ``name``."""
  try:
    arr = jnp.asarray(x)
  except (TypeError, ValueError) as e:
    raise ValueError(f"{name} must be {kind}: {e}") from e
  checks.check_real(arr, name)
  try:
    return jnp.broadcast_to(arr, shape)
  except (TypeError, ValueError) as e:
    raise ValueError(f"{name} must broadcast to probs {shape}: {e}") from e


def _answer_probabilities(answered: ArrayLike, p: jax.Array) -> jax.Array:
  """``answered`` as probabilities in ``p``'s dtype and shape (validated eagerly)."""
  a = _real_like(answered, "answered", "a bool array or probabilities in [0, 1]", p.shape)
  if checks.is_concrete(a):
    v = np.asarray(a, np.float64)
    if not np.all((v >= 0) & (v <= 1)):  # also rejects NaN
      raise ValueError(
        "answered must hold booleans or probabilities in [0, 1];"
        f" got values in [{np.nanmin(v):.3g}, {np.nanmax(v):.3g}]"
        + (" and NaN." if np.isnan(v).any() else ".")
      )
  return jnp.clip(a.astype(p.dtype), 0, 1)


@functools.partial(jax.jit, static_argnums=4)
def _maj_at_k_exact(
  p: jax.Array, corr: jax.Array, answered: jax.Array, tables: _Tables, k: int
) -> jax.Array:
  def one(p_row: jax.Array, c_row: jax.Array, a_row: jax.Array) -> jax.Array:
    # p^x by repeated products: grad-safe at p = 0 (unlike p ** x with x = 0).
    powers = [jnp.ones_like(p_row)]
    for _ in range(k):
      powers.append(powers[-1] * p_row)
    rows = jnp.stack(powers, axis=-1)  # [A, k+1]
    init = jnp.zeros((1, k + 1), p_row.dtype).at[0, 0].set(1)
    none = jnp.full((1,), -1, jnp.int32)
    return _vote_credit(init, rows, c_row * a_row, 1 - a_row, none, init, tables)[0, k]

  return jax.vmap(one)(p, corr, answered)
