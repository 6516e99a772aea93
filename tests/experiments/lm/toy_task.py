"""A toy task added in one place (for the tests): reverse a number's digits.

:class:`Reverse` is everything a task needs; :func:`registered` registers it as
``"reverse"`` for a ``with`` block and :func:`micro_config` is the tests' cut-down
micro config on it.
"""

from collections.abc import Iterator
import contextlib
import dataclasses
from typing import ClassVar

import ml_collections
import numpy as np

from experiments.lm import tasks
from experiments.lm.configs import tiny

NAME = "reverse"


@dataclasses.dataclass(frozen=True)
class Reverse:
  """Write a number's digits backwards: ``"120="`` -> ``"021"``; key: the number."""

  num_digits: int = 2
  name: str = NAME
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


@contextlib.contextmanager
def registered() -> Iterator[None]:
  """Registers :class:`Reverse` as ``"reverse"`` for the duration of a ``with`` block."""
  tasks.register(NAME, Reverse)
  try:
    yield
  finally:
    del tasks.TASKS[NAME]


def micro_config(runs: tuple[str, ...] = ("max_at_k@2",)) -> ml_collections.ConfigDict:
  """The micro config on the toy task, cut further (one layer, 2 SFT steps, one RL
  step of one inner epoch, no binning pass): the task is under test, not training."""
  config = tiny.get_config("micro")
  config.task.name = NAME
  config.task.kwargs = ml_collections.ConfigDict({"num_digits": 2})
  config.model.num_layers = 1
  config.sft.steps, config.sft.eval_every = 2, 0
  config.rl.runs, config.rl.steps, config.rl.inner_epochs, config.rl.kl_coef = runs, 1, 1, 0.0
  config.eval.every, config.eval.bin_n = 1, 0
  return config
