"""Checks of the fields of an experiment's config, each raising :class:`ConfigError`.

Every binary's ``validate(config)`` is a list of these checks; its ``run`` calls it
first, so a bad value stops the run with one line naming the field before anything
is written. A field's ``name`` may be dotted (``"rl.steps"``) for nested configs.

List-valued fields are tuples in the config files (``c.ns = (4, 8, 16)``), so the
config a run validates, and the ``config.json`` it writes, hold the list itself, and
no run code splits text. On the command line a list field is written comma-separated,
``--config.ns=4,8`` (or as a Python tuple, ``--config.ns='(4, 8)'``; one value,
``--config.ns=4``, is the list of it; an empty value is the empty list): the
``--config`` flag parses it with :func:`parse_list` (``experiments.command_line``
registers that parser for tuple fields). Before, list fields were comma-separated
strings; :func:`same_value` is how a ``config.json`` written then (``"ns": "4,8"``)
is compared with a config of now (``ns = (4, 8)``).
"""

from __future__ import annotations

import ast
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
  """The items of comma-separated text, stripped (``""`` is the empty list); commas
  inside ``[...]`` do not split (an LM run's options, ``grpo[lr=3e-5,kl=0.01]``).

  Raises:
    ValueError: on unbalanced or nested brackets.
  """
  items, depth, current = [], 0, ""
  for char in text:
    depth += {"[": 1, "]": -1}.get(char, 0)
    if depth not in (0, 1):
      raise ValueError(f"{text!r} has unbalanced or nested brackets.")
    if char == "," and depth == 0:
      items.append(current)
      current = ""
    else:
      current += char
  if depth:
    raise ValueError(f"{text!r} has unbalanced or nested brackets.")
  return tuple(item.strip() for item in [*items, current]) if text.strip() else ()


_NOT_A_LITERAL = object()


def _literal(text: str, default: Any = _NOT_A_LITERAL) -> Any:
  """``ast.literal_eval(text)``, or ``default`` when ``text`` is no Python literal."""
  try:
    return ast.literal_eval(text)
  except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
    return default


def parse_list(text: str) -> tuple[Any, ...]:
  """The list a list field's command-line text stands for.

  ``"4,8"`` and ``"(4, 8)"`` are ``(4, 8)``, ``"4"`` is ``(4,)``, ``""`` is ``()``:
  text that is a Python literal is that literal (a tuple or list: its items; anything
  else: the one item). Otherwise the text is :func:`split` at its commas and each item
  is its literal when it is one, else its text: ``"easy,hard"`` is ``("easy", "hard")``
  and ``"1,8:200:1"`` is ``(1, "8:200:1")``. Chosen over ml_collections' own tuple
  parser, which reads ``easy,hard`` as the one item ``"easy,hard"`` and refuses
  ``1,8:200:1``: the documented command lines (``--config.bandits=easy,hard``) keep
  the meaning they had when list fields were comma-separated strings. The items'
  types are the validation's to check.

  Raises:
    ValueError: on unbalanced or nested brackets (:func:`split`).
  """
  if not text.strip():
    return ()
  value = _literal(text.strip())
  if isinstance(value, (tuple, list)):
    return tuple(value)
  if value is not _NOT_A_LITERAL:
    return (value,)
  return tuple(_literal(item, item) for item in split(text))


def same_value(recorded: Any, current: Any) -> bool:
  """Whether ``recorded``, a field's value read back from a ``config.json``, is the
  same as ``current``, the config's value as JSON stores it.

  Equal values are the same. So, explicitly, is a comma-separated string recorded
  before list fields were lists (``"4,8"``, ``"grpo,max_at_k@8"``) and the list it
  stands for (``[4, 8]``): the string read as the command line reads it
  (:func:`parse_list`) has as many items as the list, each equal to its item or
  written the same (``1`` and ``"1"``, a schedule of ``k_schedules``). Committed
  result files keep the string form (they record what ran), and a workdir started
  then resumes now.
  """
  if recorded == current:
    return True
  if not isinstance(recorded, str) or not isinstance(current, (list, tuple)):
    return False
  try:
    items = parse_list(recorded)
  except ValueError:
    return False
  return len(items) == len(current) and all(
    a == b or str(a) == str(b) for a, b in zip(items, current, strict=True)
  )


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


def items(config: ml_collections.ConfigDict, name: str) -> tuple[Any, ...]:
  """``config[name]``, a list field: a tuple (or list) of items, returned as a tuple."""
  v = value(config, name)
  if not isinstance(v, (tuple, list)):
    fail(name, v, "must be a list (a tuple in the config; on the command line a,b,c)")
  return tuple(v)


def names(config: ml_collections.ConfigDict, name: str, valid: Sequence[str]) -> tuple[str, ...]:
  """``config[name]``: a non-empty list of distinct names from ``valid``."""
  v = items(config, name)
  if not all(isinstance(i, str) for i in v):
    fail(name, config[name], f"must list distinct names from {list(valid)}")
  if not v or not set(v) <= set(valid) or len(set(v)) != len(v):
    fail(name, config[name], f"must list distinct names from {list(valid)}")
  return v


def ints(config: ml_collections.ConfigDict, name: str, *, low: int) -> tuple[int, ...]:
  """``config[name]``: a non-empty list of integers (not bools), each >= ``low``."""
  v = items(config, name)
  if not v or not all(_is_int(i) and i >= low for i in v):
    fail(name, config[name], f"must list integers >= {low}")
  return tuple(int(i) for i in v)


def _is_int(v: Any) -> bool:
  return isinstance(v, numbers.Integral) and not isinstance(v, bool)
