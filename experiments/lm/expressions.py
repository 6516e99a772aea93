"""The expression language of the countdown and program tasks: parser and interpreter.

Completions are parsed by a small recursive-descent parser into a tree of tuples
and evaluated by walking that tree: model output is never executed
(no ``eval``/``exec``).
"""

from __future__ import annotations

import dataclasses


class _ParseError(Exception):
  pass


@dataclasses.dataclass(frozen=True)
class Expression:
  """A parsed expression over integers and (optionally) the variable ``x``.

  ``tree`` nests tuples: ``("num", value)``, ``("x",)`` or ``(op, left, right)`` with
  ``op`` one of ``+ - *``; ``numbers`` lists the integer literals in order of
  appearance. Calling it evaluates the tree (our interpreter; nothing is executed).
  """

  tree: tuple
  numbers: tuple[int, ...]

  def __call__(self, x: int | None = None) -> int:
    return _evaluate(self.tree, x)


def _evaluate(tree: tuple, x: int | None) -> int:
  kind = tree[0]
  if kind == "num":
    return tree[1]
  if kind == "x":
    if x is None:
      raise ValueError("The expression uses x but no value was given.")
    return x
  left, right = _evaluate(tree[1], x), _evaluate(tree[2], x)
  if kind == "+":
    return left + right
  if kind == "-":
    return left - right
  return left * right


def parse(text: str, *, variable: bool = False) -> Expression:
  """Parses an integer expression over +, -, *, parentheses (and ``x`` if ``variable``).

  Grammar (usual precedence, left associative; no unary minus; numbers of at most
  4 digits)::

    expr := term (('+' | '-') term)*
    term := atom ('*' atom)*
    atom := NUMBER | 'x' | '(' expr ')'

  Raises:
    ValueError: if ``text`` is not a well-formed expression (or uses ``x`` when
      ``variable`` is False).
  """
  pos = 0
  numbers: list[int] = []

  def peek() -> str:
    return text[pos] if pos < len(text) else ""

  def atom() -> tuple:
    nonlocal pos
    if peek() == "(":
      pos += 1
      tree = expr()
      if peek() != ")":
        raise _ParseError("missing ')'")
      pos += 1
      return tree
    if peek() == "x":
      if not variable:
        raise _ParseError(f"unexpected 'x' at {pos}")
      pos += 1
      return ("x",)
    start = pos
    while peek().isdigit():
      pos += 1
    if start == pos:
      raise _ParseError(f"expected a number at {start}")
    if pos - start > 4:
      raise _ParseError("number too long")
    numbers.append(int(text[start:pos]))
    return ("num", numbers[-1])

  def term() -> tuple:
    nonlocal pos
    tree = atom()
    while peek() == "*":
      pos += 1
      tree = ("*", tree, atom())
    return tree

  def expr() -> tuple:
    nonlocal pos
    tree = term()
    while peek() in ("+", "-"):
      op = peek()
      pos += 1
      tree = (op, tree, term())
    return tree

  try:
    tree = expr()
    if pos != len(text):
      raise _ParseError(f"unexpected {peek()!r} at {pos}")
  except (_ParseError, RecursionError) as e:
    raise ValueError(f"Malformed expression {text!r}: {e}") from None
  return Expression(tree, tuple(numbers))


def parse_expression(text: str) -> tuple[int, list[int]]:
  """Value and literal numbers (in order) of an expression without variables.

  Raises:
    ValueError: if ``text`` is not a well-formed expression (:func:`parse`).
  """
  expression = parse(text)
  return expression(), list(expression.numbers)
