r"""Policy-gradient training on toy bandits with max@k estimators and k_opt schedules.

For every bandit, estimator and k_opt schedule (fixed k or annealed, PKPO Fig. 3),
trains ``--num_seeds`` independent policies in one vmapped computation and logs the
exact max@k and pass@k of the current policy after every step.

Bandits: ``easy`` (rewards evenly spaced on [0, 1], uniform start), ``hard`` (the
best arm starts with probability ``--best_arm_prob`` next to a decoy arm) and
``gaussian`` (PKPO's toy, learning the mean theta).

Usage:
  python -m experiments.bandit_training --out_dir=/tmp/bandit_training

Writes ``results.csv`` (one row per bandit, estimator, schedule and k_eval),
``config.json``, ``curves.npz`` (every seed's curves) and ``curves_<bandit>.png``.
"""

from __future__ import annotations

import os
import time

from absl import app
from absl import flags
from absl import logging
import jax
import numpy as np
import tqdm

from experiments import outputs
from experiments.bandits import estimators as estimators_lib
from experiments.bandits import policies
from experiments.bandits import training

_OUT_DIR = flags.DEFINE_string("out_dir", None, "Output directory.", required=True)
_SEED = flags.DEFINE_integer("seed", 0, "Random seed (same seed and flags: same results).")
_BANDITS = flags.DEFINE_list(
  "bandits", ["easy", "hard", "gaussian"], "Policies to train: 'easy', 'hard' and/or 'gaussian'."
)
_ESTIMATORS = flags.DEFINE_list(
  "estimators",
  ["loo_minus_one", "grpo", "max_minus_second"],
  f"Estimators (subset of {list(estimators_lib.ESTIMATOR_NAMES)} or 'all'). Those whose "
  "advantages do not depend on k (grpo, rloo, max_minus_second) run once, schedule 'n/a'.",
)
_K_SCHEDULES = flags.DEFINE_list(
  "k_schedules",
  ["1", "2", "4", "8", "8:200:1"],
  "k_opt schedules: 'k' (fixed) or 'k0:t1:k1[:t2:k2...]' (k_i from step t_i on).",
)
_N = flags.DEFINE_integer("n", 8, "Samples per step (group size); every k_opt must be <= n.")
_NUM_STEPS = flags.DEFINE_integer("num_steps", 400, "Training steps.")
_NUM_SEEDS = flags.DEFINE_integer("num_seeds", 32, "Independent seeds, vmapped.")
_K_EVALS = flags.DEFINE_list(
  "k_evals", ["1", "2", "4", "8", "16"], "k of the exact pass@k / max@k logged every step."
)
_OPTIMIZER = flags.DEFINE_enum("optimizer", "adam", ["adam", "sgd"], "Optimiser.")
_LEARNING_RATE = flags.DEFINE_float(
  "learning_rate", 0.05, "Learning rate (categorical bandits: of the logits)."
)
_GAUSSIAN_LEARNING_RATE = flags.DEFINE_float(
  "gaussian_learning_rate", 0.01, "Learning rate of theta for the 'gaussian' bandit."
)
_INNER_STEPS = flags.DEFINE_integer(
  "inner_steps", 1, "Optimiser steps per sampled group (> 1: later steps are off-policy)."
)
_PASS_THRESHOLD = flags.DEFINE_float(
  "pass_threshold",
  0.9,
  "A sample is correct when reward >= pass_threshold (pass@k; pass_at_k_training input).",
)
_NUM_ARMS = flags.DEFINE_integer("num_arms", 10, "Categorical bandits: number of arms.")
_BEST_ARM_PROB = flags.DEFINE_float(
  "best_arm_prob", 0.01, "Hard bandit: initial probability of the best arm (reward 1)."
)
_DECOY_REWARD = flags.DEFINE_float("decoy_reward", 0.6, "Hard bandit: reward of the decoy arm.")
_THETA0 = flags.DEFINE_float("theta0", 0.5, "Gaussian toy: initial theta.")
_SIGMA = flags.DEFINE_float("sigma", 0.1, "Gaussian toy: standard deviation sigma.")


def _bandit(name: str):
  if name == "easy":
    return policies.easy_bandit(_NUM_ARMS.value)
  if name == "hard":
    return policies.hard_bandit(
      _NUM_ARMS.value, best_arm_prob=_BEST_ARM_PROB.value, decoy_reward=_DECOY_REWARD.value
    )
  if name == "gaussian":
    policy = policies.GaussianToy(sigma=_SIGMA.value)
    return policy, policy.init_params(_THETA0.value)
  raise ValueError(f"Unknown bandit={name!r}; valid options are ['easy', 'hard', 'gaussian'].")


def _runs() -> list[tuple[str, training.Schedule]]:
  """(estimator, schedule) pairs; k-independent estimators get one 'n/a' run."""
  schedules = [training.parse_schedule(s, _NUM_STEPS.value) for s in _K_SCHEDULES.value]
  runs = []
  for name in estimators_lib.parse_names(_ESTIMATORS.value):
    if estimators_lib.get(name).uses_k:
      runs.extend((name, s) for s in schedules)
    else:
      runs.append((name, training.Schedule("n/a", ((1, _NUM_STEPS.value),))))
  return runs


def main(argv):
  out_dir = outputs.start_run(argv, _OUT_DIR.value)
  k_evals = [int(k) for k in _K_EVALS.value]
  bandits = [(name, *_bandit(name)) for name in _BANDITS.value]
  runs = _runs()
  start = time.time()
  rows, arrays, by_bandit = [], {}, {name: [] for name, _, _ in bandits}
  jobs = [(b, bandit, run) for b, bandit in enumerate(bandits) for run in runs]
  for b, (bandit, policy, init), (estimator, schedule) in tqdm.tqdm(jobs, desc="runs"):
    # Every run on a bandit uses the same seeds (paired comparisons).
    key = jax.random.fold_in(jax.random.key(_SEED.value), b)
    lr = _GAUSSIAN_LEARNING_RATE.value if bandit == "gaussian" else _LEARNING_RATE.value
    curves = training.train(
      policy,
      init,
      key,
      estimator=estimator,
      schedule=schedule,
      n=_N.value,
      num_seeds=_NUM_SEEDS.value,
      k_evals=k_evals,
      pass_threshold=_PASS_THRESHOLD.value,
      optimizer=_OPTIMIZER.value,
      learning_rate=lr,
      inner_steps=_INNER_STEPS.value,
    )
    labels = {
      "bandit": bandit,
      "estimator": estimator,
      "schedule": schedule.spec,
      "n": _N.value,
      "optimizer": _OPTIMIZER.value,
      "learning_rate": lr,
    }
    rows.extend(training.summarize(curves, labels=labels, k_evals=k_evals))
    label = f"{estimator} k={schedule.spec}" if schedule.spec != "n/a" else estimator
    by_bandit[bandit].append((label, curves))
    for metric in ("max_at_k", "pass_at_k"):
      arrays[f"{bandit}/{estimator}/{schedule.spec}/{metric}"] = curves[metric]
  path = outputs.write_results_csv(out_dir, rows)
  np.savez_compressed(os.path.join(out_dir, "curves.npz"), k_evals=np.array(k_evals), **arrays)
  for bandit, curves in by_bandit.items():
    training.plot_curves(
      curves,
      k_evals=k_evals,
      path=os.path.join(out_dir, f"curves_{bandit}.png"),
      title=(
        f"{bandit}: exact max@k / pass@k (reward >= {_PASS_THRESHOLD.value}), "
        f"n={_N.value}, {_NUM_SEEDS.value} seeds (mean, 10-90% band)"
      ),
    )
  logging.info("Wrote %d rows to %s in %.1f s.", len(rows), path, time.time() - start)


if __name__ == "__main__":
  app.run(main)
