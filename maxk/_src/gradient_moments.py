"""The exact mean and covariance of a group's gradient estimate, by count vectors.

A trainer turns the rewards of n i.i.d. samples y_1..y_n ~ π = softmax(θ) of one prompt
into advantages a = f(r_1..r_n) and follows the score-function estimate (Williams 1992)

  ĝ = Σ_i a_i ∇_θ log π(y_i) = Σ_i a_i (e_{y_i} − π).

Arm a always earns the reward r(a), so ĝ is a function of the drawn arms only.  When f
is permutation equivariant (permuting the samples permutes their advantages, as for
every estimator that treats samples alike), ĝ depends on the drawn tuple only through
its count vector c (c_a = number of samples on arm a, Σ_a c_a = n): with the
representative tuple that lists arm 1 c_1 times, then arm 2 c_2 times, ..., and its
advantages a,

  ĝ_c = Σ_a (Σ_{i: y_i = a} a_i) e_a − (Σ_i a_i) π,

and c has the multinomial probability w_c = n! / (Π_a c_a!) Π_a π_a^{c_a}.  So

  E[ĝ] = Σ_c w_c ĝ_c,   Cov[ĝ] = Σ_c w_c (ĝ_c − E[ĝ])(ĝ_c − E[ĝ])ᵀ,

sums over the C(n + A − 1, A − 1) count vectors (multisets of n arms, "stars and bars")
instead of the A^n outcome tuples of :mod:`maxk._src.gradient_check`: 47,905 terms
instead of 4^64 at (n = 64, A = 4), 245,157 instead of 8^16 at (n = 16, A = 8).  The
weights are computed in log space (log n! − Σ log c_a! + Σ c_a log π_a, float64), so
they stay accurate at n = 64 and beyond; the covariance is accumulated chunk by chunk
with the pairwise (Chan et al.) update of centred sums, never as E[ĝĝᵀ] − E[ĝ]E[ĝ]ᵀ.

A batch of P prompts with a product policy (prompt p draws its n samples from its own
π_p) is enumerated over the product of the prompts' count vectors; f then sees all
prompts at once (rewards [..., P, n]), as a cross-prompt estimator needs, and ĝ is the
gradient w.r.t. all P × A logits.

Above ``MAX_COUNT_VECTORS`` (or a caller's ``max_count_vectors``) terms the moments are
Monte Carlo estimates over sampled groups: the sample mean with its standard error and
the sample covariance.

References: Williams, "Simple statistical gradient-following algorithms for
connectionist reinforcement learning", Machine Learning 8 (1992) (the score-function
estimator); Feller, "An Introduction to Probability Theory and Its Applications",
Vol. 1 (3rd ed., 1968), Sec. II.5 (occupancy numbers: C(n + A − 1, A − 1) count vectors)
and Sec. VI.9 (the multinomial distribution); Chan, Golub & LeVeque, "Algorithms for
computing the sample variance", The American Statistician 37 (1983) (merging centred
sums).
"""

from __future__ import annotations

from collections.abc import Iterator
import dataclasses
import math

import numpy as np
import numpy.typing as npt

from maxk._src import gradient_check
from maxk._src.gradient_check import AdvantageFn

#: How many count vectors (their product over prompts, for a batch) are enumerated at
#: most before Monte Carlo is used.
MAX_COUNT_VECTORS = 2**20
_CHUNK_ELEMENTS = 2**20  # Rewards per call of the advantage function (rows × P × n).
_MAX_CHUNK_ROWS = 2**14
_EQUIVARIANCE_TRIALS = 8  # Random reward tuples, each permuted once, per check.
_EQUIVARIANCE_RTOL = 1e-9  # Relative to the largest |advantage|; float64 functions.
_EQUIVARIANCE_EPS = 64  # Machine epsilons allowed for a lower-precision function.


@dataclasses.dataclass(frozen=True)
class GradientMoments:
  """What :func:`gradient_moments` found.

  Shapes are for one prompt (``probs`` [A]); for a batch (``probs`` [P, A]) every [A]
  below is [P, A] and the covariance is [P·A, P·A] over the logits flattened row-major
  (prompt-major: index p·A + a).

  Attributes:
    mean: [A] E[ĝ], the expected gradient estimate w.r.t. the logits.
    mean_se: [A] standard error of ``mean`` (0 when enumerated exactly).
    covariance: [A, A] Cov[ĝ] of one group's estimate.
    trace: tr Cov[ĝ] = E‖ĝ − E[ĝ]‖², the total variance.
    exact: [A] ∇J of the objective given by ``weights`` (summed over prompts), or None.
    bias: [A] mean − exact, or None.
    mse: E‖ĝ − ∇J‖² = trace + ‖bias‖² (exact); for Monte Carlo the average of
      ‖ĝ − ∇J‖² over the sampled groups (unbiased).  None without ``weights``.
    method: "exact" (count vectors enumerated) or "monte carlo (m groups)".
  """

  mean: np.ndarray
  mean_se: np.ndarray
  covariance: np.ndarray
  trace: float
  exact: np.ndarray | None
  bias: np.ndarray | None
  mse: float | None
  method: str


def _policies(probs: npt.ArrayLike, rewards: npt.ArrayLike) -> tuple[np.ndarray, np.ndarray]:
  """probs and rewards as float64 [P, A] (P = 1 for 1-D input), validated."""
  p, r = gradient_check._policy(probs, rewards)
  return np.atleast_2d(p), np.atleast_2d(r)


def count_vectors(num_arms: int, n: int) -> np.ndarray:
  """Every way to put n samples on num_arms arms: [C(n + num_arms − 1, num_arms − 1),
  num_arms] int64, each row summing to n (lexicographic in the first arms' counts)."""
  rows = np.zeros((1, 0), dtype=np.int64)
  remaining = np.array([n], dtype=np.int64)
  for _ in range(num_arms - 1):
    choices = remaining + 1  # This arm takes 0..remaining samples.
    parent = np.repeat(np.arange(rows.shape[0]), choices)
    offsets = np.repeat(np.cumsum(choices) - choices, choices)
    taken = np.arange(parent.size, dtype=np.int64) - offsets
    rows = np.concatenate([rows[parent], taken[:, None]], axis=1)
    remaining = remaining[parent] - taken
  return np.concatenate([rows, remaining[:, None]], axis=1)


def _log_factorials(n: int) -> np.ndarray:
  return np.concatenate([[0.0], np.cumsum(np.log(np.arange(1, n + 1, dtype=np.float64)))])


def _rewards_of_counts(counts_TxS: np.ndarray, rewards_S: np.ndarray) -> np.ndarray:
  """The rewards of each count vector's representative tuple (its arms in order, arm s
  repeated c_s times): [T, n]."""
  t, num_support = counts_TxS.shape
  tiled = np.broadcast_to(rewards_S, (t, num_support)).ravel()
  return np.repeat(tiled, counts_TxS.ravel()).reshape(t, -1)


def _sums_per_arm(a_TxN: np.ndarray, counts_TxS: np.ndarray) -> np.ndarray:
  """Σ_{i: y_i = s} a_i of representative tuples: the sum of each run of c_s: [T, S]."""
  t, n = a_TxN.shape
  starts = (np.cumsum(counts_TxS, axis=1) - counts_TxS) + n * np.arange(t)[:, None]
  padded = np.concatenate([a_TxN.ravel(), [0.0]])  # An empty last run may start at t·n.
  sums = np.add.reduceat(padded, starts.ravel()).reshape(counts_TxS.shape)
  return np.where(counts_TxS > 0, sums, 0.0)  # reduceat gives a[start] for an empty run.


def _chunks(total: int, size: int) -> Iterator[tuple[int, int]]:
  for start in range(0, total, size):
    yield start, min(start + size, total)


def _rows_per_call(num_prompts: int, n: int, total: int) -> int:
  return max(1, min(_MAX_CHUNK_ROWS, _CHUNK_ELEMENTS // (num_prompts * n), total))


def _call(advantage_fn: AdvantageFn, r_TxPxN: np.ndarray, rows: int, batched: bool) -> np.ndarray:
  """advantage_fn on [T, P, n] rewards (as [T, n] for one prompt), padded to ``rows`` rows
  so that a jitted function sees one shape per run: [T, P, n] float64."""
  t = r_TxPxN.shape[0]
  if t < rows:
    pad = np.broadcast_to(r_TxPxN[:1], (rows - t, *r_TxPxN.shape[1:]))
    r_TxPxN = np.concatenate([r_TxPxN, pad])
  r_in = r_TxPxN if batched else r_TxPxN[:, 0, :]
  a = gradient_check._advantages(advantage_fn, r_in)  # Checks shape and finiteness.
  return a.reshape(r_TxPxN.shape)[:t]


def _scores(a_TxPxN: np.ndarray, y_TxPxN: np.ndarray, p_PxA: np.ndarray) -> np.ndarray:
  """ĝ = Σ_i a_i (e_{y_i} − π) per prompt, flattened prompt-major: [T, P·A]."""
  num_arms = p_PxA.shape[1]
  sums = np.stack([np.sum(a_TxPxN * (y_TxPxN == arm), axis=-1) for arm in range(num_arms)], -1)
  g_TxPxA = sums - a_TxPxN.sum(axis=-1, keepdims=True) * p_PxA[None]
  return g_TxPxA.reshape(g_TxPxA.shape[0], -1)


class _Moments:
  """Weighted mean and centred second moment, merged chunk by chunk (Chan et al. 1983)."""

  def __init__(self, dim: int) -> None:
    self.weight = 0.0
    self.mean = np.zeros(dim)
    self.centred = np.zeros((dim, dim))

  def add(self, g_TxD: np.ndarray, w_T: np.ndarray) -> None:
    weight = float(w_T.sum())
    if weight == 0:
      return
    mean = w_T @ g_TxD / weight
    d_TxD = g_TxD - mean
    centred = d_TxD.T @ (w_T[:, None] * d_TxD)
    delta = mean - self.mean
    total = self.weight + weight
    self.centred += centred + np.outer(delta, delta) * (self.weight * weight / total)
    self.mean = self.mean + delta * (weight / total)
    self.weight = total


def _check_equivariant(
  advantage_fn: AdvantageFn, p_PxA: np.ndarray, r_PxA: np.ndarray, n: int, batched: bool
) -> None:
  """Refuses an advantage_fn that is not permutation equivariant within each prompt."""
  rng = np.random.default_rng(0)
  t, num_prompts = _EQUIVARIANCE_TRIALS, p_PxA.shape[0]
  y = np.empty((t, num_prompts, n), dtype=np.int64)
  for prompt in range(num_prompts):  # Arms of the support, uniformly: ties are common.
    support = np.flatnonzero(p_PxA[prompt] > 0)
    y[:, prompt] = support[rng.integers(0, support.size, (t, n))]
  r = r_PxA[np.arange(num_prompts)[None, :, None], y]
  perm = np.argsort(rng.random((t, num_prompts, n)), axis=-1)
  both = np.concatenate([r, np.take_along_axis(r, perm, axis=-1)])
  raw = advantage_fn(both if batched else both[:, 0, :])
  dtype = np.asarray(raw).dtype
  a = gradient_check._advantages(lambda _: raw, both if batched else both[:, 0, :])
  a = a.reshape(both.shape)
  want, got = np.take_along_axis(a[:t], perm, axis=-1), a[t:]
  rtol = _EQUIVARIANCE_RTOL
  if np.issubdtype(dtype, np.floating) and np.finfo(dtype).eps > np.finfo(np.float64).eps:
    rtol = max(rtol, _EQUIVARIANCE_EPS * float(np.finfo(dtype).eps))
  scale = max(float(np.max(np.abs(a))), np.finfo(np.float64).tiny)
  if np.max(np.abs(got - want)) > rtol * scale:
    row = int(np.argmax(np.max(np.abs(got - want), axis=(1, 2))))
    raise ValueError(
      "advantage_fn must be permutation equivariant (permuting a prompt's samples must "
      "permute its advantages) for the count-vector enumeration, but for rewards "
      f"{r[row].tolist()} permuted by {perm[row].tolist()} it returned "
      f"{got[row].tolist()} instead of {want[row].tolist()}"
    )


def _exact(
  advantage_fn: AdvantageFn, p_PxA: np.ndarray, r_PxA: np.ndarray, n: int, batched: bool
) -> _Moments:
  num_prompts, num_arms = p_PxA.shape
  log_fact = _log_factorials(n)
  counts, log_w, arms = [], [], []
  for prompt in range(num_prompts):
    support = np.flatnonzero(p_PxA[prompt] > 0)  # Arms of probability 0 are never drawn.
    c = count_vectors(support.size, n)
    log_p = np.log(p_PxA[prompt, support])
    counts.append(c)
    log_w.append(log_fact[n] - log_fact[c].sum(axis=1) + c @ log_p)
    arms.append(support)
  sizes = [c.shape[0] for c in counts]
  total = math.prod(sizes)
  rows = _rows_per_call(num_prompts, n, total)
  moments = _Moments(num_prompts * num_arms)
  strides = [math.prod(sizes[prompt + 1 :]) for prompt in range(num_prompts)]
  for start, stop in _chunks(total, rows):
    flat = np.arange(start, stop, dtype=np.int64)
    chunk_counts = []
    r = np.empty((stop - start, num_prompts, n))
    log_w_T = np.zeros(stop - start)
    for prompt in range(num_prompts):  # Mixed radix: the last prompt varies fastest.
      index = (flat // strides[prompt]) % sizes[prompt]
      chunk_counts.append(counts[prompt][index])
      r[:, prompt] = _rewards_of_counts(chunk_counts[-1], r_PxA[prompt, arms[prompt]])
      log_w_T += log_w[prompt][index]
    a = _call(advantage_fn, r, rows, batched)
    g = np.zeros((stop - start, num_prompts, num_arms))
    for prompt in range(num_prompts):
      sums = _sums_per_arm(a[:, prompt], chunk_counts[prompt])
      g[:, prompt, arms[prompt]] = sums
      g[:, prompt] -= sums.sum(axis=1, keepdims=True) * p_PxA[prompt]
    moments.add(g.reshape(stop - start, -1), np.exp(log_w_T))
  return moments


def _monte_carlo(
  advantage_fn: AdvantageFn,
  p_PxA: np.ndarray,
  r_PxA: np.ndarray,
  n: int,
  batched: bool,
  num_samples: int,
  seed: int,
  exact: np.ndarray | None,
) -> tuple[_Moments, float]:
  """Moments of ``num_samples`` sampled groups, and the mean of ‖ĝ − exact‖² over them."""
  rng = np.random.default_rng(seed)
  num_prompts, num_arms = p_PxA.shape
  rows = _rows_per_call(num_prompts, n, num_samples)
  moments = _Moments(num_prompts * num_arms)
  squared_error = 0.0
  for start, stop in _chunks(num_samples, rows):
    y = np.stack([rng.choice(num_arms, size=(rows, n), p=p) for p in p_PxA], axis=1)
    r = r_PxA[np.arange(num_prompts)[None, :, None], y]
    a = _call(advantage_fn, r, rows, batched)
    g = _scores(a, y, p_PxA)[: stop - start]
    moments.add(g, np.ones(stop - start))
    if exact is not None:
      squared_error += float(np.sum((g - exact.reshape(-1)) ** 2))
  return moments, squared_error / num_samples


def gradient_moments(
  advantage_fn: AdvantageFn,
  probs: npt.ArrayLike,
  rewards: npt.ArrayLike,
  n: int,
  *,
  weights: npt.ArrayLike | None = None,
  max_count_vectors: int = MAX_COUNT_VECTORS,
  num_samples: int = 200_000,
  seed: int = 0,
) -> GradientMoments:
  """Mean and covariance of a group's estimate ĝ = Σ_i a_i ∇_logits log π(y_i), exactly.

  The policy is π = softmax(logits) with probabilities ``probs``; arm a always earns
  ``rewards[a]``; a group is n i.i.d. draws and ``advantage_fn`` turns their rewards
  into advantages.  The moments are sums over the group's count vectors (the multiset
  of arms drawn; C(n + A − 1, A − 1) of them, with multinomial weights: see the module
  docstring), which is exact for any permutation-equivariant ``advantage_fn`` and far
  fewer terms than the A^n outcome tuples :func:`gradient_bias` enumerates.  Where the
  count vectors (their product over prompts, for a batch) are more than
  ``max_count_vectors``, the moments are Monte Carlo estimates over ``num_samples``
  sampled groups.

  Equivariance is checked first, in every method: ``advantage_fn`` is called on 8
  random reward tuples from the support and on the same tuples with each prompt's
  samples randomly permuted, and must return the permuted advantages to 1e-9 of its
  largest |advantage| (64 machine epsilons for a float32 or lower-precision result).
  A function that fails is refused rather than enumerated by tuples: samples are
  exchangeable, so a trainer's estimator is equivariant, and one that is not is
  usually reducing over the wrong axis.

  ``advantage_fn`` is called in chunks of at most 2^14 groups and 2^20 rewards ([T, n]
  float64 rewards, or [T, P, n] for a batch), every call of one run with the same T, so
  that a jitted JAX function compiles once.  The cost is about linear in (count vectors) × n: at
  (A = 4, n = 64), 47,905 count vectors, and at (A = 8, n = 16), 245,157, a call takes
  under a second on 2 shared CPU cores with RLOO, GRPO or max@k advantages, and a few
  seconds near the cap (``python -m benchmarks.gradient_moments`` prints the table).

  Args:
    advantage_fn: callable from rewards [..., n] to advantages [..., n] (NumPy or JAX;
      the result is converted to float64).  For a batch it receives [..., P, n], all
      prompts at once (prompts on the second-to-last axis), and returns that shape.
    probs: [A] arm probabilities (non-negative, summing to 1), or [P, A] for a batch of
      P prompts with independent policies.
    rewards: the shape of ``probs``: each arm's reward (arms may share a reward).
    n: samples per group (per prompt).
    weights: optional [k] rank weights of an objective J = E[Σ_j w_j X_(j:k)] (as for
      :func:`gradient_bias`; ``maxk.rank_weights("max", k)`` is max@k), summed over
      prompts for a batch.  Given, the result holds ∇J, the bias and the mean squared
      error E‖ĝ − ∇J‖²; scale the weights to compare an estimator on another scale
      (RLOO's ĝ follows n·∇E[r]: weights ``[n]``).
    max_count_vectors: enumerate when there are at most this many count vectors
      (``MAX_COUNT_VECTORS``, 2^20, by default); 0 forces Monte Carlo.
    num_samples: groups sampled for Monte Carlo.
    seed: the Monte Carlo seed.

  Returns:
    A :class:`GradientMoments`.

  Raises:
    ValueError: bad ``probs``/``rewards``/``n``/``weights``/``max_count_vectors``/
      ``num_samples``, or an ``advantage_fn`` that is not permutation equivariant,
      returns another shape or returns non-finite values.

  Example::

    import maxk
    moments = maxk.testing.gradient_moments(
      lambda r: maxk.max_at_k_advantages(r, 4, baseline="loo"),
      probs=[0.5, 0.3, 0.2], rewards=[0.0, 0.5, 1.0], n=32,
      weights=maxk.rank_weights("max", 4))
    print(moments.method, moments.trace, moments.mse)  # exact, over 561 count vectors
  """
  batched = np.ndim(probs) == 2
  p, r = _policies(probs, rewards)
  n = gradient_check._check_n(n)
  max_count_vectors = gradient_check._check_int(max_count_vectors, "max_count_vectors", 0)
  num_samples = gradient_check._check_int(num_samples, "num_samples", 2)
  exact = None
  if weights is not None:
    exact = gradient_check.exact_gradient(p, r, weights)
  _check_equivariant(advantage_fn, p, r, n, batched)
  support = np.count_nonzero(p > 0, axis=1)
  total = math.prod(math.comb(n + int(s) - 1, int(s) - 1) for s in support)
  if total <= max_count_vectors:
    moments = _exact(advantage_fn, p, r, n, batched)
    covariance = moments.centred / moments.weight
    mean_se = np.zeros(p.shape)
    method = "exact"
    mean_squared_error = None
  else:
    moments, mean_squared_error = _monte_carlo(
      advantage_fn, p, r, n, batched, num_samples, seed, exact
    )
    covariance = moments.centred / (num_samples - 1)
    mean_se = np.sqrt(np.diag(covariance) / num_samples).reshape(p.shape)
    method = f"monte carlo ({num_samples} groups)"
  shape = p.shape if batched else p.shape[1:]
  mean = moments.mean.reshape(shape)
  trace = float(np.trace(covariance))
  bias = mse = None
  if exact is not None:
    exact = exact.reshape(shape)
    bias = mean - exact
    mse = trace + float(np.sum(bias**2)) if mean_squared_error is None else mean_squared_error
  return GradientMoments(
    mean=mean,
    mean_se=mean_se.reshape(shape),
    covariance=covariance,
    trace=trace,
    exact=exact,
    bias=bias,
    mse=mse,
    method=method,
  )
