"""How GRPO, DAPO, Dr. GRPO and GSPO average a group's loss over tokens: exact bias.

A trainer samples n sequences y_1..y_n of one prompt, turns their rewards into
advantages a = f(r_1..r_n) and sums per-token terms a_i ∇log π(y_it).  The methods
differ in how they normalise that sum over tokens of sequences of different lengths
|y_i|:

  (a) GRPO (Shao et al., arXiv 2402.03300): the token mean of each sequence, then the
      mean over sequences,  ĝ = (1/n) Σ_i (a_i / |y_i|) Σ_t ∇log π(y_it);
  (b) DAPO (Yu et al., arXiv 2503.14476, "token-level policy gradient loss"): the mean
      over all tokens of the group,  ĝ = Σ_i a_i Σ_t ∇log π(y_it) / Σ_j |y_j|;
  (c) Dr. GRPO (Liu et al., arXiv 2503.20783): a constant normaliser, the generation
      budget L,  ĝ = Σ_i a_i Σ_t ∇log π(y_it) / (n L);
  (d) GSPO (Zheng et al., arXiv 2507.18071): the objective (1/n) Σ_i s_i(θ) a_i (clipped)
      with the length-normalised sequence ratio s_i = (π_θ(y_i) / π_old(y_i))^(1/|y_i|).
      At the on-policy point θ = θ_old every s_i = 1, no clip is active and
      ∇s_i = (1/|y_i|) ∇log π(y_i), so  ĝ = (1/n) Σ_i (a_i / |y_i|) ∇log π(y_i): GRPO's
      (a) exactly (GRPO's token ratios are also all 1 there).  They differ off policy
      only, which this module does not model.

Here Σ_t ∇log π(y_it) = ∇log π(y_i), so each ĝ is Σ_i κ_i ∇log π(y_i) with a
coefficient κ_i that depends on the whole group (its rewards and lengths), and

  E[ĝ] = Σ_y C(y) ∇log π(y),   C(y) = E[Σ_i 1{y_i = y} κ_i],

an exact finite sum for a small policy over token sequences: position t has its own
softmax over V tokens (tabular logits [L, V], independent of the prefix), token 0 ends
a sequence and a sequence that reaches length L ends there (|y| counts the end token).
The group's n sequences are enumerated as multisets (the advantage function must be
permutation equivariant, checked) with multinomial weights.

With leave-one-out advantages a_i = r_i − mean_{j≠i} r_j (RLOO) and E[r(y) g(y)
∇log π(y)] = ∇E[r g] for any fixed g, the expectations have closed forms:

  (c) E[ĝ] = (1/L) ∇E[r]: unbiased up to the constant factor 1/L (with Dr. GRPO's own
      a_i = r_i − mean r, the factor is (n − 1)/(n L));
  (a), (d) E[ĝ] = ∇E[r/|y|] − E[r] ∇E[1/|y|], whatever n: not a multiple of ∇E[r] when
      rewards and lengths are related (it is ∇Cov(r, 1/|y|) + E[1/|y|] ∇E[r]);
  (b) no closed form at finite n (1/Σ_j |y_j| couples the samples); as n grows,
      Σ_j |y_j| / n → E|y| and E[ĝ] → ∇E[r] / E|y|.

:func:`aggregation_bias` computes E[ĝ] by enumeration and compares it with ∇E[r] (and
with ∇E[r/|y|] and ∇(E[r]/E|y|)).

References: Shao et al., "DeepSeekMath", arXiv 2402.03300 (GRPO); Yu et al., "DAPO",
arXiv 2503.14476; Liu et al., "Understanding R1-Zero-Like Training: A Critical
Perspective", arXiv 2503.20783 (Dr. GRPO); Zheng et al., "Group Sequence Policy
Optimization", arXiv 2507.18071 (GSPO); Williams (1992) (the score-function estimator).
"""

from __future__ import annotations

from collections.abc import Sequence
import dataclasses
import itertools
import math

import numpy as np
import numpy.typing as npt

from maxk._src import gradient_check
from maxk._src.gradient_check import AdvantageFn

#: The loss aggregations :func:`aggregation_bias` knows, as in the module docstring.
AGGREGATIONS = ("grpo", "dapo", "dr_grpo", "gspo")
#: How many multisets of n sequences are enumerated at most.
MAX_SEQUENCE_GROUPS = 2**20
_CHUNK = 2**14
_LOGIT_STEP = 1.0  # How far aggregation_bias's automatic policies move the logits.


def _rloo(rewards: np.ndarray) -> np.ndarray:
  """a_i = r_i − mean_{j≠i} r_j over the last axis (0 for a group of one), float64."""
  r = np.asarray(rewards, dtype=np.float64)
  n = r.shape[-1]
  if n < 2:
    return np.zeros_like(r)
  return r - (r.sum(axis=-1, keepdims=True) - r) / (n - 1)


def token_sequences(max_length: int, vocab_size: int) -> tuple[np.ndarray, np.ndarray]:
  """Every sequence of the toy policy, shortest first, then in lexicographic order.

  Token 0 ends a sequence; tokens 1..V−1 continue it until length ``max_length``, where
  any token ends it.  There are Σ_{m<L} (V−1)^(m−1) + V (V−1)^(L−1) sequences.

  Args:
    max_length: L >= 1, the longest sequence (the generation budget).
    vocab_size: V >= 2, tokens 0..V−1.

  Returns:
    tokens [S, L] int64 (−1 after a sequence's end) and lengths [S] int64 (the end
    token counted).
  """
  length = gradient_check._check_int(max_length, "max_length", 1)
  vocab = gradient_check._check_int(vocab_size, "vocab_size", 2)
  rows: list[tuple[int, ...]] = []
  for m in range(1, length + 1):
    last = range(vocab) if m == length else (0,)
    for body in itertools.product(range(1, vocab), repeat=m - 1):
      rows.extend(body + (t,) for t in last)
  tokens = np.full((len(rows), length), -1, dtype=np.int64)
  for s, row in enumerate(rows):
    tokens[s, : len(row)] = row
  return tokens, np.array([len(row) for row in rows], dtype=np.int64)


def _sequence_scores(logits: npt.ArrayLike) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
  """π(y) [S], ∇_logits log π(y) [S, L, V] and lengths [S] of every sequence.

  ``logits`` [L, V] (float64, finite) gives position t the policy softmax(logits[t]);
  ∇ log π(y) has row t = e_{y_t} − softmax(logits[t]) for t < |y| and 0 after.
  """
  z = np.asarray(logits, dtype=np.float64)
  if z.ndim != 2 or z.shape[1] < 2 or not np.all(np.isfinite(z)):
    raise ValueError(f"logits must be a finite [L, V] array with V >= 2, got shape {z.shape}")
  probs_LxV = np.exp(z - z.max(axis=-1, keepdims=True))
  probs_LxV /= probs_LxV.sum(axis=-1, keepdims=True)
  tokens, lengths = token_sequences(*z.shape)
  live = tokens >= 0
  onehot = np.zeros((tokens.shape[0], *z.shape))
  s_idx, t_idx = np.nonzero(live)
  onehot[s_idx, t_idx, tokens[s_idx, t_idx]] = 1.0
  score = (onehot - probs_LxV[None]) * live[:, :, None]
  log_pi = np.where(live, np.log(probs_LxV[np.arange(z.shape[0]), np.maximum(tokens, 0)]), 0.0)
  return np.exp(log_pi.sum(axis=-1)), score, lengths


def _multisets(num_items: int, n: int, start: int, stop: int) -> np.ndarray:
  """Multisets number start..stop−1 of n items from num_items, sorted rows: [T, n]."""
  combos = itertools.islice(
    itertools.combinations_with_replacement(range(num_items), n), start, stop
  )
  flat = np.fromiter(itertools.chain.from_iterable(combos), dtype=np.int64)
  return flat.reshape(-1, n)


def _coefficients(
  aggregation: str, a_TxN: np.ndarray, len_TxN: np.ndarray, max_length: int
) -> np.ndarray:
  """κ_i of ĝ = Σ_i κ_i ∇log π(y_i) per group: [T, n]."""
  n = a_TxN.shape[-1]
  if aggregation in ("grpo", "gspo"):
    return a_TxN / (n * len_TxN)
  if aggregation == "dapo":
    return a_TxN / len_TxN.sum(axis=-1, keepdims=True)
  return a_TxN / (n * max_length)  # dr_grpo


@dataclasses.dataclass(frozen=True)
class AggregationBias:
  """What :func:`aggregation_bias` found for one aggregation, group size and policy.

  Attributes:
    aggregation: one of ``AGGREGATIONS``.
    n: the group size.
    expected: [L, V] E[ĝ] w.r.t. the logits.
    exact: [L, V] ∇E[r], the expected reward's gradient.
    scale: c minimising ‖expected − c·exact‖ (nan when exact is 0).
    cosine: cos(expected, ∇E[r]).
    relative_error: ‖expected − c·exact‖ / ‖c·exact‖ with c = ``scale``: the part of
      E[ĝ] no step size removes, relative (0 when it is a multiple of ∇E[r]).
    verdict: see :func:`aggregation_bias`.
    cosines: cos(expected, ∇J) for J = "E[r]", "E[r/|y|]" and "E[r]/E[|y|]".
    mean_length: E|y| under the policy.
    length_slope: <expected, ∇E|y|> / ‖expected‖: how fast a unit step along E[ĝ]
      lengthens the sequences (compare the same for ∇E[r], ``reward_length_slope``).
    reward_length_slope: <∇E[r], ∇E|y|> / ‖∇E[r]‖.
    policies: [m, L, V] the compared logits, the given ones first.
    scales: [m] c at each compared policy (nan where ∇E[r] is 0).
  """

  aggregation: str
  n: int
  expected: np.ndarray
  exact: np.ndarray
  scale: float
  cosine: float
  relative_error: float
  verdict: str
  cosines: dict[str, float]
  mean_length: float
  length_slope: float
  reward_length_slope: float
  policies: np.ndarray
  scales: np.ndarray


_COMPARED = ("E[r]", "E[r/|y|]", "E[r]/E[|y|]")


def _slope(direction: np.ndarray, g_len: np.ndarray) -> float:
  norm = float(np.linalg.norm(direction))
  return float(direction.ravel() @ g_len.ravel()) / norm if norm > 0 else math.nan


def _cosine(u: np.ndarray, v: np.ndarray) -> float:
  nu, nv = float(np.linalg.norm(u)), float(np.linalg.norm(v))
  return float(u.ravel() @ v.ravel()) / (nu * nv) if nu > 0 and nv > 0 else math.nan


def expected_aggregated_gradient(
  logits: npt.ArrayLike,
  rewards: npt.ArrayLike,
  n: int,
  aggregation: str,
  *,
  advantage_fn: AdvantageFn = _rloo,
) -> np.ndarray:
  """E[ĝ] [L, V] of one aggregation (see the module docstring), exactly.

  Args:
    logits: [L, V] the toy policy's logits (position t: softmax(logits[t])).
    rewards: [S] each sequence's reward, in the order of :func:`token_sequences`.
    n: the group size; C(S + n − 1, n) multisets must be at most ``MAX_SEQUENCE_GROUPS``.
    aggregation: one of ``AGGREGATIONS``.
    advantage_fn: rewards [T, n] -> advantages [T, n], permutation equivariant
      (default: RLOO, r_i − mean_{j≠i} r_j).

  Returns:
    [L, V] float64.

  Raises:
    ValueError: bad shapes or values, too many multisets, an unknown aggregation, or
      an advantage function that returns another shape, non-finite values or
      advantages that depend on the samples' order.
  """
  probs_S, score_SxLxV, lengths_S = _sequence_scores(logits)
  r_S = _check_rewards(rewards, probs_S.size)
  n = gradient_check._check_int(n, "n", 1)
  if aggregation not in AGGREGATIONS:
    raise ValueError(f"aggregation must be one of {AGGREGATIONS}, got {aggregation!r}")
  num_sequences, max_length = probs_S.size, score_SxLxV.shape[1]
  total = math.comb(num_sequences + n - 1, n)
  if total > MAX_SEQUENCE_GROUPS:
    raise ValueError(
      f"n={n} with {num_sequences} sequences is {total} multisets, more than {MAX_SEQUENCE_GROUPS}"
    )
  log_p = np.log(np.maximum(probs_S, np.finfo(np.float64).tiny))
  log_factorials = np.array([math.lgamma(k + 1) for k in range(n + 1)])
  c_S = np.zeros(num_sequences)
  for start in range(0, total, _CHUNK):
    y_TxN = _multisets(num_sequences, n, start, min(start + _CHUNK, total))
    # Multinomial weight n! / Π m_s! Π π(y_i): the run position k_j within equal items
    # multiplies up to Π m_s!.
    run = np.ones_like(y_TxN)
    for j in range(1, n):
      run[:, j] = np.where(y_TxN[:, j] == y_TxN[:, j - 1], run[:, j - 1] + 1, 1)
    log_w = log_factorials[n] - np.log(run).sum(axis=-1) + log_p[y_TxN].sum(axis=-1)
    r_TxN = r_S[y_TxN]
    a_TxN = _advantages(advantage_fn, r_TxN)
    kappa = _coefficients(aggregation, a_TxN, lengths_S[y_TxN].astype(np.float64), max_length)
    np.add.at(c_S, y_TxN, np.exp(log_w)[:, None] * kappa)
  return np.tensordot(c_S, score_SxLxV, axes=1)


def _check_rewards(rewards: npt.ArrayLike, num_sequences: int) -> np.ndarray:
  r = np.asarray(rewards, dtype=np.float64)
  if r.shape != (num_sequences,) or not np.all(np.isfinite(r)):
    raise ValueError(
      f"rewards must be [{num_sequences}] finite values (one per sequence of "
      f"token_sequences), got shape {r.shape}"
    )
  return r


def _advantages(advantage_fn: AdvantageFn, r_TxN: np.ndarray) -> np.ndarray:
  both = np.concatenate([r_TxN, r_TxN[:, ::-1]])
  a = np.asarray(advantage_fn(both), dtype=np.float64)
  if a.shape != both.shape:
    raise ValueError(
      f"advantage_fn must return advantages of the rewards' shape {both.shape}, got {a.shape}"
    )
  if not np.all(np.isfinite(a)):
    raise ValueError("advantage_fn returned non-finite advantages")
  forward, backward = a[: r_TxN.shape[0]], a[r_TxN.shape[0] :, ::-1]
  scale = float(np.max(np.abs(a), initial=0.0))
  if np.max(np.abs(forward - backward), initial=0.0) > 1e-6 * max(scale, 1.0):
    raise ValueError(
      "advantage_fn must be permutation equivariant (reversing a group's samples must "
      "reverse its advantages)"
    )
  return forward


def sequence_objective_gradients(
  logits: npt.ArrayLike, rewards: npt.ArrayLike
) -> dict[str, np.ndarray]:
  """∇_logits of E[r], E[r/|y|], E[|y|] and E[r]/E[|y|] of the toy policy: [L, V] each.

  From ∇E[g] = E[g ∇log π(y)] for a fixed g(y) (a sum over all sequences), and the
  quotient rule for E[r]/E[|y|].
  """
  probs_S, score_SxLxV, lengths_S = _sequence_scores(logits)
  r_S = _check_rewards(rewards, probs_S.size)
  length = lengths_S.astype(np.float64)

  def grad(g_S: np.ndarray) -> np.ndarray:
    return np.tensordot(probs_S * g_S, score_SxLxV, axes=1)

  mean_r, mean_len = float(probs_S @ r_S), float(probs_S @ length)
  g_r, g_len = grad(r_S), grad(length)
  return {
    "E[r]": g_r,
    "E[r/|y|]": grad(r_S / length),
    "E[|y|]": g_len,
    "E[r]/E[|y|]": (g_r * mean_len - mean_r * g_len) / mean_len**2,
  }


def _perturbed_logits(logits: np.ndarray) -> list[np.ndarray]:
  """Three deterministic policies around ``logits``: the end token's logit ±1 at every
  position (shorter and longer sequences), and ±1 in a checkerboard over [L, V]."""
  end = np.zeros_like(logits)
  end[:, 0] = _LOGIT_STEP
  board = _LOGIT_STEP * np.where(np.add.outer(*map(np.arange, logits.shape)) % 2 == 0, 1.0, -1.0)
  return [logits + end, logits - end, logits + board]


def aggregation_bias(
  logits: npt.ArrayLike,
  rewards: npt.ArrayLike,
  n: int,
  aggregation: str,
  *,
  advantage_fn: AdvantageFn = _rloo,
  rtol: float = 1e-9,
  policies: Sequence[npt.ArrayLike] | None = None,
) -> AggregationBias:
  """How far one loss aggregation's expected gradient is from ∇E[r], exactly.

  Enumerates the groups of n sequences of the toy policy (module docstring) with
  :func:`expected_aggregated_gradient` and compares E[ĝ] with ∇E[r] from
  :func:`sequence_objective_gradients` (cosine, least-squares scale, the relative error
  no scale removes, a verdict) and with the gradients of E[r/|y|] and E[r]/E[|y|].  As
  :func:`maxk.testing.gradient_bias` does, it fits E[ĝ] ≈ c·∇E[r] also at other
  policies (``policies``) to tell a constant factor from one that changes with the
  policy.  Verdicts:

  * "unbiased": ‖E[ĝ] − ∇E[r]‖ <= rtol·‖∇E[r]‖ + atol (atol = rtol·max|r|) and c = 1
    within rtol at every compared policy;
  * "unbiased up to a constant factor c": E[ĝ] = c·∇E[r] with the same c > 0 at every
    compared policy (Dr. GRPO with RLOO: c = 1/L);
  * "a factor c that changes with the policy (c from x to y)": E[ĝ] = c·∇E[r] at every
    compared policy, c differing between them (DAPO as n → ∞: c → 1/E|y|);
  * "unbiased up to a factor c": only with ``policies=()``, c > 0 at the one policy;
  * "biased": not a positive multiple of ∇E[r] at some compared policy.

  Args:
    logits: [L, V] the toy policy's logits; L is the generation budget (Dr. GRPO's
      constant normaliser).
    rewards: [S] each sequence's reward, in the order of :func:`token_sequences`.
    n: the group size.
    aggregation: "grpo", "dapo", "dr_grpo" or "gspo".
    advantage_fn: rewards [T, n] -> advantages [T, n], permutation equivariant
      (default RLOO; ``lambda r: r - r.mean(-1, keepdims=True)`` is Dr. GRPO's).
    rtol: relative tolerance of the verdict; the default suits float64 advantage
      functions, 1e-5 float32 ones.
    policies: other [L, V] logits at which c is compared.  None: three, ``logits``
      with the end token's logit +1 and −1 at every position and with ±1 in a
      checkerboard over [L, V]; ``()``: none.

  Returns:
    An :class:`AggregationBias`.

  Example::

    import numpy as np
    from maxk import testing
    tokens, lengths = testing.token_sequences(3, 3)
    rewards = (lengths == 3).astype(float)  # Long answers are right.
    logits = np.zeros((3, 3))
    for name in testing.AGGREGATIONS:
      check = testing.aggregation_bias(logits, rewards, 4, name)
      print(name, check.verdict, check.cosine)
  """
  if not (np.isfinite(rtol) and rtol > 0):
    raise ValueError(f"rtol must be positive, got {rtol!r}")
  z = np.asarray(logits, dtype=np.float64)
  if policies is None:
    others = _perturbed_logits(z) if z.ndim == 2 else []
  else:
    if isinstance(policies, (str, bytes)) or not isinstance(policies, (Sequence, np.ndarray)):
      raise ValueError(f"policies must be a sequence of [L, V] logits or None, got {policies!r}")
    others = [np.asarray(q, dtype=np.float64) for q in policies]
    if any(q.shape != z.shape for q in others):
      raise ValueError(f"policies must be logits of the shape of logits {z.shape}")
  atol = rtol * float(np.max(np.abs(np.asarray(rewards, dtype=np.float64)), initial=0.0))

  def fit(q: np.ndarray) -> tuple[np.ndarray, np.ndarray, float, bool, float]:
    """E[ĝ], ∇E[r], c, whether E[ĝ] = c·∇E[r] and how far another c may lie."""
    expected = expected_aggregated_gradient(q, rewards, n, aggregation, advantage_fn=advantage_fn)
    exact = sequence_objective_gradients(q, rewards)["E[r]"]
    norm = float(np.linalg.norm(exact))
    if norm == 0:
      return expected, exact, math.nan, bool(np.linalg.norm(expected) <= atol), math.nan
    c = float(expected.ravel() @ exact.ravel()) / norm**2
    parallel = float(np.linalg.norm(expected - c * exact)) <= rtol * abs(c) * norm + atol
    return expected, exact, c, parallel, rtol * abs(c) + atol / norm

  expected, exact, scale, parallel, tolerance = fit(z)
  fits = [(scale, parallel, tolerance)] + [fit(q)[2:] for q in others]
  scales = np.array([f[0] for f in fits])
  tols = np.array([f[2] for f in fits])
  norm_exact = float(np.linalg.norm(exact))
  unbiased_here = float(np.linalg.norm(expected - exact)) <= rtol * norm_exact + atol
  finite = np.isfinite(scales)
  c_fin, tol_fin = scales[finite], tols[finite]
  constant = bool(np.all(np.abs(c_fin - c_fin[0]) <= tol_fin + tol_fin[0])) if c_fin.size else True
  near_one = bool(np.all(np.abs(c_fin - 1) <= tol_fin))
  if not all(f[1] for f in fits):
    verdict = "biased"
  elif unbiased_here and near_one:
    verdict = "unbiased"
  elif constant and c_fin.size and float(c_fin.min()) > 0:
    kind = "a factor" if len(fits) == 1 else "a constant factor"
    verdict = f"unbiased up to {kind} {scale:.6g}"
  elif not constant:
    verdict = (
      "a factor c that changes with the policy "
      f"(c from {float(c_fin.min()):.4g} to {float(c_fin.max()):.4g})"
    )
  else:
    verdict = "biased"
  gradients = sequence_objective_gradients(z, rewards)
  residual = float(np.linalg.norm(expected - scale * exact)) if norm_exact else math.nan
  relative = residual / (abs(scale) * norm_exact) if norm_exact and scale else math.inf
  probs_S, _, lengths_S = _sequence_scores(z)
  return AggregationBias(
    aggregation=aggregation,
    n=int(n),
    expected=expected,
    exact=exact,
    scale=scale,
    cosine=_cosine(expected, exact),
    relative_error=relative,
    verdict=verdict,
    cosines={name: _cosine(expected, gradients[name]) for name in _COMPARED},
    mean_length=float(probs_S @ lengths_S),
    length_slope=_slope(expected, gradients["E[|y|]"]),
    reward_length_slope=_slope(exact, gradients["E[|y|]"]),
    policies=np.stack([z] + others),
    scales=scales,
  )
