"""Policy-gradient training of toy policies with the max@k estimators, many seeds in one vmap.

Each step draws a group of ``n`` samples from the current policy, turns their
rewards into advantages with an estimator of
:mod:`experiments.estimators` at the current ``k_opt``, and takes
``inner_steps`` optimiser steps along ``sum_i a_i grad log pi(y_i)`` (gradient
ascent). With ``inner_steps > 1`` the later inner steps are off-policy: the
off-policy estimators receive ``log_ratio = log pi_current(y) - log pi_sampling(y)``,
the on-policy ones reuse the stale advantages' formula as is. After every step the
exact max@k and pass@k of the current policy are logged for every ``k_eval``.

``k_opt`` follows a :class:`experiments.schedules.Schedule`: a constant (``"4"``) or
a piecewise-constant annealing schedule (``"8:200:1"``: k=8 for the first 200 steps,
steps 0-199, then k=1; PKPO Fig. 3). A whole run (all steps, all seeds) is one
jitted computation: a ``lax.scan`` per schedule segment, ``vmap`` over seeds.

References: PKPO, arXiv 2505.15201 (Sec. 5, Fig. 3); max@k, arXiv 2510.23393 (App. E).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax

from experiments import estimators as estimators_lib
from experiments import schedules
from experiments.bandits import policies


def make_optimizer(name: str, learning_rate: float) -> optax.GradientTransformation:
  """``"adam"`` or ``"sgd"``; the transformation minimises, so pass minus the ascent step."""
  if name == "adam":
    return optax.adam(learning_rate)
  if name == "sgd":
    return optax.sgd(learning_rate)
  raise ValueError(f"Unknown optimizer={name!r}; valid options are ['adam', 'sgd'].")


def evaluate(
  policy: policies.Policy, params: jax.Array, k_evals: Sequence[int], pass_threshold: float
) -> tuple[jax.Array, jax.Array]:
  """Exact ``(max@k, pass@k)`` of the policy for every k in ``k_evals``: two ``[K]`` arrays."""
  max_k = jnp.stack([policy.max_at_k(params, k) for k in k_evals])
  pass_k = jnp.stack([policy.pass_at_k(params, k, pass_threshold) for k in k_evals])
  return max_k, pass_k


def train(
  policy: policies.Policy,
  init_params: jax.Array,
  key: jax.Array,
  *,
  estimator: str,
  schedule: schedules.Schedule,
  num_steps: int,
  n: int,
  num_seeds: int,
  k_evals: Sequence[int],
  pass_threshold: float,
  optimizer: str = "adam",
  learning_rate: float = 0.1,
  inner_steps: int = 1,
) -> dict[str, np.ndarray]:
  """Trains ``num_seeds`` independent copies of ``policy`` from ``init_params``.

  Args:
    policy: a policy of :mod:`experiments.bandits.policies`.
    init_params: initial parameters (shared by every seed).
    key: PRNG key; seed ``s`` uses ``fold_in(key, s)``.
    estimator: an estimator name of :mod:`experiments.estimators`.
    schedule: the k_opt schedule; every k must satisfy ``k <= n``.
    num_steps: training steps ``T``; the schedule's switch steps must be smaller.
    n: samples per step.
    num_seeds: independent runs, vmapped.
    k_evals: the k of the logged exact max@k and pass@k.
    pass_threshold: a sample is correct when ``reward >= pass_threshold`` (pass@k and
      the binarised reward of ``pass_at_k_training``).
    optimizer: ``"adam"`` or ``"sgd"``.
    learning_rate: the optimiser's learning rate.
    inner_steps: optimiser steps per sampled group (> 1 makes later steps off-policy).

  Returns:
    ``{"max_at_k": [S, T+1, K], "pass_at_k": [S, T+1, K], "k_opt": [T]}``: the exact
    metrics of the initial policy and after each of the ``T`` steps.
  """
  est = estimators_lib.get(estimator)
  segments = schedule.segments(num_steps)
  k_evals = _checked_k_evals(schedule, n, num_seeds, k_evals, pass_threshold, learning_rate)
  if inner_steps < 1:
    raise ValueError(f"inner_steps={inner_steps} must satisfy inner_steps >= 1.")
  opt = make_optimizer(optimizer, learning_rate)
  step = _step_function(
    policy, est, opt, n=n, inner_steps=inner_steps, k_evals=k_evals, pass_threshold=pass_threshold
  )
  max_k, pass_k = _run_seeds(
    policy,
    init_params,
    key,
    opt,
    step,
    segments,
    num_seeds=num_seeds,
    k_evals=k_evals,
    pass_threshold=pass_threshold,
  )
  k_opt = np.concatenate([np.full(steps, k) for k, steps in segments])
  return {"max_at_k": np.asarray(max_k), "pass_at_k": np.asarray(pass_k), "k_opt": k_opt}


def _checked_k_evals(
  schedule: schedules.Schedule,
  n: int,
  num_seeds: int,
  k_evals: Sequence[int],
  pass_threshold: float,
  learning_rate: float,
) -> tuple[int, ...]:
  """Checks :func:`train`'s arguments of these names; returns ``k_evals`` as ints."""
  if n < 2:
    raise ValueError(f"n={n} must satisfy n >= 2.")
  if schedule.max_k > n:
    raise ValueError(
      f"schedule={schedule.spec!r}: k={schedule.max_k} must satisfy 1 <= k <= n={n}."
    )
  if num_seeds < 1:
    raise ValueError(f"num_seeds={num_seeds} must satisfy num_seeds >= 1.")
  if not (math.isfinite(learning_rate) and learning_rate > 0):
    raise ValueError(f"learning_rate={learning_rate} must be finite and > 0.")
  if not math.isfinite(pass_threshold):
    raise ValueError(f"pass_threshold={pass_threshold} must be finite.")
  checked = tuple(int(k) for k in k_evals)
  if not checked or min(checked) < 1:
    raise ValueError(f"k_evals={list(checked)} must be non-empty with every k >= 1.")
  return checked


def _step_function(
  policy: policies.Policy,
  est: Callable[..., jax.Array],
  opt: optax.GradientTransformation,
  *,
  n: int,
  inner_steps: int,
  k_evals: Sequence[int],
  pass_threshold: float,
) -> Callable[..., Any]:
  """One training step ``step(carry, _, *, k)`` for ``lax.scan``: draw a group of ``n``,
  take ``inner_steps`` optimiser steps, return the new carry and the exact metrics."""

  def step(carry: Any, _: Any, *, k: int) -> tuple[Any, tuple[jax.Array, jax.Array]]:
    params, opt_state, key = carry
    key, sample_key = jax.random.split(key)
    y = policy.sample(params, sample_key, n)
    rewards = policy.reward(y)
    logp_sampling = policy.log_prob(params, y)
    for _ in range(inner_steps):
      log_ratio = policy.log_prob(params, y) - logp_sampling
      a = est(rewards, k, log_ratio=log_ratio, pass_threshold=pass_threshold)
      ascent = (a @ policy.score(params, y)).reshape(jnp.shape(params))
      updates, opt_state = opt.update(-ascent, opt_state, params)
      params = optax.apply_updates(params, updates)
    return (params, opt_state, key), evaluate(policy, params, k_evals, pass_threshold)

  return step


def _run_seeds(
  policy: policies.Policy,
  init_params: jax.Array,
  key: jax.Array,
  opt: optax.GradientTransformation,
  step: Callable[..., Any],
  segments: Sequence[tuple[int, int]],
  *,
  num_seeds: int,
  k_evals: Sequence[int],
  pass_threshold: float,
) -> tuple[jax.Array, jax.Array]:
  """Every seed's exact ``(max@k, pass@k)`` curves, ``[S, T+1, K]`` each, in one jitted
  ``vmap``: a ``lax.scan`` of ``step`` per ``(k, steps)`` segment."""

  def one_seed(key: jax.Array) -> tuple[jax.Array, jax.Array]:
    params = jnp.asarray(init_params, jnp.float32)
    carry = (params, opt.init(params), key)
    max0, pass0 = evaluate(policy, params, k_evals, pass_threshold)
    maxs, passes = [max0[None]], [pass0[None]]
    for k, steps in segments:
      seg = lambda c, x, k=k: step(c, x, k=k)
      carry, (m, p) = jax.lax.scan(seg, carry, None, length=steps)
      maxs.append(m)
      passes.append(p)
    return jnp.concatenate(maxs), jnp.concatenate(passes)

  @jax.jit
  def run(key: jax.Array) -> tuple[jax.Array, jax.Array]:
    keys = jax.vmap(lambda s: jax.random.fold_in(key, s))(jnp.arange(num_seeds))
    return jax.vmap(one_seed)(keys)

  return run(key)


def summarize(
  curves: dict[str, np.ndarray],
  *,
  labels: dict[str, Any],
  k_evals: Sequence[int],
  solved_level: float = 0.5,
) -> list[dict[str, Any]]:
  """One results.csv row per k_eval: final and time-averaged metrics across seeds.

  ``solved_fraction`` is the fraction of seeds whose final pass@k_eval is at least
  ``solved_level``; ``auc_*`` is the metric averaged over all logged steps.
  """
  rows = []
  for j, k in enumerate(k_evals):
    final_max = curves["max_at_k"][:, -1, j]
    final_pass = curves["pass_at_k"][:, -1, j]
    rows.append(
      {
        **labels,
        "k_eval": int(k),
        "num_seeds": int(final_max.shape[0]),
        "num_steps": int(curves["max_at_k"].shape[1] - 1),
        "initial_max_at_k": float(curves["max_at_k"][0, 0, j]),
        "final_max_at_k_mean": float(final_max.mean()),
        "final_max_at_k_std": float(final_max.std()),
        "auc_max_at_k": float(curves["max_at_k"][:, :, j].mean()),
        "initial_pass_at_k": float(curves["pass_at_k"][0, 0, j]),
        "final_pass_at_k_mean": float(final_pass.mean()),
        "final_pass_at_k_std": float(final_pass.std()),
        "auc_pass_at_k": float(curves["pass_at_k"][:, :, j].mean()),
        "solved_fraction": float(np.mean(final_pass >= solved_level)),
      }
    )
  return rows
