"""The least variance any leave-one-out baseline can reach, exactly, on small bandits.

An unbiased transform s (``max_at_k_advantages(..., baseline="none")``, its pass@k
case on binary rewards, ``order_stat_advantages(..., baseline="none")``, or r ↦ r for
E[r]) gives the estimate Σ_i s_i ∇log π(y_i).  Subtracting b_i = b(r_{−i}), any
function of the multiset of the other n − 1 rewards, keeps it unbiased (given
r_{−i}, E[∇log π(y_i)] = 0); the loo, loo_minus_one and loo_centered baselines of
:func:`maxk.max_at_k_advantages` and RLOO's are all of this form.  Which b has the
least variance?

On a softmax bandit (arm a earns r(a); score e_a − π) with A arms and n samples, let
c be the count vector of the group's arms (multinomial weight w_c) and, for each arm
a with c_a > 0, c − e_a the other samples (for a sample on arm a).  The baseline is a
table β over the multisets of n − 1 rewards (count vectors over the V distinct
reward values: C(n + V − 2, V − 1) entries), and

  ĝ_c(β) = G_c − D_c β,   G_c = Σ_a S_a(c) (e_a − π),   D_c β = Σ_a c_a β[v(c − e_a)] (e_a − π),

with S_a(c) the sum of s over the samples on arm a and v(·) the reward multiset.
E[D β] = 0, so E[ĝ] = E[G] = ∇J for every β and

  tr Cov[ĝ] = Σ_c w_c ‖G_c − D_c β‖² − ‖E[G]‖²,

a convex quadratic in β: its minimum is a weighted least-squares problem in float64.
Two solvers: ``"dense"`` (``numpy.linalg.lstsq`` on the stacked √w_c-weighted system; the
minimum-norm β where the table is not identified, e.g. a multiset only reached with
weight 0) while the system has at most ``MAX_FLOOR_ENTRIES`` entries, and
``"iterative"`` beyond: conjugate gradients on the normal equations (CGLS; Hestenes &
Stiefel 1952, Björck 1996 §7.4) with the columns scaled to unit norm, on the sparse
system (at most S nonzero columns per row: one multiset c − e_a per arm a).  Started
from 0 it tends to the minimum-norm solution of the column-scaled system; it stops
when the scaled normal-equation residual ‖Dᵀ W (G − Dβ)‖ falls to ``tol`` times its
value at β = 0, and the trace it reports is the exact variance of the baseline it
found (an upper bound on the floor, equal to it to that tolerance).
The same over constant baselines (one column, Σ_a c_a (e_a − π) = c − nπ)
gives b* = E[⟨G, c − nπ⟩] / E[‖c − nπ‖²], which for s_i = r_i is Greensmith, Bartlett
& Baxter's (JMLR 5, 2004) b* = E[r ‖∇log π‖²] / E[‖∇log π‖²].
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import numpy.typing as npt

from maxk._src import gradient_check
from maxk._src import gradient_moments
from maxk._src.gradient_check import AdvantageFn

#: The largest dense least-squares system (rows × columns) :func:`variance_floor` builds;
#: larger systems use the sparse iterative solver (``method="auto"``).
MAX_FLOOR_ENTRIES = 2**24

_METHODS = ("auto", "dense", "iterative")


@dataclasses.dataclass(frozen=True)
class VarianceFloor:
  """What :func:`variance_floor` found (one prompt, A arms, V distinct rewards).

  Attributes:
    trace: min over b(r_{−i}) of tr Cov[ĝ], the floor.
    baseline: [M] the optimal baseline b(multiset of the other n − 1 rewards).
    baseline_counts: [M, V] int64, the multisets: counts of each of ``reward_values``
      among the other n − 1 samples (each row sums to n − 1).
    reward_values: [V] the distinct rewards of the arms of positive probability,
      ascending.
    constant_trace: min over constant b of tr Cov[ĝ].
    constant_baseline: the constant b that reaches it.
    none_trace: tr Cov[ĝ] of the transform alone (b = 0).
    mean: [A] E[ĝ] = ∇J, the same for every such baseline.
    method: the solver that found ``baseline``: ``"dense"`` or ``"iterative"``.
    iterations: conjugate-gradient iterations (0 for ``"dense"``).
  """

  trace: float
  baseline: np.ndarray
  baseline_counts: np.ndarray
  reward_values: np.ndarray
  constant_trace: float
  constant_baseline: float
  none_trace: float
  mean: np.ndarray
  method: str = "dense"
  iterations: int = 0


def variance_floor(
  transform_fn: AdvantageFn,
  probs: npt.ArrayLike,
  rewards: npt.ArrayLike,
  n: int,
  *,
  method: str = "auto",
  tol: float = 1e-12,
  max_iterations: int = 10_000,
) -> VarianceFloor:
  """The least tr Cov[ĝ] over baselines b_i = b(r_{−i}) of an unbiased transform, exactly.

  ĝ = Σ_i (s_i − b(r_{−i})) ∇_logits log π(y_i) with s = ``transform_fn(rewards)`` on
  n i.i.d. samples of the softmax policy with probabilities ``probs`` (arm a earns
  ``rewards[a]``), and b any function of the multiset of the other n − 1 rewards (so
  ĝ stays unbiased for whatever ``transform_fn`` estimates).  The floor is a
  weighted least-squares problem over the count vectors (module docstring), solved
  in float64; the result also holds the floor over constant baselines (the
  Greensmith et al. 2004 b* for s_i = r_i) and the transform's own variance.

  Compare an estimator with :func:`maxk.testing.gradient_moments` (its ``trace``):
  an unbiased estimator whose baseline is a function of the other samples' rewards
  cannot go below ``trace``.  Give the transform on the estimator's scale
  (``max_at_k_advantages(r, k, baseline="none")`` for its loo baselines; r ↦ r for
  RLOO, which follows n ∇E[r]).

  Limits: one prompt (``probs`` [A]); ``transform_fn`` must be permutation
  equivariant (checked, as by ``gradient_moments``); the stacked system has
  (count vectors of n over the support) × A rows and C(n + V − 2, V − 1) columns.
  ``method="dense"`` solves it with ``lstsq`` while it has at most
  ``MAX_FLOOR_ENTRIES`` (2^24) entries (A = 4 and n <= 16, A = 6 and n <= 8);
  ``"iterative"`` solves the sparse system by conjugate gradients (module docstring)
  while the count vectors and the table each number at most
  ``maxk.testing.MAX_COUNT_VECTORS`` (A = V = 4: n = 64 in seconds, 47,905 count
  vectors and 45,760 table entries); ``"auto"`` (default) takes ``"dense"`` where it
  fits and ``"iterative"`` beyond.  Both agree to 1e-12 (relative) where both run.

  Args:
    transform_fn: rewards [T, n] -> s [T, n] (NumPy or JAX), the unbiased transform.
    probs: [A] arm probabilities.
    rewards: [A] each arm's reward (arms may share one).
    n: samples per group.
    method: ``"auto"``, ``"dense"`` or ``"iterative"`` (see Limits).
    tol: the iterative solver's stopping point: the scaled normal-equation residual
      relative to its value at b = 0.
    max_iterations: the iterative solver's most iterations.

  Returns:
    A :class:`VarianceFloor`.

  Raises:
    ValueError: bad ``probs``/``rewards``/``n``/``method``/``tol``/``max_iterations``,
      a ``transform_fn`` that is not equivariant or returns another shape or non-finite
      values, a ``"dense"`` system larger than ``MAX_FLOOR_ENTRIES``, or more count
      vectors than ``MAX_COUNT_VECTORS``.
    RuntimeError: the iterative solver did not reach ``tol`` in ``max_iterations``.

  Example::

    import maxk
    floor = maxk.testing.variance_floor(
      lambda r: maxk.max_at_k_advantages(r, 2, baseline="none"),
      probs=[0.5, 0.3, 0.2], rewards=[0.0, 0.5, 1.0], n=4)
    print(floor.trace, floor.constant_trace, floor.none_trace)
  """
  if np.ndim(probs) != 1:
    raise ValueError(f"probs must be one prompt's [A] probabilities; got shape {np.shape(probs)}")
  if method not in _METHODS:
    raise ValueError(f"method must be one of {_METHODS}; got {method!r}")
  if not (isinstance(tol, (int, float, np.floating)) and 0 < tol < 1):
    raise ValueError(f"tol must be in (0, 1); got {tol!r}")
  if not isinstance(max_iterations, int) or isinstance(max_iterations, bool) or max_iterations < 1:
    raise ValueError(f"max_iterations must be a positive int; got {max_iterations!r}")
  p_1xA, r_1xA = gradient_moments._policies(probs, rewards)
  n = gradient_check._check_n(n)
  p, r = p_1xA[0], r_1xA[0]
  num_arms = p.size
  support = np.flatnonzero(p > 0)
  values, value_of = np.unique(r[support], return_inverse=True)
  num_values = values.size
  num_counts = _num_multisets(n, support.size)
  cols = _num_multisets(n - 1, num_values)
  rows = num_counts * num_arms
  dense_fits = rows * (cols + 1) <= MAX_FLOOR_ENTRIES
  if method == "dense" and not dense_fits:
    raise ValueError(
      f"the least-squares system has {rows} x {cols} entries, more than "
      f"MAX_FLOOR_ENTRIES = {MAX_FLOOR_ENTRIES}: fewer arms or samples, or "
      'method="iterative"'
    )
  limit = gradient_moments.MAX_COUNT_VECTORS
  if max(num_counts, cols) > limit:
    raise ValueError(
      f"{num_counts} count vectors and {cols} baseline multisets: more than "
      f"MAX_COUNT_VECTORS = {limit}; use fewer arms or samples"
    )
  if method == "auto":
    method = "dense" if dense_fits else "iterative"
  gradient_moments._check_equivariant(transform_fn, p_1xA, r_1xA, n, False)

  counts = gradient_moments.count_vectors(support.size, n)  # [T, S]
  table = gradient_moments.count_vectors(num_values, n - 1)  # [M, V]
  log_fact = gradient_moments._log_factorials(n)
  log_w = log_fact[n] - log_fact[counts].sum(axis=1) + counts @ np.log(p[support])
  w = np.exp(log_w - log_w.max())
  w /= w.sum()
  r_TxN = gradient_moments._rewards_of_counts(counts, r[support])
  s = gradient_check._advantages(transform_fn, r_TxN)
  sums = gradient_moments._sums_per_arm(s, counts)  # [T, S]
  scores = np.zeros((support.size, num_arms))  # e_a − π for each support arm.
  scores[np.arange(support.size), support] = 1.0
  scores -= p
  g = sums @ scores  # [T, A]
  design = _Design.build(counts, scores, value_of, table, n)

  iterations = 0
  if method == "dense":
    dense = design.dense()
    root = np.sqrt(w)[:, None, None]
    beta, *_ = np.linalg.lstsq(
      (root * dense).reshape(rows, cols), (root[..., 0] * g).reshape(rows), rcond=None
    )
  else:
    beta, iterations = _cgls(design, w, g, tol=tol, max_iterations=max_iterations)
  mean = w @ g

  def trace_of(g_hat: np.ndarray) -> float:
    return float(w @ np.sum((g_hat - mean) ** 2, axis=1))

  u = np.zeros((counts.shape[0], num_arms))
  u[:, support] = counts
  u -= n * p  # Σ_i (e_{y_i} − π) = c − nπ.
  denominator = float(w @ np.sum(u * u, axis=1))
  constant = float(w @ np.sum(g * u, axis=1)) / denominator if denominator > 0 else 0.0
  return VarianceFloor(
    trace=trace_of(g - design.apply(beta)),
    baseline=beta,
    baseline_counts=table,
    reward_values=values,
    constant_trace=trace_of(g - constant * u),
    constant_baseline=constant,
    none_trace=trace_of(g),
    mean=mean,
    method=method,
    iterations=iterations,
  )


def _num_multisets(n: int, kinds: int) -> int:
  """C(n + kinds − 1, kinds − 1): the count vectors of n over ``kinds`` kinds."""
  return math.comb(n + kinds - 1, kinds - 1)


@dataclasses.dataclass(frozen=True)
class _Design:
  """The sparse D: (D β)[t] = Σ_e coef[e] β[col[e]] over the entries e of row block t.

  Each entry is one (count vector t, multiset column) pair with its [A] coefficient
  Σ_a c_a (e_a − π) over the support arms a whose c − e_a is that multiset.
  """

  row: np.ndarray  # [E] count-vector index t.
  col: np.ndarray  # [E] multiset index.
  coef: np.ndarray  # [E, A]
  num_rows: int
  num_cols: int

  @classmethod
  def build(
    cls,
    counts: np.ndarray,
    scores: np.ndarray,
    value_of: np.ndarray,
    table: np.ndarray,
    n: int,
  ) -> _Design:
    num_support, num_values = counts.shape[1], table.shape[1]
    onehot = np.zeros((num_support, num_values), dtype=np.int64)
    onehot[np.arange(num_support), value_of] = 1
    value_counts = counts @ onehot  # [T, V]
    radix = (n + 1) ** np.arange(num_values, dtype=np.int64)
    codes = table @ radix
    order = np.argsort(codes)
    rows, cols, coefs = [], [], []
    for arm in range(num_support):
      present = counts[:, arm] > 0
      others = value_counts[present] - onehot[arm]
      rows.append(np.flatnonzero(present))
      cols.append(order[np.searchsorted(codes, others @ radix, sorter=order)])
      coefs.append(counts[present, arm][:, None] * scores[arm][None, :])
    num_cols = table.shape[0]
    # Arms sharing a reward reach the same multiset from one count vector: merge them.
    keys, where = np.unique(
      np.concatenate(rows) * num_cols + np.concatenate(cols), return_inverse=True
    )
    coef = np.zeros((keys.size, scores.shape[1]))
    np.add.at(coef, where, np.concatenate(coefs))
    return cls(keys // num_cols, keys % num_cols, coef, counts.shape[0], num_cols)

  def dense(self) -> np.ndarray:
    """[T, A, M] D as a dense array."""
    out = np.zeros((self.num_rows, self.coef.shape[1], self.num_cols))
    out[self.row, :, self.col] = self.coef
    return out

  def apply(self, beta: np.ndarray, coef: np.ndarray | None = None) -> np.ndarray:
    """[M] -> [T, A]: D β (or with the entries' coefficients replaced by ``coef``)."""
    coef = self.coef if coef is None else coef
    v = coef * beta[self.col][:, None]
    return np.stack(
      [np.bincount(self.row, v[:, a], minlength=self.num_rows) for a in range(v.shape[1])], axis=1
    )

  def apply_transpose(self, y: np.ndarray, coef: np.ndarray | None = None) -> np.ndarray:
    """[T, A] -> [M]: Dᵀ y."""
    coef = self.coef if coef is None else coef
    return np.bincount(self.col, np.sum(coef * y[self.row], axis=1), minlength=self.num_cols)


def _cgls(
  design: _Design, w: np.ndarray, g: np.ndarray, *, tol: float, max_iterations: int
) -> tuple[np.ndarray, int]:
  """min_β Σ_t w_t ‖g_t − (D β)_t‖² by CGLS on the column-scaled √w-weighted system."""
  root = np.sqrt(w)
  coef = design.coef * root[design.row][:, None]  # √W D
  norms = np.sqrt(np.bincount(design.col, np.sum(coef * coef, axis=1), minlength=design.num_cols))
  # Columns of norm 0 (multisets never reached with weight) keep β = 0: the minimum norm.
  scale = np.divide(1.0, norms, out=np.zeros_like(norms), where=norms > 0)
  residual = root[:, None] * g
  x = np.zeros(design.num_cols)
  gradient = scale * design.apply_transpose(residual, coef)
  direction = gradient.copy()
  gamma = start = float(gradient @ gradient)
  iterations = 0
  while gamma > tol**2 * start:
    if iterations == max_iterations:
      raise RuntimeError(
        f"variance_floor's iterative solver did not reach tol = {tol} in "
        f"max_iterations = {max_iterations} (relative residual "
        f"{math.sqrt(gamma / start):.3g}); raise max_iterations or tol"
      )
    q = design.apply(scale * direction, coef)
    alpha = gamma / float(np.sum(q * q))
    x += alpha * direction
    residual -= alpha * q
    gradient = scale * design.apply_transpose(residual, coef)
    gamma, previous = float(gradient @ gradient), gamma
    direction = gradient + (gamma / previous) * direction
    iterations += 1
  return scale * x, iterations
