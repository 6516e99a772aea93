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
N_t answers with c_b >= t need a factor of their own, of degree t: sorted by count
(largest first), they are the first N_t slots.  The u-degree is also below N_t, so
level t takes G_t = ⌈min(N_t, ⌊k/t⌋)/2⌉ nodes, and only the levels
t <= min(k, max_b c_b) contribute.  k is traced, not compiled in: the polynomials
keep their n + 1 coefficients (degree <= n) and are read at z^k, and loops run over
the levels, over nodes and slots as far as the batch's largest G_t and N_t, and
over a factor's coefficients in passes of 8, so one compiled program serves every
k.  A group costs about 3 Σ_t N_t · G_t · (t + 1) · (n + 1) multiply-adds (the
product, its derivative and the tie term), O(n² min(n, k log k)) as N_t · t <= n,
G_t <= (N_t + 1)/2 and G_t <= ⌊k/t⌋/2 + 1; few distinct answers make it much less.
The advantages need the DP of every distinct answer with one vote forced for (or
removed from) it.  For an answer with its own slot, the product over all the other
slots comes from the prefix products along the slots and the suffix products with
the pool (the derivative carried in both); read backwards from z^k, the suffix
times the slot's forced (removed) factor, dotted with the prefix, is the value, and
since W[c, x] = q·W[c − 1, x − 1] + (1 − q)·W[c − 1, x] the two variants' products
also give the next suffix.  For an answer in the pool, or an abstention, the change
only moves one draw in or out of the pool.  That is about three times the cost of
maj@k.

Weights.  For n samples w_b(x) = C(c_b, x) q^x (1 − q)^(c_b − x) with q = k/n (a
binomial pmf, so nothing overflows), and the product over answers, divided by
C(n, k) q^k (1 − q)^(n − k), is the hypergeometric probability of the draw.  For a
categorical policy (exact value) w_b(x) = p_b^x and the products are binomial
convolutions Σ_x C(s, x) w(x) F(s − x), which give the multinomial probabilities.
All coefficient tables are float64 on the host, cast to the input's dtype.
"""

from __future__ import annotations

from collections.abc import Callable
import functools
import math
import numbers
from typing import Any, NamedTuple

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
  """W[c, x] = C(c, x) q^x (1 − q)^(c − x), q = k/n, for c, x = 0..n (float64 math).

  Its shape depends on n only, so that one compiled kernel serves every k.
  """
  q = k / n
  c = np.arange(n + 1)[:, None]
  x = np.arange(n + 1)[None, :]
  log_factorial = np.array([math.lgamma(i + 1) for i in range(n + 1)])
  valid = x <= c
  rest = np.maximum(c - x, 0)
  log_comb = np.where(valid, log_factorial[c] - log_factorial[x] - log_factorial[rest], 0.0)
  log_q = x * math.log(q)
  # q = 1 (k = n): only x = c has weight (0^0 = 1).
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


class _Classes(NamedTuple):
  """The distinct answers of B groups, largest count first: the slots of every level."""

  counts: jax.Array  # [B, n] int (0 past the last answer)
  correct: jax.Array  # [B, n] 1 for a correct answer
  size: jax.Array  # [B] int: samples in the group (abstentions: size − Σ counts)
  slot: jax.Array  # [B, n] int: each sample's answer's slot (0 for an abstention)
  bad: jax.Array  # [B] bool: an answer both correct and wrong, or an abstention flagged correct


def _classes(ids: jax.Array, corr: jax.Array, size: jax.Array) -> _Classes:
  """The distinct answers of B groups [B, n] (negative ids abstain): every pair of ids
  of a group compared (O(n²) compare-and-sum, cheap to compile, no scatter), the
  answers ordered by count (ties by first sample) with single-key sorts."""

  def one(ids: jax.Array, corr: jax.Array) -> tuple[jax.Array, ...]:
    n = ids.shape[0]
    iota = jnp.arange(n, dtype=jnp.int32)
    answered = ids >= 0
    same = (ids[:, None] == ids[None, :]) & answered[:, None]  # [i, j]: i's answer is j's
    count = jnp.sum(same, axis=1, dtype=jnp.int32)
    right = jnp.sum(jnp.where(same, corr[None, :], 0), axis=1)
    first = jnp.min(jnp.where(same, iota[None, :], n), axis=1)  # n for an abstention
    lead = first == iota  # the answer's first sample
    bad = jnp.any(answered & (right > 0) & (right < count)) | jnp.any(~answered & (corr > 0))
    # The answers' first samples by count, largest first (the other samples after them).
    order = _sort_by(jnp.where(lead, n - count, n), iota)
    counts = jnp.where(lead[order], count[order], 0)
    correct = jnp.where(lead[order], (right[order] > 0).astype(corr.dtype), 0)
    rank = _sort_by(order, iota)  # the inverse permutation: each lead's slot
    return counts, correct, jnp.where(answered, rank[jnp.minimum(first, n - 1)], 0), bad

  counts, correct, slot, bad = jax.vmap(one)(ids, corr)
  return _Classes(counts, correct, size, slot, bad)


def _sort_by(key: jax.Array, index: jax.Array) -> jax.Array:
  """``index`` [n] ordered by (key, index) for keys in [0, n]: one sort of the packed
  key·n + index where that fits int32 (a single-key sort is several times faster than
  one with a second operand)."""
  n = key.shape[0]
  if (n + 1) * n < 2**31:
    return jnp.sort(key * n + index) % n
  return lax.sort((key, index), num_keys=2)[1]


# The sample DP of maj_at_k and maj_at_k_advantages (module docstring, "Samples").  Its
# shapes depend on n only: polynomials keep the n + 1 coefficients of degree <= n, k is a
# traced scalar, and the loops over top counts, quadrature nodes, slots and a factor's
# coefficients run as far as the batch needs, so one compiled kernel serves every k.

#: Coefficients of a factor multiplied in per pass, as shifts known at compile time.
_TAPS = 8
# The rows W[c, :] of each group's weight table: counts [B] -> [B, n + 1].
_Rows = Callable[[jax.Array], jax.Array]


class _Rules(NamedTuple):
  """Quadrature rules on [0, 1] by node count G: row G holds G nodes and weights, then
  zero weights."""

  nodes: np.ndarray  # [G_max + 1, G_max]
  weights: np.ndarray  # [G_max + 1, G_max]


@functools.lru_cache(maxsize=64)
def _rules(n: int, tie: str, dtype: np.dtype) -> _Rules:
  """Every rule a group of n samples may need: Gauss-Legendre with G <= ⌈n/2⌉ nodes
  (tie "uniform"), or the single node u = 0 (tie "wrong": a tie at the top is wrong)."""
  if tie == "wrong":
    return _Rules(np.zeros((2, 1), dtype), np.array([[0.0], [1.0]], dtype))
  g_max = -(-n // 2)
  nodes, weights = np.zeros((g_max + 1, g_max)), np.zeros((g_max + 1, g_max))
  for g in range(1, g_max + 1):
    xi, wi = np.polynomial.legendre.leggauss(g)
    nodes[g, :g], weights[g, :g] = (xi + 1) / 2, wi / 2
  return _Rules(nodes.astype(dtype), weights.astype(dtype))


class _Level(NamedTuple):
  """Top count t of a batch: each group's pool and rule, and how far the loops run."""

  t: jax.Array
  slots: jax.Array  # [] the most answers with >= t samples in any group
  pool: jax.Array  # [B] samples outside the slots (answers below t, abstentions)
  nodes: jax.Array  # [B] quadrature nodes of each group


def _level(cls: _Classes, k: jax.Array, t: jax.Array, tie: str) -> _Level:
  """Level t takes the nodes that integrate it exactly: its u-degree is below both the
  number N_t of answers that reach t and ⌊k/t⌋, and G nodes are exact to 2G − 1."""
  reach = cls.counts >= t
  slots = jnp.sum(reach, axis=-1, dtype=jnp.int32)
  pool = cls.size - jnp.sum(jnp.where(reach, cls.counts, 0), axis=-1)
  if tie == "wrong":
    nodes = jnp.minimum(slots, 1)
  else:
    nodes = (jnp.minimum(slots, k // t) + 1) // 2
  return _Level(t, jnp.max(slots), pool, nodes)


def _levels(cls: _Classes, k: jax.Array, tie: str, body: Callable, init: Any) -> Any:
  """init updated by body(level, u, w, state) for every top count t = 1..min(k, largest
  count) and node: u and w [B] the p-th node and weight of each group's rule (weight 0
  past its own nodes).  Higher levels contribute nothing."""
  rules = _rules(cls.counts.shape[1], tie, np.dtype(cls.correct.dtype))

  def one_level(t: jax.Array, state: Any) -> Any:
    level = _level(cls, k, t, tie)

    def one_node(p: jax.Array, state: Any) -> Any:
      u = jnp.asarray(rules.nodes)[level.nodes, p]
      return body(level, u, jnp.asarray(rules.weights)[level.nodes, p], state)

    return lax.fori_loop(0, jnp.max(level.nodes), one_node, state)

  return lax.fori_loop(1, jnp.minimum(k, jnp.max(cls.counts)) + 1, one_level, init)


def _moved(poly: jax.Array, d: int, *, reverse: bool = False) -> jax.Array:
  """poly[..., s − d] (poly[..., s + d] with ``reverse``), 0 past either end."""
  pad = [(0, 0)] * (poly.ndim - 1) + [(0, d) if reverse else (d, 0)]
  padded = jnp.pad(poly, pad)
  return padded[..., d:] if reverse else padded[..., : poly.shape[-1]]


def _shifts(poly: jax.Array, *, reverse: bool = False) -> list[jax.Array]:
  """:func:`_moved` by 0 .. _TAPS − 1, from one padded copy."""
  size = poly.shape[-1]
  pad = [(0, 0)] * (poly.ndim - 1) + [(0, _TAPS - 1) if reverse else (_TAPS - 1, 0)]
  padded = jnp.pad(poly, pad)
  return [padded[..., (i if reverse else _TAPS - 1 - i) :][..., :size] for i in range(_TAPS)]


class _Factor(NamedTuple):
  """A slot's factor f(z, u) = Σ_{x<t} row[x] z^x + u·row[t]·z^t and its tie term
  g(z) = corr·row[t]·z^t, the derivative of f in the mark of a correct answer."""

  row: jax.Array  # [..., B, L]: the weight row
  corr: jax.Array  # [..., B]
  t: jax.Array
  u: jax.Array  # [B]


def _taps(factor: _Factor, x0: jax.Array | int) -> tuple[jax.Array, jax.Array]:
  """Coefficients x0 .. x0 + _TAPS − 1 of f and g: [..., B, _TAPS] each."""
  x = x0 + jnp.arange(_TAPS)
  t, row = factor.t, factor.row
  top = lax.dynamic_index_in_dim(row, t, axis=-1)  # [..., B, 1]
  if isinstance(x0, int) and x0 + _TAPS <= row.shape[-1]:
    row = row[..., x0 : x0 + _TAPS]
  else:
    row = jnp.pad(row, [(0, 0)] * (row.ndim - 1) + [(0, _TAPS)])
    row = lax.dynamic_slice_in_dim(row, x0, _TAPS, -1)
  f = jnp.where(x < t, row, 0) + jnp.where(x == t, factor.u[:, None] * top, 0)
  return f, jnp.where(x == t, factor.corr[..., None] * top, 0)


def _times_factor(
  carry: jax.Array, factor: _Factor, *, reverse: bool = False, compact: bool = False
) -> jax.Array:
  """(F, D) = ``carry`` [2, ..., B, L] to (F ∗ f, D ∗ f + F ∗ g) truncated to L
  coefficients (∗ the product of polynomials), or with ``reverse`` its transpose, the
  same for polynomials read backwards from z^k.

  Sums of positive terms.  Each pass multiplies in _TAPS coefficients as shifts known
  at compile time (XLA fuses them into one loop); pass p moves up (down) by p·_TAPS,
  as P_0 + S(P_1 + S(P_2 + ...)) with S the move by _TAPS, so the passes beyond the
  first run only for t >= _TAPS.  By default the first pass has its own copy in the
  program (with static slices, and no loop below t = _TAPS); ``compact`` runs every pass
  in the one loop instead, which compiles faster and, where the carry has more axes
  (the advantages' two variants), also runs faster; for maj@k alone the default runs
  faster at about the same compile time (``benchmarks.compile_time``).
  """

  def one_pass(x0: jax.Array | int) -> jax.Array:
    f, g = _taps(factor, x0)
    shifted = _shifts(carry, reverse=reverse)
    new_f = sum(f[..., i : i + 1] * shifted[i][0] for i in range(_TAPS))
    new_d = sum(
      f[..., i : i + 1] * shifted[i][1] + g[..., i : i + 1] * shifted[i][0] for i in range(_TAPS)
    )
    return jnp.stack([new_f, new_d])

  passes = factor.t // _TAPS + 1  # coefficients 0..t

  def next_pass(i: jax.Array, acc: jax.Array) -> jax.Array:
    return one_pass((passes - 1 - i) * _TAPS) + _moved(acc, _TAPS, reverse=reverse)

  if compact:
    shape = (2, *jnp.broadcast_shapes(carry.shape[1:], factor.row.shape))
    return lax.fori_loop(0, passes, next_pass, jnp.zeros(shape, carry.dtype))

  def more(first: jax.Array) -> jax.Array:
    rest = lax.fori_loop(0, passes - 1, next_pass, jnp.zeros_like(first))
    return first + _moved(rest, _TAPS, reverse=reverse)

  return lax.cond(passes > 1, more, lambda first: first, one_pass(0))


def _slot(cls: _Classes, rows: _Rows, t: jax.Array, j: jax.Array) -> tuple[jax.Array, ...]:
  """Slot j at level t: its weight row [B, L], its answer's correct flag and count [B];
  the row is the factor 1 (e_0) where the group's j-th answer has fewer than t samples."""
  count = lax.dynamic_index_in_dim(cls.counts, j, axis=1, keepdims=False)
  corr = lax.dynamic_index_in_dim(cls.correct, j, axis=1, keepdims=False)
  valid = count >= t
  row = rows(count)
  one = jnp.zeros_like(row).at[:, 0].set(1)
  return jnp.where(valid[:, None], row, one), jnp.where(valid, corr, 0), count


def _credit(cls: _Classes, rows: _Rows, k: jax.Array, tie: str) -> jax.Array:
  """[B] Σ over top counts t and nodes of weight · [z^k] D_t: every group's
  credit-weighted count of k-subsets (times C(size, k) q^k (1 − q)^(size − k))."""

  def one_node(level: _Level, u: jax.Array, w: jax.Array, total: jax.Array) -> jax.Array:
    def one_slot(j: jax.Array, carry: jax.Array) -> jax.Array:
      row, corr, _ = _slot(cls, rows, level.t, j)
      return _times_factor(carry, _Factor(row, corr, level.t, u))

    start = rows(level.pool)
    _, deriv = lax.fori_loop(0, level.slots, one_slot, jnp.stack([start, 0 * start]))
    return total + w * _at(deriv, k)

  return _levels(cls, k, tie, one_node, jnp.zeros(cls.size.shape, cls.correct.dtype))


def _at(poly: jax.Array, degree: jax.Array) -> jax.Array:
  """The coefficient of z^degree (traced) over the last axis."""
  return lax.dynamic_index_in_dim(poly, degree, axis=-1, keepdims=False)


def _reversed(poly: jax.Array, degree: jax.Array) -> jax.Array:
  """poly read backwards from z^degree: [..., s] = poly[..., degree − s] (0 for s > degree)."""
  lag = degree - jnp.arange(poly.shape[-1])
  return jnp.where(lag >= 0, jnp.take(poly, jnp.maximum(lag, 0), axis=-1), 0)


class _Shares(NamedTuple):
  """The credit of the other samples with one vote forced for an answer, and with one of
  its votes removed (read at z^(k − drop)), per slot (answers, largest first) and for
  the pool (an abstention, or an answer below the top count), each times the weights'
  scale."""

  forced: jax.Array  # [B, n]
  removed: jax.Array  # [B, n]
  forced_pool: jax.Array  # [B]
  removed_pool: jax.Array  # [B]


def _node_shares(
  cls: _Classes,
  rows: _Rows,
  k: jax.Array,
  q: jax.Array,
  drop: jax.Array,
  level: _Level,
  u: jax.Array,
  pre: jax.Array,
) -> tuple[jax.Array, jax.Array, jax.Array]:
  """One node u [B] of a level: slot shares [n, 2, B] (forced, removed) and pool shares
  [2, B], from the prefix products of the slots (from 1, kept in ``pre`` [n, 2, B, L]
  and returned for the next node) and their suffix products (from the pool, read
  backwards from z^k).  With one vote forced (removed), a slot's answer has its row of
  one sample fewer moved up one draw (kept in place); the binomial rows satisfy
  W[c] = q·(forced row) + (1 − q)·(removed row), so the two variants' products with
  the suffix also give the next suffix."""
  t = level.t

  def forward(j: jax.Array, state: tuple) -> tuple:
    carry, pre = state
    row, corr, _ = _slot(cls, rows, t, j)
    pre = lax.dynamic_update_index_in_dim(pre, carry, j, axis=0)
    return _times_factor(carry, _Factor(row, corr, t, u), compact=True), pre

  one = jnp.zeros(pre.shape[2:], pre.dtype).at[:, 0].set(1)
  (_, deriv), pre = lax.fori_loop(0, level.slots, forward, (jnp.stack([one, 0 * one]), pre))
  # An answer below t, or an abstention, only moves one draw into or out of the pool.
  rest = rows(jnp.maximum(level.pool - 1, 0))
  pool = jnp.stack([jnp.sum(deriv * _reversed(rest, k - e), -1) for e in (1, drop)])

  def backward(i: jax.Array, state: tuple) -> tuple:
    j = level.slots - 1 - i
    suffix, shares = state
    row, corr, count = _slot(cls, rows, t, j)
    less = rows(jnp.maximum(count - 1, 0))
    variants = _Factor(jnp.stack([_shift_right(less), less]), jnp.stack([corr, corr]), t, u)
    both = _times_factor(suffix[:, None], variants, reverse=True, compact=True)  # [2, v, B, L]
    # [z^k] of D for the whole product (Σ_s D_pre·F_suf + F_pre·D_suf); "removed" at
    # z^(k − drop), its suffix read one degree on.
    before = lax.dynamic_index_in_dim(pre, j, axis=0, keepdims=False)[::-1]
    at_k = jnp.sum(before[:, None] * both, axis=(0, -1))  # [variant, B]
    below_k = jnp.sum(before * _moved(both[:, 1], 1, reverse=True), axis=(0, -1))
    share = jnp.stack([at_k[0], jnp.where(drop == 1, below_k, at_k[1])])
    shares = lax.dynamic_update_index_in_dim(shares, share, j, axis=0)
    mixed = q[:, None] * both[:, 0] + (1 - q[:, None]) * both[:, 1]
    return jnp.where((count >= t)[:, None], mixed, suffix), shares

  last = _reversed(rows(level.pool), k)
  start = (jnp.stack([last, 0 * last]), jnp.zeros((pre.shape[0], 2, *q.shape), pre.dtype))
  _, shares = lax.fori_loop(0, level.slots, backward, start)
  return shares, pool, pre


def _shares(
  cls: _Classes, rows: _Rows, k: jax.Array, q: jax.Array, drop: jax.Array, tie: str
) -> _Shares:
  """Σ over top counts t and nodes of the forced and removed credit (:class:`_Shares`): an
  answer with its own slot at t takes its slot's share, the others the pool's."""
  batch, n = cls.counts.shape

  def one_node(level: _Level, u: jax.Array, w: jax.Array, state: tuple) -> tuple:
    total, pre = state
    slot, pool, pre = _node_shares(cls, rows, k, q, drop, level, u, pre)
    pool = w * pool
    slot = jnp.where(cls.counts >= level.t, w[:, None] * slot.transpose(1, 2, 0), pool[..., None])
    total = _Shares(
      total.forced + slot[0],
      total.removed + slot[1],
      total.forced_pool + pool[0],
      total.removed_pool + pool[1],
    )
    return total, pre

  zero = jnp.zeros(cls.counts.shape, cls.correct.dtype)
  pre = jnp.zeros((n, 2, batch, n + 1), cls.correct.dtype)
  total, _ = _levels(cls, k, tie, one_node, (_Shares(zero, zero, zero[:, 0], zero[:, 0]), pre))
  return total


class _PmfFactors(NamedTuple):
  """Static factors of the weights W_m[c, x] = C(c, x) q^x (1 − q)^(c − x), q = k/m,
  of a group of m <= n valid samples (:class:`maxk._src.ragged.Pow2`, host arrays;
  shapes [n + 1, n + 1] whatever k)."""

  binom: ragged.Pow2  # C(c, x) at [c, x].
  q_power: ragged.Pow2  # q^x at [m, x] (0 for m < k).
  rest_power: ragged.Pow2  # (1 − q)^y at [m, y] (0^0 = 1 at m = k).


@functools.lru_cache(maxsize=32)
def _pmf_factors(n: int, k: int, dtype: DTypeLike) -> _PmfFactors:
  c = np.arange(n + 1)[:, None]
  x = np.arange(n + 1)[None, :]
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


def _group_rows(factors: _PmfFactors, m: jax.Array, dtype: jnp.dtype) -> _Rows:
  """The rows of each group's own W_m (m: [B]): ``rows(c)`` [B, n + 1] is
  :func:`_binomial_pmf_table` at size m, row c, as a product of three mantissas and a
  power of two."""
  binom, q_power, rest_power = factors
  x = jnp.arange(binom.mant.shape[1])[None, :]
  q_mant, q_exp = jnp.asarray(q_power.mant)[m], jnp.asarray(q_power.exp)[m]
  rest_mant, rest_exp = jnp.asarray(rest_power.mant)[m], jnp.asarray(rest_power.exp)[m]

  def rows(c: jax.Array) -> jax.Array:
    y = jnp.maximum(c[:, None] - x, 0)
    mant = jnp.asarray(binom.mant)[c] * q_mant * jnp.take_along_axis(rest_mant, y, axis=1)
    exp = jnp.asarray(binom.exp)[c] + q_exp + jnp.take_along_axis(rest_exp, y, axis=1)
    return jnp.where(x <= c[:, None], jnp.ldexp(mant.astype(dtype), exp), 0)

  return rows


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
  docstring, "Samples"): cost O(Σ_t N_t · G_t · t · n) = O(n² min(n, k log k)) per
  group, with N_t the answers that have at least t samples and G_t <=
  ⌈min(N_t, ⌊k/t⌋)/2⌉ quadrature nodes, all sums of positive terms with float64
  coefficient tables.  k is an argument of the compiled kernel, not part of it, so
  one compilation per shape serves every k.  k = 1 gives the mean of ``correct``
  (pass@1).

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
    k: Python int, ``1 <= k <= n`` (checked eagerly; traced in the compiled
      kernel).
    tie: keyword-only, ``"uniform"`` or ``"wrong"``.
    where: keyword-only, optional bool, broadcastable to ``correct``: the valid
      samples of each group (ragged groups; README's "Ragged groups").  A
      group's estimate is that of its m valid samples alone (an invalid sample
      takes no place in any subset, unlike an abstention), NaN where m < k.  The
      weights of q = k/m are products of static factors of (c, x) and of m
      (as mantissas and powers of two), formed row by row as the DP reads them.

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
    out = _maj_at_k_ragged(ids, values, valid, factors, np.int32(k), tie)
    return out.reshape(ids.shape[:-1])
  pmf = _binomial_pmf_table(n, k, values.dtype)
  return _maj_at_k(ids, values, pmf, np.int32(k), tie).reshape(ids.shape[:-1])


@functools.partial(jax.jit, static_argnums=4)
def _maj_at_k(
  ids: jax.Array, values: jax.Array, pmf: jax.Array, k: jax.Array, tie: str
) -> jax.Array:
  ids, values = _flat(ids), _flat(values)
  n = ids.shape[-1]
  size = jnp.full(ids.shape[:1], n, jnp.int32)
  cls = _classes(ids, jnp.nan_to_num(values), size)
  value = _credit(cls, lambda c: pmf[c], k, tie) / pmf[n, k]
  return jnp.where(jnp.any(jnp.isnan(values), axis=-1) | cls.bad, jnp.nan, value)


@functools.partial(jax.jit, static_argnums=5)
def _maj_at_k_ragged(
  ids: jax.Array,
  values: jax.Array,
  valid: jax.Array,
  factors: _PmfFactors,
  k: jax.Array,
  tie: str,
) -> jax.Array:
  ids, corr, m, nan = jax.vmap(_valid_only)(_flat(ids), _flat(values), _flat(valid))
  size = jnp.maximum(m, k)  # groups with m < k are NaN
  cls = _classes(ids, corr, size)
  rows = _group_rows(factors, size, values.dtype)
  value = _credit(cls, rows, k, tie) / _at(rows(size), k)
  return jnp.where(nan | cls.bad | (m < k), jnp.nan, value)


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
  "Samples"), so the cost per group is about three times that of :func:`maj_at_k`,
  O(n² min(n, k log k)), and one compilation per shape serves every k.

  Args:
    answer_ids: ``[..., n]`` integer answer labels of any width (negative: no
      answer; 64-bit host ids factorised, as in :func:`maj_at_k`).
    correct: ``[..., n]`` bool or {0, 1}.
    k: Python int, ``1 <= k <= n`` (checked eagerly; traced in the compiled
      kernel).
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
    out = _maj_at_k_advantages_ragged(ids, values, valid, factors, code, np.int32(k), tie)
    return out.reshape(ids.shape)
  kind = advantages.reduced_baseline(baseline, n, k)
  pmf = _binomial_pmf_table(n, k, values.dtype)
  # "loo" and "loo_centered" differ only in the leave-one-out estimate's scale.
  scale = k / (n - 1) if kind == "loo" else k / n
  code = np.int32(MAJ_BASELINES.index(kind))
  out = _maj_at_k_advantages(ids, values, pmf, scale, code, np.int32(k), tie)
  return out.reshape(ids.shape)


@functools.partial(jax.jit, static_argnums=6)
def _maj_at_k_advantages(
  ids: jax.Array,
  values: jax.Array,
  pmf: jax.Array,
  scale: float | jax.Array,
  code: jax.Array,
  k: jax.Array,
  tie: str,
) -> jax.Array:
  ids, values = _flat(ids), _flat(values)
  size = jnp.full(ids.shape[:1], ids.shape[-1], jnp.int32)
  cls = _classes(ids, jnp.nan_to_num(values), size)
  a = _advantages(ids, cls, lambda c: pmf[c], scale, None, code, k, tie)
  return jnp.where((jnp.any(jnp.isnan(values), axis=-1) | cls.bad)[:, None], jnp.nan, a)


@functools.partial(jax.jit, static_argnums=6)
def _maj_at_k_advantages_ragged(
  ids: jax.Array,
  values: jax.Array,
  valid: jax.Array,
  factors: _PmfFactors,
  code: jax.Array,
  k: jax.Array,
  tie: str,
) -> jax.Array:
  # The dense transform of each group's m valid samples: weights of q = k/m, S's
  # scale k/m and the leave-one-out scale of m; at m == k "loo" and
  # "loo_centered" are "none" (as the dense reduction at n == k).
  valid = _flat(valid)
  ids, corr, m, nan = jax.vmap(_valid_only)(_flat(ids), _flat(values), valid)
  size = jnp.maximum(m, k)
  cls = _classes(ids, corr, size)
  mf, kf = size.astype(values.dtype), k.astype(values.dtype)
  scale = jnp.where(code == _LOO, kf / jnp.maximum(mf - 1, 1), kf / mf)
  rows = _group_rows(factors, size, values.dtype)
  a = _advantages(ids, cls, rows, scale, size == k, code, k, tie)
  a = jnp.where(valid & (m >= k)[:, None], a, 0)
  return jnp.where(valid & (nan | cls.bad)[:, None], jnp.nan, a)


def _advantages(
  ids: jax.Array,
  cls: _Classes,
  rows: _Rows,
  scale: float | jax.Array,
  plain: jax.Array | None,
  code: jax.Array,
  k: jax.Array,
  tie: str,
) -> jax.Array:
  """[B, n] advantages of groups of ``cls.size`` <= n samples (n = ``ids``' length) from
  their answers and their weight rows, for the baseline ``code`` (traced; "loo" and
  "loo_centered" differ only in ``scale``, [B] or a scalar); where ``plain`` ([B]) is
  True, they give "none" (no leave-one-out estimate at size == k)."""
  # S(i) = (k/n) · E[h(J ∪ {i})] over (k−1)-subsets J of the other n − 1 samples: the
  # DP of the other samples with one vote forced for i's answer (its row shifted by
  # one draw), read at z^k.  The leave-one-out values are the same DP without that
  # vote, read at z^(k−1) ("loo_minus_one") or z^k.  Both use the binomial weights of
  # q = k/n on the n − 1 others (any q gives the same ratio; this one keeps the
  # values in range).  Here n is the group's size.
  dtype = cls.correct.dtype
  share = k.astype(dtype) / cls.size.astype(dtype)  # q = k/n, or k/m
  drop = jnp.where(code == _LOO_MINUS_ONE, 1, 0)
  shares = _shares(cls, rows, k, share, drop, tie)
  answered = ids >= 0
  pick = lambda by_slot, pool: jnp.where(
    answered, jnp.take_along_axis(by_slot, cls.slot, axis=1), pool[:, None]
  )
  s_scaled = pick(shares.forced, shares.forced_pool)  # S(i) · (n/k) · W[n − 1, k − 1]
  s_removed = pick(shares.removed, shares.removed_pool)
  fewer = rows(cls.size - 1)
  share = share[:, None]
  s_val = share * s_scaled / _at(fewer, k - 1)[:, None]
  # "loo_minus_one": one ratio for both terms, their difference formed before dividing.
  minus_one = share * (s_scaled - s_removed) / _at(fewer, k - 1)[:, None]
  loo = s_val - jnp.reshape(scale, (-1, 1)) * s_removed / _at(fewer, k)[:, None]
  loo = loo if plain is None else jnp.where(plain[:, None], s_val, loo)
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
