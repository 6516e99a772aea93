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

One policy is not enough to call an estimator unbiased up to a factor: with 0/1
rewards every advantage function gives E[ĝ] = w(p) ∇p (p = P(correct); the derivation
of :func:`maxk.implied_prompt_weight` needs only that a_i depends on the rewards), so
E[ĝ] = c·∇J at every policy, with c = w(p) / w_J(p).  It follows ∇J's field only when
c is the same at every p; otherwise it ascends ∫ w(p) dp, another objective (pass@3
advantages for pass@2: c = 3(1 − p)² / (2(1 − p)) = 1.5 (1 − p)).
:func:`gradient_bias` therefore fits c at several policies and, for 0/1 rewards,
reports w(p) on a grid of p.

References: Williams, "Simple statistical gradient-following algorithms", Machine
Learning 8 (1992) (the score-function estimator); David & Nagaraja, "Order
Statistics" (3rd ed., 2003), Sec. 2.1; max@k: arXiv 2510.23393, Sec. 3.2.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
import dataclasses
import math

import numpy as np
import numpy.typing as npt

#: How many outcome tuples (A^n) are enumerated at most before Monte Carlo is used.
MAX_TUPLES = 2**20
_CHUNK = 2**15  # Tuples per call of the advantage function.
_Z = 4.0  # Standard errors a Monte Carlo bias may lie from 0 and still count as none.
_LOGIT_STEP = 1.0  # How far gradient_bias's automatic policies move the logits.
#: P(correct) at which gradient_bias reports the prompt weight w(p) of 0/1 rewards.
_WEIGHT_GRID = (0.1, 0.3, 0.5, 0.7, 0.9)

AdvantageFn = Callable[[np.ndarray], npt.ArrayLike]


@dataclasses.dataclass(frozen=True)
class GradientBias:
  """What :func:`gradient_bias` found.

  For a batch (``probs`` [P, A]) every [A] below is [P, A], and every [m] or [G] is
  [m, P] or [G, P] (one value per prompt).

  Attributes:
    expected: [A] E[ĝ], the advantage function's expected gradient w.r.t. the logits.
    exact: [A] ∇J, the objective's exact gradient w.r.t. the logits.
    bias: [A] expected − exact.
    bias_se: [A] standard error of ``bias`` (0 when enumerated exactly).
    variance: [A] Var[ĝ] of one group's estimate, per logit.
    relative_bias: ‖bias‖ / ‖exact‖ (inf when the exact gradient is 0 and the bias is not).
    scale: c minimising ‖expected − c·exact‖ (least squares; nan when exact is 0).
    verdict: "unbiased"; "unbiased up to a constant factor c" (expected = c·exact with
      the same c > 0 at every compared policy: it follows the objective's gradient
      field at another step size, as RLOO on GRPO's per-sample scale does); "a factor
      c that changes with the policy (c from x to y)", with 0/1 rewards followed by
      ": follows another objective" and the name of one that matches, e.g.
      "(pass@3)"; "unbiased up to a factor c" (only with ``policies=()``: c > 0 at
      the one policy compared); or "biased".  See :func:`gradient_bias`.
    method: "exact" (all A^n, or A^(P·n), tuples enumerated) or "monte carlo (m groups)".
    policies: [m, A] the compared policies' probabilities, the given one first.
    scales: [m] the least-squares c of expected ≈ c·exact at each compared policy
      (per prompt; nan where the exact gradient is 0).
    scale_range: (min, max) of c over the compared policies and, for 0/1 rewards
      unless ``policies=()``, the grid ``implied_weight_p``.
    implied_weight_p: [G] for rewards with two values (0/1): the P(correct) p at which
      the prompt weight is reported (None otherwise, or when 2^n is too many tuples).
    implied_weight: [G] w(p) with E[ĝ] = w(p)·∇p on two arms at P(correct) = p (for
      a batch: every prompt at p), :func:`maxk.implied_prompt_weight`'s weight, here
      by enumeration in float64 (any advantage function, also cross-prompt ones).
    implied_weight_ratio: [G] w(p) / w_objective(p): the factor c at p.
    implied_objective: "pass@j" or "c·pass@j" when w(p) is (c times) pass@j's weight
      (high − low)·j(1 − p)^(j−1) on the grid (j <= n), else "".
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
  policies: np.ndarray | None = None
  scales: np.ndarray | None = None
  scale_range: tuple[float, float] = (math.nan, math.nan)
  implied_weight_p: np.ndarray | None = None
  implied_weight: np.ndarray | None = None
  implied_weight_ratio: np.ndarray | None = None
  implied_objective: str = ""


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


def _check_int(value: object, name: str, minimum: int) -> int:
  """``value`` as an int, or a ValueError naming ``name`` (an int >= ``minimum``)."""
  if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
    raise ValueError(f"{name} must be an int >= {minimum}, got {value!r}")
  return int(value)


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


def _moments(
  advantage_fn: AdvantageFn,
  p_PxA: np.ndarray,
  r_PxA: np.ndarray,
  n: int,
  batched: bool,
  num_samples: int,
  seed: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool]:
  """E[ĝ], Var[ĝ], the standard error of E[ĝ] ([P·A] each) and whether it is exact."""
  if p_PxA.shape[1] ** (n * p_PxA.shape[0]) <= MAX_TUPLES:
    expected, variance = _exact_moments(advantage_fn, p_PxA, r_PxA, n, batched)
    return expected, variance, np.zeros_like(expected), True
  expected, variance, se = _monte_carlo_moments(
    advantage_fn, p_PxA, r_PxA, n, batched, num_samples, seed
  )
  return expected, variance, se, False


@dataclasses.dataclass(frozen=True)
class _Fit:
  """expected ≈ c·exact per prompt: c [P] (nan where exact is 0), its tolerance [P], and
  whether the residual is within tolerance for every prompt."""

  scale: np.ndarray
  tolerance: np.ndarray
  parallel: bool


def _fit(
  expected_PxA: np.ndarray,
  exact_PxA: np.ndarray,
  se_PxA: np.ndarray,
  exact_moments: bool,
  rtol: float,
  atol: float,
) -> _Fit:
  norm_P = np.linalg.norm(exact_PxA, axis=-1)
  safe_P = np.where(norm_P > 0, norm_P, 1.0)
  c_P = np.where(norm_P > 0, np.sum(expected_PxA * exact_PxA, axis=-1) / safe_P**2, np.nan)
  residual = expected_PxA - np.nan_to_num(c_P)[:, None] * exact_PxA
  if exact_moments:
    slack_P = rtol * np.abs(np.nan_to_num(c_P)) * norm_P + atol
    parallel = bool(np.all(np.linalg.norm(residual, axis=-1) <= slack_P))
    tol_P = rtol * np.abs(c_P) + atol / safe_P
  else:
    parallel = bool(np.all(np.abs(residual) <= _Z * se_PxA + 1e-12))
    tol_P = _Z * np.linalg.norm(se_PxA * exact_PxA, axis=-1) / safe_P**2 + 1e-12
  return _Fit(c_P, np.where(norm_P > 0, tol_P, np.nan), parallel)


def _perturbed_policies(p_PxA: np.ndarray, r_PxA: np.ndarray) -> list[np.ndarray]:
  """Three deterministic policies around the given one, [P, A] each.

  The logits log π move by ±_LOGIT_STEP along the rewards' direction (r − mean r) /
  (max r − min r), which moves P(correct) both ways for 0/1 rewards, and by
  _LOGIT_STEP along the arms' alternating signs, a direction unrelated to the rewards.
  Arms of probability 0 keep it.
  """
  live = p_PxA > 0
  logits = np.log(np.where(live, p_PxA, 1.0))
  span = np.ptp(r_PxA, axis=-1, keepdims=True)
  toward = np.where(
    span > 0, (r_PxA - r_PxA.mean(axis=-1, keepdims=True)) / np.where(span > 0, span, 1.0), 0.0
  )
  alternating = np.where(np.arange(p_PxA.shape[1]) % 2 == 0, 1.0, -1.0)[None, :]
  out = []
  for direction in (toward, -toward, alternating):
    z = np.where(live, logits + _LOGIT_STEP * direction, -np.inf)
    q = np.exp(z - z.max(axis=-1, keepdims=True))
    out.append(q / q.sum(axis=-1, keepdims=True))
  return out


def _binary_values(r: np.ndarray) -> tuple[float, float] | None:
  values = np.unique(r)
  return (float(values[0]), float(values[1])) if values.size == 2 else None


def _implied_objective(
  weight_GxP: np.ndarray,
  grid_G: np.ndarray,
  low: float,
  high: float,
  n: int,
  rtol: float,
  atol: float,
) -> str:
  """The name of w(p) when it is (c times) (high − low)·j(1 − p)^(j−1), pass@j's weight,
  on the grid (j <= n): "pass@j" or "c·pass@j"; else "".  w's rounding is atol / (p(1 − p))."""
  w = weight_GxP.reshape(-1)
  rounding = np.broadcast_to((1 / (grid_G * (1 - grid_G)))[:, None], weight_GxP.shape)
  slack = 10 * rtol * float(np.linalg.norm(w)) + atol * float(np.linalg.norm(rounding))
  if float(np.linalg.norm(w)) <= slack:
    return ""
  for j in range(1, n + 1):
    v = np.broadcast_to(((high - low) * j * (1 - grid_G) ** (j - 1))[:, None], weight_GxP.shape)
    v = v.reshape(-1)
    factor = float(w @ v / (v @ v))
    if float(np.linalg.norm(w - factor * v)) <= slack:
      return f"pass@{j}" if abs(factor - 1) <= 10 * rtol else f"{factor:.4g}·pass@{j}"
  return ""


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
  policies: Sequence[npt.ArrayLike] | None = None,
) -> GradientBias:
  """The bias and variance of an advantage function for a rank objective, with a verdict.

  Compares :func:`expected_gradient` (exact when A^n <= ``MAX_TUPLES``, else a Monte
  Carlo mean over ``num_samples`` groups drawn with ``seed``) with
  :func:`exact_gradient` of the objective given by ``weights``, at the given policy
  and at a few others (``policies``), to tell an estimator of the objective's gradient
  at another step size from one that follows another objective.  For a batch of P
  prompts (``probs`` and ``rewards`` [P, A], a product policy) the objective is the sum
  over prompts, every [A] below is [P, A], enumeration needs A^(P·n) <= ``MAX_TUPLES``,
  ``advantage_fn`` sees all prompts at once (rewards [..., P, n]: cross-prompt
  estimators), the norms and ``scale`` are over all P·A logits, and the factor c is
  fitted per prompt (a factor that differs between the prompts of one batch is a
  factor that changes with the policy).

  Why several policies.  With 0/1 rewards every advantage function's expected
  gradient is w(p)·∇p, p = P(correct) (:func:`maxk.implied_prompt_weight`), always
  along the pass@k gradient: GRPO, r − mean or pass@3 advantages used for pass@2 all
  point the right way at any one policy, with a factor c(p) = w(p) / w_objective(p)
  that changes with p: they ascend ∫ w(p) dp, another objective.  A rescaled
  estimator of the objective's gradient has the same c everywhere.

  Verdicts, from the fits expected ≈ c·exact (per prompt) at the given policy, at
  ``policies`` and, for rewards with two values (0/1), on the grid of p in
  ``implied_weight_p`` (two arms, enumerated when 2^n, or 2^(P·n), is at most
  ``MAX_TUPLES``).  Cost: one enumeration (or Monte Carlo run) per compared policy,
  plus five of 2^n tuples for 0/1 rewards.

  * "unbiased": at the given policy ‖bias‖ <= rtol·‖exact‖ + atol, with atol =
    rtol·max|r| (exact; float32 advantage functions are exact to about 1e-7 relative),
    or every logit's bias within 4 standard errors of 0 (Monte Carlo, about 6e-5
    two-sided per logit), and c = 1 within tolerance at every compared policy;
  * "unbiased up to a constant factor c": expected = c·exact with the same c > 0 at
    every compared policy (c != 1): a rescaled estimator that follows the objective's
    gradient field at another step size (RLOO's n, a fixed temperature);
  * "a factor c that changes with the policy (c from x to y)": expected = c·exact at
    every compared policy but c differs between them (by more than rtol·|c| + atol
    /‖exact‖ exact, 4 standard errors Monte Carlo); with 0/1 rewards followed by
    ": follows another objective" and, when w(p) on the grid is a multiple of pass@j's
    j(1 − p)^(j−1), by its name, e.g. "(pass@3)";
  * "unbiased up to a factor c": only with ``policies=()``, c > 0 at the one policy
    compared, which cannot tell the two verdicts above apart;
  * "biased": expected is not a multiple of exact at the given policy (or a negative
    one) or at one of the other policies; ``relative_bias`` says how large the bias
    is at the given policy.

  Args:
    advantage_fn: callable from rewards [..., n] to advantages [..., n] (NumPy or JAX);
      for a batch, from [..., P, n] to [..., P, n].
    probs: [A] arm probabilities of the softmax policy, or [P, A] for P prompts.
    rewards: each arm's reward, the shape of ``probs`` (several arms may share one).
    n: samples per group (the group size the advantage function sees).
    weights: [k] the objective's rank weights (``maxk.rank_weights("max", k)`` for
      max@k, also pass@k with 0/1 rewards).
    num_samples: groups drawn when enumeration is too large.
    seed: the Monte Carlo seed (policy i of ``policies`` uses seed + 1 + i).
    rtol: relative tolerance of the exact check.
    policies: other arm probabilities (each the shape of ``probs``, same rewards) at
      which c is compared. None: three deterministic ones, the logits log π moved by
      ±1 along (r − mean r) / (max r − min r) and by 1 along alternating signs
      (for 0/1 rewards on two arms the logit of P(correct) moves by +1, −1 and −2);
      a sequence (or an [m, A] / [m, P, A] array) of them; ``()``: none, and the 0/1
      grid is then reported but not compared.

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
  if policies is None:
    others = _perturbed_policies(p_PxA, r_PxA)
  else:
    if isinstance(policies, np.ndarray) and policies.ndim >= 2:
      policies = list(policies)
    if isinstance(policies, (str, bytes)) or not isinstance(policies, Sequence):
      raise ValueError(f"policies must be a sequence of probs arrays or None, got {policies!r}")
    others = []
    for q in policies:
      try:
        q_arr, _ = _policy(q, r)
      except ValueError as e:
        raise ValueError(f"policies: each must be probs for the same rewards: {e}") from e
      others.append(np.atleast_2d(q_arr))
  compare_grid = policies is None or len(others) > 0
  num_samples = int(num_samples)
  atol = rtol * float(np.max(np.abs(r)))

  def measure(
    q_PxA: np.ndarray, q_seed: int
  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, bool, _Fit]:
    expected, variance, se, is_exact = _moments(
      advantage_fn, q_PxA, r_PxA, n, batched, num_samples, q_seed
    )
    exact = exact_gradient(q_PxA, r_PxA, w).reshape(-1)
    fit = _fit(
      expected.reshape(q_PxA.shape),
      exact.reshape(q_PxA.shape),
      se.reshape(q_PxA.shape),
      is_exact,
      rtol,
      atol,
    )
    return expected, variance, se, exact, is_exact, fit

  expected, variance, se, exact, is_exact, given = measure(p_PxA, seed)
  method = "exact" if is_exact else f"monte carlo ({num_samples} groups)"
  fits = [given] + [measure(q, seed + 1 + i)[-1] for i, q in enumerate(others)]

  # 0/1 rewards: the prompt weight w(p) on a grid, every prompt on two arms at p.
  binary = _binary_values(r)
  grid_p = weight = ratio = None
  implied = ""
  if binary is not None and 2 ** (n * p_PxA.shape[0]) <= MAX_TUPLES:
    low, high = binary
    grid_p = np.asarray(_WEIGHT_GRID)
    two_r = np.tile([low, high], (p_PxA.shape[0], 1))
    rows_w, rows_obj = [], []
    for q in grid_p:
      two_p = np.tile([1 - q, q], (p_PxA.shape[0], 1))
      mean_PxA = _exact_moments(advantage_fn, two_p, two_r, n, batched)[0].reshape(two_p.shape)
      exact_PxA = exact_gradient(two_p, two_r, w)
      # ∇_logits p = p(1 − p)·(−1, 1): the correct arm's entry over p(1 − p) is the weight.
      rows_w.append(mean_PxA[:, 1] / (q * (1 - q)))
      rows_obj.append(exact_PxA[:, 1] / (q * (1 - q)))
      if compare_grid:
        fits.append(_fit(mean_PxA, exact_PxA, np.zeros_like(mean_PxA), True, rtol, atol))
    w_GxP, obj_GxP = np.array(rows_w), np.array(rows_obj)
    with np.errstate(divide="ignore", invalid="ignore"):
      ratio_GxP = np.where(obj_GxP != 0, w_GxP / obj_GxP, np.nan)
    implied = _implied_objective(w_GxP, grid_p, low, high, n, rtol, atol)
    weight, ratio = (w_GxP, ratio_GxP) if batched else (w_GxP[:, 0], ratio_GxP[:, 0])

  bias = expected - exact
  norm_exact = float(np.linalg.norm(exact))
  if is_exact:
    unbiased_here = float(np.linalg.norm(bias)) <= rtol * norm_exact + atol
  else:
    unbiased_here = bool(np.all(np.abs(bias) <= _Z * se + 1e-12))
  scale = float(expected @ exact / norm_exact**2) if norm_exact > 0 else float("nan")
  c_all = np.concatenate([f.scale for f in fits])
  tol_all = np.concatenate([f.tolerance for f in fits])
  finite = np.isfinite(c_all)
  c_fin, tol_fin = c_all[finite], tol_all[finite]
  scale_range = (float(c_fin.min()), float(c_fin.max())) if c_fin.size else (math.nan, math.nan)
  all_parallel = all(f.parallel for f in fits)
  if c_fin.size:
    reference = int(np.argmin(tol_fin))  # The best-determined c.
    constant = bool(np.all(np.abs(c_fin - c_fin[reference]) <= tol_fin + tol_fin[reference]))
    near_one = bool(np.all(np.abs(c_fin - 1) <= tol_fin))
  else:
    constant, near_one = True, True
  if not all_parallel:
    verdict = "unbiased" if unbiased_here and len(fits) == 1 else "biased"
  elif unbiased_here and near_one:
    verdict = "unbiased"
  elif constant and c_fin.size and scale_range[0] > 0:
    c = float(np.median(c_fin))
    if len(fits) == 1:
      verdict = f"unbiased up to a factor {c:.6g}"
    else:
      verdict = f"unbiased up to a constant factor {c:.6g}"
  elif not constant:
    low_c, high_c = scale_range
    verdict = f"a factor c that changes with the policy (c from {low_c:.4g} to {high_c:.4g})"
    if binary is not None:
      verdict += ": follows another objective"
      if implied:
        verdict += f" ({implied})"
  else:
    verdict = "biased"
  norm_bias = float(np.linalg.norm(bias))
  if norm_exact > 0:
    relative = norm_bias / norm_exact
  else:
    relative = 0.0 if norm_bias == 0 else float("inf")
  shape = p.shape
  compared = np.stack([p_PxA] + others)
  scales = np.stack([f.scale for f in fits[: 1 + len(others)]])
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
    policies=compared if batched else compared[:, 0],
    scales=scales if batched else scales[:, 0],
    scale_range=scale_range,
    implied_weight_p=grid_p,
    implied_weight=weight,
    implied_weight_ratio=ratio,
    implied_objective=implied,
  )
