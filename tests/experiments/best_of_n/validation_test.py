"""Tests for experiments.best_of_n.validation: every bad config field is named."""

import ml_collections
import pytest

from experiments import config_checks
from experiments.best_of_n import validation
from experiments.best_of_n.configs import default


def _listed(name, value):
  """A list field's ``value`` given as command-line text, parsed as ``--config.NAME=TEXT``
  parses it."""
  is_list = isinstance(default.get_config()[name], tuple)
  return config_checks.parse_list(value) if is_list and isinstance(value, str) else value


def _config(**fields):
  # A plain ConfigDict, so that a field may hold a value of another type than its default.
  fields = {name: _listed(name, value) for name, value in fields.items()}
  return ml_collections.ConfigDict({**default.get_config().to_dict(), **fields})


def test_default_config_parses_to_the_study_defaults():
  settings = validation.validate(default.get_config())
  assert set(validation.PARSERS) == set(default.get_config())  # A parser per field.
  assert settings.uniform_sizes == (10, 100, 1000, 10000)
  assert settings.dirichlet_alphas == (0.1, 1.0)
  assert settings.rr_max_tries == (16,)
  assert settings.proxy_sigmas == (0.0, 0.5, 1.0, 2.0)
  assert (settings.seed, settings.n_max, settings.cherry_eps, settings.float64) == (
    0,
    10_000,
    1e-4,
    True,
  )
  smoke = validation.validate(default.get_config("smoke"))
  assert (smoke.n_max, smoke.uniform_sizes, smoke.proxy_mc_draws) == (100, (10, 100), 20)
  assert (settings.frontier_n_max, settings.frontier_lams, smoke.frontier_n_max) == (
    256,
    (0.25, 1.0),
    16,
  )


def test_parsing():
  settings = validation.validate(
    _config(uniform_sizes="3, 5", dirichlet_alphas="", rr_max_tries="none,4,NONE,2")
  )
  assert settings.uniform_sizes == (3, 5)
  assert settings.dirichlet_alphas == ()
  assert settings.rr_max_tries == (4, 2)


@pytest.mark.parametrize(
  "name, value, rule",
  [
    ("seed", -1, "integer >= 0"),
    ("n_max", 0, "integer >= 1"),
    ("num_n", 0, "integer >= 1"),
    ("num_mc_draws", 0, "integer >= 1"),
    ("num_mc_draws", -1, "integer >= 1"),
    ("num_mc_draws", 2.5, "integer >= 1"),
    ("num_mc_draws", True, "integer >= 1"),
    ("num_thresholds", 0, "integer >= 1"),
    ("dirichlet_size", 0, "integer >= 1"),
    ("cherry_size", 1, "integer >= 2"),
    ("cherry_eps", 0.0, r"\(0, 1\)"),
    ("cherry_eps", 1.0, r"\(0, 1\)"),
    ("cherry_eps", float("nan"), "finite"),
    ("cherry_step", 1.0, "> 1"),
    ("cherry_step", float("inf"), "finite"),
    ("uniform_sizes", "0", "has 0:"),
    ("uniform_sizes", "10,x", "has 'x'"),
    ("uniform_sizes", "10,1e3", "has 1000.0"),
    ("uniform_sizes", "10,'20'", "has '20'"),
    ("uniform_sizes", "10,100", "must be a list"),  # A string, as list fields once were.
    ("uniform_sizes", "10,10", "twice"),
    ("dirichlet_alphas", "0.1,-1", "has -1"),
    ("dirichlet_alphas", "inf", "has 'inf'"),
    ("dirichlet_alphas", "0.1,0.10", "twice"),
    ("rr_max_tries", "0", "has 0:"),
    ("rr_max_tries", "none,x", "has 'x'"),
    ("rr_max_tries", "4,4", "twice"),
    ("float64", "yes", "boolean"),
    ("proxy_arms", 1, "integer >= 2"),
    ("proxy_sigmas", "0,-1", "has -1"),
    ("proxy_sigmas", "1,1.0", "twice"),
    ("proxy_sigmas", "", "at least one"),
    ("proxy_t_df", 0.0, "> 0"),
    ("proxy_mc_draws", 0, "integer >= 1"),
    ("frontier_n_max", 0, "integer >= 1"),
    ("frontier_num_points", 0, "integer >= 1"),
    ("frontier_lams", "0.5,-1", "has -1"),
    ("frontier_sigma", -1.0, ">= 0"),
  ],
)
def test_bad_value_names_the_field(name, value, rule):
  if rule == "must be a list":  # Set as it is, not as the command line would read it.
    config = ml_collections.ConfigDict({**default.get_config().to_dict(), name: value})
  else:
    config, value = _config(**{name: value}), _listed(name, value)
  with pytest.raises(config_checks.ConfigError, match=rf"^config\.{name}=.* {rule}"):
    validation.validate(config)
  with pytest.raises(ValueError, match=rule):  # The field's parser alone.
    validation.PARSERS[name](value)


def test_staircase_needs_mass_left_for_its_lowest_level():
  validation.check_staircase(1e-4, 2.0)
  with pytest.raises(config_checks.ConfigError, match=r"config.cherry_step=1.5 is too small"):
    validation.validate(_config(cherry_step=1.5))
