"""The checks of a bandit training config: :func:`validate`, called once by ``study.run``,
which returns the validated config that the run reads."""

from __future__ import annotations

import ml_collections

from experiments import config_checks as checks
from experiments import estimators as estimators_lib
from experiments import schedules

BANDITS = ("easy", "hard", "gaussian")
OPTIMIZERS = ("adam", "sgd")


def validate(config: ml_collections.ConfigDict) -> ml_collections.FrozenConfigDict:
  """Checks every field of ``config`` (see ``configs/default.py``); returns it validated.

  Returns:
    The fields of ``config``, frozen, with the list fields as tuples of their checked
    items, ``estimators`` the names it stands for (``("all",)``: every one) and each
    of ``k_schedules`` its text (an integer k, as ``--config.k_schedules=1,4`` gives,
    is the fixed schedule ``"k"``).

  Raises:
    experiments.config_checks.ConfigError: naming the first bad field.
  """
  checks.integer(config, "seed", low=0)
  bandits = checks.names(config, "bandits", BANDITS)
  try:
    estimators = estimators_lib.parse_names(checks.items(config, "estimators"))
  except ValueError as e:
    checks.fail("estimators", config.estimators, f"is refused: {e}")
  n = checks.integer(config, "n", low=2)
  num_steps = checks.integer(config, "num_steps", low=1)
  checks.integer(config, "num_seeds", low=1)
  specs = checks.items(config, "k_schedules")
  if not specs:
    checks.fail("k_schedules", config.k_schedules, "must hold at least one schedule")
  for spec in specs:
    if isinstance(spec, bool) or not isinstance(spec, (str, int)):
      checks.fail("k_schedules", config.k_schedules, f"has {spec!r}: each must be k or k0:t1:k1")
    try:
      schedules.parse_schedule(str(spec), num_steps=num_steps, n=n)
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
  lists = dict(bandits=bandits, estimators=estimators, k_evals=k_evals)
  lists.update(k_schedules=tuple(str(spec) for spec in specs))
  return ml_collections.FrozenConfigDict({**config.to_dict(), **lists})
