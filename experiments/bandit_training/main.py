"""Flags of the bandit training binary; the study is :func:`experiments.bandit_training.study.run`.

Usage:
  python -m experiments.bandit_training --out_dir=/tmp/bandit_training
"""

from __future__ import annotations

import math
import time

from absl import flags
from absl import logging

from experiments import estimators as estimators_lib
from experiments import flag_checks
from experiments import outputs
from experiments import schedules
from experiments.bandit_training import study

_OUT_DIR = flags.DEFINE_string("out_dir", None, "Output directory.", required=True)
_SEED = flags.DEFINE_integer("seed", 0, "Random seed (same seed and flags: same results).")
_BANDITS = flags.DEFINE_list(
  "bandits", list(study.BANDITS), "Policies to train: 'easy', 'hard' and/or 'gaussian'."
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
  "k_opt schedules: 'k' (fixed) or 'k0:t1:k1[:t2:k2...]' (k0 for the first t1 steps, "
  "steps 0 to t1 - 1, then k1 until step t2, ...; switch steps strictly increase inside "
  "(0, num_steps)).",
)
_N = flags.DEFINE_integer("n", 8, "Samples per step (group size, >= 2); every k_opt must be <= n.")
_NUM_STEPS = flags.DEFINE_integer("num_steps", 400, "Training steps (>= 1).")
_NUM_SEEDS = flags.DEFINE_integer("num_seeds", 32, "Independent seeds, vmapped (>= 1).")
_K_EVALS = flags.DEFINE_list(
  "k_evals",
  ["1", "2", "4", "8", "16"],
  "k of the exact pass@k / max@k logged every step (integers >= 1).",
)
_OPTIMIZER = flags.DEFINE_enum("optimizer", "adam", ["adam", "sgd"], "Optimiser.")
_LEARNING_RATE = flags.DEFINE_float(
  "learning_rate", 0.05, "Learning rate (> 0) of the categorical bandits' logits."
)
_GAUSSIAN_LEARNING_RATE = flags.DEFINE_float(
  "gaussian_learning_rate", 0.01, "Learning rate (> 0) of theta for the 'gaussian' bandit."
)
_INNER_STEPS = flags.DEFINE_integer(
  "inner_steps", 1, "Optimiser steps per sampled group (> 1: later steps are off-policy)."
)
_PASS_THRESHOLD = flags.DEFINE_float(
  "pass_threshold",
  0.9,
  "A sample is correct when reward >= pass_threshold (pass@k; pass_at_k_training input).",
)
_NUM_ARMS = flags.DEFINE_integer(
  "num_arms", 10, "Categorical bandits: number of arms (>= 2; the hard bandit needs >= 3)."
)
_BEST_ARM_PROB = flags.DEFINE_float(
  "best_arm_prob", 0.01, "Hard bandit: initial probability of the best arm (reward 1), in (0, 1)."
)
_DECOY_REWARD = flags.DEFINE_float(
  "decoy_reward", 0.6, "Hard bandit: reward of the decoy arm, in (0, 1)."
)
_THETA0 = flags.DEFINE_float("theta0", 0.5, "Gaussian toy: initial theta.")
_SIGMA = flags.DEFINE_float("sigma", 0.1, "Gaussian toy: standard deviation sigma (> 0).")


def _check_schedules(values: dict) -> None:
  for spec in values["k_schedules"]:
    try:
      schedules.parse_schedule(spec, num_steps=values["num_steps"], n=values["n"])
    except ValueError as e:
      raise ValueError(f"--k_schedules: {e}") from None


def _check_hard_bandit(values: dict) -> None:
  if "hard" in values["bandits"] and values["num_arms"] < 3:
    raise ValueError(f"--num_arms={values['num_arms']} must be >= 3 for the 'hard' bandit.")


outputs.register_out_dir_validator("out_dir")
flags.register_validator("seed", lambda v: v >= 0, "--seed must be >= 0.")
flags.register_validator(
  "bandits",
  flag_checks.distinct_names(study.BANDITS),
  f"--bandits must list distinct names from {list(study.BANDITS)}.",
)
flags.register_validator("estimators", flag_checks.raising(estimators_lib.parse_names))
flags.register_validator("n", lambda v: v >= 2, "--n must be an integer >= 2.")
flags.register_validator("num_steps", lambda v: v >= 1, "--num_steps must be an integer >= 1.")
flags.register_validator("num_seeds", lambda v: v >= 1, "--num_seeds must be an integer >= 1.")
flags.register_validator("k_schedules", bool, "--k_schedules must hold at least one schedule.")
flags.register_multi_flags_validator(
  ["k_schedules", "num_steps", "n"], flag_checks.raising(_check_schedules)
)
flags.register_validator(
  "k_evals",
  flag_checks.int_list_at_least(1),
  "--k_evals must list integers k >= 1.",
)
flags.register_validator(
  "learning_rate", flag_checks.finite_positive, "--learning_rate must be finite and > 0."
)
flags.register_validator(
  "gaussian_learning_rate",
  flag_checks.finite_positive,
  "--gaussian_learning_rate must be finite and > 0.",
)
flags.register_validator("inner_steps", lambda v: v >= 1, "--inner_steps must be an integer >= 1.")
flags.register_validator("pass_threshold", math.isfinite, "--pass_threshold must be finite.")
flags.register_validator("num_arms", lambda v: v >= 2, "--num_arms must be an integer >= 2.")
flags.register_multi_flags_validator(
  ["bandits", "num_arms"], flag_checks.raising(_check_hard_bandit)
)
flags.register_validator(
  "best_arm_prob", lambda v: 0 < v < 1, "--best_arm_prob must satisfy 0 < best_arm_prob < 1."
)
flags.register_validator(
  "decoy_reward", lambda v: 0 < v < 1, "--decoy_reward must satisfy 0 < decoy_reward < 1."
)
flags.register_validator("theta0", math.isfinite, "--theta0 must be finite.")
flags.register_validator("sigma", flag_checks.finite_positive, "--sigma must be finite and > 0.")


def main(argv):
  out_dir = outputs.start_run(argv, _OUT_DIR.value)
  start = time.time()
  rows = study.run(
    out_dir,
    bandits=_BANDITS.value,
    estimators=_ESTIMATORS.value,
    k_schedules=_K_SCHEDULES.value,
    n=_N.value,
    num_steps=_NUM_STEPS.value,
    num_seeds=_NUM_SEEDS.value,
    k_evals=[int(k) for k in _K_EVALS.value],
    optimizer=_OPTIMIZER.value,
    learning_rate=_LEARNING_RATE.value,
    gaussian_learning_rate=_GAUSSIAN_LEARNING_RATE.value,
    inner_steps=_INNER_STEPS.value,
    pass_threshold=_PASS_THRESHOLD.value,
    num_arms=_NUM_ARMS.value,
    best_arm_prob=_BEST_ARM_PROB.value,
    decoy_reward=_DECOY_REWARD.value,
    theta0=_THETA0.value,
    sigma=_SIGMA.value,
    seed=_SEED.value,
  )
  logging.info("Wrote %d rows to %s in %.1f s.", len(rows), out_dir, time.time() - start)
