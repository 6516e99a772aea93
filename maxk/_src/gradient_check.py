"""The exact bias and variance of any advantage function, by enumerating outcomes.

A trainer turns the rewards r_1..r_n of n i.i.d. samples y_1..y_n ~ π_θ of one prompt
into advantages a = f(r) and follows the estimate

  ĝ = Σ_i a_i ∇_θ log π_θ(y_i).

For a softmax policy π = softmax(θ) over A arms with fixed rewards, ∇_θ log π(y) =
e_y − π, and both E[ĝ] and the gradient ∇_θ J of the objective the estimator is meant
to follow are finite sums:

  E[ĝ] = Σ_{y ∈ [A]^n} Π_i π(y_i) Σ_i f(r_y)_i (e_{y_i} − π)       (all A^n tuples),

and for a rank objective J = E[Σ_j w_j X_(j:k)] over k draws (max@k: w = e_k; pass@k:
the same with binary rewards), with the outcomes sorted by reward, G_e = π(y_1) + ... +
π(y_e) and H(F) = Σ_j w_j P(Bin(k, F) >= j) (David & Nagaraja, Sec. 2.1),

  J = Σ_{e<A} H(G_e) (r_e − r_{e+1}) + (Σ_j w_j) r_A,
  ∂J/∂π(y_a) = Σ_{a <= e < A} H'(G_e) (r_e − r_{e+1}),
  H'(F) = k Σ_j w_j C(k−1, j−1) F^(j−1) (1 − F)^(k−j),

then ∇_θ J = π ⊙ (∂J/∂π − <π, ∂J/∂π>).  Both are computed in float64 NumPy, so the
check is independent of the JAX code it checks, and ``advantage_fn`` may be written
in NumPy, JAX or anything that maps an array of rewards [..., n] to advantages of the
same shape.  Where A^n is too many tuples, the expectation is a Monte Carlo mean over
sampled groups, with its standard error.

References: Williams, "Simple statistical gradient-following algorithms", Machine
Learning 8 (1992) (the score-function estimator); David & Nagaraja, "Order
Statistics" (3rd ed., 2003), Sec. 2.1; max@k: arXiv 2510.23393, Sec. 3.2.
"""

from __future__ import annotations

from collections.abc import Callable
import dataclasses
import math

import numpy as np
import numpy.typing as npt

#: How many outcome tuples (A^n) are enumerated at most before Monte Carlo is used.
MAX_TUPLES = 2**20
_CHUNK = 2**15  # Tuples per call of the advantage function.
_Z = 4.0  # Standard errors a Monte Carlo bias may lie from 0 and still count as none.

AdvantageFn = Callable[[np.ndarray], npt.ArrayLike]


@dataclasses.dataclass(frozen=True)
class GradientBias:
  """What :func:`gradient_bias` found.

  For a batch (``probs`` [P, A]) every [A] below is [P, A].

  Attributes:
    expected: [A] E[ĝ], the advantage function's expected gradient w.r.t. the logits.
    exact: [A] ∇J, the objective's exact gradient w.r.t. the logits.
    bias: [A] expected − exact.
    bias_se: [A] standard error of ``bias`` (0 when enumerated exactly).
    variance: [A] Var[ĝ] of one group's estimate, per logit.
    relative_bias: ‖bias‖ / ‖exact‖ (inf when the exact gradient is 0 and the bias is not).
    scale: c minimising ‖expected − c·exact‖ (least squares; nan when exact is 0).
    verdict: "unbiased"; "unbiased up to a factor c" (expected = c·exact with c > 0
      and c != 1: it ascends the objective, at another step size, as a z-scored or
      rescaled estimator does); or "biased".
    method: "exact" (all A^n, or A^(P·n), tuples enumerated) or "monte carlo (m groups)".
  """

  expected: np.ndarray
  exact: np.ndarray
  bias: np.ndarray
  bias_se: np.ndarray
  variance: np.ndarray
  relative_bias: float
  scale: float
  verdict: str
  method: str


def _policy(probs: npt.ArrayLike, rewards: npt.ArrayLike) -> tuple[np.ndarray, np.ndarray]:
  """probs and rewards as float64 arrays of one shape, [A] or [P, A], validated."""
  p = np.asarray(probs, dtype=np.float64)
  r = np.asarray(rewards, dtype=np.float64)
  if p.ndim not in (1, 2) or p.size < 1:
    raise ValueError(
      f"probs must be a non-empty [A] or [P, A] array of arm probabilities, got shape {p.shape}"
    )
  if not np.all(np.isfinite(p)) or np.any(p < 0) or np.any(np.abs(p.sum(axis=-1) - 1.0) > 1e-9):
    raise ValueError(f"probs must be finite, non-negative and sum to 1 per prompt, got {p}")
  if r.shape != p.shape:
    raise ValueError(f"rewards must have the shape of probs {p.shape}, got {r.shape}")
  if not np.all(np.isfinite(r)):
    raise ValueError(f"rewards must be finite, got {r}")
  return p, r


def _check_n(n: object) -> int:
  if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
    raise ValueError(f"n must be a positive int (samples per group), got {n!r}")
  return int(n)


def _check_weights(weights: npt.ArrayLike) -> np.ndarray:
  w = np.asarray(weights, dtype=np.float64)
  if w.ndim != 1 or w.size < 1 or not np.all(np.isfinite(w)):
    raise ValueError(f"weights must be a non-empty, finite 1-D array (one per rank), got {w}")
  return w


def _advantages(advantage_fn: AdvantageFn, r_TxN: np.ndarray) -> np.ndarray:
  a = np.asarray(advantage_fn(r_TxN), dtype=np.float64)
  if a.shape != r_TxN.shape:
    raise ValueError(
      f"advantage_fn must return advantages of the rewards' shape {r_TxN.shape}, got {a.shape}"
    )
  if not np.all(np.isfinite(a)):
    bad = r_TxN[~np.all(np.isfinite(a), axis=-1)][0]
    raise ValueError(f"advantage_fn returned non-finite advantages, e.g. for rewards {bad}")
  return a


def _scores(
  advantage_fn: AdvantageFn,
  p_PxA: np.ndarray,
  r_PxA: np.ndarray,
  y_TxPxN: np.ndarray,
  batched: bool,
) -> np.ndarray:
  """ĝ = Σ_i a_i (e_{y_i} − π) of each group of outcomes, per prompt: [T, P·A].

  ``advantage_fn`` sees rewards [T, P, n] for a batch and [T, n] for one prompt.
  """
  t, num_prompts, _ = y_TxPxN.shape
  r_TxPxN = r_PxA[np.arange(num_prompts)[:, None], y_TxPxN]
  a_TxPxN = _advantages(advantage_fn, r_TxPxN if batched else r_TxPxN[:, 0])
  a_TxPxN = a_TxPxN.reshape(r_TxPxN.shape)
  g_TxPxA = np.zeros((t, num_prompts, p_PxA.shape[1]))
  index = (np.arange(t)[:, None, None], np.arange(num_prompts)[None, :, None], y_TxPxN)
  np.add.at(g_TxPxA, index, a_TxPxN)
  g_TxPxA -= a_TxPxN.sum(axis=-1, keepdims=True) * p_PxA
  return g_TxPxA.reshape(t, -1)


def _tuples(num_arms: int, length: int, start: int, stop: int) -> np.ndarray:
  """Outcome tuples number start..stop−1 in base num_arms: [stop − start, length]."""
  index = np.arange(start, stop, dtype=np.int64)
  digits = num_arms ** np.arange(length - 1, -1, -1, dtype=np.int64)
  return (index[:, None] // digits) % num_arms


def _exact_moments(
  advantage_fn: AdvantageFn, p_PxA: np.ndarray, r_PxA: np.ndarray, n: int, batched: bool
) -> tuple[np.ndarray, np.ndarray]:
  """E[ĝ] and Var[ĝ] per logit over all A^(P·n) outcome tuples: [P·A] each."""
  (num_prompts, num_arms), length = p_PxA.shape, p_PxA.shape[0] * n
  mean, second = np.zeros(p_PxA.size), np.zeros(p_PxA.size)
  log_p = np.log(np.where(p_PxA > 0, p_PxA, 1.0))
  prompt = np.arange(num_prompts)[:, None]
  for start in range(0, num_arms**length, _CHUNK):
    y_TxPxN = _tuples(num_arms, length, start, min(start + _CHUNK, num_arms**length))
    y_TxPxN = y_TxPxN.reshape(-1, num_prompts, n)
    possible = np.all(p_PxA[prompt, y_TxPxN] > 0, axis=(1, 2))  # Probability-0 arms never come.
    y_TxPxN = y_TxPxN[possible]
    if y_TxPxN.size == 0:
      continue
    prob_T = np.exp(log_p[prompt, y_TxPxN].sum(axis=(1, 2)))
    g_TxD = _scores(advantage_fn, p_PxA, r_PxA, y_TxPxN, batched)
    mean += prob_T @ g_TxD
    second += prob_T @ g_TxD**2
  return mean, np.maximum(second - mean**2, 0.0)


def _check_tuples(num_arms: int, n: int, num_prompts: int) -> None:
  if num_arms ** (n * num_prompts) > MAX_TUPLES:
    power = f"{num_arms}^{n}" if num_prompts == 1 else f"{num_arms}^({n}·{num_prompts})"
    raise ValueError(
      f"n={n} with {num_arms} arms and {num_prompts} prompt(s) is {power} outcome tuples, "
      f"more than {MAX_TUPLES}; use gradient_bias, which falls back to Monte Carlo, or "
      "gradient_moments, which enumerates count vectors"
    )


def expected_gradient(
  advantage_fn: AdvantageFn, probs: npt.ArrayLike, rewards: npt.ArrayLike, n: int
) -> np.ndarray:
  """E[Σ_i a_i ∇_logits log π(y_i)] of an advantage function, exactly.

  The policy is π = softmax(logits) with probabilities ``probs`` over A arms; arm a
  always earns ``rewards[a]``.  All A^n tuples of n i.i.d. draws are enumerated and
  ``advantage_fn`` is called on their rewards in batches ([T, n] float64 arrays).  A
  batch of P prompts (``probs`` [P, A], each prompt drawing its own n samples) is
  enumerated over all A^(P·n) outcome tuples, and ``advantage_fn`` sees all prompts at
  once ([T, P, n]).

  Args:
    advantage_fn: any callable from rewards [..., n] (a batch: [..., P, n]) to
      advantages of the same shape (NumPy or JAX; a JAX result is converted to float64
      NumPy).
    probs: [A] arm probabilities (non-negative, summing to 1), or [P, A].
    rewards: each arm's reward, the shape of ``probs``.
    n: samples per group; A^n (a batch: A^(P·n)) must be at most
      ``maxk.testing.MAX_TUPLES`` (2^20).

  Returns:
    [A] (a batch: [P, A]) float64 NumPy array: the expected gradient w.r.t. the logits.

  Raises:
    ValueError: bad ``probs``/``rewards``/``n``, too many tuples, or an
      ``advantage_fn`` that returns another shape or non-finite values.
  """
  p, r = _policy(probs, rewards)
  n = _check_n(n)
  p_PxA, r_PxA = np.atleast_2d(p), np.atleast_2d(r)
  _check_tuples(p.shape[-1], n, p_PxA.shape[0])
  return _exact_moments(advantage_fn, p_PxA, r_PxA, n, p.ndim == 2)[0].reshape(p.shape)


def _exact_gradient(p: np.ndarray, r: np.ndarray, w: np.ndarray) -> np.ndarray:
  k = w.size
  order = np.argsort(r, kind="stable")
  p_sorted, r_sorted = p[order], r[order]
  g_e = np.clip(np.cumsum(p_sorted)[:-1], 0.0, 1.0)  # G_e, e = 1..A−1
  j = np.arange(1, k + 1)
  log_comb = np.log([float(math.comb(k - 1, i - 1)) for i in range(1, k + 1)])
  with np.errstate(divide="ignore", invalid="ignore"):
    terms = np.exp(
      log_comb[None, :]
      + np.where(j[None, :] > 1, (j[None, :] - 1) * np.log(g_e[:, None]), 0.0)
      + np.where(j[None, :] < k, (k - j[None, :]) * np.log1p(-g_e[:, None]), 0.0)
    )
  h_prime = k * (terms @ w)  # H'(G_e)
  step = h_prime * (r_sorted[:-1] - r_sorted[1:])
  grad_sorted = np.concatenate([np.cumsum(step[::-1])[::-1], [0.0]])  # Σ_{e >= a} step_e
  grad_p = np.empty_like(grad_sorted)
  grad_p[order] = grad_sorted
  return p * (grad_p - p @ grad_p)


def exact_gradient(
  probs: npt.ArrayLike, rewards: npt.ArrayLike, weights: npt.ArrayLike
) -> np.ndarray:
  """∇_logits of the rank objective J = E[Σ_j w_j X_(j:k)] of a softmax policy, exactly.

  X_(j:k) is the j-th smallest reward among k = len(weights) i.i.d. draws; weights
  as from :func:`maxk.rank_weights` (max@k: ``rank_weights("max", k)``, which with
  0/1 rewards is pass@k).  Computed in float64 from the closed form in this module's
  docstring (ties allowed; O(A k)).  For a batch of P prompts the objective is the sum
  of the prompts' objectives, so its gradient is each prompt's own.

  Args:
    probs: [A] arm probabilities, or [P, A].
    rewards: each arm's reward, the shape of ``probs``.
    weights: [k] the objective's weight per rank, smallest first.

  Returns:
    float64 NumPy array, the shape of ``probs``.
  """
  p, r = _policy(probs, rewards)
  w = _check_weights(weights)
  if p.ndim == 2:
    return np.stack([_exact_gradient(p_a, r_a, w) for p_a, r_a in zip(p, r)])
  return _exact_gradient(p, r, w)


def _monte_carlo_moments(
  advantage_fn: AdvantageFn,
  p_PxA: np.ndarray,
  r_PxA: np.ndarray,
  n: int,
  batched: bool,
  num_samples: int,
  seed: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
  rng = np.random.default_rng(seed)
  num_arms = p_PxA.shape[1]
  total, total_sq = np.zeros(p_PxA.size), np.zeros(p_PxA.size)
  for start in range(0, num_samples, _CHUNK):
    size = min(_CHUNK, num_samples - start)
    y_TxPxN = np.stack([rng.choice(num_arms, size=(size, n), p=p) for p in p_PxA], axis=1)
    g_TxD = _scores(advantage_fn, p_PxA, r_PxA, y_TxPxN, batched)
    total += g_TxD.sum(axis=0)
    total_sq += (g_TxD**2).sum(axis=0)
  mean = total / num_samples
  variance = np.maximum(total_sq / num_samples - mean**2, 0.0) * num_samples / (num_samples - 1)
  return mean, variance, np.sqrt(variance / num_samples)


def gradient_bias(
  advantage_fn: AdvantageFn,
  probs: npt.ArrayLike,
  rewards: npt.ArrayLike,
  n: int,
  weights: npt.ArrayLike,
  *,
  num_samples: int = 200_000,
  seed: int = 0,
  rtol: float = 1e-5,
) -> GradientBias:
  """The bias and variance of an advantage function for a rank objective, with a verdict.

  Compares :func:`expected_gradient` (exact when A^n <= ``MAX_TUPLES``, else a Monte
  Carlo mean over ``num_samples`` groups drawn with ``seed``) with
  :func:`exact_gradient` of the objective given by ``weights``.  For a batch of P
  prompts (``probs`` and ``rewards`` [P, A], a product policy) the objective is the sum
  over prompts, every [A] below is [P, A], enumeration needs A^(P·n) <= ``MAX_TUPLES``,
  ``advantage_fn`` sees all prompts at once (rewards [..., P, n]: cross-prompt
  estimators), and the norms, the scale and the verdict are over all P·A logits.
  Verdicts:

  * exact: "unbiased" when ‖bias‖ <= rtol·‖exact‖ + atol, with atol = rtol·max|r|
    (float32 advantage functions are exact to about 1e-7 relative);
  * Monte Carlo: "unbiased" when every logit's bias is within 4 standard errors of 0
    (about 6e-5 two-sided per logit);
  * "unbiased up to a factor c" when the same test passes for expected − c·exact with
    the least-squares c > 0 (c != 1 beyond the tolerance);
  * otherwise "biased"; ``relative_bias`` then says how large the bias is.

  Args:
    advantage_fn: callable from rewards [..., n] to advantages [..., n] (NumPy or JAX);
      for a batch, from [..., P, n] to [..., P, n].
    probs: [A] arm probabilities of the softmax policy, or [P, A] for P prompts.
    rewards: each arm's reward, the shape of ``probs`` (several arms may share one).
    n: samples per group (the group size the advantage function sees).
    weights: [k] the objective's rank weights (``maxk.rank_weights("max", k)`` for
      max@k, also pass@k with 0/1 rewards).
    num_samples: groups drawn when enumeration is too large.
    seed: the Monte Carlo seed.
    rtol: relative tolerance of the exact check.

  Returns:
    A :class:`GradientBias`.

  Example::

    import maxk
    check = maxk.testing.gradient_bias(
      lambda r: maxk.max_at_k_advantages(r, 4, baseline="loo"),
      probs=[0.5, 0.3, 0.2], rewards=[0.0, 0.5, 1.0], n=8,
      weights=maxk.rank_weights("max", 4))
    print(check.verdict, check.relative_bias)  # unbiased, ~1e-7
  """
  p, r = _policy(probs, rewards)
  n = _check_n(n)
  w = _check_weights(weights)
  if (
    isinstance(num_samples, bool)
    or not isinstance(num_samples, (int, np.integer))
    or num_samples < 2
  ):
    raise ValueError(f"num_samples must be an int >= 2, got {num_samples!r}")
  if not (np.isfinite(rtol) and rtol > 0):
    raise ValueError(f"rtol must be positive, got {rtol!r}")
  batched, p_PxA, r_PxA = p.ndim == 2, np.atleast_2d(p), np.atleast_2d(r)
  exact = exact_gradient(p, r, w).reshape(-1)
  if p.shape[-1] ** (n * p_PxA.shape[0]) <= MAX_TUPLES:
    expected, variance = _exact_moments(advantage_fn, p_PxA, r_PxA, n, batched)
    se = np.zeros_like(expected)
    method = "exact"
  else:
    expected, variance, se = _monte_carlo_moments(
      advantage_fn, p_PxA, r_PxA, n, batched, int(num_samples), seed
    )
    method = f"monte carlo ({int(num_samples)} groups)"
  bias = expected - exact
  norm_exact = float(np.linalg.norm(exact))
  atol = rtol * float(np.max(np.abs(r)))

  def within(residual: np.ndarray, reference: float) -> bool:
    if method == "exact":
      return float(np.linalg.norm(residual)) <= rtol * reference + atol
    return bool(np.all(np.abs(residual) <= _Z * se + 1e-12))

  scale = float(expected @ exact / norm_exact**2) if norm_exact > 0 else float("nan")
  if within(bias, norm_exact):
    verdict = "unbiased"
  elif norm_exact > 0 and scale > 0 and within(expected - scale * exact, scale * norm_exact):
    verdict = f"unbiased up to a factor {scale:.6g}"
  else:
    verdict = "biased"
  norm_bias = float(np.linalg.norm(bias))
  if norm_exact > 0:
    relative = norm_bias / norm_exact
  else:
    relative = 0.0 if norm_bias == 0 else float("inf")
  shape = p.shape
  return GradientBias(
    expected.reshape(shape),
    exact.reshape(shape),
    bias.reshape(shape),
    se.reshape(shape),
    variance.reshape(shape),
    relative,
    scale,
    verdict,
    method,
  )
