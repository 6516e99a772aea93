"""The program task: tiny program synthesis. Given a few ``x -> f(x)`` examples, write
an expression in ``x`` that computes the hidden function f; it is run by our own
interpreter (``expressions.parse``) on hidden test inputs.

``continuous``: the coefficient of determination R^2 of the completion's outputs for
f's over the hidden inputs, clipped at 0 (every constant scores 0), times their mean
closeness 1 / (1 + |error|). Key: the hidden function (shown with other inputs, it is
the same problem).
"""

from __future__ import annotations

from collections.abc import Sequence
import dataclasses
from fractions import Fraction
import functools
from typing import ClassVar

import numpy as np

from experiments.lm import expressions
from experiments.lm.tasks import base
from experiments.lm.tasks import registry

# The largest float32 below 1: a partial reward that float32 would round up to 1.
_BELOW_ONE = float(np.nextafter(np.float32(1), np.float32(0)))


def render_polynomial(coefs: Sequence[int]) -> str:
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
  key_description: ClassVar[str] = (
    "the hidden function (the same function shown on other inputs is one problem)"
  )
  near_description: ClassVar[str] = (
    "hidden functions equal in all coefficients but one (3*x+20 and 3*x+7)"
  )

  def __post_init__(self) -> None:
    base.check_integer(self.degree, "degree")
    if self.degree > 3:
      raise ValueError(f"degree={self.degree} must be at most 3.")
    base.check_integer(self.max_coef, "max_coef")
    base.check_integer(self.max_input, "max_input")
    base.check_integer(self.value_digits, "value_digits")
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
    if (2 * self.max_coef + 2) ** (self.degree + 1) >= base.MAX_KEY:
      raise ValueError(f"max_coef={self.max_coef} gives keys beyond int64.")

  @property
  def input_width(self) -> int:
    """Digits of a shown input (zero-padded to the width of ``max_input``)."""
    return len(str(self.max_input))

  @property
  def prompt_len(self) -> int:
    return self.num_examples * (self.input_width + 1 + self.value_digits + 1)

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
    return base.accepted_rows(self._draw, rng, num, self.name, oversample=4)

  def _coef_keys(self, coefs: np.ndarray) -> np.ndarray:
    code = np.zeros(len(coefs), np.int64)
    for j in reversed(range(self.degree + 1)):
      code = code * (2 * self.max_coef + 1) + (coefs[:, j] + self.max_coef)
    return code

  def problem_keys(self, problems: np.ndarray) -> np.ndarray:
    return self._coef_keys(problems[:, : self.degree + 1])

  def example(self, problem: np.ndarray) -> base.Example:
    row = [int(v) for v in problem]
    coefs, inputs = row[: self.degree + 1], row[self.degree + 1 :]
    wx, wy = self.input_width, self.value_digits
    shown = [f"{x:0{wx}d}>{_polynomial(coefs, x):0{wy}d}" for x in inputs]
    return base.Example(prompt=",".join(shown) + "=", solution=render_polynomial(coefs))

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

  def answer_signatures(self, problems: np.ndarray) -> np.ndarray:
    """The problem keys: a reference solution solves exactly its own problem.

    It is f's canonical polynomial, of degree <= ``degree``; it passes another
    problem's hidden inputs (at least ``degree + 1`` of them, whatever the prompt
    shows) only if it equals that problem's polynomial there, hence everywhere (their
    difference has degree <= ``degree`` and more roots). So held out by key is held
    out at the answer level for this task. ``[num]``.
    """
    return self.problem_keys(problems)

  def solver_signatures(self, keys: np.ndarray) -> np.ndarray:
    """``[num, 1]``: the key itself (see ``answer_signatures``)."""
    return np.asarray(keys, np.int64)[:, None]

  def key_text(self, key: int) -> str:
    """``"f=3*x+20"``: the hidden function's canonical form."""
    key = base.check_key(key, (2 * self.max_coef + 1) ** (self.degree + 1))
    coefs = []
    for _ in range(self.degree + 1):
      key, c = divmod(key, 2 * self.max_coef + 1)
      coefs.append(c - self.max_coef)
    return "f=" + render_polynomial(coefs)

  def hidden_inputs(self, prompt: str) -> list[int]:
    """The test inputs of a prompt: every x in [0, max_input] it does not show."""
    _, shown = self.function(prompt)
    return [x for x in range(self.max_input + 1) if x not in shown]

  def score(self, prompt: str, completion: str) -> base.Score:
    coefs, shown = self.function(prompt)
    hidden = [x for x in range(self.max_input + 1) if x not in shown]
    try:
      expression = expressions.parse(completion, variable=True)
    except ValueError:
      return base.Score(0.0, 0.0)
    want = [_polynomial(coefs, x) for x in hidden]
    errors = [expression(x) - y for x, y in zip(hidden, want)]
    sse = sum(e * e for e in errors)
    if sse == 0:
      return base.Score(1.0, 1.0)
    mean = Fraction(sum(want), len(want))
    sst = sum((y - mean) ** 2 for y in want)  # > 0: see the class docstring.
    r_squared = 1 - sse / sst
    if r_squared <= 0:
      return base.Score(0.0, 0.0)
    closeness = sum(Fraction(1, 1 + abs(e)) for e in errors) / len(errors)
    reward = float(r_squared * closeness)  # One rounding of the exact value.
    return base.Score(0.0, min(reward, _BELOW_ONE))


def _polynomial(coefs: Sequence[int], x: int) -> int:
  return sum(c * x**j for j, c in enumerate(coefs))


@functools.lru_cache(maxsize=4096)
def _program_function(task: Program, prompt: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
  """Recovers f from the shown examples by exact interpolation (see Program.function)."""
  wx, wy = task.input_width, task.value_digits
  if len(prompt) != task.prompt_len or not prompt.endswith("="):
    raise base.bad_prompt(prompt, task.name, f"expected {task.prompt_len} characters ending in '='")
  points = []
  for field in prompt[:-1].split(","):
    x_text, _, y_text = field.partition(">")
    if len(x_text) != wx or len(y_text) != wy or not (x_text + y_text).isdigit():
      raise base.bad_prompt(prompt, task.name, f"malformed example {field!r}")
    points.append((int(x_text), int(y_text)))
  xs = [x for x, _ in points]
  if len(points) != task.num_examples or xs != sorted(set(xs)) or xs[-1] > task.max_input:
    raise base.bad_prompt(
      prompt, task.name, f"expected {task.num_examples} ascending distinct inputs <= max_input"
    )
  d = task.degree
  matrix = [[Fraction(x) ** j for j in range(d + 1)] for x, _ in points[: d + 1]]
  solution = _solve_exact(matrix, [Fraction(y) for _, y in points[: d + 1]])
  if any(c.denominator != 1 or abs(c) > task.max_coef for c in solution):
    raise base.bad_prompt(prompt, task.name, "no integer polynomial within max_coef fits it")
  coefs = tuple(int(c) for c in solution)
  if any(_polynomial(coefs, x) != y for x, y in points):
    raise base.bad_prompt(prompt, task.name, f"no polynomial of degree <= {d} fits it")
  return coefs, tuple(xs)


registry.register("program", Program)
