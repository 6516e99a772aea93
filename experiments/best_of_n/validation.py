"""The checks of a best-of-n config: :func:`validate`, called once by ``experiment.run``.

Each field has a parser (:data:`PARSERS`) that checks its value and returns it parsed
(list fields, tuples, item by item); :func:`validate` runs them all and raises a
:class:`experiments.config_checks.ConfigError` naming the first bad field.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
import math
from typing import Any

import ml_collections

from experiments import config_checks
from experiments.best_of_n import references


def _int(value: Any, low: int) -> int:
  rule = f"must be an integer >= {low}"
  if isinstance(value, bool) or not isinstance(value, int) or value < low:
    raise ValueError(rule)
  return value


def _float(value: Any) -> float:
  if isinstance(value, (bool, str)):
    raise ValueError("must be a number")
  try:
    number = float(value)
  except (TypeError, ValueError):
    raise ValueError("must be a number") from None
  if not math.isfinite(number):
    raise ValueError("must be a finite number")
  return number


def _open_unit(value: Any) -> float:
  number = _float(value)
  if not 0 < number < 1:
    raise ValueError("must lie in (0, 1)")
  return number


def _above_one(value: Any) -> float:
  number = _float(value)
  if not number > 1:
    raise ValueError("must be a finite number > 1")
  return number


def _positive(value: Any) -> float:
  number = _float(value)
  if not number > 0:
    raise ValueError("must be a finite number > 0")
  return number


def _nonnegative(value: Any) -> float:
  number = _float(value)
  if not number >= 0:
    raise ValueError("must be a finite number >= 0")
  return number


def _distinct(values: Sequence[Any], key: Callable[[Any], Any] = lambda v: v) -> None:
  seen = set()
  for v in values:
    if key(v) in seen:
      raise ValueError(f"lists {v!r} twice")
    seen.add(key(v))


def _items(value: Any, parse: Callable[[Any], Any], rule: str) -> tuple[Any, ...]:
  """Parses every item of a list field (a tuple) with ``parse``."""
  if not isinstance(value, (tuple, list)):
    raise ValueError(f"must be a list of {rule}")
  out = []
  for item in value:
    try:
      out.append(parse(item))
    except ValueError:
      raise ValueError(f"has {item!r}: must be a list of {rule}") from None
  return tuple(out)


def _sizes(value: Any) -> tuple[int, ...]:
  sizes = _items(value, lambda v: _int(v, 1), "integers >= 1")
  _distinct(sizes)
  return sizes


def _alphas(value: Any) -> tuple[float, ...]:
  alphas = _items(value, _positive, "finite numbers > 0")
  _distinct(alphas, key=lambda a: f"{a:g}")  # Reference names use the %g form.
  return alphas


def _sigmas(value: Any) -> tuple[float, ...]:
  def parse(v: Any) -> float:
    number = _float(v)
    if number < 0:
      raise ValueError("must be >= 0")
    return number

  sigmas = _items(value, parse, "finite numbers >= 0")
  if not sigmas:
    raise ValueError("must list at least one value")
  _distinct(sigmas, key=lambda s: f"{s:g}")
  return sigmas


def _max_tries(value: Any) -> tuple[int, ...]:
  rule = "integers >= 1 or 'none'"
  none = lambda v: v is None or (isinstance(v, str) and v.lower() == "none")
  tries = _items(value, lambda v: None if none(v) else _int(v, 1), rule)
  tries = tuple(t for t in tries if t is not None)
  _distinct(tries)
  return tries


def _bool(value: Any) -> bool:
  if not isinstance(value, bool):
    raise ValueError("must be a boolean")
  return value


# Parsers of the config fields; each raises ValueError("<rule>") on a bad value.
PARSERS: dict[str, Callable[[Any], Any]] = {
  "seed": lambda v: _int(v, 0),
  "n_max": lambda v: _int(v, 1),
  "num_n": lambda v: _int(v, 1),
  "uniform_sizes": _sizes,
  "cherry_eps": _open_unit,
  "cherry_size": lambda v: _int(v, 2),
  "cherry_step": _above_one,
  "dirichlet_alphas": _alphas,
  "dirichlet_size": lambda v: _int(v, 1),
  "num_mc_draws": lambda v: _int(v, 1),
  "num_thresholds": lambda v: _int(v, 1),
  "rr_max_tries": _max_tries,
  "float64": _bool,
  "proxy_arms": lambda v: _int(v, 2),
  "proxy_sigmas": _sigmas,
  "proxy_t_df": _positive,
  "proxy_n_max": lambda v: _int(v, 1),
  "proxy_num_n": lambda v: _int(v, 1),
  "proxy_mc_draws": lambda v: _int(v, 1),
  "frontier_n_max": lambda v: _int(v, 1),
  "frontier_num_points": lambda v: _int(v, 1),
  "frontier_lams": _alphas,
  "frontier_sigma": _nonnegative,
}


def check_staircase(cherry_eps: float, cherry_step: float) -> None:
  """Checks that the staircase reference of ``cherry_eps`` and ``cherry_step`` exists.

  Raises:
    experiments.config_checks.ConfigError: naming both fields when the levels would
      take more than all the mass.
  """
  try:
    references.staircase_probs(cherry_eps, cherry_step)
  except ValueError:
    config_checks.fail(
      "cherry_step",
      cherry_step,
      f"is too small for config.cherry_eps={cherry_eps}: the staircase levels above the "
      "lowest would take all the mass (use about 2 or more)",
    )


def validate(config: ml_collections.ConfigDict) -> ml_collections.FrozenConfigDict:
  """Checks every field of ``config`` (see ``configs/default.py``); returns them parsed.

  Returns:
    The fields of ``config`` with list fields as tuples (``rr_max_tries`` without its
    ``none`` entries: the unlimited try limit always runs).

  Raises:
    experiments.config_checks.ConfigError: naming the first bad field.
  """
  parsed = {}
  for name, value in config.items():
    try:
      parsed[name] = PARSERS[name](value)
    except ValueError as e:
      config_checks.fail(name, value, str(e))
  check_staircase(parsed["cherry_eps"], parsed["cherry_step"])
  return ml_collections.FrozenConfigDict(parsed)
