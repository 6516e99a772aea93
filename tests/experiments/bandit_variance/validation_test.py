"""Tests of experiments.bandit_variance.validation: every bad config field is named."""

import pytest

from experiments import config_checks
from experiments.bandit_variance import validation
from experiments.bandit_variance.configs import default


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
    _config(policies=" categorical ,gaussian", ns="4, 8", ks="1,4", estimators="all")
  )
  assert lists.policies == ("categorical", "gaussian")
  assert (lists.ns, lists.ks) == ((4, 8), (1, 4))
  assert "loo_minus_one" in lists.estimators and "all" not in lists.estimators
  assert lists.atlas_bandits == ("easy", "hard") and lists.atlas_ns == (8, 16, 32, 64)


def test_default_and_smoke_configs_are_valid():
  validation.validate(default.get_config())
  smoke = default.get_config("smoke")
  validation.validate(smoke)
  assert (smoke.ns, smoke.ks, smoke.num_replicates) == ((4, 8), (1, 4), 256)
  # No atlas: its other fields are not read.
  lists = validation.validate(_config(atlas_bandits="", atlas_ns="0", atlas_num_samples=0))
  assert (lists.atlas_bandits, lists.atlas_ns, lists.atlas_ks) == ((), (), ())
  with pytest.raises(ValueError, match="variant='big'"):
    default.get_config("big")


@pytest.mark.parametrize(
  "fields, name",
  [
    (dict(num_replicates=0), "num_replicates"),
    (dict(num_replicates=1), "num_replicates"),
    (dict(ns="0"), "ns"),
    (dict(ns="4,x"), "ns"),
    (dict(ns=""), "ns"),
    (dict(ks="0,1"), "ks"),
    (dict(ks="1.5"), "ks"),
    (dict(sigma=-0.1), "sigma"),
    (dict(sigma=0.0), "sigma"),
    (dict(sigma=float("inf")), "sigma"),
    (dict(theta=float("nan")), "theta"),
    (dict(gaussian_shift=float("inf")), "gaussian_shift"),
    (dict(categorical_shift=float("nan")), "categorical_shift"),
    (dict(pass_threshold=float("nan")), "pass_threshold"),
    (dict(logit_scale=-1.0), "logit_scale"),
    (dict(num_arms=1), "num_arms"),
    (dict(seed=-1), "seed"),
    (dict(policies="gaussian,uniform"), "policies"),
    (dict(estimators="loo,magic"), "magic"),
    (dict(estimators="loo,loo"), "repeat"),
    (dict(objectives="max,median"), "objectives"),
    (dict(objectives="min,min"), "objectives"),
    (dict(objectives=""), "objectives"),
    (dict(top_m=0), "top_m"),
    # No cell with k <= n.
    (dict(ns="2", ks="4"), "k <= n"),
    # Every objective asked for gives rows: the rank objectives need the categorical
    # bandit, and top_m a cell with top_m <= k <= n.
    (dict(objectives="min,maxrl", policies="gaussian"), "categorical bandit only"),
    (dict(objectives="max,top_m", policies="gaussian"), "categorical bandit only"),
    (dict(objectives="top_m", top_m=99), "top_m <= k <= n"),
    (dict(objectives="max,top_m", top_m=9, ks="1,4,8", ns="4,8,16"), "top_m <= k <= n"),
    (dict(atlas_bandits="easy,medium"), "atlas_bandits"),
    (dict(atlas_ns="1,8"), "atlas_ns"),
    (dict(atlas_ks="0"), "atlas_ks"),
    (dict(atlas_ns="4", atlas_ks="8"), "atlas_ks"),
    (dict(atlas_num_samples=1), "atlas_num_samples"),
    (dict(atlas_jspo_prompts=1), "atlas_jspo_prompts"),
  ],
)
def test_bad_field_raises_naming_it(fields, name):
  with pytest.raises(config_checks.ConfigError, match=r"^config\.") as error:
    validation.validate(_config(**fields))
  assert name in str(error.value)


@pytest.mark.parametrize(
  "fields",
  [
    dict(ns="2,4", ks="1,8", sigma=0.5, estimators="all", objectives="min,maxrl", top_m=3),
    dict(objectives="top_m", top_m=8, ks="8", ns="8"),
    dict(objectives="max,min", top_m=99),  # top_m is not asked for.
  ],
)
def test_valid_configs_pass(fields):
  validation.validate(_config(**fields))
