"""Predicates and adapters for absl flag validators, shared by the experiment binaries.

Each predicate takes a flag's parsed value and returns whether it is valid; absl
then reports the registered message as one line naming the flag.
"""

from __future__ import annotations

from collections.abc import Callable
import math
from typing import Any

from absl import flags


def ints(values: list[str]) -> list[int] | None:
  """The list flag's items as ints, or None when one of them is not an integer."""
  try:
    return [int(v) for v in values]
  except ValueError:
    return None


def int_list_at_least(low: int) -> Callable[[list[str]], bool]:
  """Predicate: a non-empty list of integers, each >= ``low``."""
  return lambda values: bool(values) and (parsed := ints(values)) is not None and min(parsed) >= low


def distinct_names(valid: tuple[str, ...]) -> Callable[[list[str]], bool]:
  """Predicate: a non-empty list of distinct names from ``valid``."""
  return lambda values: (
    bool(values) and set(values) <= set(valid) and len(set(values)) == len(values)
  )


def finite_positive(value: float) -> bool:
  return math.isfinite(value) and value > 0


def raising(check: Callable[[Any], Any]) -> Callable[[Any], bool]:
  """A validator that reports ``check``'s ValueError as absl's one-line flag error."""

  def validator(value: Any) -> bool:
    try:
      check(value)
    except ValueError as e:
      raise flags.ValidationError(str(e)) from None
    return True

  return validator
