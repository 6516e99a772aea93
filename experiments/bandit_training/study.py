"""The bandit training study: every bandit x estimator x k_opt schedule, many seeds.

Pure functions of explicit arguments; ``main.py`` maps its flags onto :func:`run`.

References: PKPO, arXiv 2505.15201, Sec. 5 and Fig. 3.
"""

from __future__ import annotations

from collections.abc import Sequence
import os
from typing import Any

import jax
import numpy as np
import tqdm

from experiments import estimators as estimators_lib
from experiments import outputs
from experiments import schedules
from experiments.bandit_training import plotting
from experiments.bandits import policies
from experiments.bandits import training

BANDITS = ("easy", "hard", "gaussian")


def make_bandit(
  name: str,
  *,
  num_arms: int,
  best_arm_prob: float,
  decoy_reward: float,
  theta0: float,
  sigma: float,
) -> tuple[Any, jax.Array]:
  """``(policy, initial parameters)`` of the bandit called ``name`` (one of :data:`BANDITS`).

  Args:
    name: ``"easy"``, ``"hard"`` (see :mod:`experiments.bandits.policies`) or
      ``"gaussian"`` (PKPO's toy).
    num_arms: categorical bandits, number of arms.
    best_arm_prob: hard bandit, initial probability of the best arm.
    decoy_reward: hard bandit, reward of the decoy arm.
    theta0: Gaussian toy, initial theta.
    sigma: Gaussian toy, standard deviation.

  Raises:
    ValueError: on an unknown name or bad bandit parameters.
  """
  if name == "easy":
    return policies.easy_bandit(num_arms)
  if name == "hard":
    return policies.hard_bandit(num_arms, best_arm_prob=best_arm_prob, decoy_reward=decoy_reward)
  if name == "gaussian":
    policy = policies.GaussianToy(sigma=sigma)
    return policy, policy.init_params(theta0)
  raise ValueError(f"Unknown bandit={name!r}; valid options are {list(BANDITS)}.")


def make_runs(
  estimators: Sequence[str], k_schedules: Sequence[str], *, num_steps: int, n: int
) -> list[tuple[str, schedules.Schedule]]:
  """``(estimator, schedule)`` pairs: every schedule for each estimator that uses k.

  Estimators whose advantages do not depend on k (GRPO, RLOO, max-minus-second) get
  one run with schedule label ``"n/a"``.

  Raises:
    ValueError: on unknown estimators or a schedule that is malformed, has k > n or
      a switch step outside ``(0, num_steps)``.
  """
  parsed = [schedules.parse_schedule(s, num_steps=num_steps, n=n) for s in k_schedules]
  if not parsed:
    raise ValueError("k_schedules must hold at least one schedule.")
  runs: list[tuple[str, schedules.Schedule]] = []
  for name in estimators_lib.parse_names(estimators):
    if estimators_lib.get(name).uses_k:
      runs.extend((name, s) for s in parsed)
    else:
      runs.append((name, schedules.constant(1, spec="n/a")))
  return runs


def run(
  out_dir: str,
  *,
  bandits: Sequence[str],
  estimators: Sequence[str],
  k_schedules: Sequence[str],
  n: int,
  num_steps: int,
  num_seeds: int,
  k_evals: Sequence[int],
  optimizer: str,
  learning_rate: float,
  gaussian_learning_rate: float,
  inner_steps: int,
  pass_threshold: float,
  num_arms: int,
  best_arm_prob: float,
  decoy_reward: float,
  theta0: float,
  sigma: float,
  seed: int,
  show_progress: bool = True,
) -> list[dict[str, Any]]:
  """Trains every run and writes ``results.csv``, ``curves.npz`` and the figures.

  Every run on a bandit uses the same seeds (``fold_in(key(seed), bandit index)``),
  so estimators and schedules are compared on paired draws. ``results.csv`` holds one
  row per bandit, estimator, schedule and k_eval (see
  :func:`experiments.bandits.training.summarize`); ``curves.npz`` every seed's curves,
  keyed ``<bandit>/<estimator>/<schedule>/<metric>``; ``curves_<bandit>.png`` the
  figures. ``gaussian_learning_rate`` is the learning rate of the ``gaussian`` bandit,
  ``learning_rate`` that of the categorical ones; the other arguments are those of
  :func:`make_bandit`, :func:`make_runs` and :func:`experiments.bandits.training.train`.

  Returns:
    The result rows.
  """
  k_evals = [int(k) for k in k_evals]
  runs = make_runs(estimators, k_schedules, num_steps=num_steps, n=n)
  made = [
    (
      name,
      *make_bandit(
        name,
        num_arms=num_arms,
        best_arm_prob=best_arm_prob,
        decoy_reward=decoy_reward,
        theta0=theta0,
        sigma=sigma,
      ),
    )
    for name in bandits
  ]
  rows: list[dict[str, Any]] = []
  arrays: dict[str, np.ndarray] = {}
  by_bandit: dict[str, list[tuple[str, dict[str, np.ndarray]]]] = {name: [] for name, _, _ in made}
  jobs = [(b, bandit, one_run) for b, bandit in enumerate(made) for one_run in runs]
  for b, (bandit, policy, init), (estimator, schedule) in tqdm.tqdm(
    jobs, desc="runs", disable=not show_progress
  ):
    key = jax.random.fold_in(jax.random.key(seed), b)
    lr = gaussian_learning_rate if bandit == "gaussian" else learning_rate
    curves = training.train(
      policy,
      init,
      key,
      estimator=estimator,
      schedule=schedule,
      num_steps=num_steps,
      n=n,
      num_seeds=num_seeds,
      k_evals=k_evals,
      pass_threshold=pass_threshold,
      optimizer=optimizer,
      learning_rate=lr,
      inner_steps=inner_steps,
    )
    labels = {
      "bandit": bandit,
      "estimator": estimator,
      "schedule": schedule.spec,
      "n": n,
      "optimizer": optimizer,
      "learning_rate": lr,
    }
    rows.extend(training.summarize(curves, labels=labels, k_evals=k_evals))
    label = f"{estimator} k={schedule.spec}" if schedule.spec != "n/a" else estimator
    by_bandit[bandit].append((label, curves))
    for metric in ("max_at_k", "pass_at_k"):
      arrays[f"{bandit}/{estimator}/{schedule.spec}/{metric}"] = curves[metric]
  outputs.write_results_csv(out_dir, rows)
  np.savez_compressed(os.path.join(out_dir, "curves.npz"), k_evals=np.array(k_evals), **arrays)
  for bandit, labelled in by_bandit.items():
    plotting.plot_curves(
      labelled,
      k_evals=k_evals,
      path=os.path.join(out_dir, f"curves_{bandit}.png"),
      title=(
        f"{bandit}: exact max@k / pass@k (reward >= {pass_threshold}), "
        f"n={n}, {num_seeds} seeds (mean, 10-90% band)"
      ),
    )
  return rows
