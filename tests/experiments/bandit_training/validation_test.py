"""Tests of experiments.bandit_training.validation: every bad config field is named."""

import pytest

from experiments import config_checks
from experiments import estimators as estimators_lib
from experiments.bandit_training import validation
from experiments.bandit_training.configs import default


def _config(**fields):
  """The default config with ``fields``; a list field's value may be its command-line
  text, parsed as ``--config.FIELD=TEXT`` parses it."""
  config = default.get_config()
  for name, value in fields.items():
    if isinstance(config[name], tuple) and isinstance(value, str):
      value = config_checks.parse_list(value)
    config[name] = value
  return config


def test_validate_returns_the_parsed_lists():
  lists = validation.validate(
    _config(bandits="hard, easy", estimators="grpo,loo", k_schedules="1, 4", k_evals="1,8")
  )
  assert lists.bandits == ("hard", "easy") and lists.estimators == ("grpo", "loo")
  assert lists.k_schedules == ("1", "4") and lists.k_evals == (1, 8)
  mixed = validation.validate(_config(k_schedules="1,8:200:1", n=8))  # (1, "8:200:1")
  assert mixed.k_schedules == ("1", "8:200:1")
  assert validation.validate(_config(estimators="all")).estimators == estimators_lib.names()
  # The validated config holds every field; the config itself is left as it was.
  config = _config(k_schedules="1, 4")
  valid = validation.validate(config)
  assert valid.num_steps == config.num_steps and config.k_schedules == (1, 4)


def test_default_and_smoke_configs_are_valid():
  validation.validate(default.get_config())
  smoke = default.get_config("smoke")
  validation.validate(smoke)
  assert (smoke.num_steps, smoke.num_seeds, smoke.k_schedules) == (20, 2, ("1", "4"))


@pytest.mark.parametrize(
  "fields, name",
  [
    (dict(learning_rate=float("inf")), "learning_rate"),
    (dict(learning_rate=0.0), "learning_rate"),
    (dict(gaussian_learning_rate=float("nan")), "gaussian_learning_rate"),
    (dict(num_steps=0), "num_steps"),
    (dict(num_steps=-3), "num_steps"),
    (dict(num_seeds=0), "num_seeds"),
    (dict(n=0), "config.n="),
    (dict(n=1), "config.n="),
    (dict(inner_steps=0), "inner_steps"),
    (dict(k_evals="0"), "k_evals"),
    (dict(k_evals="2,x"), "k_evals"),
    (dict(k_schedules=""), "k_schedules"),
    (dict(k_schedules="8:0:1"), "k_schedules"),
    (dict(k_schedules="8:400:1"), "k_schedules"),
    (dict(k_schedules="4:100:2:50:1"), "k_schedules"),
    (dict(k_schedules="16"), "k_schedules"),
    (dict(k_schedules="8:100"), "k_schedules"),
    (dict(pass_threshold=float("nan")), "pass_threshold"),
    (dict(best_arm_prob=1.0), "best_arm_prob"),
    (dict(decoy_reward=0.0), "decoy_reward"),
    (dict(theta0=float("inf")), "theta0"),
    (dict(sigma=-0.1), "sigma"),
    (dict(num_arms=2), "num_arms"),  # The hard bandit (a default one) needs 3 arms.
    (dict(num_arms=1, bandits="easy"), "num_arms"),
    (dict(seed=-1), "seed"),
    (dict(bandits="easy,medium"), "bandits"),
    (dict(estimators="magic"), "magic"),
    (dict(k_schedules=(1.5,)), "k_schedules"),
    (dict(k_schedules=(True,)), "k_schedules"),
    (dict(optimizer="rmsprop"), "optimizer"),
  ],
)
def test_bad_field_raises_naming_it(fields, name):
  with pytest.raises(config_checks.ConfigError, match=r"^config\.") as error:
    validation.validate(_config(**fields))
  assert name in str(error.value)


def test_valid_configs_pass():
  validation.validate(_config(bandits="easy", num_arms=2))  # Only the hard bandit needs 3.
  validation.validate(_config(k_schedules="2:10:1", num_steps=11, n=2))
