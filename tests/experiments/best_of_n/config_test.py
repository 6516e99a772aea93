"""Tests for experiments.best_of_n.config: every bad flag value is named."""

import pytest

from experiments.best_of_n import config as config_lib


def test_binary_defaults_parse_to_the_default_config():
  raw = dict(
    seed=0,
    n_max=10_000,
    num_n=41,
    uniform_sizes=["10", "100", "1000", "10000"],
    cherry_eps=1e-4,
    cherry_size=100,
    cherry_step=100.0,
    dirichlet_alphas=["0.1", "1.0"],
    dirichlet_size=1000,
    num_mc_draws=100,
    num_thresholds=25,
    rr_max_tries=["16"],
    float64=True,
    proxy_arms=1000,
    proxy_sigmas=["0", "0.5", "1", "2"],
    proxy_t_df=2.0,
    proxy_n_max=1024,
    proxy_num_n=21,
    proxy_mc_draws=200,
    out_dir="/ignored",
  )
  assert config_lib.from_flag_values(raw) == config_lib.Config()


def test_parsing():
  config = config_lib.from_flag_values(
    dict(uniform_sizes="3, 5", dirichlet_alphas=[], rr_max_tries=["none", "4", "NONE", "2"])
  )
  assert config.uniform_sizes == (3, 5)
  assert config.dirichlet_alphas == ()
  assert config.rr_max_tries == (4, 2)


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
    ("uniform_sizes", ["0"], "has '0'"),
    ("uniform_sizes", ["10", "x"], "has 'x'"),
    ("uniform_sizes", ["10", "1e3"], "has '1e3'"),
    ("uniform_sizes", ["10", "10"], "twice"),
    ("dirichlet_alphas", ["0.1", "-1"], "has '-1'"),
    ("dirichlet_alphas", ["inf"], "has 'inf'"),
    ("dirichlet_alphas", ["0.1", "0.10"], "twice"),
    ("rr_max_tries", ["0"], "has '0'"),
    ("rr_max_tries", ["none", "x"], "has 'x'"),
    ("rr_max_tries", ["4", "4"], "twice"),
    ("float64", "yes", "boolean"),
    ("proxy_arms", 1, "integer >= 2"),
    ("proxy_sigmas", ["0", "-1"], "has '-1'"),
    ("proxy_sigmas", ["1", "1.0"], "twice"),
    ("proxy_sigmas", [], "at least one"),
    ("proxy_t_df", 0.0, "> 0"),
    ("proxy_mc_draws", 0, "integer >= 1"),
  ],
)
def test_bad_value_names_the_flag(name, value, rule):
  with pytest.raises(ValueError, match=rf"^--{name}=.* {rule}"):
    config_lib.from_flag_values({name: value})
  with pytest.raises(ValueError, match=rule):  # What the binary's absl validator reports.
    config_lib.PARSERS[name](value)


def test_staircase_needs_mass_left_for_its_lowest_level():
  config_lib.check_staircase(1e-4, 2.0)
  with pytest.raises(ValueError, match="--cherry_step=1.5 is too small for --cherry_eps"):
    config_lib.from_flag_values(dict(cherry_step=1.5))
