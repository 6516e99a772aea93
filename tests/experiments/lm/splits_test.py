"""Tests of experiments.lm.splits: no shipped config trains on an evaluation problem."""

import glob
import importlib
import json
import os

import numpy as np
import pytest

from experiments.lm import evaluation
from experiments.lm import sft
from experiments.lm import splits
from experiments.lm import streams
from experiments.lm import tasks
from experiments.lm.configs import tiny
from tests import REPO_ROOT

# Variants of config modules that do not list theirs in a VARIANTS tuple.
_KNOWN_VARIANTS = {"tiny": ("micro",), "study_8seed": ("countdown", "program")}


def _shipped_configs():
  """(name, config) for every configs/*.py and its variants (a module's VARIANTS)."""
  out = []
  for path in sorted(glob.glob(os.path.join(REPO_ROOT, "experiments", "lm", "configs", "*.py"))):
    name = os.path.splitext(os.path.basename(path))[0]
    if name.startswith("_"):
      continue
    module = importlib.import_module(f"experiments.lm.configs.{name}")
    variants = getattr(module, "VARIANTS", _KNOWN_VARIANTS.get(name, ()))
    out.append((name, module.get_config()))
    out.extend((f"{name}:{v}", module.get_config(v)) for v in variants if v)
  return out


_CONFIGS = _shipped_configs()


def _task_and_eval_keys(config):
  task = tasks.make_task(config.task.name, **config.task.kwargs.to_dict())
  eval_set = evaluation.make_eval_set(task, config.seed, config.eval.num_prompts)
  return task, eval_set.keys


def test_every_config_is_found():
  names = [name for name, _ in _CONFIGS]
  assert {"tiny", "tiny:micro", "default", "paper", "study", "study_8seed:program"} <= set(names)


@pytest.mark.parametrize("name,config", _CONFIGS, ids=[name for name, _ in _CONFIGS])
def test_no_shipped_config_trains_on_an_evaluation_problem(name, config):
  task, eval_keys = _task_and_eval_keys(config)
  split = splits.make_split(task, config, eval_keys)
  assert split["overlap"] == 0, name
  assert split["num_eval_problems"] == len(eval_keys) == len(set(eval_keys.tolist()))
  assert split["sft_draws"] == config.sft.steps * config.sft.batch_size
  assert split["rl_draws"] == config.rl.steps * config.rl.prompts_per_step
  assert 0 < split["distinct_training_problems"] <= split["sft_draws"] + split["rl_draws"]
  seen = split["answer_seen"]
  assert len(seen) == len(split["answer_seen_examples"]) == len(eval_keys)
  assert split["answer_seen_share"] == pytest.approx(sum(seen) / len(seen))
  assert [x is not None for x in split["answer_seen_examples"]] == seen
  json.dumps(split)  # JSON-ready.


def test_without_exclusion_the_tiny_config_would_overlap():
  """The check above can fail: the same draws without exclusion hit most eval problems."""
  config = tiny.get_config()
  task, eval_keys = _task_and_eval_keys(config)
  sft_keys, rl_keys = streams.training_keys(task, config, exclude=np.zeros(0, np.int64))
  hits = splits.overlap(np.concatenate([sft_keys, rl_keys]), eval_keys)
  assert hits > len(eval_keys) // 2


def test_split_replays_the_sft_batches_and_rl_prompts():
  """The trainer's draws (SFT from the generator [seed, 0, step], RL from [seed, 2,
  step]) are exactly the problems make_split counts, and sft.make_batch poses them."""
  config = tiny.get_config()
  config.sft.steps, config.rl.steps = 3, 2
  task, eval_keys = _task_and_eval_keys(config)
  exclude = frozenset(eval_keys.tolist())
  sft_keys, rl_keys = streams.training_keys(task, config, exclude)
  batch = config.sft.batch_size
  for step in range(1, config.sft.steps + 1):
    expected = tasks.draw_problems(
      task, np.random.default_rng([config.seed, 0, step]), batch, exclude=exclude
    )
    rows = streams.sft_problems(task, config.seed, step, batch, exclude)
    np.testing.assert_array_equal(rows, expected)
    tokens, _ = sft.make_batch(task, rows)
    prompts = tasks.encode_prompts([task.example(row).prompt for row in expected])
    np.testing.assert_array_equal(tokens[:, : prompts.shape[1]], prompts)
    keys = task.problem_keys(expected).tolist()
    assert keys == sft_keys[(step - 1) * batch : step * batch].tolist()
  per_step = config.rl.prompts_per_step
  for step in range(1, config.rl.steps + 1):
    expected = tasks.draw_problems(
      task, np.random.default_rng([config.seed, 2, step]), per_step, exclude=exclude
    )
    rows = streams.rl_problems(task, config.seed, step, per_step, exclude)
    np.testing.assert_array_equal(rows, expected)
    keys = task.problem_keys(expected).tolist()
    assert keys == rl_keys[(step - 1) * per_step : step * per_step].tolist()


def test_make_split_counts_and_file(tmp_path):
  config = tiny.get_config("micro")
  task, eval_keys = _task_and_eval_keys(config)
  split = splits.make_split(task, config, eval_keys)
  assert split["eval_problems"] == [task.key_text(int(k)) for k in eval_keys]
  assert split["task"] == "addition" and "unordered" in split["key"]
  path = splits.write_split(str(tmp_path), split)
  with open(path) as f:
    assert json.load(f) == split
  with pytest.raises(ValueError, match="eval_keys"):
    splits.make_split(task, config, np.concatenate([eval_keys, eval_keys[:1]]))


def test_overlap_counts_distinct_shared_problems():
  assert splits.overlap(np.array([1, 1, 2, 5]), np.array([1, 5, 7])) == 2
  assert splits.overlap(np.array([], np.int64), np.array([1])) == 0


@pytest.mark.parametrize(
  "name,kwargs",
  [
    ("countdown", {"num_numbers": 3, "max_number": 6, "target_digits": 2}),
    ("addition", {"num_digits": 2}),
    ("program", {}),
  ],
)
def test_near_eval_problems_agree_with_pairwise_comparison(name, kwargs):
  task = tasks.make_task(name, **kwargs)
  eval_keys = task.problem_keys(tasks.heldout_problems(task, seed=0, num=40))
  train_keys = task.problem_keys(task.sample_problems(np.random.default_rng(1), 30))
  train_keys = np.concatenate([train_keys, eval_keys[:5]])  # Itself is never near.
  near = splits.near_eval_problems(task, train_keys, eval_keys)
  eval_signatures = task.near_signatures(eval_keys)
  train_signatures = task.near_signatures(train_keys)
  expected = [
    any(k != t and set(e) & set(s) for t, s in zip(train_keys, train_signatures))
    for k, e in zip(eval_keys, eval_signatures)
  ]
  np.testing.assert_array_equal(near, expected)
  assert 0 < sum(expected) < len(expected)
  alone = splits.near_eval_problems(task, eval_keys[:1], eval_keys)
  assert not alone[0]
  assert not splits.near_eval_problems(task, np.zeros(0, np.int64), eval_keys).any()


def test_make_split_counts_near_problems():
  """micro (addition): an evaluation problem is near when a training one shares an addend."""
  config = tiny.get_config("micro")
  config.sft.steps, config.rl.steps = 1, 1  # 24 draws: some eval problems are near, some not.
  task, eval_keys = _task_and_eval_keys(config)
  split = splits.make_split(task, config, eval_keys)
  sft_keys, rl_keys = streams.training_keys(task, config, eval_keys)
  train = {tuple(task.key_text(int(k)).split("+")) for k in np.concatenate([sft_keys, rl_keys])}
  near = [bool(set(task.key_text(int(k)).split("+")) & set().union(*train)) for k in eval_keys]
  assert split["near_eval_problems"] == sum(near)
  assert split["near_eval_share"] == pytest.approx(sum(near) / len(near))
  assert split["near_definition"] == "one addend in common (a+b and a+c)"
  assert 0 < sum(near) < len(near)  # The count is informative on this config.
