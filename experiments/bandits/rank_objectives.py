"""Rank objectives beyond max@k on the categorical bandit: exact gradients and estimators.

The objectives are those of :mod:`experiments.objectives` other than ``max`` (the
max@k study of :mod:`experiments.bandits.variance`): ``top_m`` (cells with ``k < m``
are skipped), ``min`` and ``maxrl``. Their estimators are the registry's entries of
each objective (:func:`experiments.estimators.entries`): the baselines ``none``,
``loo``, ``loo_centered`` of :func:`maxk.order_stat_advantages`, unbiased for every
objective, and for ``maxrl`` MaxRL's peers ``maxrl`` and ``maxrl_no_cv`` (the
``estimator`` column; the ``objective`` column names the target).

The exact gradient is ``jax.grad`` of ``maxk.order_stat_exact`` of the softmax policy
(float64 NumPy), as the max@k gradient uses ``maxk.max_at_k_exact``. Every
estimator is called on-policy, so :func:`experiments.bandits.variance.summarize`
makes their rows (bias against the objective's exact gradient, variance, stderr, ...).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from experiments import estimators as estimators_lib
from experiments import objectives as objectives_lib
from experiments.bandits import variance
import maxk

# Folded into a cell's key: the objectives' draws are independent of the max@k study's.
_KEY_TAG = 1


def exact_objective_gradient(
  logits: jax.Array, weights: np.ndarray, rewards: np.ndarray
) -> np.ndarray:
  """Exact gradient of ``order_stat_exact(softmax(logits), rewards, weights)``, float64 ``[L]``."""
  weights64 = np.asarray(weights, np.float64)
  rewards32 = jnp.asarray(rewards, jnp.float32)

  def objective(params: jax.Array) -> jax.Array:
    return maxk.order_stat_exact(jax.nn.softmax(params), rewards32, weights64)

  return np.asarray(jax.jit(jax.grad(objective))(jnp.asarray(logits)), np.float64)


def estimators_for(objective: str) -> tuple[estimators_lib.Estimator, ...]:
  """The registered estimators of a rank objective (not ``max``), in registration order."""
  if objective not in objectives_lib.OBJECTIVES or objective == "max":
    raise ValueError(
      f"objective={objective!r} must be one of {list(objectives_lib.OBJECTIVES[1:])}."
    )
  return estimators_lib.entries(objective)


@dataclasses.dataclass(frozen=True)
class Cell:
  """One (n, k) cell of a setting: its key, estimators and their exact gradients ``[E, dim]``
  (``top_m``: the m of the ``top_m`` objective)."""

  n: int
  k: int
  key: jax.Array
  estimators: tuple[estimators_lib.Estimator, ...]
  centers: np.ndarray
  top_m: int = 2


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

  def stats(
    target: jax.Array, cell: Cell, key: jax.Array, centers32: jax.Array
  ) -> tuple[jax.Array, jax.Array]:
    def one(kk: jax.Array) -> jax.Array:
      y = policy.sample(target, kk, cell.n)
      rewards, score = policy.reward(y), policy.score(target, y)
      advantages = [
        e(rewards, cell.k, pass_threshold=pass_threshold, top_m=cell.top_m) for e in cell.estimators
      ]
      return jnp.stack([a @ score for a in advantages])

    g = jax.vmap(one)(jax.random.split(key, num_replicates)) - centers32  # [R, E, dim]
    mean = jnp.mean(g, axis=0)
    return mean, jnp.sum((g - mean) ** 2, axis=0) / (num_replicates - 1)

  @jax.jit
  def run(
    target: jax.Array, keys: list[jax.Array], centers: list[jax.Array]
  ) -> list[tuple[jax.Array, jax.Array]]:
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
  progress: Callable[[list[Any]], Iterable[Any]] = lambda x: x,
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
    objectives: names from :data:`experiments.objectives.OBJECTIVES`; ``max`` is ignored here.
    top_m: the m of ``top_m``.
    progress: wraps the list of settings (e.g. a progress bar).
  """
  ns, ks = sorted(set(ns)), sorted(set(ks))
  objectives = [o for o in objectives_lib.OBJECTIVES if o in objectives and o != "max"]
  base = jax.random.key(seed)
  rows = []
  for s, setting in progress(list(enumerate(settings))):
    if not hasattr(setting.policy, "rewards"):
      continue
    cells = [
      cell
      for k in ks
      for cell in _setting_cells(
        setting,
        jax.random.fold_in(jax.random.fold_in(base, s), k),
        k,
        ns,
        objectives=objectives,
        top_m=top_m,
        pass_threshold=pass_threshold,
      )
    ]
    if not cells:
      continue
    results = monte_carlo(
      setting, cells, num_replicates=num_replicates, pass_threshold=pass_threshold
    )
    for cell, (mean, var) in zip(cells, results):
      rows += _cell_rows(setting, cell, mean, var, num_replicates)
  return rows


def _setting_cells(
  setting: Any,
  key_k: jax.Array,
  k: int,
  ns: Sequence[int],
  *,
  objectives: Sequence[str],
  top_m: int,
  pass_threshold: float,
) -> list[Cell]:
  """The cells of one setting at one k: one per ``n >= k``, sharing the estimators of
  every objective defined at k and their exact gradients; ``key_k`` is the setting's
  key folded with k."""
  ests: list[estimators_lib.Estimator] = []
  exact: dict[str, np.ndarray] = {}
  for objective in objectives:
    weights = objectives_lib.objective_weights(objective, k, top_m=top_m)
    if weights is None:
      continue
    table = objectives_lib.objective_rewards(
      objective, np.asarray(setting.policy.rewards), pass_threshold
    )
    exact[objective] = exact_objective_gradient(setting.target, weights, table)
    ests += estimators_for(objective)
  if not ests:
    return []
  centers = np.stack([exact[e.objective] for e in ests])
  return [
    Cell(
      n, k, jax.random.fold_in(jax.random.fold_in(key_k, n), _KEY_TAG), tuple(ests), centers, top_m
    )
    for n in ns
    if k <= n
  ]


def _cell_rows(
  setting: Any, cell: Cell, mean: np.ndarray, var: np.ndarray, num_replicates: int
) -> list[dict[str, Any]]:
  """One row per estimator of ``cell`` from its Monte Carlo means and variances."""
  rows = []
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
