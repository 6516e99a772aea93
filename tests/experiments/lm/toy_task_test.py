"""A task added in one place: a toy task registered here runs the LM end to end."""

from collections.abc import Iterator
import csv
import dataclasses
import json
import os
from typing import ClassVar

import ml_collections
import numpy as np
import pytest

from experiments.lm import tasks
from experiments.lm import train
from experiments.lm import validation
from experiments.lm.configs import tiny


@dataclasses.dataclass(frozen=True)
class Reverse:
  """Write a number's digits backwards: ``"120="`` -> ``"021"``; key: the number."""

  num_digits: int = 2
  name: str = "reverse"
  key_description: ClassVar[str] = "the number"
  near_description: ClassVar[str] = "all digits but the last in common"

  @property
  def prompt_len(self) -> int:
    return self.num_digits + 1

  @property
  def completion_len(self) -> int:
    return self.num_digits + 1

  def sample_problems(self, rng: np.random.Generator, num: int) -> np.ndarray:
    return rng.integers(0, 10**self.num_digits, size=(num, 1)).astype(np.int64)

  def problem_keys(self, problems: np.ndarray) -> np.ndarray:
    return problems[:, 0]

  def example(self, problem: np.ndarray) -> tasks.Example:
    digits = f"{int(problem[0]):0{self.num_digits}d}"
    return tasks.Example(prompt=digits + "=", solution=digits[::-1])

  def prompt_key(self, prompt: str) -> int:
    return int(prompt[:-1])

  def key_text(self, key: int) -> str:
    return str(key)

  def near_signatures(self, keys: np.ndarray) -> np.ndarray:
    return (np.asarray(keys, np.int64) // 10)[:, None]

  def score(self, prompt: str, completion: str) -> tasks.Score:
    answer = prompt[:-1][::-1]
    right = sum(a == b for a, b in zip(answer, completion))
    return tasks.Score(float(completion == answer), right / max(len(answer), len(completion)))


@pytest.fixture
def reverse_registered() -> Iterator[None]:
  tasks.register("reverse", Reverse)
  yield
  del tasks.TASKS["reverse"]


def _toy_config() -> ml_collections.ConfigDict:
  config = tiny.get_config("micro")
  config.task.name = "reverse"
  config.task.kwargs = ml_collections.ConfigDict({"num_digits": 2})
  # Fewer steps and programs to compile than micro: the task is under test, not training.
  config.model.num_layers = 1
  config.sft.steps, config.sft.eval_every = 2, 0
  config.rl.runs, config.rl.steps, config.rl.inner_epochs, config.rl.kl_coef = (
    "max_at_k@2",
    1,
    1,
    0.0,
  )
  config.eval.every, config.eval.bin_n = 1, 0
  return config


def test_a_registered_toy_task_runs_the_micro_config(reverse_registered, tmp_path):
  del reverse_registered
  config = _toy_config()
  rows = train.run(config, str(tmp_path))
  with open(tmp_path / "split.json") as f:
    split = json.load(f)
  assert split["task"] == "reverse"
  assert split["key"] == "the number"
  assert split["near_definition"] == "all digits but the last in common"
  eval_problems = [int(k) for k in split["eval_problems"]]
  assert len(set(eval_problems)) == config.eval.num_prompts
  assert all(0 <= k < 100 for k in eval_problems)
  assert split["overlap"] == 0
  assert split["sft_draws"] == config.sft.steps * config.sft.batch_size
  with open(tmp_path / "results.csv") as f:
    results = list(csv.DictReader(f))
  # The base model and the one RL run, each at k = 1..eval.n.
  assert len(results) == len(rows) == 2 * config.eval.n
  assert [r["stage"] for r in results] == ["base"] * config.eval.n + ["rl"] * config.eval.n
  assert {int(r["k_eval"]) for r in results} == set(range(1, config.eval.n + 1))
  assert all(0.0 <= float(r["pass_at_k"]) <= 1.0 for r in results)
  with open(tmp_path / "prompts.csv") as f:
    prompts = {r["prompt"] for r in csv.DictReader(f)}
  # The evaluation prompts are the toy task's: the digits of each held-out number.
  assert prompts == {f"{k:02d}=" for k in eval_problems}


def test_an_unregistered_task_is_refused(tmp_path):
  with pytest.raises(validation.ConfigError, match="reverse"):
    train.run(_toy_config(), str(tmp_path))
  assert not os.listdir(tmp_path)


def test_register_refuses_a_taken_name(reverse_registered):
  del reverse_registered
  with pytest.raises(ValueError, match="already registered"):
    tasks.register("reverse", Reverse)
  tasks.register("renamed", Reverse)  # Its tasks are named "reverse".
  try:
    with pytest.raises(ValueError, match="built a task named 'reverse'"):
      tasks.make_task("renamed")
  finally:
    del tasks.TASKS["renamed"]
