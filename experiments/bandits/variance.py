"""Bias and variance of the max@k gradient estimators on toy policies.

For one policy, one group size ``n`` and one ``k``, :func:`monte_carlo` draws
``num_replicates`` independent groups and evaluates every estimator on them in a
single jitted, vmapped computation (no Python loop over replicates). Each replicate
gives the gradient estimate ``g = sum_i a_i grad log pi_theta(y_i)`` of every
estimator; the on-policy estimators share one group drawn from the target policy,
the off-policy ones share one group drawn from the sampling policy.

:func:`summarize` turns the Monte Carlo mean and per-coordinate variance into a
``results.csv`` row, judged against the exact gradient of max@k at the target:

* scalar gradients (Gaussian toy): ``mean`` and ``bias = mean - exact`` are signed;
* vector gradients (categorical bandit): ``mean`` is the component of the Monte Carlo
  mean along the exact gradient, ``exact_gradient`` is the exact gradient's norm and
  ``bias`` is the norm of the bias vector;
* ``variance`` is summed over coordinates, ``stderr = sqrt(variance / R)`` (for
  vectors, the root expected squared norm of the mean's error), and
  ``bias_z = bias / stderr`` (~N(0, 1) for unbiased scalar estimators; of order 1
  for unbiased vector ones).

References: PKPO, arXiv 2505.15201, Sec. 5.1 and Fig. 4.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
import dataclasses
import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from experiments import estimators as estimators_lib
from experiments.bandits import policies


@dataclasses.dataclass(frozen=True, eq=False)
class Setting:
  """A policy at the target parameters, plus the sampling policy for off-policy estimators.

  Attributes:
    policy: a policy of :mod:`experiments.bandits.policies`.
    target: parameters at which the gradient is estimated.
    old: parameters of the sampling policy of the off-policy estimators.
    shift: the size of the shift between ``old`` and ``target`` (logged per row).
  """

  policy: Any
  target: jax.Array
  old: jax.Array
  shift: float

  @property
  def name(self) -> str:
    return self.policy.name


def gaussian_setting(theta: float = 1.0, sigma: float = 0.1, shift: float = 0.05) -> Setting:
  """PKPO's toy at ``theta``; off-policy samples come from ``N(theta - shift, sigma^2)``."""
  policy = policies.GaussianToy(sigma=sigma)
  return Setting(policy, policy.init_params(theta), policy.init_params(theta - shift), shift)


def categorical_setting(
  num_arms: int = 10, *, seed: int = 0, logit_scale: float = 1.0, shift: float = 0.5
) -> Setting:
  """A random softmax bandit; off-policy logits are ``logits + shift * N(0, I)`` noise."""
  policy, logits = policies.random_bandit(num_arms, seed=seed, logit_scale=logit_scale)
  noise = np.random.default_rng([seed, 1]).standard_normal(num_arms)
  return Setting(policy, logits, logits + jnp.asarray(shift * noise, jnp.float32), shift)


def gradient_estimates(
  policy: policies.Policy,
  target: jax.Array,
  old: jax.Array,
  key: jax.Array,
  *,
  n: int,
  k: int,
  estimators: Sequence[estimators_lib.Estimator],
  pass_threshold: float,
) -> jax.Array:
  """One replicate: every estimator's gradient estimate, shape ``[len(estimators), dim]``."""
  key_on, key_off = jax.random.split(key)
  y = policy.sample(target, key_on, n)
  rewards = policy.reward(y)
  score = policy.score(target, y)
  if any(e.off_policy for e in estimators):
    y_old = policy.sample(old, key_off, n)
    rewards_old = policy.reward(y_old)
    log_ratio = policy.log_prob(target, y_old) - policy.log_prob(old, y_old)
    score_old = policy.score(target, y_old)
  grads = []
  for estimator in estimators:
    if estimator.off_policy:
      a = estimator(rewards_old, k, log_ratio=log_ratio, pass_threshold=pass_threshold)
      grads.append(a @ score_old)
    else:
      a = estimator(rewards, k, pass_threshold=pass_threshold)
      grads.append(a @ score)
  return jnp.stack(grads)


def monte_carlo(
  setting: Setting,
  key: jax.Array,
  *,
  n: int,
  k: int,
  num_replicates: int,
  estimators: Sequence[estimators_lib.Estimator],
  pass_threshold: float,
  center: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
  """Monte Carlo mean and per-coordinate variance of every estimator's gradient.

  All ``num_replicates`` groups are drawn and evaluated in one jitted ``vmap``.

  Args:
    setting: the policy, target and sampling parameters.
    key: PRNG key of this cell.
    n: group size (static).
    k: the k of max@k (static), ``1 <= k <= n``.
    num_replicates: number of independent groups ``R >= 2``.
    estimators: the estimators to evaluate.
    pass_threshold: ``correct = reward >= pass_threshold`` for ``pass_at_k_training``.
    center: optional ``[dim]`` vector subtracted before averaging in float32 (use the
      exact gradient: the statistics of small differences are the most accurate).

  Returns:
    ``(mean, variance)``, float64 arrays of shape ``[len(estimators), dim]``; the
    variance is the unbiased (ddof=1) sample variance of each coordinate.
  """
  if not 1 <= k <= n:
    raise ValueError(f"k={k} must satisfy 1 <= k <= n={n}.")
  if num_replicates < 2:
    raise ValueError(f"num_replicates={num_replicates} must satisfy num_replicates >= 2.")
  estimators = tuple(estimators)
  policy = setting.policy
  dim = policy.dim
  center = np.zeros(dim) if center is None else np.asarray(center, np.float64)

  @jax.jit
  def run(
    target: jax.Array, old: jax.Array, key: jax.Array, center32: jax.Array
  ) -> tuple[jax.Array, jax.Array]:
    keys = jax.random.split(key, num_replicates)
    one = lambda kk: gradient_estimates(
      policy, target, old, kk, n=n, k=k, estimators=estimators, pass_threshold=pass_threshold
    )
    g = jax.vmap(one)(keys) - center32  # [R, E, dim]
    mean = jnp.mean(g, axis=0)
    var = jnp.sum((g - mean) ** 2, axis=0) / (num_replicates - 1)
    return mean, var

  mean, var = run(setting.target, setting.old, key, jnp.asarray(center, jnp.float32))
  mean = np.asarray(mean, np.float64) + center[None, :]
  return mean, np.asarray(var, np.float64)


def summarize(
  *,
  policy: str,
  estimator: estimators_lib.Estimator,
  n: int,
  k: int,
  shift: float,
  mean: np.ndarray,
  variance: np.ndarray,
  exact: np.ndarray,
  num_replicates: int,
) -> dict[str, Any]:
  """One results.csv row from an estimator's Monte Carlo mean and variance ``[dim]``."""
  mean = np.asarray(mean, np.float64)
  exact = np.asarray(exact, np.float64)
  total_var = float(np.sum(variance))
  stderr = math.sqrt(total_var / num_replicates)
  exact_norm = float(np.linalg.norm(exact))
  mean_norm = float(np.linalg.norm(mean))
  if mean.size == 1:
    mean_s, exact_s, bias = float(mean[0]), float(exact[0]), float(mean[0] - exact[0])
  else:
    mean_s = float(mean @ exact / exact_norm) if exact_norm > 0 else float("nan")
    exact_s, bias = exact_norm, float(np.linalg.norm(mean - exact))
  denom = mean_norm * exact_norm
  return {
    "policy": policy,
    "estimator": estimator.name,
    "n": n,
    "k": k,
    "shift": shift if estimator.off_policy else 0.0,
    "num_replicates": num_replicates,
    "mean": mean_s,
    "exact_gradient": exact_s,
    "bias": bias,
    "variance": total_var,
    "stderr": stderr,
    "bias_z": bias / stderr if stderr > 0 else float("nan"),
    "relative_bias": bias / exact_norm if exact_norm > 0 else float("nan"),
    "relative_variance": total_var / mean_norm**2 if mean_norm > 0 else float("nan"),
    "cosine": float(mean @ exact / denom) if denom > 0 else float("nan"),
    "expected_unbiased": estimator.expected_unbiased(n, k, shift if estimator.off_policy else 0.0),
  }


def run_study(
  settings: Sequence[Setting],
  *,
  ns: Iterable[int],
  ks: Iterable[int],
  num_replicates: int,
  estimator_names: Sequence[str],
  seed: int,
  pass_threshold: float,
  progress: Callable[[Iterable], Iterable] = lambda x: x,
) -> list[dict[str, Any]]:
  """Every (policy, k, n) cell with ``k <= n``: one row per estimator.

  Each cell is one jitted computation over all replicates and estimators; its key
  is ``fold_in`` of ``seed`` with the cell's indices, so results are reproducible and
  independent of which other cells run.
  """
  ests = [estimators_lib.get(name) for name in estimators_lib.parse_names(estimator_names)]
  ns, ks = sorted(set(ns)), sorted(set(ks))
  cells = [
    (s, setting, k, n) for s, setting in enumerate(settings) for k in ks for n in ns if k <= n
  ]
  if not cells:
    raise ValueError(f"No cell with k <= n: ks={ks}, ns={ns}.")
  base = jax.random.key(seed)
  rows = []
  exact_cache: dict[tuple[int, int], np.ndarray] = {}
  for s, setting, k, n in progress(cells):
    if (s, k) not in exact_cache:
      exact_cache[s, k] = setting.policy.exact_gradient(setting.target, k)
    exact = exact_cache[s, k]
    key = jax.random.fold_in(jax.random.fold_in(jax.random.fold_in(base, s), k), n)
    mean, var = monte_carlo(
      setting,
      key,
      n=n,
      k=k,
      num_replicates=num_replicates,
      estimators=ests,
      pass_threshold=pass_threshold,
      center=exact,
    )
    for e, est in enumerate(ests):
      rows.append(
        summarize(
          policy=setting.name,
          estimator=est,
          n=n,
          k=k,
          shift=setting.shift,
          mean=mean[e],
          variance=var[e],
          exact=exact,
          num_replicates=num_replicates,
        )
      )
  return rows
