"""The bandit training study: every bandit x estimator x k_opt schedule, many seeds.

:func:`run` takes the config of ``configs/default.py`` (checked by
:func:`experiments.bandit_training.validation.validate`) and a workdir.

References: PKPO, arXiv 2505.15201, Sec. 5 and Fig. 3.
"""

from __future__ import annotations

from collections.abc import Sequence
import os
import time
from typing import Any

from absl import logging
import jax
import ml_collections
import numpy as np
import tqdm

from experiments import estimators as estimators_lib
from experiments import outputs
from experiments import schedules
from experiments.bandit_training import plotting
from experiments.bandit_training import validation
from experiments.bandits import policies
from experiments.bandits import training

# (bandit name, policy, initial parameters) of one bandit.
Bandit = tuple[str, Any, jax.Array]
# The curves of one run by metric (see experiments.bandits.training.train).
Curves = dict[str, np.ndarray]


def make_bandit(
  name: str,
  *,
  num_arms: int,
  best_arm_prob: float,
  decoy_reward: float,
  theta0: float,
  sigma: float,
) -> tuple[Any, jax.Array]:
  """``(policy, initial parameters)`` of the bandit called ``name`` (one of
  :data:`experiments.bandit_training.validation.BANDITS`).

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
  raise ValueError(f"Unknown bandit={name!r}; valid options are {list(validation.BANDITS)}.")


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
  config: ml_collections.ConfigDict, workdir: str, *, show_progress: bool = True
) -> list[dict[str, Any]]:
  """Validates ``config``, trains every run and writes the outputs into ``workdir``.

  Every run on a bandit uses the same seeds (``fold_in(key(seed), bandit index)``),
  so estimators and schedules are compared on paired draws. ``results.csv`` holds one
  row per bandit, estimator, schedule and k_eval (see
  :func:`experiments.bandits.training.summarize`); ``curves.npz`` every seed's curves,
  keyed ``<bandit>/<estimator>/<schedule>/<metric>``; ``curves_<bandit>.png`` the
  figures; ``config.json`` the config. ``config.gaussian_learning_rate`` is the
  learning rate of the ``gaussian`` bandit, ``config.learning_rate`` that of the
  categorical ones.

  Returns:
    The result rows.

  Raises:
    experiments.config_checks.ConfigError: naming a bad field (or workdir), before
      anything is written.
  """
  valid = validation.validate(config)
  workdir = outputs.start(workdir, config)
  start = time.time()
  k_evals = valid.k_evals
  runs = make_runs(
    valid.estimators,
    valid.k_schedules,
    num_steps=valid.num_steps,
    n=valid.n,
  )
  bandits: list[Bandit] = [
    (
      name,
      *make_bandit(
        name,
        num_arms=valid.num_arms,
        best_arm_prob=valid.best_arm_prob,
        decoy_reward=valid.decoy_reward,
        theta0=valid.theta0,
        sigma=valid.sigma,
      ),
    )
    for name in valid.bandits
  ]
  rows: list[dict[str, Any]] = []
  curves: dict[tuple[str, str, str], Curves] = {}
  jobs = [(b, bandit, one_run) for b, bandit in enumerate(bandits) for one_run in runs]
  for b, bandit, (estimator, schedule) in tqdm.tqdm(jobs, desc="runs", disable=not show_progress):
    key = jax.random.fold_in(jax.random.key(valid.seed), b)
    run_rows, run_curves = _train(valid, bandit, estimator, schedule, key, k_evals)
    rows += run_rows
    curves[(bandit[0], estimator, schedule.spec)] = run_curves
  outputs.write_results_csv(workdir, rows)
  _write_curves(valid, workdir, curves, k_evals)
  logging.info("Wrote %d rows to %s in %.1f s.", len(rows), workdir, time.time() - start)
  return rows


def _train(
  config: ml_collections.ConfigDict,
  bandit: Bandit,
  estimator: str,
  schedule: schedules.Schedule,
  key: jax.Array,
  k_evals: Sequence[int],
) -> tuple[list[dict[str, Any]], Curves]:
  """One run's result rows and curves (:func:`experiments.bandits.training.train`)."""
  name, policy, init = bandit
  lr = config.gaussian_learning_rate if name == "gaussian" else config.learning_rate
  curves = training.train(
    policy,
    init,
    key,
    estimator=estimator,
    schedule=schedule,
    num_steps=config.num_steps,
    n=config.n,
    num_seeds=config.num_seeds,
    k_evals=k_evals,
    pass_threshold=config.pass_threshold,
    optimizer=config.optimizer,
    learning_rate=lr,
    inner_steps=config.inner_steps,
  )
  labels = {
    "bandit": name,
    "estimator": estimator,
    "schedule": schedule.spec,
    "n": config.n,
    "optimizer": config.optimizer,
    "learning_rate": lr,
  }
  return training.summarize(curves, labels=labels, k_evals=k_evals), curves


def _write_curves(
  config: ml_collections.ConfigDict,
  workdir: str,
  curves: dict[tuple[str, str, str], Curves],
  k_evals: Sequence[int],
) -> None:
  """``curves.npz`` and one ``curves_<bandit>.png`` per bandit."""
  arrays = {
    f"{bandit}/{estimator}/{spec}/{metric}": run_curves[metric]
    for (bandit, estimator, spec), run_curves in curves.items()
    for metric in ("max_at_k", "pass_at_k")
  }
  path = os.path.join(workdir, "curves.npz")
  # numpy's stub reads **arrays as its allow_pickle option.
  np.savez_compressed(path, k_evals=np.array(k_evals), **arrays)  # type: ignore[arg-type]
  for bandit in dict.fromkeys(b for b, _, _ in curves):
    labelled = [
      (f"{estimator} k={spec}" if spec != "n/a" else estimator, run_curves)
      for (b, estimator, spec), run_curves in curves.items()
      if b == bandit
    ]
    plotting.plot_curves(
      labelled,
      k_evals=k_evals,
      path=os.path.join(workdir, f"curves_{bandit}.png"),
      title=(
        f"{bandit}: exact max@k / pass@k (reward >= {config.pass_threshold}), "
        f"n={config.n}, {config.num_seeds} seeds (mean, 10-90% band)"
      ),
    )
