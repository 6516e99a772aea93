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

a convex quadratic in β: its minimum is a weighted least-squares problem, solved
exactly (``numpy.linalg.lstsq`` on the stacked √w_c-weighted system, float64; the
minimum-norm β where the table is not identified, e.g. a multiset only reached with
weight 0).  The same over constant baselines (one column, Σ_a c_a (e_a − π) = c − nπ)
gives b* = E[⟨G, c − nπ⟩] / E[‖c − nπ‖²], which for s_i = r_i is Greensmith, Bartlett
& Baxter's (JMLR 5, 2004) b* = E[r ‖∇log π‖²] / E[‖∇log π‖²].
"""

from __future__ import annotations

import dataclasses

import numpy as np
import numpy.typing as npt

from maxk._src import gradient_check
from maxk._src import gradient_moments
from maxk._src.gradient_check import AdvantageFn

#: The largest stacked least-squares system (rows × columns) :func:`variance_floor` builds.
MAX_FLOOR_ENTRIES = 2**24


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
  """

  trace: float
  baseline: np.ndarray
  baseline_counts: np.ndarray
  reward_values: np.ndarray
  constant_trace: float
  constant_baseline: float
  none_trace: float
  mean: np.ndarray


def variance_floor(
  transform_fn: AdvantageFn,
  probs: npt.ArrayLike,
  rewards: npt.ArrayLike,
  n: int,
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
  (count vectors of n over the support) × A rows and C(n + V − 2, V − 1) columns,
  at most ``MAX_FLOOR_ENTRIES`` (2^24) entries: e.g. A = 4 and n <= 16, A = 6 and
  n <= 8.

  Args:
    transform_fn: rewards [T, n] -> s [T, n] (NumPy or JAX), the unbiased transform.
    probs: [A] arm probabilities.
    rewards: [A] each arm's reward (arms may share one).
    n: samples per group.

  Returns:
    A :class:`VarianceFloor`.

  Raises:
    ValueError: bad ``probs``/``rewards``/``n``, a ``transform_fn`` that is not
      equivariant or returns another shape or non-finite values, or a system
      larger than ``MAX_FLOOR_ENTRIES``.

  Example::

    import maxk
    floor = maxk.testing.variance_floor(
      lambda r: maxk.max_at_k_advantages(r, 2, baseline="none"),
      probs=[0.5, 0.3, 0.2], rewards=[0.0, 0.5, 1.0], n=4)
    print(floor.trace, floor.constant_trace, floor.none_trace)
  """
  if np.ndim(probs) != 1:
    raise ValueError(f"probs must be one prompt's [A] probabilities; got shape {np.shape(probs)}")
  p_1xA, r_1xA = gradient_moments._policies(probs, rewards)
  n = gradient_check._check_n(n)
  p, r = p_1xA[0], r_1xA[0]
  num_arms = p.size
  support = np.flatnonzero(p > 0)
  values, value_of = np.unique(r[support], return_inverse=True)
  num_values = values.size
  counts = gradient_moments.count_vectors(support.size, n)  # [T, S]
  table = gradient_moments.count_vectors(num_values, n - 1)  # [M, V]
  rows, cols = counts.shape[0] * num_arms, table.shape[0]
  if rows * (cols + 1) > MAX_FLOOR_ENTRIES:
    raise ValueError(
      f"the least-squares system has {rows} x {cols} entries, more than "
      f"MAX_FLOOR_ENTRIES = {MAX_FLOOR_ENTRIES}: fewer arms or samples"
    )
  gradient_moments._check_equivariant(transform_fn, p_1xA, r_1xA, n, False)

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

  # D_c: column index of the multiset c − e_a (over values) for every support arm a.
  onehot = np.zeros((support.size, num_values), dtype=np.int64)
  onehot[np.arange(support.size), value_of] = 1
  value_counts = counts @ onehot  # [T, V]
  radix = (n + 1) ** np.arange(num_values, dtype=np.int64)
  codes = table @ radix
  order = np.argsort(codes)
  design = np.zeros((counts.shape[0], num_arms, cols))
  for arm in range(support.size):
    present = counts[:, arm] > 0
    others = value_counts[present] - onehot[arm]
    column = order[np.searchsorted(codes, others @ radix, sorter=order)]
    t = np.flatnonzero(present)
    design[t[:, None], np.arange(num_arms)[None, :], column[:, None]] += (
      counts[present, arm][:, None] * scores[arm][None, :]
    )
  root = np.sqrt(w)[:, None, None]
  beta, *_ = np.linalg.lstsq(
    (root * design).reshape(rows, cols), (root[..., 0] * g).reshape(rows), rcond=None
  )
  mean = w @ g

  def trace_of(g_hat: np.ndarray) -> float:
    return float(w @ np.sum((g_hat - mean) ** 2, axis=1))

  u = np.zeros((counts.shape[0], num_arms))
  u[:, support] = counts
  u -= n * p  # Σ_i (e_{y_i} − π) = c − nπ.
  denominator = float(w @ np.sum(u * u, axis=1))
  constant = float(w @ np.sum(g * u, axis=1)) / denominator if denominator > 0 else 0.0
  return VarianceFloor(
    trace=trace_of(g - np.einsum("tam,m->ta", design, beta)),
    baseline=beta,
    baseline_counts=table,
    reward_values=values,
    constant_trace=trace_of(g - constant * u),
    constant_baseline=constant,
    none_trace=trace_of(g),
    mean=mean,
  )
