"""Checks of the fields of an experiment's config, each raising :class:`ConfigError`.

Every binary's ``validate(config)`` is a list of these checks; its ``run`` calls it
first, so a bad value stops the run with one line naming the field before anything
is written. List-valued fields are comma-separated strings (``"4,8,16"``), so that
``--config.ns=4,8`` overrides them on the command line as the old flags did.
"""

from __future__ import annotations

from collections.abc import Sequence
import math
from typing import Any, NoReturn

import ml_collections


class ConfigError(ValueError):
  """A config field (or the output folder) that the run cannot use; the message names it."""


def fail(name: str, value: Any, rule: str) -> NoReturn:
  """Raises ``ConfigError("config.NAME=VALUE RULE.")``."""
  raise ConfigError(f"config.{name}={value!r} {rule}.")


def split(text: str) -> tuple[str, ...]:
  """The items of a comma-separated list field (stripped; ``""`` is the empty list)."""
  return tuple(item.strip() for item in text.split(",")) if text.strip() else ()


def integer(config: ml_collections.ConfigDict, name: str, *, low: int) -> int:
  """``config[name]``, which must be an integer (not a bool) >= ``low``."""
  value = config[name]
  if isinstance(value, bool) or not isinstance(value, int) or value < low:
    fail(name, value, f"must be an integer >= {low}")
  return value


def number(
  config: ml_collections.ConfigDict,
  name: str,
  *,
  above: float | None = None,
  at_least: float | None = None,
  below: float | None = None,
) -> float:
  """``config[name]``, a finite number, ``> above``, ``>= at_least`` and ``< below`` where set."""
  value = config[name]
  rules = [f"> {above}"] * (above is not None) + [f">= {at_least}"] * (at_least is not None)
  rules += [f"< {below}"] * (below is not None)
  rule = " and ".join(["must be a finite number", *rules])
  if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
    fail(name, value, rule)
  ok = (above is None or value > above) and (at_least is None or value >= at_least)
  if not (ok and (below is None or value < below)):
    fail(name, value, rule)
  return float(value)


def names(config: ml_collections.ConfigDict, name: str, valid: Sequence[str]) -> tuple[str, ...]:
  """``config[name]`` split: a non-empty list of distinct names from ``valid``."""
  items = _items(config, name)
  if not items or not set(items) <= set(valid) or len(set(items)) != len(items):
    fail(name, config[name], f"must list distinct names from {list(valid)}")
  return items


def ints(config: ml_collections.ConfigDict, name: str, *, low: int) -> tuple[int, ...]:
  """``config[name]`` split: a non-empty list of integers, each >= ``low``."""
  items = _items(config, name)
  try:
    values = tuple(int(item) for item in items)
  except ValueError:
    values = ()
  if not values or min(values) < low:
    fail(name, config[name], f"must list integers >= {low} (comma-separated)")
  return values


def _items(config: ml_collections.ConfigDict, name: str) -> tuple[str, ...]:
  value = config[name]
  if not isinstance(value, str):
    fail(name, value, "must be a comma-separated string")
  return split(value)
