"""The checks of a bandit training config: :func:`validate`, called once by ``study.run``."""

from __future__ import annotations

import dataclasses

import ml_collections

from experiments import config_checks as checks
from experiments import estimators as estimators_lib
from experiments import schedules

BANDITS = ("easy", "hard", "gaussian")
OPTIMIZERS = ("adam", "sgd")


@dataclasses.dataclass(frozen=True)
class Lists:
  """The config's list fields, parsed once by :func:`validate` (each a tuple)."""

  bandits: tuple[str, ...]
  estimators: tuple[str, ...]
  k_schedules: tuple[str, ...]
  k_evals: tuple[int, ...]


def validate(config: ml_collections.ConfigDict) -> Lists:
  """Checks every field of ``config`` (see ``configs/default.py``); returns its lists.

  Raises:
    experiments.config_checks.ConfigError: naming the first bad field.
  """
  checks.integer(config, "seed", low=0)
  bandits = checks.names(config, "bandits", BANDITS)
  try:
    estimators = estimators_lib.parse_names(checks.split(config.estimators))
  except ValueError as e:
    checks.fail("estimators", config.estimators, f"is refused: {e}")
  n = checks.integer(config, "n", low=2)
  num_steps = checks.integer(config, "num_steps", low=1)
  checks.integer(config, "num_seeds", low=1)
  specs = checks.split(config.k_schedules)
  if not specs:
    checks.fail("k_schedules", config.k_schedules, "must hold at least one schedule")
  for spec in specs:
    try:
      schedules.parse_schedule(spec, num_steps=num_steps, n=n)
    except ValueError as e:
      checks.fail("k_schedules", config.k_schedules, f"is refused: {e}")
  k_evals = checks.ints(config, "k_evals", low=1)
  if config.optimizer not in OPTIMIZERS:
    checks.fail("optimizer", config.optimizer, f"must be one of {list(OPTIMIZERS)}")
  checks.number(config, "learning_rate", above=0)
  checks.number(config, "gaussian_learning_rate", above=0)
  checks.integer(config, "inner_steps", low=1)
  checks.number(config, "pass_threshold")
  num_arms = checks.integer(config, "num_arms", low=2)
  if "hard" in bandits and num_arms < 3:
    checks.fail("num_arms", num_arms, "must be >= 3 for the 'hard' bandit")
  checks.number(config, "best_arm_prob", above=0, below=1)
  checks.number(config, "decoy_reward", above=0, below=1)
  checks.number(config, "theta0")
  checks.number(config, "sigma", above=0)
  return Lists(bandits, estimators, specs, k_evals)
