"""The addition task: add two zero-padded integers (one valid answer per prompt).

``continuous`` is the share of answer digits right at their position. Key: the
unordered pair of addends (a+b and b+a are one problem: the sum is the same and so
is the skill).
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

import numpy as np

from experiments.lm.tasks import base
from experiments.lm.tasks import registry


@dataclasses.dataclass(frozen=True)
class Addition:
  """Add two ``num_digits``-digit integers: ``"0371+0958="`` -> ``"01329"``.

  The answer has ``num_digits + 1`` digits, zero-padded. Checks (continuous reward =
  their mean): one per answer digit, correct at its position; a completion of the
  wrong length loses one check per missing or extra character (the denominator is
  the longer of the two lengths). Rows of ``sample_problems``: ``[a, b]``.
  """

  num_digits: int = 3
  name: str = "addition"
  key_description: ClassVar[str] = "the unordered pair of addends (a+b and b+a are one problem)"
  near_description: ClassVar[str] = "one addend in common (a+b and a+c)"

  def __post_init__(self) -> None:
    base.check_integer(self.num_digits, "num_digits")
    if 10 ** (2 * self.num_digits) >= base.MAX_KEY:
      raise ValueError(f"num_digits={self.num_digits} gives keys beyond int64.")

  @property
  def prompt_len(self) -> int:
    return 2 * self.num_digits + 2

  @property
  def completion_len(self) -> int:
    return self.num_digits + 2

  def sample_problems(self, rng: np.random.Generator, num: int) -> np.ndarray:
    return rng.integers(0, 10**self.num_digits, size=(num, 2)).astype(np.int64)

  def problem_keys(self, problems: np.ndarray) -> np.ndarray:
    low, high = np.min(problems, axis=1), np.max(problems, axis=1)
    return low * 10**self.num_digits + high

  def example(self, problem: np.ndarray) -> base.Example:
    a, b = (int(v) for v in problem)
    d = self.num_digits
    return base.Example(prompt=f"{a:0{d}d}+{b:0{d}d}=", solution=f"{a + b:0{d + 1}d}")

  def _read(self, prompt: str) -> tuple[int, int]:
    fields = prompt[:-1].split("+")
    if (
      len(prompt) != self.prompt_len
      or not prompt.endswith("=")
      or len(fields) != 2
      or not all(f.isdigit() for f in fields)
    ):
      raise base.bad_prompt(prompt, self.name, f"expected two {self.num_digits}-digit addends")
    return int(fields[0]), int(fields[1])

  def prompt_key(self, prompt: str) -> int:
    a, b = self._read(prompt)
    return min(a, b) * 10**self.num_digits + max(a, b)

  def near_signatures(self, keys: np.ndarray) -> np.ndarray:
    """``[num, 2]``: the two addends; two problems share one when they share an addend."""
    return np.stack(np.divmod(np.asarray(keys, np.int64), 10**self.num_digits), axis=1)

  def answer_signatures(self, problems: np.ndarray) -> np.ndarray:
    """The sums: the reference solution, the zero-padded sum, solves every problem
    with that sum (``"0371+0958="`` and ``"0958+0371="`` and ``"0329+1000="``). ``[num]``."""
    return np.sum(np.asarray(problems, np.int64), axis=1)

  def solver_signatures(self, keys: np.ndarray) -> np.ndarray:
    """``[num, 1]``: the sum of each problem's addends."""
    low, high = np.divmod(np.asarray(keys, np.int64), 10**self.num_digits)
    return (low + high)[:, None]

  def key_text(self, key: int) -> str:
    """``"371+958"``: the smaller addend first."""
    key = base.check_key(key, 10 ** (2 * self.num_digits))
    low, high = divmod(key, 10**self.num_digits)
    return f"{low}+{high}"

  def score(self, prompt: str, completion: str) -> base.Score:
    a, b = self._read(prompt)
    answer = f"{a + b:0{self.num_digits + 1}d}"
    matches = sum(x == y for x, y in zip(answer, completion))
    continuous = matches / max(len(answer), len(completion))
    return base.Score(float(completion == answer), continuous)


registry.register("addition", Addition)
