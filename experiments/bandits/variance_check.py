"""A check of the variance estimators ``maxk.max_at_k_variance`` and ``maxk.pass_at_k_variance``.

For one policy and each (n, k) with ``n >= 2k``, :func:`draws` draws
``num_replicates`` independent groups of n rewards and computes on each group the
estimate ``x_r`` (``maxk.max_at_k`` of the rewards, or ``maxk.pass_at_k`` of the
binarised rewards ``reward >= pass_threshold``) and its estimated sampling variance
``v_r`` (``maxk.max_at_k_variance`` / ``maxk.pass_at_k_variance``). Unbiasedness says
``E[v_r] = Var(x_r)``, so the row compares

* ``mean_estimated_variance``: the mean of ``v_r`` over replicates, with its
  standard error ``mean_estimated_variance_stderr``;
* ``empirical_variance``: the unbiased sample variance of ``x_r`` over replicates,
  with its standard error ``empirical_variance_stderr = sqrt((m4 - s^4) / R)``
  (``m4`` the fourth central moment);
* ``difference = mean_estimated_variance - empirical_variance`` with
  ``difference_stderr``, the two standard errors added in quadrature, and
  ``z = difference / difference_stderr``. The same replicates give both terms; their
  correlation is positive, so this standard error is conservative (|z| is at most
  about N(0, 1)). The paired form ``std(v_r - R/(R-1) (x_r - xbar)^2) / sqrt(R)`` is
  not used: it is far too small where the estimate is nearly deterministic (pass@k
  near 1, e.g. n = 2k with a high pass rate), where it gave |z| ~ 8 for an estimator
  that exact enumeration shows unbiased.

Statistics are accumulated in float64 (NumPy) from the float32 per-group values.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from experiments.bandits import policies
import maxk

STATISTICS = ("max_at_k", "pass_at_k")
# Folded into a cell's key so that its draws are independent of the gradient study's.
_KEY_TAG = 100


def draws(
  policy: policies.Policy,
  target: jax.Array,
  keys: Sequence[jax.Array],
  *,
  cells: Sequence[tuple[int, int]],
  num_replicates: int,
  pass_threshold: float,
) -> list[dict[str, tuple[np.ndarray, np.ndarray]]]:
  """Per cell ``(n, k)`` (drawn with ``keys[i]``): each statistic's estimate and estimated
  variance per replicate, ``[R]`` float64 each.

  Every cell runs in one jitted computation (compiling once per policy, not per cell).
  """
  cells = tuple(cells)

  @jax.jit
  def run(target: jax.Array, keys: Sequence[jax.Array]) -> list[tuple[jax.Array, ...]]:
    out: list[tuple[jax.Array, ...]] = []
    for key, (n, k) in zip(keys, cells):
      split = jax.random.split(key, num_replicates)
      rewards = jax.vmap(lambda kk, n=n: policy.reward(policy.sample(target, kk, n)))(split)
      correct = (rewards >= pass_threshold).astype(jnp.float32)  # [R, n]
      out.append(
        (
          maxk.max_at_k(rewards, k),
          maxk.max_at_k_variance(rewards, k),
          maxk.pass_at_k(correct, k),
          maxk.pass_at_k_variance(correct, k),
        )
      )
    return out

  results = []
  for values in run(target, list(keys)):
    m, mv, p, pv = (np.asarray(a, np.float64) for a in values)
    results.append({"max_at_k": (m, mv), "pass_at_k": (p, pv)})
  return results


def summarize(estimates: np.ndarray, estimated_variances: np.ndarray) -> dict[str, float]:
  """The comparison columns from ``[R]`` estimates and their ``[R]`` estimated variances."""
  x = np.asarray(estimates, np.float64)
  v = np.asarray(estimated_variances, np.float64)
  r = x.size
  dev2 = (x - x.mean()) ** 2
  empirical = float(dev2.sum() / (r - 1))
  m4 = float(np.mean(dev2**2))
  mean_v = float(v.mean())
  mean_v_se = float(v.std(ddof=1) / math.sqrt(r))
  empirical_se = math.sqrt(max(m4 - empirical**2, 0.0) / r)
  diff_se = math.hypot(mean_v_se, empirical_se)
  difference = mean_v - empirical
  return {
    "mean_estimated_variance": mean_v,
    "mean_estimated_variance_stderr": mean_v_se,
    "empirical_variance": empirical,
    "empirical_variance_stderr": empirical_se,
    "difference": difference,
    "difference_stderr": diff_se,
    "z": difference / diff_se if diff_se > 0 else float("nan"),
  }


def run_check(
  settings: Sequence[Any],
  *,
  ns: Iterable[int],
  ks: Iterable[int],
  num_replicates: int,
  seed: int,
  pass_threshold: float,
  progress: Callable[[Iterable], Iterable] = lambda x: x,
) -> list[dict[str, Any]]:
  """Rows of ``variance_check.csv``: every (policy, k, n) with ``n >= 2k``, per statistic.

  ``progress`` wraps the settings (one compiled computation per policy). The cell's
  key is ``fold_in`` of ``seed`` with the setting's index, k, n and a fixed tag, so
  rows are reproducible and independent of the gradient study's draws.
  Returns no rows when no (n, k) has ``n >= 2k``.
  """
  ns, ks = sorted(set(ns)), sorted(set(ks))
  cells = [(n, k) for k in ks for n in ns if 2 * k <= n]
  base = jax.random.key(seed)
  rows = []
  for s, setting in progress(list(enumerate(settings)) if cells else []):
    keys = [
      jax.random.fold_in(
        jax.random.fold_in(jax.random.fold_in(jax.random.fold_in(base, s), k), n), _KEY_TAG
      )
      for n, k in cells
    ]
    out = draws(
      setting.policy,
      setting.target,
      keys,
      cells=cells,
      num_replicates=num_replicates,
      pass_threshold=pass_threshold,
    )
    for (n, k), values in zip(cells, out):
      for statistic in STATISTICS:
        rows.append(
          {
            "policy": setting.name,
            "statistic": statistic,
            "n": n,
            "k": k,
            "num_replicates": num_replicates,
            **summarize(*values[statistic]),
          }
        )
  return rows
