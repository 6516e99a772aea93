"""Procedurally generated verifiable tasks, their tokenizer and their verifiers.

Every task draws instances from a ``numpy.random.Generator`` (no downloads), writes
a prompt of a fixed length (so that prompts batch without padding) and a reference
solution for the supervised warm start, and scores a model completion with two
rewards:

* ``binary``: 1.0 when the completion is fully correct, else 0.0 (pass@k input);
* ``continuous``: partial credit in [0, 1], the fraction of checks passed (the
  analogue of the fraction of unit tests passed; max@k input). It is 1.0 exactly
  when ``binary`` is 1.0.

Verifiers parse the completion text with a small recursive-descent parser; model
output is never executed.

Tasks:
  * ``countdown``: reach a target number with +, -, * and parentheses from given
    numbers, each used at most once. Many valid answers per prompt.
  * ``addition``: add two zero-padded integers. One valid answer per prompt.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
import dataclasses
from typing import Protocol

import numpy as np

PAD_ID = 0
BOS_ID = 1
EOS_ID = 2
_CHARS = "0123456789+-*()=,>"
_SPECIAL = ("<pad>", "<bos>", "<eos>")
VOCAB_SIZE = len(_SPECIAL) + len(_CHARS)
_CHAR_TO_ID = {c: i + len(_SPECIAL) for i, c in enumerate(_CHARS)}
# Special tokens decode to a character no verifier accepts.
_ID_TO_CHAR = np.array(["?"] * len(_SPECIAL) + list(_CHARS))


def encode(text: str) -> list[int]:
  """Character-level token ids of ``text`` (no BOS/EOS)."""
  try:
    return [_CHAR_TO_ID[c] for c in text]
  except KeyError as e:
    raise ValueError(f"Character {e} is not in the vocabulary {_CHARS!r}.") from None


def decode_completion(ids: Sequence[int]) -> str:
  """Text of a completion: the tokens before the first EOS (or all of them)."""
  ids = np.asarray(ids)
  eos = np.flatnonzero(ids == EOS_ID)
  if eos.size:
    ids = ids[: eos[0]]
  return "".join(_ID_TO_CHAR[ids].tolist())


def decode_prompt(ids: Sequence[int]) -> str:
  """Text of an encoded prompt (drops the leading BOS)."""
  ids = [i for i in np.asarray(ids).tolist() if i != BOS_ID]
  return "".join(_ID_TO_CHAR[ids].tolist())


def encode_prompts(prompts: Sequence[str]) -> np.ndarray:
  """``[P, 1 + prompt_len]`` int32 ids, BOS first; all prompts must share a length."""
  lengths = {len(p) for p in prompts}
  if len(lengths) != 1:
    raise ValueError(f"Prompts must share one length, got lengths {sorted(lengths)}.")
  return np.array([[BOS_ID] + encode(p) for p in prompts], dtype=np.int32)


def encode_completions(completions: Sequence[str], length: int) -> np.ndarray:
  """``[B, length]`` int32 ids: each completion, EOS, then PAD."""
  out = np.full((len(completions), length), PAD_ID, dtype=np.int32)
  for row, text in enumerate(completions):
    ids = encode(text) + [EOS_ID]
    if len(ids) > length:
      raise ValueError(f"Completion {text!r} needs {len(ids)} tokens > length={length}.")
    out[row, : len(ids)] = ids
  return out


@dataclasses.dataclass(frozen=True)
class Example:
  prompt: str
  solution: str


@dataclasses.dataclass(frozen=True)
class Score:
  binary: float
  continuous: float


class Task(Protocol):
  """A verifiable task: fixed-length prompts, a sampler and a verifier."""

  name: str
  prompt_len: int
  completion_len: int  # Generation budget in tokens, EOS included.

  def sample(self, rng: np.random.Generator) -> Example: ...

  def score(self, prompt: str, completion: str) -> Score: ...


# --------------------------------------------------------------------------- parser


class _ParseError(Exception):
  pass


def parse_expression(text: str) -> tuple[int, list[int]]:
  """Value and operand list of an integer expression over +, -, * and parentheses.

  Grammar (usual precedence, left associative; no unary minus)::

    expr := term (('+' | '-') term)*
    term := atom ('*' atom)*
    atom := NUMBER | '(' expr ')'

  Args:
    text: the expression.

  Returns:
    ``(value, numbers)``: the integer value and the numbers in order of appearance.

  Raises:
    ValueError: if ``text`` is not a well-formed expression.
  """
  pos = 0
  numbers: list[int] = []

  def peek() -> str:
    return text[pos] if pos < len(text) else ""

  def atom() -> int:
    nonlocal pos
    if peek() == "(":
      pos += 1
      value = expr()
      if peek() != ")":
        raise _ParseError("missing ')'")
      pos += 1
      return value
    start = pos
    while peek().isdigit():
      pos += 1
    if start == pos:
      raise _ParseError(f"expected a number at {start}")
    if pos - start > 4:
      raise _ParseError("number too long")
    numbers.append(int(text[start:pos]))
    return numbers[-1]

  def term() -> int:
    nonlocal pos
    value = atom()
    while peek() == "*":
      pos += 1
      value *= atom()
    return value

  def expr() -> int:
    nonlocal pos
    value = term()
    while peek() in ("+", "-"):
      op = peek()
      pos += 1
      rhs = term()
      value = value + rhs if op == "+" else value - rhs
    return value

  try:
    value = expr()
    if pos != len(text):
      raise _ParseError(f"unexpected {peek()!r} at {pos}")
  except (_ParseError, RecursionError) as e:
    raise ValueError(f"Malformed expression {text!r}: {e}") from None
  return value, numbers


# ------------------------------------------------------------------------- countdown


@dataclasses.dataclass(frozen=True)
class Countdown:
  """Reach a target from given numbers with +, -, * (each number at most once).

  Prompt ``"03,07,05>022="``: ``num_numbers`` numbers in [1, max_number], zero-padded
  to a fixed width, then the target, zero-padded to ``target_digits`` digits. The
  reference solution is the random expression the target was built from (over a
  random subset of at least ``min_used`` numbers); any other expression that
  reaches the target is equally correct.

  Checks (continuous reward = their mean; the last two count 0 on a parse error):
  the completion parses; it uses only available numbers, each at most once;
  closeness ``max(0, 1 - |value - target| / max(target, 1))``.
  """

  num_numbers: int = 3
  max_number: int = 9
  min_used: int = 2
  target_digits: int = 3
  name: str = "countdown"

  def __post_init__(self):
    if not 2 <= self.min_used <= self.num_numbers:
      raise ValueError(
        f"min_used={self.min_used} must satisfy 2 <= min_used <= num_numbers={self.num_numbers}."
      )
    if self.max_number < 1:
      raise ValueError(f"max_number={self.max_number} must be >= 1.")

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

  def sample(self, rng: np.random.Generator) -> Example:
    while True:
      numbers = rng.integers(1, self.max_number + 1, size=self.num_numbers)
      used = int(rng.integers(self.min_used, self.num_numbers + 1))
      order = rng.permutation(self.num_numbers)[:used]
      ops = rng.choice(np.array(list("+-*")), size=used - 1)
      solution = str(numbers[order[0]])
      for op, idx in zip(ops, order[1:]):
        solution += f"{op}{numbers[idx]}"
      target, _ = parse_expression(solution)
      if 0 <= target < 10**self.target_digits:
        break
    w = self._width
    prompt = ",".join(f"{x:0{w}d}" for x in numbers) + f">{target:0{self.target_digits}d}="
    return Example(prompt=prompt, solution=solution)

  def score(self, prompt: str, completion: str) -> Score:
    numbers_text, target_text = prompt.rstrip("=").split(">")
    available = sorted(int(x) for x in numbers_text.split(","))
    target = int(target_text)
    try:
      value, used = parse_expression(completion)
    except ValueError:
      return Score(0.0, 0.0)
    remaining = list(available)
    numbers_ok = True
    for x in used:
      if x in remaining:
        remaining.remove(x)
      else:
        numbers_ok = False
    closeness = max(0.0, 1.0 - abs(value - target) / max(target, 1))
    binary = float(numbers_ok and value == target)
    return Score(binary, (1.0 + float(numbers_ok) + closeness) / 3.0)


# -------------------------------------------------------------------------- addition


@dataclasses.dataclass(frozen=True)
class Addition:
  """Add two ``num_digits``-digit integers: ``"0371+0958="`` -> ``"01329"``.

  The answer has ``num_digits + 1`` digits, zero-padded. Checks (continuous reward =
  their mean): one per answer digit, correct at its position; a completion of the
  wrong length loses one check per missing or extra character (the denominator is
  the longer of the two lengths).
  """

  num_digits: int = 3
  name: str = "addition"

  def __post_init__(self):
    if self.num_digits < 1:
      raise ValueError(f"num_digits={self.num_digits} must be >= 1.")

  @property
  def prompt_len(self) -> int:
    return 2 * self.num_digits + 2

  @property
  def completion_len(self) -> int:
    return self.num_digits + 2

  def sample(self, rng: np.random.Generator) -> Example:
    a, b = rng.integers(0, 10**self.num_digits, size=2)
    d = self.num_digits
    return Example(prompt=f"{a:0{d}d}+{b:0{d}d}=", solution=f"{a + b:0{d + 1}d}")

  def score(self, prompt: str, completion: str) -> Score:
    a, b = (int(x) for x in prompt.rstrip("=").split("+"))
    answer = f"{a + b:0{self.num_digits + 1}d}"
    matches = sum(x == y for x, y in zip(answer, completion))
    continuous = matches / max(len(answer), len(completion))
    return Score(float(completion == answer), continuous)


TASKS: dict[str, Callable[..., Task]] = {"countdown": Countdown, "addition": Addition}


def make_task(name: str, **difficulty) -> Task:
  """Builds a registered task; ``difficulty`` holds its constructor arguments."""
  if name not in TASKS:
    raise ValueError(f"Unknown task {name!r}; valid: {sorted(TASKS)}.")
  return TASKS[name](**difficulty)


def sample_examples(
  task: Task, rng: np.random.Generator, num: int, *, exclude: frozenset[str] = frozenset()
) -> list[Example]:
  """``num`` examples whose prompts are not in ``exclude`` (held-out prompts)."""
  out = []
  tries = 0
  while len(out) < num:
    example = task.sample(rng)
    tries += 1
    if tries > 1000 * num:
      raise RuntimeError(f"Task {task.name} cannot produce prompts outside the held-out set.")
    if example.prompt not in exclude:
      out.append(example)
  return out


def heldout_examples(task: Task, seed: int, num: int) -> list[Example]:
  """The evaluation set: ``num`` distinct prompts from their own random stream."""
  rng = np.random.default_rng([seed, 7919])
  seen: dict[str, Example] = {}
  tries = 0
  while len(seen) < num:
    example = task.sample(rng)
    seen.setdefault(example.prompt, example)
    tries += 1
    if tries > 1000 * num:
      raise RuntimeError(f"Task {task.name} has fewer than {num} distinct prompts.")
  return list(seen.values())


def score_batch(
  task: Task, prompts: Sequence[str], completion_ids: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
  """Rewards of ``completion_ids [P, n, C]`` for ``prompts [P]``.

  Returns:
    ``(binary, continuous)``, float32 arrays of shape ``[P, n]``.
  """
  num_prompts, n, _ = completion_ids.shape
  binary = np.zeros((num_prompts, n), np.float32)
  continuous = np.zeros((num_prompts, n), np.float32)
  for p in range(num_prompts):
    for i in range(n):
      s = task.score(prompts[p], decode_completion(completion_ids[p, i]))
      binary[p, i], continuous[p, i] = s.binary, s.continuous
  return binary, continuous
