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
  parser = _Parser(text, variable)
  try:
    tree = parser.expr()
    if parser.pos != len(text):
      raise _ParseError(f"unexpected {parser.peek()!r} at {parser.pos}")
  except (_ParseError, RecursionError) as e:
    raise ValueError(f"Malformed expression {text!r}: {e}") from None
  return Expression(tree, tuple(parser.numbers))


class _Parser:
  """Recursive descent over ``text`` (the grammar of :func:`parse`) from ``pos``;
  ``numbers`` collects the literals in order of appearance."""

  def __init__(self, text: str, variable: bool) -> None:
    self.text = text
    self.variable = variable
    self.pos = 0
    self.numbers: list[int] = []

  def peek(self) -> str:
    return self.text[self.pos] if self.pos < len(self.text) else ""

  def expr(self) -> tuple:
    tree = self.term()
    while self.peek() in ("+", "-"):
      op = self.peek()
      self.pos += 1
      tree = (op, tree, self.term())
    return tree

  def term(self) -> tuple:
    tree = self.atom()
    while self.peek() == "*":
      self.pos += 1
      tree = ("*", tree, self.atom())
    return tree

  def atom(self) -> tuple:
    if self.peek() == "(":
      self.pos += 1
      tree = self.expr()
      if self.peek() != ")":
        raise _ParseError("missing ')'")
      self.pos += 1
      return tree
    if self.peek() == "x":
      if not self.variable:
        raise _ParseError(f"unexpected 'x' at {self.pos}")
      self.pos += 1
      return ("x",)
    start = self.pos
    while self.peek().isdigit():
      self.pos += 1
    if start == self.pos:
      raise _ParseError(f"expected a number at {start}")
    if self.pos - start > 4:
      raise _ParseError("number too long")
    self.numbers.append(int(self.text[start : self.pos]))
    return ("num", self.numbers[-1])


def parse_expression(text: str) -> tuple[int, list[int]]:
  """Value and literal numbers (in order) of an expression without variables.

  Raises:
    ValueError: if ``text`` is not a well-formed expression (:func:`parse`).
  """
  expression = parse(text)
  return expression(), list(expression.numbers)
