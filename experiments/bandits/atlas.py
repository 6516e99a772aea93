r"""The variance atlas: every max@k estimator's exact variance against the floor.

On small softmax bandits (4 arms with rewards 0, 1/3, 2/3, 1; :data:`BANDITS`: an
*easy* one, whose best arm is the likeliest, and a *hard* one, whose best arm has
probability 0.05), for every group size n and k of the grid, each on-policy max@k
estimator of :mod:`experiments.estimators` (its baselines and its peers) and JSPO's
cross-prompt shrinkage (:func:`maxk.jspo_max_at_k_advantages`, both variants) get the
exact mean and total variance tr Cov[ĝ] of one group's estimate
ĝ = Σ_i a_i ∇_logits log π(y_i) from :func:`maxk.testing.gradient_moments` (count
vectors enumerated; Monte Carlo over ``num_samples`` groups beyond 2^20 of them,
column ``method``), and the *floor* from :func:`maxk.testing.variance_floor`: the least
variance any baseline b(r_{-i}) of the other samples' rewards can reach for max@k's
unbiased transform (``baseline="none"``), with the best constant baseline's variance
beside it.

Estimators on another scale or with a bias (GRPO's z-scores, RLOO on n ∇E[r], ...) are
put on max@k's scale first: with c = <E[ĝ], ∇J> / ‖∇J‖² (J = max@k, so c = 1 for
every unbiased baseline), the row's ``variance_to_floor`` is tr Cov[ĝ] / (c² · floor),
the variance of ĝ / c, the estimate rescaled to follow ∇J as closely as it can, and
``direction_error`` = ‖E[ĝ] − c ∇J‖ / ‖c ∇J‖ says how far E[ĝ] / c is from ∇J (0 for
an unbiased estimator; a biased one ascends another objective, whatever its variance).
``biased`` is the verdict: ``direction_error`` above :data:`EXACT_DIRECTION_TOL` for an
exact row, ‖E[ĝ] − c ∇J‖ above 4 standard errors for a Monte Carlo one, or c <= 0.

JSPO shrinks each prompt's baseline toward the other prompts' estimates; its rows use
a batch of ``jspo_prompts`` prompts of the row's bandit (prompts of equal difficulty:
shrinkage's best case; with two, the one other prompt has no spread and λ is 1), and
give the first prompt's variance (its block of the covariance).  The product of the
prompts' count vectors is past 2^20 for 4 prompts at every n >= 4, so these rows are
Monte Carlo.  Its max@k form needs n >= 2k.

Columns of :func:`run` (one row per bandit, n, k, estimator): ``bandit``, ``n``,
``k``, ``estimator``, ``kind`` (the registry's; ``jspo`` for JSPO), ``method``
(``exact`` or ``monte carlo (m groups)``), ``unbiased`` (the registry's claim),
``variance`` (tr Cov[ĝ]), ``mean_se`` (root of the summed squared standard errors of
E[ĝ]; 0 when exact), ``gradient_norm`` (‖∇J‖), ``scale`` (c), ``direction_error``, ``biased``,
``mse`` (E‖ĝ − ∇J‖² on the estimator's own scale), ``floor``, ``constant_floor``
(tr Cov with the best constant baseline) and ``variance_to_floor``; the floors are NaN
where :func:`maxk.testing.variance_floor` cannot reach (then so is the ratio).

References: PKPO, arXiv 2505.15201 (the unbiased max@k transform, Eqs. 18-34);
Greensmith, Bartlett & Baxter, JMLR 5 (2004) (the best constant baseline); JSPO,
arXiv 2511.03710.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
import dataclasses
import math
from typing import Any

import jax.numpy as jnp
import numpy as np

from experiments import estimators as estimators_lib
import maxk

REWARDS = (0.0, 1.0 / 3.0, 2.0 / 3.0, 1.0)
#: An exact mean farther than this (relative) from the direction of ∇max@k is biased.
EXACT_DIRECTION_TOL = 1e-5


@dataclasses.dataclass(frozen=True)
class Bandit:
  """A softmax bandit of the atlas: ``probs[a]`` of arm a, which earns ``rewards[a]``."""

  name: str
  probs: tuple[float, ...]
  rewards: tuple[float, ...] = REWARDS


BANDITS = {
  "easy": Bandit("easy", (0.1, 0.2, 0.3, 0.4)),
  "hard": Bandit("hard", (0.55, 0.25, 0.15, 0.05)),
}


def estimators(pass_threshold: float) -> dict[str, tuple[str, str, Callable[..., Any]]]:
  """Name -> (kind, unbiasedness rule, advantage fn of (rewards [..., n], k)) for a
  single prompt: the registry's on-policy max@k estimators."""
  out: dict[str, tuple[str, str, Callable[..., Any]]] = {}
  for e in estimators_lib.entries("max"):
    if e.off_policy:
      continue
    out[e.name] = (
      e.kind,
      e.unbiased.rule,
      lambda r, k, e=e: e(r, k, pass_threshold=pass_threshold),
    )
  return out


def _jspo(variant: str, k: int) -> Callable[[np.ndarray], Any]:
  return lambda r: maxk.jspo_max_at_k_advantages(jnp.asarray(r, jnp.float32), k, variant=variant)


def _row_stats(
  moments: Any, gradient: np.ndarray, floor: float, block: slice | None = None
) -> dict[str, Any]:
  """The ratio columns from one estimator's moments (``block``: the first prompt's
  logits of a batch)."""
  mean = np.asarray(moments.mean, np.float64).reshape(-1)
  cov = np.asarray(moments.covariance, np.float64)
  se = np.asarray(moments.mean_se, np.float64).reshape(-1)
  if block is not None:
    mean, cov, se = mean[block], cov[block, block], se[block]
  variance = float(np.trace(cov))
  norm2 = float(gradient @ gradient)
  scale = float(mean @ gradient) / norm2 if norm2 > 0 else math.nan
  if scale > 0:
    off = float(np.linalg.norm(mean - scale * gradient))
    direction = off / (scale * math.sqrt(norm2))
    ratio = variance / (scale**2 * floor) if floor > 0 else math.nan
    # Exact means carry float32 rounding (~1e-7); Monte Carlo ones their standard error.
    biased = direction > EXACT_DIRECTION_TOL if not se.any() else off > 4 * np.sqrt(np.sum(se**2))
  else:
    direction, ratio, biased = math.nan, math.nan, True
  mse = variance + float(np.sum((mean - gradient) ** 2))
  return {
    "variance": variance,
    "mean_se": float(np.sqrt(np.sum(se**2))),
    "gradient_norm": math.sqrt(norm2),
    "scale": scale,
    "direction_error": direction,
    "biased": bool(biased),
    "mse": mse,
    "variance_to_floor": ratio,
  }


def cell(
  bandit: Bandit,
  n: int,
  k: int,
  *,
  pass_threshold: float = 0.5,
  num_samples: int = 200_000,
  seed: int = 0,
  jspo_prompts: int = 4,
  max_count_vectors: int = 2**20,
) -> list[dict[str, Any]]:
  """The atlas rows of one (bandit, n, k): every estimator of :func:`estimators`, then
  JSPO's variants on ``jspo_prompts`` prompts where n >= 2k (module docstring)."""
  probs, rewards = np.asarray(bandit.probs), np.asarray(bandit.rewards)
  weights = maxk.rank_weights("max", k)
  gradient = maxk.testing.exact_gradient(probs, rewards, weights)
  transform = lambda r: maxk.max_at_k_advantages(r, k, baseline="none")
  try:
    floor = maxk.testing.variance_floor(transform, probs, rewards, n)
    floor_trace, constant_trace = floor.trace, floor.constant_trace
  except ValueError as e:
    if "MAX_FLOOR_ENTRIES" not in str(e) and "count vectors" not in str(e):
      raise
    floor_trace = constant_trace = math.nan
  base = {"bandit": bandit.name, "n": n, "k": k}
  floors = {"floor": floor_trace, "constant_floor": constant_trace}
  rows = []
  options = dict(max_count_vectors=max_count_vectors, num_samples=num_samples, seed=seed)
  for name, (kind, rule, fn) in estimators(pass_threshold).items():
    moments = maxk.testing.gradient_moments(lambda r: fn(r, k), probs, rewards, n, **options)
    rows.append(
      {
        **base,
        "estimator": name,
        "kind": kind,
        "method": moments.method,
        "unbiased": rule,
        **_row_stats(moments, gradient, floor_trace),
        **floors,
      }
    )
  if n >= 2 * k:
    num_arms = probs.size
    twin_p, twin_r = np.stack([probs] * jspo_prompts), np.stack([rewards] * jspo_prompts)
    for variant in maxk.JSPO_VARIANTS:
      moments = maxk.testing.gradient_moments(_jspo(variant, k), twin_p, twin_r, n, **options)
      rows.append(
        {
          **base,
          "estimator": variant,
          "kind": "jspo",
          "method": moments.method,
          "unbiased": "always" if variant == "jspo" else "never (measured)",
          **_row_stats(moments, gradient, floor_trace, block=slice(0, num_arms)),
          **floors,
        }
      )
  return rows


def run(
  bandits: Sequence[str],
  *,
  ns: Iterable[int],
  ks: Iterable[int],
  pass_threshold: float = 0.5,
  num_samples: int = 200_000,
  jspo_prompts: int = 4,
  seed: int = 0,
  progress: Callable[[Iterable], Iterable] = lambda x: x,
) -> list[dict[str, Any]]:
  """The atlas rows of every (bandit, k, n) with k <= n (module docstring's columns).

  Raises:
    ValueError: on an unknown bandit name.
  """
  for name in bandits:
    if name not in BANDITS:
      raise ValueError(f"Unknown bandit={name!r}; valid options are {list(BANDITS)}.")
  cells = [(b, k, n) for b in bandits for k in sorted(set(ks)) for n in sorted(set(ns)) if k <= n]
  rows = []
  for b, k, n in progress(cells):
    rows += cell(
      BANDITS[b],
      n,
      k,
      pass_threshold=pass_threshold,
      num_samples=num_samples,
      jspo_prompts=jspo_prompts,
      seed=seed,
    )
  return rows
