"""Tests of experiments.lm.expressions: the parser and interpreter of the task completions."""

import pytest

from experiments.lm import expressions


@pytest.mark.parametrize(
  "text,value,numbers",
  [
    ("7", 7, [7]),
    ("3*5+7", 22, [3, 5, 7]),
    ("3+5*7", 38, [3, 5, 7]),
    ("(3+5)*7", 56, [3, 5, 7]),
    ("9-4-3", 2, [9, 4, 3]),
    ("2*(9-(4+1))", 8, [2, 9, 4, 1]),
  ],
)
def test_parse_expression(text, value, numbers):
  assert expressions.parse_expression(text) == (value, numbers)


@pytest.mark.parametrize(
  "text", ["", "+3", "3+", "3**4", "(3+4", "3+4)", "3?4", "()", "12345", "x+1", "-x"]
)
def test_parse_expression_rejects_malformed(text):
  with pytest.raises(ValueError, match="Malformed"):
    expressions.parse_expression(text)


@pytest.mark.parametrize(
  "text,values",
  [
    ("x", {0: 0, 3: 3}),
    ("3*x+20", {0: 20, 2: 26}),
    ("x*x-3*x+2", {0: 2, 1: 0, 5: 12}),
    ("(x+1)*(x-1)", {0: -1, 4: 15}),
    ("9-x-x", {4: 1}),
    ("2*(x-(4+1))", {5: 0, 7: 4}),
  ],
)
def test_interpreter_evaluates_programs_in_x(text, values):
  program = expressions.parse(text, variable=True)
  for x, y in values.items():
    assert program(x) == y


def test_interpreter_refuses_missing_x_and_never_executes():
  with pytest.raises(ValueError, match="no value"):
    expressions.parse("x+1", variable=True)()
  for text in ("__import__('os')", "x**2", "x/2", "xx", "2x", "abs(x)"):
    with pytest.raises(ValueError, match="Malformed"):
      expressions.parse(text, variable=True)


def test_nesting_beyond_the_recursion_limit_is_malformed():
  with pytest.raises(ValueError, match="Malformed"):
    expressions.parse_expression("(" * 2000 + "1" + ")" * 2000)
