"""The countdown task: reach a target number with +, -, * and parentheses from given
numbers, each used at most once and at least ``min_used`` of them.

Many valid answers per prompt; ``continuous`` is 1 / (1 + distance to the target) for
an expression that obeys the rules. Key: the multiset of numbers and the target.
"""

from __future__ import annotations

import dataclasses
import itertools
from typing import ClassVar

import numpy as np

from experiments.lm import expressions
from experiments.lm.tasks import base
from experiments.lm.tasks import registry


@dataclasses.dataclass(frozen=True)
class Countdown:
  """Reach a target from given numbers with +, -, * (each number at most once).

  Prompt ``"03,07,05>022="``: ``num_numbers`` numbers in [1, max_number], zero-padded
  to a fixed width, then the target, zero-padded to ``target_digits`` digits. The
  reference solution is the random expression the target was built from (over a
  random subset of at least ``min_used`` numbers); any other expression that
  reaches the target is equally correct.

  A completion is *valid* when it parses, uses only the given numbers, each at
  most as often as given, and uses at least ``min_used`` of them (counted with
  multiplicity). ``binary`` = valid and equal to the target; ``continuous`` =
  1 / (1 + |value - target|) for a valid completion, else 0: how close the
  completion gets to the target while obeying the rules (1 exactly when correct,
  1/2 when off by one, 1/11 when off by ten). Echoing the target, any expression
  with a number that was not given, one with fewer than ``min_used`` numbers (a
  lone given number, say) and a parse error all score 0 on both rewards.

  ``sample_problems`` never poses a problem whose target is one of its numbers
  (such draws are rejected, like those whose target falls outside
  [0, 10**target_digits)): every problem needs an expression over at least two
  numbers. It is a deterministic function of the generator's state. About 70% of
  the draws are accepted, for the defaults and for 3 numbers in 1..9.

  The defaults, 4 numbers in 1..25 with targets below 1000, pose over 6 * 10^5
  distinct problems (distinct keys among 10^6 draws), so that a study's training
  draws leave most of them unseen; 3 numbers in 1..9 (the small configs) pose about
  2,000, which training exhausts.

  Rows of ``sample_problems``: the numbers (prompt order), the count used, a
  permutation of the numbers (the first ``used`` form the solution), the operator
  codes (0: +, 1: -, 2: *) and the target.
  """

  num_numbers: int = 4
  max_number: int = 25
  min_used: int = 2
  target_digits: int = 3
  name: str = "countdown"
  key_description: ClassVar[str] = (
    "the multiset of numbers and the target (any order of the numbers)"
  )
  near_description: ClassVar[str] = (
    "the same target and all numbers but one (num_numbers - 1 numbers in common)"
  )

  def __post_init__(self) -> None:
    base.check_integer(self.num_numbers, "num_numbers", 2)
    base.check_integer(self.max_number, "max_number")
    base.check_integer(self.target_digits, "target_digits")
    if not 2 <= self.min_used <= self.num_numbers:
      raise ValueError(
        f"min_used={self.min_used} must satisfy 2 <= min_used <= num_numbers={self.num_numbers}."
      )
    if (self.max_number + 1) ** self.num_numbers * 10**self.target_digits >= base.MAX_KEY:
      raise ValueError(
        f"num_numbers={self.num_numbers}, max_number={self.max_number} and "
        f"target_digits={self.target_digits} give keys beyond int64."
      )

  @property
  def _width(self) -> int:
    return len(str(self.max_number))

  @property
  def prompt_len(self) -> int:
    return self.num_numbers * (self._width + 1) + self.target_digits + 1

  @property
  def completion_len(self) -> int:
    # Numbers, operators, a pair of parentheses per number, EOS.
    return self.num_numbers * (self._width + 3) + 1

  def _draw(self, rng: np.random.Generator, m: int) -> tuple[np.ndarray, np.ndarray]:
    n = self.num_numbers
    numbers = rng.integers(1, self.max_number + 1, size=(m, n))
    used = rng.integers(self.min_used, n + 1, size=m)
    order = np.argsort(rng.random((m, n)), axis=1)
    ops = rng.integers(0, 3, size=(m, n - 1))
    values = np.take_along_axis(numbers, order, axis=1)
    # Left to right with * before + and -: total of finished terms, current term.
    total, term = np.zeros(m, np.int64), values[:, 0].astype(np.int64)
    for j in range(1, n):
      op, value = ops[:, j - 1], values[:, j]
      times = (j < used) & (op == 2)
      plus_minus = (j < used) & (op != 2)
      total = np.where(plus_minus, total + term, total)
      signed = np.where(op == 0, value, -value)
      term = np.where(times, term * value, np.where(plus_minus, signed, term))
    target = total + term
    valid = (
      (target >= 0)
      & (target < 10**self.target_digits)
      & ~np.any(numbers == target[:, None], axis=1)
    )
    rows = np.concatenate([numbers, used[:, None], order, ops, target[:, None]], axis=1)
    return rows.astype(np.int64), valid

  def sample_problems(self, rng: np.random.Generator, num: int) -> np.ndarray:
    return base.accepted_rows(self._draw, rng, num, self.name, oversample=2)

  def _keys(self, sorted_numbers: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Keys of rows of sorted numbers (``num_numbers`` of them, or fewer for the near
    signatures) and their targets."""
    code = np.zeros(len(target), np.int64)
    for i in range(sorted_numbers.shape[1]):
      code = code * (self.max_number + 1) + sorted_numbers[:, i]
    return code * 10**self.target_digits + target

  def problem_keys(self, problems: np.ndarray) -> np.ndarray:
    n = self.num_numbers
    return self._keys(np.sort(problems[:, :n], axis=1), problems[:, 3 * n])

  def example(self, problem: np.ndarray) -> base.Example:
    n = self.num_numbers
    row = [int(v) for v in problem]
    numbers, used, order, ops, target = (
      row[:n],
      row[n],
      row[n + 1 : 2 * n + 1],
      row[2 * n + 1 : 3 * n],
      row[3 * n],
    )
    solution = str(numbers[order[0]])
    for j in range(1, used):
      solution += "+-*"[ops[j - 1]] + str(numbers[order[j]])
    w = self._width
    prompt = ",".join(f"{x:0{w}d}" for x in numbers) + f">{target:0{self.target_digits}d}="
    return base.Example(prompt=prompt, solution=solution)

  def _read(self, prompt: str) -> tuple[list[int], int]:
    """(numbers, target) of a prompt; ValueError if it is not one of this task's."""
    if len(prompt) != self.prompt_len or not prompt.endswith("="):
      raise base.bad_prompt(
        prompt, self.name, f"expected {self.prompt_len} characters ending in '='"
      )
    numbers_text, _, target_text = prompt[:-1].partition(">")
    fields = numbers_text.split(",")
    if len(fields) != self.num_numbers or not all(f.isdigit() for f in fields + [target_text]):
      raise base.bad_prompt(prompt, self.name, f"expected {self.num_numbers} numbers and a target")
    numbers = [int(f) for f in fields]
    if not all(1 <= x <= self.max_number for x in numbers):
      raise base.bad_prompt(prompt, self.name, f"numbers must lie in [1, {self.max_number}]")
    return numbers, int(target_text)

  def prompt_key(self, prompt: str) -> int:
    numbers, target = self._read(prompt)
    return int(self._keys(np.array([sorted(numbers)]), np.array([target]))[0])

  def _decode(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(sorted numbers ``[num, num_numbers]``, targets ``[num]``) of keys."""
    code, target = np.divmod(np.asarray(keys, np.int64), 10**self.target_digits)
    numbers = np.zeros((len(code), self.num_numbers), np.int64)
    for i in reversed(range(self.num_numbers)):
      code, numbers[:, i] = np.divmod(code, self.max_number + 1)
    return numbers, target

  def near_signatures(self, keys: np.ndarray) -> np.ndarray:
    """One signature per number: the key of the other numbers and the target.

    Two problems share one exactly when they have the same target and their
    multisets of numbers share ``num_numbers - 1`` of them (dropping the number
    in which they differ leaves the same sorted rest). ``[num, num_numbers]``.
    """
    numbers, target = self._decode(keys)
    n = self.num_numbers
    columns = [self._keys(np.delete(numbers, i, axis=1), target) for i in range(n)]
    return np.stack(columns, axis=1)

  def answer_signatures(self, problems: np.ndarray) -> np.ndarray:
    """The key of each reference solution's used numbers (a multiset) and value.

    A solution over the multiset U with value v solves a problem (N, t) exactly when
    v = t and U lies in N (``score``: each number at most as often as given; a
    reference solution uses at least ``min_used``). Its value is the row's target.
    Encoded as ``problem_keys`` encodes keys, U sorted and padded in front with
    zeros, which no number is, so multisets of different sizes do not collide.
    ``[num]``.
    """
    n = self.num_numbers
    values = np.take_along_axis(problems[:, :n], problems[:, n + 1 : 2 * n + 1], axis=1)
    used = np.where(np.arange(n) < problems[:, n : n + 1], values, 0)
    return self._keys(np.sort(used, axis=1), problems[:, 3 * n])

  def solver_signatures(self, keys: np.ndarray) -> np.ndarray:
    """The answer signatures that solve each problem: every sub-multiset of its
    numbers with at least ``min_used`` of them, with its target.
    ``[num, sum_{j >= min_used} C(num_numbers, j)]``."""
    numbers, target = self._decode(keys)  # Sorted: every subset is sorted too.
    n = self.num_numbers
    columns = [
      self._keys(numbers[:, list(subset)], target)
      for size in range(self.min_used, n + 1)
      for subset in itertools.combinations(range(n), size)
    ]
    return np.stack(columns, axis=1)

  def key_text(self, key: int) -> str:
    """``"3,5,7>22"``: the sorted numbers and the target."""
    key = base.check_key(key, (self.max_number + 1) ** self.num_numbers * 10**self.target_digits)
    code, target = divmod(key, 10**self.target_digits)
    numbers = []
    for _ in range(self.num_numbers):
      code, x = divmod(code, self.max_number + 1)
      numbers.append(x)
    return ",".join(str(x) for x in reversed(numbers)) + f">{target}"

  def score(self, prompt: str, completion: str) -> base.Score:
    available, target = self._read(prompt)
    try:
      value, used = expressions.parse_expression(completion)
    except ValueError:
      return base.Score(0.0, 0.0)
    if len(used) < self.min_used:
      return base.Score(0.0, 0.0)
    remaining = list(available)
    for x in used:
      if x not in remaining:
        return base.Score(0.0, 0.0)
      remaining.remove(x)
    distance = abs(value - target)
    return base.Score(float(distance == 0), 1.0 / (1.0 + distance))


registry.register("countdown", Countdown)
