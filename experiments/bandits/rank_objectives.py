"""Rank objectives beyond max@k on the categorical bandit: exact gradients and estimators.

A rank objective of k draws is ``J = E[sum_j w_j X_(j:k)]`` over the ascending order
statistics of k i.i.d. rewards (:func:`maxk.rank_weights`). The objectives studied:

* ``max``: max@k (the estimators of :mod:`experiments.estimators`; not built here).
* ``top_m``: the mean of the top ``m`` of k rewards (cells with ``k < m`` are skipped).
* ``min``: min@k, the expected worst of k rewards (pass^k on {0, 1} rewards).
* ``maxrl``: MaxRL's mixture ``sum_{j<=k} pass@j / j`` (arXiv 2602.02710) on the
  binarised reward ``correct = reward >= pass_threshold``, written as one weight
  vector over k draws, ``sum_j lift_rank_weights(rank_weights("max", j), k) / j``.
  The binary form is MaxRL's own (a truncated log pass rate) and lets the MaxRL peer
  estimator be compared against the same exact gradient.

The exact gradient is ``jax.grad`` of ``maxk.order_stat_exact`` of the softmax policy
(float64 NumPy), as the max@k gradient uses ``maxk.max_at_k_exact``.

Estimators (the ``estimator`` column; the ``objective`` column names the target):

* ``none``, ``loo``, ``loo_centered``: the baselines of :func:`maxk.order_stat_advantages`
  with the objective's weights, unbiased for every objective (the same names mean
  the same baselines as for max@k).
* ``maxrl``, ``maxrl_no_cv`` (objective ``maxrl`` only): :func:`maxk.maxrl_advantages`
  with and without the control variate, divided by n to the gradient scale. They
  target ``sum_{j<n} pass@j / j`` and ``sum_{j<=n} pass@j / j`` respectively (the
  truncation is set by the group size n, not by k), so against ``sum_{j<=k}`` they
  are unbiased only at ``k == n - 1`` and ``k == n``; elsewhere the bias is reported
  as measured.

Every estimator is called like :class:`experiments.estimators.Estimator` (on-policy),
so :func:`experiments.bandits.variance.monte_carlo` evaluates them unchanged and
:func:`experiments.bandits.variance.summarize` makes their rows (bias against the
objective's exact gradient, variance, stderr, ...).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from experiments.bandits import variance
import maxk

# Every objective of the study; "max" is the max@k study of experiments.bandits.variance.
OBJECTIVES = ("max", "top_m", "min", "maxrl")
RANK_BASELINES = ("none", "loo", "loo_centered")
MAXRL_PEERS = ("maxrl", "maxrl_no_cv")
# Folded into a cell's key: the objectives' draws are independent of the max@k study's.
_KEY_TAG = 1


def objective_weights(objective: str, k: int, *, top_m: int) -> np.ndarray | None:
  """The ``[k]`` rank weights of ``objective`` over k draws, or None if undefined at k.

  ``top_m`` is undefined for ``k < top_m``; ``maxrl`` weighs the binarised rewards.

  Raises:
    ValueError: on an unknown objective.
  """
  if objective == "max":
    return maxk.rank_weights("max", k)
  if objective == "top_m":
    return maxk.rank_weights("top_m", k, m=top_m) if k >= top_m else None
  if objective == "min":
    return maxk.rank_weights("min", k)
  if objective == "maxrl":
    return sum(maxk.lift_rank_weights(maxk.rank_weights("max", j), k) / j for j in range(1, k + 1))
  raise ValueError(f"Unknown objective={objective!r}; valid options are {list(OBJECTIVES)}.")


def objective_rewards(objective: str, rewards, pass_threshold: float):
  """The rewards the objective weighs: binarised for ``maxrl``, else unchanged."""
  if objective == "maxrl":
    return (rewards >= pass_threshold).astype(jnp.float32)
  return rewards


def exact_objective_gradient(
  logits: jax.Array, weights: np.ndarray, rewards: np.ndarray
) -> np.ndarray:
  """Exact gradient of ``order_stat_exact(softmax(logits), rewards, weights)``, float64 ``[L]``."""
  weights = np.asarray(weights, np.float64)
  rewards = jnp.asarray(rewards, jnp.float32)

  def objective(params):
    return maxk.order_stat_exact(jax.nn.softmax(params), rewards, weights)

  return np.asarray(jax.jit(jax.grad(objective))(jnp.asarray(logits)), np.float64)


@dataclasses.dataclass(frozen=True)
class RankEstimator:
  """An on-policy gradient estimator of one rank objective (``Estimator``'s interface).

  Attributes:
    name: the ``estimator`` column value.
    objective: the ``objective`` column value.
    top_m: the m of ``top_m``.
    fn: ``(objective rewards [..., n], weights [k]) -> advantages [..., n]``.
    unbiased: ``(n, k) -> bool``, whether it is unbiased for the objective's gradient.
  """

  name: str
  objective: str
  top_m: int
  fn: Callable[[jax.Array, np.ndarray], jax.Array]
  unbiased: Callable[[int, int], bool]
  off_policy: bool = False

  def __call__(self, rewards, k: int, *, log_ratio=None, pass_threshold: float = 0.5):
    del log_ratio
    weights = objective_weights(self.objective, k, top_m=self.top_m)
    r = objective_rewards(self.objective, jnp.asarray(rewards, jnp.float32), pass_threshold)
    return self.fn(r, weights)

  def expected_unbiased(self, n: int, k: int, shift: float = 0.0) -> bool:
    del shift
    return self.unbiased(n, k)


def _baseline(name: str) -> Callable[[jax.Array, np.ndarray], jax.Array]:
  return lambda r, w: maxk.order_stat_advantages(r, w, baseline=name)


def _maxrl(control_variate: bool) -> Callable[[jax.Array, np.ndarray], jax.Array]:
  def fn(correct: jax.Array, weights: np.ndarray) -> jax.Array:
    del weights
    n = correct.shape[-1]
    return maxk.maxrl_advantages(correct, control_variate=control_variate) / n

  return fn


def estimators_for(objective: str, *, top_m: int) -> list[RankEstimator]:
  """The estimators of a rank objective (not ``max``): the baselines, plus MaxRL's peers."""
  if objective not in OBJECTIVES or objective == "max":
    raise ValueError(f"objective={objective!r} must be one of {list(OBJECTIVES[1:])}.")
  ests = [
    RankEstimator(b, objective, top_m, _baseline(b), lambda n, k: True) for b in RANK_BASELINES
  ]
  if objective == "maxrl":
    ests.append(RankEstimator("maxrl", objective, top_m, _maxrl(True), lambda n, k: k == n - 1))
    ests.append(RankEstimator("maxrl_no_cv", objective, top_m, _maxrl(False), lambda n, k: k == n))
  return ests


@dataclasses.dataclass(frozen=True)
class Cell:
  """One (n, k) cell of a setting: its key, estimators and their exact gradients ``[E, dim]``."""

  n: int
  k: int
  key: jax.Array
  estimators: tuple[RankEstimator, ...]
  centers: np.ndarray


def monte_carlo(
  setting: Any, cells: Sequence[Cell], *, num_replicates: int, pass_threshold: float
) -> list[tuple[np.ndarray, np.ndarray]]:
  """Per cell, the Monte Carlo mean and per-coordinate variance of every estimator's gradient.

  As :func:`experiments.bandits.variance.monte_carlo` (a ``vmap`` over the replicates,
  on-policy draws shared by the cell's estimators), except that each estimator ``e``
  is centred on its own ``cell.centers[e]`` (its objective's exact gradient), so that
  several objectives share one set of draws, and every cell of the setting runs in
  one jitted computation (one compilation per policy, not per cell).

  Returns:
    Per cell ``(mean, variance)``, float64 ``[len(cell.estimators), dim]``; ddof=1.
  """
  if num_replicates < 2:
    raise ValueError(f"num_replicates={num_replicates} must satisfy num_replicates >= 2.")
  for cell in cells:
    if not 1 <= cell.k <= cell.n:
      raise ValueError(f"k={cell.k} must satisfy 1 <= k <= n={cell.n}.")
  policy, cells = setting.policy, tuple(cells)

  def stats(target, cell, key, centers32):
    def one(kk):
      y = policy.sample(target, kk, cell.n)
      rewards, score = policy.reward(y), policy.score(target, y)
      advantages = [e(rewards, cell.k, pass_threshold=pass_threshold) for e in cell.estimators]
      return jnp.stack([a @ score for a in advantages])

    g = jax.vmap(one)(jax.random.split(key, num_replicates)) - centers32  # [R, E, dim]
    mean = jnp.mean(g, axis=0)
    return mean, jnp.sum((g - mean) ** 2, axis=0) / (num_replicates - 1)

  @jax.jit
  def run(target, keys, centers):
    return [stats(target, cell, kk, c) for cell, kk, c in zip(cells, keys, centers)]

  centers = [np.asarray(c.centers, np.float64) for c in cells]
  out = run(setting.target, [c.key for c in cells], [jnp.asarray(c, jnp.float32) for c in centers])
  return [
    (np.asarray(mean, np.float64) + c, np.asarray(var, np.float64))
    for (mean, var), c in zip(out, centers)
  ]


def run_objectives(
  settings: Sequence[Any],
  *,
  objectives: Sequence[str],
  ns: Sequence[int],
  ks: Sequence[int],
  num_replicates: int,
  seed: int,
  pass_threshold: float,
  top_m: int,
  progress: Callable = lambda x: x,
) -> list[dict[str, Any]]:
  """Rows of the rank objectives other than ``max`` on the categorical settings.

  Every (policy, objective, k, n) cell with ``k <= n`` (and ``k >= top_m`` for
  ``top_m``) gives one row per estimator, with the columns of
  :func:`experiments.bandits.variance.summarize` plus ``objective`` (second). The
  objectives of one (policy, k, n) share one set of draws and one compiled
  computation (their rows are correlated, each row is exact in distribution); the
  key is the max@k cell's key (``fold_in`` of ``seed`` with the setting's index, k
  and n) folded with a fixed tag, so rows are reproducible, independent of the
  max@k rows and of which other cells run. Settings whose policy has no ``rewards``
  table (the Gaussian toy: no exact gradient here) are skipped.

  Args:
    settings: the study's settings, in the order of the max@k study (indices match).
    objectives: names from :data:`OBJECTIVES`; ``max`` is ignored here.
    top_m: the m of ``top_m``.
    progress: wraps the list of settings (e.g. a progress bar).
  """
  ns, ks = sorted(set(ns)), sorted(set(ks))
  objectives = [o for o in OBJECTIVES if o in objectives and o != "max"]
  base = jax.random.key(seed)
  rows = []
  for s, setting in progress(list(enumerate(settings))):
    if not hasattr(setting.policy, "rewards"):
      continue
    cells = []
    for k in ks:
      ests, exact = [], {}
      for objective in objectives:
        weights = objective_weights(objective, k, top_m=top_m)
        if weights is None:
          continue
        table = objective_rewards(objective, np.asarray(setting.policy.rewards), pass_threshold)
        exact[objective] = exact_objective_gradient(setting.target, weights, table)
        ests += estimators_for(objective, top_m=top_m)
      if not ests:
        continue
      centers = np.stack([exact[e.objective] for e in ests])
      for n in ns:
        if k <= n:
          key = jax.random.fold_in(jax.random.fold_in(jax.random.fold_in(base, s), k), n)
          key = jax.random.fold_in(key, _KEY_TAG)
          cells.append(Cell(n, k, key, tuple(ests), centers))
    if not cells:
      continue
    results = monte_carlo(
      setting, cells, num_replicates=num_replicates, pass_threshold=pass_threshold
    )
    for cell, (mean, var) in zip(cells, results):
      for e, est in enumerate(cell.estimators):
        row = variance.summarize(
          policy=setting.name,
          estimator=est,
          n=cell.n,
          k=cell.k,
          shift=setting.shift,
          mean=mean[e],
          variance=var[e],
          exact=cell.centers[e],
          num_replicates=num_replicates,
        )
        rows.append({"policy": row.pop("policy"), "objective": est.objective, **row})
  return rows
