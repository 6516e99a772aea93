"""Procedurally generated verifiable tasks, their tokenizer, problem keys and verifiers.

Every task draws problems from a ``numpy.random.Generator`` (no downloads),
vectorised: ``sample_problems(rng, num)`` returns an int64 array with one row per
problem (its parameters and reference solution). ``example(row)`` writes the
row's prompt, of a fixed length (so that prompts batch without padding), and its
reference solution for the supervised warm start. ``score`` rates a model
completion with two rewards:

* ``binary``: 1.0 when the completion is fully correct, else 0.0 (pass@k input);
* ``continuous``: partial credit in [0, 1] (max@k input), defined per task below.
  It is 1.0 exactly when ``binary`` is 1.0.

Verifiers parse the completion text with a small recursive-descent parser and run
it with our own interpreter (``expressions.parse``); model output is never executed.

**Problem keys.** Each task names a problem by a canonical integer key
(``problem_keys`` for drawn rows, ``prompt_key`` for a prompt's text, ``key_text``
for a readable form). Two prompts with the same key are the same problem for the
model: a model trained on one has been trained on the other. Held-out evaluation
problems are excluded from training by key (``sample_examples(..., exclude=keys)``),
not by prompt text: reordering the numbers of a held-out countdown prompt does not
make it a new problem.

**Near problems.** Two distinct problems are *near* when they differ in one
component (``near_signatures``): countdown problems with the same target and all
numbers but one, addition problems with one addend in common, program problems
whose hidden functions share all coefficients but one. A held-out problem with a
near training problem tests less generalisation than its key alone suggests;
``splits`` counts them.

Tasks:
  * ``countdown``: reach a target number with +, -, * and parentheses from given
    numbers, each used at most once and at least ``min_used`` of them (the target
    is never one of the numbers). Many valid answers per prompt. ``continuous``:
    1 / (1 + distance to the target) for a valid expression. Key: the multiset of
    numbers and the target.
  * ``addition``: add two zero-padded integers. One valid answer per prompt.
    ``continuous``: the share of answer digits right at their position. Key: the
    unordered pair of addends (a+b and b+a are one problem: the sum is the same
    and so is the skill).
  * ``program``: tiny program synthesis. Given a few ``x -> f(x)`` examples, write
    an expression in ``x`` that computes the hidden function f; it is run on
    hidden test inputs. ``continuous``: the coefficient of determination R^2 of the
    completion's outputs for f's over the hidden inputs, clipped at 0 (every
    constant scores 0), times their mean closeness 1 / (1 + |error|). Key: the
    hidden function (shown with other inputs, it is the same problem).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
import dataclasses
from fractions import Fraction
import functools
from typing import Protocol

import numpy as np

from experiments.lm import expressions

PAD_ID = 0
BOS_ID = 1
EOS_ID = 2
_CHARS = "0123456789+-*()=,>x"
_SPECIAL = ("<pad>", "<bos>", "<eos>")
VOCAB_SIZE = len(_SPECIAL) + len(_CHARS)
_CHAR_TO_ID = {c: i + len(_SPECIAL) for i, c in enumerate(_CHARS)}
# Special tokens decode to a character no verifier accepts.
_ID_TO_CHAR = np.array(["?"] * len(_SPECIAL) + list(_CHARS))
# Keys are int64; every task checks that its largest key fits.
_MAX_KEY = 2**62
# The largest float32 below 1: a partial reward that float32 would round up to 1.
_BELOW_ONE = float(np.nextafter(np.float32(1), np.float32(0)))


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
  """A verifiable task: fixed-length prompts, a vectorised sampler, keys and a verifier."""

  name: str
  prompt_len: int
  completion_len: int  # Generation budget in tokens, EOS included.

  def sample_problems(self, rng: np.random.Generator, num: int) -> np.ndarray:
    """``[num, F]`` int64: one row per problem."""
    ...

  def problem_keys(self, problems: np.ndarray) -> np.ndarray:
    """``[num]`` int64 canonical keys of rows of ``sample_problems``."""
    ...

  def example(self, problem: np.ndarray) -> Example:
    """Prompt and reference solution of one row."""
    ...

  def prompt_key(self, prompt: str) -> int:
    """The key of the problem a prompt poses (ValueError if it poses none)."""
    ...

  def key_text(self, key: int) -> str:
    """A readable canonical form of a key."""
    ...

  def near_signatures(self, keys: np.ndarray) -> np.ndarray:
    """``[num, m]`` int64 signatures of problem keys: two problems are *near* (the
    same problem but for one component) exactly when they share a signature. A key
    shares all its signatures with itself."""
    ...

  def score(self, prompt: str, completion: str) -> Score: ...


# -------------------------------------------------------------------------- sampling


def _accepted(
  draw: Callable[[np.random.Generator, int], tuple[np.ndarray, np.ndarray]],
  rng: np.random.Generator,
  num: int,
  name: str,
  oversample: int,
) -> np.ndarray:
  """The first ``num`` valid rows of repeated ``draw(rng, size) -> (rows, valid)``.

  Each round draws ``oversample`` times the rows still missing, plus 8, so that a
  task accepting about 1/oversample of its draws rarely needs a second round.
  """
  rows, valid = draw(rng, oversample * num + 8)
  parts, have, rounds = [rows[valid]], int(valid.sum()), 1
  while have < num:
    if rounds >= 1000:
      raise RuntimeError(f"Task {name} drew only {have} valid problems in {rounds} rounds.")
    rows, valid = draw(rng, oversample * (num - have) + 8)
    parts.append(rows[valid])
    have += int(valid.sum())
    rounds += 1
  return np.concatenate(parts)[:num]


def _check_positive(value: int, name: str, minimum: int = 1) -> None:
  if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
    raise ValueError(f"{name}={value!r} must be an integer >= {minimum}.")


def _check_key(key: int, limit: int) -> int:
  if isinstance(key, bool) or not isinstance(key, (int, np.integer)) or not 0 <= key < limit:
    raise ValueError(f"key={key!r} is not a problem key of this task (0 <= key < {limit}).")
  return int(key)


def _bad_prompt(prompt: str, task: str, why: str) -> ValueError:
  return ValueError(f"prompt={prompt!r} is not a {task} prompt: {why}.")


# ------------------------------------------------------------------------- countdown


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

  def __post_init__(self):
    _check_positive(self.num_numbers, "num_numbers", 2)
    _check_positive(self.max_number, "max_number")
    _check_positive(self.target_digits, "target_digits")
    if not 2 <= self.min_used <= self.num_numbers:
      raise ValueError(
        f"min_used={self.min_used} must satisfy 2 <= min_used <= num_numbers={self.num_numbers}."
      )
    if (self.max_number + 1) ** self.num_numbers * 10**self.target_digits >= _MAX_KEY:
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
    return _accepted(self._draw, rng, num, self.name, oversample=2)

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

  def example(self, problem: np.ndarray) -> Example:
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
    return Example(prompt=prompt, solution=solution)

  def _read(self, prompt: str) -> tuple[list[int], int]:
    """(numbers, target) of a prompt; ValueError if it is not one of this task's."""
    if len(prompt) != self.prompt_len or not prompt.endswith("="):
      raise _bad_prompt(prompt, self.name, f"expected {self.prompt_len} characters ending in '='")
    numbers_text, _, target_text = prompt[:-1].partition(">")
    fields = numbers_text.split(",")
    if len(fields) != self.num_numbers or not all(f.isdigit() for f in fields + [target_text]):
      raise _bad_prompt(prompt, self.name, f"expected {self.num_numbers} numbers and a target")
    numbers = [int(f) for f in fields]
    if not all(1 <= x <= self.max_number for x in numbers):
      raise _bad_prompt(prompt, self.name, f"numbers must lie in [1, {self.max_number}]")
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

  def key_text(self, key: int) -> str:
    """``"3,5,7>22"``: the sorted numbers and the target."""
    key = _check_key(key, (self.max_number + 1) ** self.num_numbers * 10**self.target_digits)
    code, target = divmod(key, 10**self.target_digits)
    numbers = []
    for _ in range(self.num_numbers):
      code, x = divmod(code, self.max_number + 1)
      numbers.append(x)
    return ",".join(str(x) for x in reversed(numbers)) + f">{target}"

  def score(self, prompt: str, completion: str) -> Score:
    available, target = self._read(prompt)
    try:
      value, used = expressions.parse_expression(completion)
    except ValueError:
      return Score(0.0, 0.0)
    if len(used) < self.min_used:
      return Score(0.0, 0.0)
    remaining = list(available)
    for x in used:
      if x not in remaining:
        return Score(0.0, 0.0)
      remaining.remove(x)
    distance = abs(value - target)
    return Score(float(distance == 0), 1.0 / (1.0 + distance))


# -------------------------------------------------------------------------- addition


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

  def __post_init__(self):
    _check_positive(self.num_digits, "num_digits")
    if 10 ** (2 * self.num_digits) >= _MAX_KEY:
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

  def example(self, problem: np.ndarray) -> Example:
    a, b = (int(v) for v in problem)
    d = self.num_digits
    return Example(prompt=f"{a:0{d}d}+{b:0{d}d}=", solution=f"{a + b:0{d + 1}d}")

  def _read(self, prompt: str) -> tuple[int, int]:
    fields = prompt[:-1].split("+")
    if (
      len(prompt) != self.prompt_len
      or not prompt.endswith("=")
      or len(fields) != 2
      or not all(f.isdigit() for f in fields)
    ):
      raise _bad_prompt(prompt, self.name, f"expected two {self.num_digits}-digit addends")
    return int(fields[0]), int(fields[1])

  def prompt_key(self, prompt: str) -> int:
    a, b = self._read(prompt)
    return min(a, b) * 10**self.num_digits + max(a, b)

  def near_signatures(self, keys: np.ndarray) -> np.ndarray:
    """``[num, 2]``: the two addends; two problems share one when they share an addend."""
    return np.stack(np.divmod(np.asarray(keys, np.int64), 10**self.num_digits), axis=1)

  def key_text(self, key: int) -> str:
    """``"371+958"``: the smaller addend first."""
    key = _check_key(key, 10 ** (2 * self.num_digits))
    low, high = divmod(key, 10**self.num_digits)
    return f"{low}+{high}"

  def score(self, prompt: str, completion: str) -> Score:
    a, b = self._read(prompt)
    answer = f"{a + b:0{self.num_digits + 1}d}"
    matches = sum(x == y for x, y in zip(answer, completion))
    continuous = matches / max(len(answer), len(completion))
    return Score(float(completion == answer), continuous)


# --------------------------------------------------------------------------- program


def _render_polynomial(coefs: Sequence[int]) -> str:
  """Canonical expression of sum_j coefs[j] x^j: highest degree first, except that the
  first positive term leads (no unary minus); ``"x*x-3*x+2"``, ``"9-x"``, ``"20*x"``."""
  terms = []
  for j in reversed(range(len(coefs))):
    c = int(coefs[j])
    if c == 0:
      continue
    power = "*".join(["x"] * j)
    if j == 0:
      body = str(abs(c))
    else:
      body = power if abs(c) == 1 else f"{abs(c)}*{power}"
    terms.append((c > 0, body))
  if not terms:
    return "0"
  lead = next((i for i, (positive, _) in enumerate(terms) if positive), None)
  if lead is None:
    raise ValueError(f"coefs={list(coefs)} has no positive term to lead its expression.")
  ordered = [terms[lead]] + terms[:lead] + terms[lead + 1 :]
  return ordered[0][1] + "".join(("+" if pos else "-") + body for pos, body in ordered[1:])


def _solve_exact(matrix: list[list[Fraction]], rhs: list[Fraction]) -> list[Fraction]:
  """Solves a square linear system exactly (Gauss-Jordan); ValueError if singular."""
  size = len(rhs)
  rows = [list(r) + [b] for r, b in zip(matrix, rhs)]
  for col in range(size):
    pivot = next((r for r in range(col, size) if rows[r][col] != 0), None)
    if pivot is None:
      raise ValueError("singular system")
    rows[col], rows[pivot] = rows[pivot], rows[col]
    for r in range(size):
      if r != col and rows[r][col] != 0:
        factor = rows[r][col] / rows[col][col]
        rows[r] = [a - factor * b for a, b in zip(rows[r], rows[col])]
  return [rows[i][size] / rows[i][i] for i in range(size)]


@dataclasses.dataclass(frozen=True)
class Program:
  """Tiny program synthesis: write an expression in ``x`` for a hidden function.

  The hidden f is a polynomial of degree at most ``degree`` with integer
  coefficients in [-max_coef, max_coef], not constant, and with
  0 <= f(x) < 10**value_digits at every x in [0, max_input]. The prompt
  ``"1>023,4>041,7>059="`` shows ``num_examples`` distinct inputs (ascending) and
  f's values, zero-padded. Since ``num_examples > degree``, they determine f.

  The completion is an expression over ``x``, integers, +, -, * and parentheses
  (:func:`parse` with ``variable=True``), run by our interpreter on every *hidden*
  test input: each x in the set H of inputs in [0, max_input] that the prompt does
  not show (at least ``degree + 1`` of them, so that among polynomials of degree
  <= ``degree`` only f passes them all). ``binary`` = it equals f on all of H.
  ``continuous`` grades its outputs g by their shape and by their closeness:

    max(0, R^2) * mean_{x in H} 1 / (1 + |g(x) - f(x)|),
    R^2 = 1 - SSE / SST,  SSE = sum_{x in H} (g(x) - f(x))^2,
                          SST = sum_{x in H} (f(x) - mean_H f)^2,

  computed exactly (rationals, then one rounding to float, capped at 1 - 2^-24,
  the largest float32 below 1, so that a wrong completion stays below 1 in
  ``score_batch``'s float32 arrays). SST > 0: were f equal to a constant c on all
  of H, f - c would have at least ``degree + 1`` roots at degree <= ``degree``, so
  f would be the constant c, and f is not constant. Both factors are 1 exactly
  when g = f on H, so the reward is 1 exactly when ``binary`` is 1.

  *Why both factors.* R^2 gates out answers without f's shape: any constant g = c
  has R^2 <= 0 (SSE = SST + |H| (c - mean_H f)^2 >= SST) and scores 0, however well
  chosen from the prompt (counting the hidden inputs passed gave 1/|H| to a constant
  equal to f at one of them, a shortcut RL found). R^2 alone saturates: an answer
  off by one everywhere has R^2 = 1 - |H|/SST, about 0.99 for a typical slope, so
  it barely rewards exactness (a warm start had mean R^2 0.94 at pass@1 0.27, and
  RL on it lost exact answers). The closeness factor, as countdown's
  1 / (1 + distance), halves the credit of an answer off by one. Example:
  ``3*x+21`` for ``3*x+20`` on H = {0, 2, 3, 5, 6, 8, 9}: R^2 = 1 - 7/(9 * 444/7) =
  3947/3996, closeness 1/2, reward 3947/7992 ~ 0.494. A
  completion that does not parse scores 0. Problem key: f itself (its
  coefficients), whatever inputs are shown. The reference solution is f's
  canonical form (``"3*x+20"``, ``"9-x"``, ``"x*x-3*x+2"``).

  Rows of ``sample_problems``: f's coefficients c_0..c_degree, then the shown inputs.
  """

  num_examples: int = 3
  degree: int = 1
  max_coef: int = 50
  max_input: int = 9
  value_digits: int = 3
  name: str = "program"

  def __post_init__(self):
    _check_positive(self.degree, "degree")
    if self.degree > 3:
      raise ValueError(f"degree={self.degree} must be at most 3.")
    _check_positive(self.max_coef, "max_coef")
    _check_positive(self.max_input, "max_input")
    _check_positive(self.value_digits, "value_digits")
    if not isinstance(self.num_examples, int) or self.num_examples <= self.degree:
      raise ValueError(
        f"num_examples={self.num_examples!r} must exceed degree={self.degree} so that the "
        "examples determine the function."
      )
    if self.max_input + 1 - self.num_examples < self.degree + 1:
      raise ValueError(
        f"max_input={self.max_input} leaves {self.max_input + 1 - self.num_examples} hidden "
        f"inputs besides num_examples={self.num_examples}; need at least degree + 1 = "
        f"{self.degree + 1}."
      )
    if self.max_input >= 10**self.value_digits:
      raise ValueError(
        f"value_digits={self.value_digits} cannot show f(x) = x up to max_input={self.max_input}."
      )
    # Near signatures use one more digit value (see near_signatures).
    if (2 * self.max_coef + 2) ** (self.degree + 1) >= _MAX_KEY:
      raise ValueError(f"max_coef={self.max_coef} gives keys beyond int64.")

  @property
  def _input_width(self) -> int:
    return len(str(self.max_input))

  @property
  def prompt_len(self) -> int:
    return self.num_examples * (self._input_width + 1 + self.value_digits + 1)

  @property
  def _canonical_len(self) -> int:
    """Length of the longest canonical solution: a w-digit coefficient per term,
    ``*x`` per power of x, and an operator between terms."""
    w, d = len(str(self.max_coef)), self.degree
    return (d + 1) * w + d * (d + 1) + d

  @property
  def completion_len(self) -> int:
    # The longest canonical solution, 4 characters of slack (e.g. parentheses), EOS.
    return self._canonical_len + 5

  def _draw(self, rng: np.random.Generator, m: int) -> tuple[np.ndarray, np.ndarray]:
    coefs = rng.integers(-self.max_coef, self.max_coef + 1, size=(m, self.degree + 1))
    order = np.argsort(rng.random((m, self.max_input + 1)), axis=1)
    inputs = np.sort(order[:, : self.num_examples], axis=1)
    xs = np.arange(self.max_input + 1, dtype=np.int64)
    values = np.broadcast_to(coefs[:, -1:], (m, len(xs)))
    for j in reversed(range(self.degree)):  # Horner: f(x) = (c_d x + c_{d-1}) x + ...
      values = values * xs + coefs[:, j : j + 1]
    valid = (
      np.all(values >= 0, axis=1)
      & np.all(values < 10**self.value_digits, axis=1)
      & np.any(coefs[:, 1:] != 0, axis=1)
    )
    return np.concatenate([coefs, inputs], axis=1).astype(np.int64), valid

  def sample_problems(self, rng: np.random.Generator, num: int) -> np.ndarray:
    return _accepted(self._draw, rng, num, self.name, oversample=4)

  def _coef_keys(self, coefs: np.ndarray) -> np.ndarray:
    code = np.zeros(len(coefs), np.int64)
    for j in reversed(range(self.degree + 1)):
      code = code * (2 * self.max_coef + 1) + (coefs[:, j] + self.max_coef)
    return code

  def problem_keys(self, problems: np.ndarray) -> np.ndarray:
    return self._coef_keys(problems[:, : self.degree + 1])

  def example(self, problem: np.ndarray) -> Example:
    row = [int(v) for v in problem]
    coefs, inputs = row[: self.degree + 1], row[self.degree + 1 :]
    wx, wy = self._input_width, self.value_digits
    shown = [f"{x:0{wx}d}>{_polynomial(coefs, x):0{wy}d}" for x in inputs]
    return Example(prompt=",".join(shown) + "=", solution=_render_polynomial(coefs))

  def function(self, prompt: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """``(coefs, shown inputs)`` of a prompt's hidden function.

    Raises:
      ValueError: if ``prompt`` is malformed or no function of the task fits it.
    """
    return _program_function(self, prompt)

  def prompt_key(self, prompt: str) -> int:
    coefs, _ = self.function(prompt)
    return int(self._coef_keys(np.array([coefs]))[0])

  def near_signatures(self, keys: np.ndarray) -> np.ndarray:
    """One signature per coefficient: the others, that one replaced by a wildcard.

    Digits in base ``2 * max_coef + 2``: c_j + max_coef for every coefficient but
    the j-th, ``2 * max_coef + 1`` (the wildcard, no coefficient's digit) for it.
    Two problems share one exactly when their functions agree in all coefficients
    but one (the wildcard's position tells the signatures of different j apart).
    ``[num, degree + 1]``.
    """
    base = 2 * self.max_coef + 1
    digits = np.zeros((len(keys), self.degree + 1), np.int64)
    code = np.asarray(keys, np.int64)
    for j in range(self.degree + 1):
      code, digits[:, j] = np.divmod(code, base)
    wide = (base + 1) ** np.arange(self.degree + 1, dtype=np.int64)
    columns = []
    for j in range(self.degree + 1):
      wild = digits.copy()
      wild[:, j] = base
      columns.append(wild @ wide)
    return np.stack(columns, axis=1)

  def key_text(self, key: int) -> str:
    """``"f=3*x+20"``: the hidden function's canonical form."""
    key = _check_key(key, (2 * self.max_coef + 1) ** (self.degree + 1))
    coefs = []
    for _ in range(self.degree + 1):
      key, c = divmod(key, 2 * self.max_coef + 1)
      coefs.append(c - self.max_coef)
    return "f=" + _render_polynomial(coefs)

  def hidden_inputs(self, prompt: str) -> list[int]:
    """The test inputs of a prompt: every x in [0, max_input] it does not show."""
    _, shown = self.function(prompt)
    return [x for x in range(self.max_input + 1) if x not in shown]

  def score(self, prompt: str, completion: str) -> Score:
    coefs, shown = self.function(prompt)
    hidden = [x for x in range(self.max_input + 1) if x not in shown]
    try:
      expression = expressions.parse(completion, variable=True)
    except ValueError:
      return Score(0.0, 0.0)
    want = [_polynomial(coefs, x) for x in hidden]
    errors = [expression(x) - y for x, y in zip(hidden, want)]
    sse = sum(e * e for e in errors)
    if sse == 0:
      return Score(1.0, 1.0)
    mean = Fraction(sum(want), len(want))
    sst = sum((y - mean) ** 2 for y in want)  # > 0: see the class docstring.
    r_squared = 1 - sse / sst
    if r_squared <= 0:
      return Score(0.0, 0.0)
    closeness = sum(Fraction(1, 1 + abs(e)) for e in errors) / len(errors)
    reward = float(r_squared * closeness)  # One rounding of the exact value.
    return Score(0.0, min(reward, _BELOW_ONE))


def _polynomial(coefs: Sequence[int], x: int) -> int:
  return sum(c * x**j for j, c in enumerate(coefs))


@functools.lru_cache(maxsize=4096)
def _program_function(task: Program, prompt: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
  """Recovers f from the shown examples by exact interpolation (see Program.function)."""
  wx, wy = task._input_width, task.value_digits  # pylint: disable=protected-access
  if len(prompt) != task.prompt_len or not prompt.endswith("="):
    raise _bad_prompt(prompt, task.name, f"expected {task.prompt_len} characters ending in '='")
  points = []
  for field in prompt[:-1].split(","):
    x_text, _, y_text = field.partition(">")
    if len(x_text) != wx or len(y_text) != wy or not (x_text + y_text).isdigit():
      raise _bad_prompt(prompt, task.name, f"malformed example {field!r}")
    points.append((int(x_text), int(y_text)))
  xs = [x for x, _ in points]
  if len(points) != task.num_examples or xs != sorted(set(xs)) or xs[-1] > task.max_input:
    raise _bad_prompt(
      prompt, task.name, f"expected {task.num_examples} ascending distinct inputs <= max_input"
    )
  d = task.degree
  matrix = [[Fraction(x) ** j for j in range(d + 1)] for x, _ in points[: d + 1]]
  solution = _solve_exact(matrix, [Fraction(y) for _, y in points[: d + 1]])
  if any(c.denominator != 1 or abs(c) > task.max_coef for c in solution):
    raise _bad_prompt(prompt, task.name, "no integer polynomial within max_coef fits it")
  coefs = tuple(int(c) for c in solution)
  if any(_polynomial(coefs, x) != y for x, y in points):
    raise _bad_prompt(prompt, task.name, f"no polynomial of degree <= {d} fits it")
  return coefs, tuple(xs)


# -------------------------------------------------------------------------- registry

TASKS: dict[str, Callable[..., Task]] = {
  "countdown": Countdown,
  "addition": Addition,
  "program": Program,
}


def make_task(name: str, **difficulty) -> Task:
  """Builds a registered task; ``difficulty`` holds its constructor arguments."""
  if name not in TASKS:
    raise ValueError(f"Unknown task {name!r}; valid: {sorted(TASKS)}.")
  return TASKS[name](**difficulty)


def _sorted_keys(keys: Collection[int] | np.ndarray) -> np.ndarray:
  if isinstance(keys, np.ndarray):
    return np.sort(keys.astype(np.int64).ravel())
  return np.sort(np.fromiter(keys, np.int64, count=len(keys)))


def _contains(sorted_keys: np.ndarray, keys: np.ndarray) -> np.ndarray:
  """Whether each of ``keys`` is in ``sorted_keys`` (ascending), by binary search."""
  if not len(sorted_keys):
    return np.zeros(keys.shape, bool)
  index = np.minimum(np.searchsorted(sorted_keys, keys), len(sorted_keys) - 1)
  return sorted_keys[index] == keys


def draw_problems(
  task: Task,
  rng: np.random.Generator,
  num: int,
  *,
  exclude: Collection[int] | np.ndarray = frozenset(),
) -> np.ndarray:
  """``num`` problem rows whose keys are not in ``exclude`` (held-out problem keys).

  Draws rounds of ``num`` rows and keeps, in order, those with allowed keys, so the
  result is a deterministic function of the generator's state.
  """
  excluded = _sorted_keys(exclude)
  parts, have, rounds = [], 0, 0
  while True:
    rows = task.sample_problems(rng, num)
    rows = rows[~_contains(excluded, task.problem_keys(rows))]
    parts.append(rows)
    have += len(rows)
    rounds += 1
    if have >= num:
      return np.concatenate(parts)[:num]
    if rounds >= 1000:
      raise RuntimeError(
        f"Task {task.name} cannot produce problems outside the {len(excluded)} held-out keys."
      )


def sample_examples(
  task: Task,
  rng: np.random.Generator,
  num: int,
  *,
  exclude: Collection[int] | np.ndarray = frozenset(),
) -> list[Example]:
  """``num`` examples whose problem keys are not in ``exclude`` (see ``draw_problems``)."""
  return [task.example(row) for row in draw_problems(task, rng, num, exclude=exclude)]


def heldout_problems(task: Task, seed: int, num: int) -> np.ndarray:
  """The evaluation problems: ``num`` rows with distinct keys, from their own stream."""
  _check_positive(num, "num")
  rng = np.random.default_rng([seed, 7919])
  parts, seen, rounds = [], set(), 0
  while sum(len(p) for p in parts) < num:
    rounds += 1
    if rounds > 1000:
      raise RuntimeError(f"Task {task.name} has fewer than {num} distinct problems.")
    rows = task.sample_problems(rng, num)
    keep = []
    for index, key in enumerate(task.problem_keys(rows).tolist()):
      if key not in seen:
        seen.add(key)
        keep.append(index)
    parts.append(rows[keep])
  return np.concatenate(parts)[:num]


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
