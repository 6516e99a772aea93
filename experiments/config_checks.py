"""Checks of the fields of an experiment's config, each raising :class:`ConfigError`.

Every binary's ``validate(config)`` is a list of these checks; its ``run`` calls it
first, so a bad value stops the run with one line naming the field before anything
is written. A field's ``name`` may be dotted (``"rl.steps"``) for nested configs.
List-valued fields are comma-separated strings (``"4,8,16"``), so that
``--config.ns=4,8`` overrides them on the command line as the old flags did.
"""

from __future__ import annotations

from collections.abc import Sequence
import math
import numbers
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


def value(config: ml_collections.ConfigDict, name: str) -> Any:
  """``config[name]``, following dots (``"eval.n"``); a missing field is a ConfigError."""
  node: Any = config
  for part in name.split("."):
    try:
      node = node[part]
    except (KeyError, TypeError, AttributeError):
      raise ConfigError(f"config.{name} is missing.") from None
  return node


def integer(config: ml_collections.ConfigDict, name: str, *, low: int) -> int:
  """``config[name]``, which must be an integer (not a bool) >= ``low``."""
  v = value(config, name)
  if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < low:
    fail(name, v, f"must be an integer >= {low}")
  return int(v)


def number(
  config: ml_collections.ConfigDict,
  name: str,
  *,
  above: float | None = None,
  at_least: float | None = None,
  at_most: float | None = None,
  below: float | None = None,
) -> float:
  """``config[name]``, a finite number, ``> above``, ``>= at_least``, ``<= at_most`` and
  ``< below`` where set."""
  v = value(config, name)
  rules = [f"> {above}"] * (above is not None) + [f">= {at_least}"] * (at_least is not None)
  rules += [f"<= {at_most}"] * (at_most is not None) + [f"< {below}"] * (below is not None)
  rule = " and ".join(["must be a finite number", *rules])
  if isinstance(v, bool) or not isinstance(v, numbers.Real) or not math.isfinite(v):
    fail(name, v, rule)
  x = float(v)
  ok = (above is None or x > above) and (at_least is None or x >= at_least)
  ok = ok and (at_most is None or x <= at_most) and (below is None or x < below)
  if not ok:
    fail(name, v, rule)
  return x


def flag(config: ml_collections.ConfigDict, name: str) -> bool:
  """``config[name]``, which must be True or False."""
  v = value(config, name)
  if not isinstance(v, bool):
    fail(name, v, "must be True or False")
  return v


def choice(config: ml_collections.ConfigDict, name: str, choices: Sequence[str]) -> str:
  """``config[name]``, which must be one of ``choices``."""
  v = value(config, name)
  if v not in choices:
    fail(name, v, f"must be one of {tuple(choices)}")
  return v


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
  v = value(config, name)
  if not isinstance(v, str):
    fail(name, v, "must be a comma-separated string")
  return split(v)
