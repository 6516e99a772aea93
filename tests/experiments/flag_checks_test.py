"""The shared flag-validator predicates."""

from absl import flags
import pytest

from experiments import flag_checks


def test_int_lists_and_names():
  assert flag_checks.ints(["1", "4"]) == [1, 4] and flag_checks.ints(["1", "x"]) is None
  at_least_2 = flag_checks.int_list_at_least(2)
  assert at_least_2(["2", "8"]) and not at_least_2(["1", "8"])
  assert not at_least_2([]) and not at_least_2(["2.5"])
  names = flag_checks.distinct_names(("a", "b"))
  assert names(["b", "a"]) and not names(["a", "a"]) and not names(["c"]) and not names([])
  assert flag_checks.finite_positive(0.1)
  assert not any(map(flag_checks.finite_positive, [0.0, -1.0, float("nan"), float("inf")]))


def test_raising_turns_value_errors_into_flag_errors():
  def check(value):
    if value < 0:
      raise ValueError(f"--x={value} must be >= 0.")

  validator = flag_checks.raising(check)
  assert validator(1)
  with pytest.raises(flags.ValidationError, match="--x=-1 must be >= 0"):
    validator(-1)
