"""Tests of experiments.lm.validation: every bad config value is named, good configs pass."""

import json
import math
import os

import pytest

from experiments import config_checks
from experiments.lm import run_specs
from experiments.lm import validation
from experiments.lm.configs import default
from experiments.lm.configs import paper
from experiments.lm.configs import study_8seed as study
from experiments.lm.configs import study_off_policy
from experiments.lm.configs import tiny
from tests import REPO_ROOT


def _config(**overrides):
  """The micro config with ``overrides``, of any type; a string for a list field is its
  command-line text, parsed as ``--config.FIELD=TEXT`` parses it."""
  config = tiny.get_config("micro")
  for field, value in overrides.items():
    node = config
    *parents, name = field.split(".")
    for parent in parents:
      node = node[parent]
    if isinstance(node[name], tuple) and isinstance(value, str):
      value = config_checks.parse_list(value)
    with node.ignore_type():
      node[name] = value
  return config


@pytest.mark.parametrize(
  "config",
  [
    tiny.get_config(),
    tiny.get_config("micro"),
    default.get_config(),
    paper.get_config(),
    study.get_config("countdown"),
    study.get_config("program"),
    study_off_policy.get_config(),
  ],
)
def test_shipped_configs_are_valid(config):
  validation.validate_config(config)
  valid = validation.validate_config(config, device_count=1)
  assert valid.config is config and valid.task.name == config.task.name
  assert [r.name for r in valid.runs] == [
    r.name for r in run_specs.parse_runs(config.rl.runs, config.rl.n, num_steps=config.rl.steps)
  ]


# Integer fields: counts >= 1, step counts and seeds >= 0; bools and floats are not ints.
@pytest.mark.parametrize(
  "field, value",
  [
    ("eval.n", 0),
    ("eval.num_prompts", 0),
    ("eval.every", 0),
    ("eval.chunk_prompts", -1),
    ("rl.prompts_per_step", 0),
    ("rl.steps", -1),
    ("rl.steps", 0),
    ("rl.n", 0),
    ("rl.inner_epochs", 0),
    ("rl.warmup_steps", -1),
    ("sft.steps", -1),
    ("sft.batch_size", 0),
    ("model.d_model", 0),
    ("model.num_layers", 0),
    ("log_every", 0),
    ("checkpoint_every", 0),
    ("seed", -1),
    ("num_devices", -1),
    ("rl.steps", 2.5),
    ("rl.steps", True),
  ],
)
def test_bad_integer_fields_are_named(field, value):
  with pytest.raises(config_checks.ConfigError, match=rf"config\.{field}="):
    validation.validate_config(_config(**{field: value}))


# Real fields: finite, in range.
@pytest.mark.parametrize(
  "field, value",
  [
    ("rl.learning_rate", math.nan),
    ("rl.learning_rate", math.inf),
    ("rl.learning_rate", 0.0),
    ("sft.learning_rate", -1e-3),
    ("sft.learning_rate", math.nan),
    ("sft.weight_decay", -0.1),
    ("sft.max_grad_norm", 0.0),
    ("rl.max_grad_norm", math.inf),
    ("rl.clip_eps", 0.0),
    ("rl.kl_coef", -0.01),
    ("rl.kl_coef", math.nan),
    ("rl.temperature", 0.0),
    ("rl.top_p", 1.5),
    ("eval.top_p", 0.0),
    ("eval.temperature", -math.inf),
    ("rl.learning_rate", "fast"),
    ("rl.adam_b2", 1.0),
    ("sft.adam_b2", -0.1),
  ],
)
def test_bad_real_fields_are_named(field, value):
  with pytest.raises(config_checks.ConfigError, match=rf"config\.{field}=.*finite number"):
    validation.validate_config(_config(**{field: value}))


# Choices and strings parsed by the experiment.
@pytest.mark.parametrize(
  "field, value",
  [
    ("rl.reward", "graded"),
    ("rl.baseline", "loo_plus_one"),
    ("rl.off_policy", "importance"),
    ("model.dtype", "int8"),
    ("task.name", "chess"),
    ("rl.runs", "max_at_k@9"),  # k > n = 4.
    ("rl.runs", "max_at_k@2:9:1"),  # Switches after the last of 4 steps.
    ("rl.runs", "reinforce"),
    ("rl.runs", ""),
    ("rl.runs", 3),
    ("rl.runs", ("grpo", 3)),
  ],
)
def test_bad_choices_are_named(field, value):
  with pytest.raises(config_checks.ConfigError, match=rf"config\.{field}="):
    validation.validate_config(_config(**{field: value}))


def test_cross_field_checks():
  with pytest.raises(config_checks.ConfigError, match=r"config\.model\.d_model=.*num_heads"):
    validation.validate_config(_config(**{"model.d_model": 30, "model.num_heads": 4}))
  with pytest.raises(config_checks.ConfigError, match=r"config\.task\.kwargs="):
    validation.validate_config(_config(**{"task.kwargs": {"num_digits": 2, "colour": "red"}}))


def test_missing_field_is_named():
  config = _config()
  del config.eval["every"]
  with pytest.raises(config_checks.ConfigError, match=r"config\.eval\.every is missing"):
    validation.validate_config(config)


def test_devices_must_exist_and_divide_every_batch():
  config = _config()  # sft 16 rows, rl 4 x 4, eval 4 x 4.
  validation.validate_config(config, device_count=4)
  with pytest.raises(config_checks.ConfigError, match=r"config\.num_devices=8 exceeds"):
    validation.validate_config(_config(num_devices=8), device_count=4)
  with pytest.raises(
    config_checks.ConfigError, match=r"config\.sft\.batch_size gives batches of 12 rows"
  ):
    validation.validate_config(_config(**{"sft.batch_size": 12}), device_count=8)
  with pytest.raises(config_checks.ConfigError, match=r"config\.rl\.prompts_per_step"):
    validation.validate_config(_config(**{"rl.prompts_per_step": 3}), device_count=8)
  # Chunks of 4 and 6 - 4 = 2 prompts: 8 and 4 rows; 4 do not divide over 8 devices.
  eval_chunks = {"eval.num_prompts": 6, "eval.chunk_prompts": 4, "eval.n": 2, "sft.batch_size": 8}
  with pytest.raises(config_checks.ConfigError, match=r"config\.eval\.num_prompts"):
    validation.validate_config(_config(**eval_chunks), device_count=8)
  # An explicit mesh smaller than the machine is what must divide the batches.
  validation.validate_config(_config(**{"sft.batch_size": 12, "num_devices": 4}), device_count=8)


def test_rl_refuses_nucleus_sampling():
  # The update scores samples under softmax(logits / temperature); a nucleus would
  # need log-probs on a parameter-dependent support.
  with pytest.raises(
    config_checks.ConfigError, match=r"config\.rl\.top_p=0\.9: RL needs top_p = 1"
  ):
    validation.validate_config(_config(**{"rl.top_p": 0.9}))
  # Evaluation may sample from a nucleus (without the held-out KL, which needs 1).
  validation.validate_config(
    _config(**{"eval.top_p": 0.9, "rl.temperature": 0.7, "eval.kl": False})
  )


def test_runs_are_a_list_not_a_string():
  # The comma-separated string rl.runs was before it was a list is refused in a config
  # (a committed config.json keeps it: experiments.lm.workdir reads it as its list).
  config = tiny.get_config("micro")
  with config.rl.ignore_type():
    config.rl.runs = "max_at_k@2:3:1,grpo"
  with pytest.raises(config_checks.ConfigError, match=r"config\.rl\.runs=.* must be a list"):
    validation.validate_config(config)


def test_runs_may_name_their_off_policy_method():
  validation.validate_config(_config(**{"rl.runs": "max_at_k@2/first_order,max_at_k@2,grpo"}))
  with pytest.raises(config_checks.ConfigError, match=r"config\.rl\.runs=.*only the ppo_clip"):
    validation.validate_config(_config(**{"rl.runs": "grpo/exact"}))


def test_study_configs():
  """The 8-seed study: base, GRPO and max@k at 1, 4, 8 and 8 -> 1 (no RLOO: n x max@1);
  its sweep runs every task with every declared seed; the off-policy study apart."""
  for task in ("countdown", "program"):
    c = study.get_config(task)
    assert list(c.rl.runs) == [
      "grpo",
      "max_at_k@1",
      "max_at_k@4",
      "max_at_k@8",
      "max_at_k@8:60:1",
    ]
    assert c.eval.n >= 128 and c.eval.bin_n >= 1024 and c.rl.inner_epochs == 2
  assert study.get_config("countdown").task.kwargs.to_dict() == {
    "num_numbers": 4,
    "max_number": 25,
    "min_used": 2,
    "target_digits": 3,
  }
  program = study.get_config("program")
  assert program.task.name == "program" and program.rl.reward == "continuous"
  with open(os.path.join(REPO_ROOT, "launch", "sweeps", "lm_study_8seed.json")) as f:
    grid = json.load(f)["grid"]
  assert grid["config.seed"] == list(study.SEEDS) and len(study.SEEDS) >= 8
  assert grid["config"] == [f"experiments/lm/configs/study_8seed.py:{t}" for t in study.TASKS]
  off = study_off_policy.get_config()
  assert off.rl.runs == ("max_at_k@4", "max_at_k@4/first_order", "max_at_k@4/ppo_clip")
  assert off.rl.inner_epochs == 4
  with pytest.raises(ValueError, match="Unknown study task 'chess'"):
    study.get_config("chess")


def test_checkpoint_frontier_fields():
  validation.validate_config(
    _config(**{"eval.kl": True, "eval.kl_samples": 0, "eval.checkpoint_rewards": True})
  )
  for field, value in [
    ("eval.kl", 1),
    ("eval.common_keys", "yes"),
    ("eval.checkpoint_rewards", None),
    ("eval.kl_samples", -1),
    ("eval.kl_samples", 1.5),
  ]:
    with pytest.raises(config_checks.ConfigError, match=rf"config\.{field}="):
      validation.validate_config(_config(**{field: value}))
  with pytest.raises(config_checks.ConfigError, match=r"config\.eval\.kl=True needs .*top_p = 1"):
    validation.validate_config(_config(**{"eval.kl": True, "eval.top_p": 0.9}))
  validation.validate_config(_config(**{"eval.kl": False, "eval.top_p": 0.9}))
  with pytest.raises(config_checks.ConfigError, match=r"config\.eval\.checkpoint_rewards=True"):
    validation.validate_config(_config(**{"eval.kl": False, "eval.checkpoint_rewards": True}))
  # 8 prompts x 3 KL samples = 24 rows do not divide over 16 devices (x 4 samples do).
  kl_rows = {"eval.kl": True, "eval.kl_samples": 3}
  with pytest.raises(
    config_checks.ConfigError, match=r"config\.eval\.kl_samples gives batches of 24"
  ):
    validation.validate_config(_config(**kl_rows), device_count=16)
  validation.validate_config(_config(**{**kl_rows, "eval.kl": False}), device_count=16)
  validation.validate_config(
    _config(**{**kl_rows, "eval.kl_samples": 9}), device_count=16
  )  # All 4.


def test_runs_may_set_their_own_learning_rate_and_kl():
  valid = validation.validate_config(_config(**{"rl.runs": "grpo[lr=3e-5],max_at_k@2[kl=0.1]"}))
  assert [r.name for r in valid.runs] == ["grpo_lr3e-05", "max_at_k_k2_kl0.1"]
  with pytest.raises(config_checks.ConfigError, match=r"config\.rl\.runs=.*lr='0' must be"):
    validation.validate_config(_config(**{"rl.runs": "grpo[lr=0]"}))
