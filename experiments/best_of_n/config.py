"""Configuration of the best-of-n study: parsing and checking its flag values.

:class:`Config` holds the parsed, checked values (the binary's defaults when built
with no arguments). :func:`from_flag_values` builds one from raw flag values (list
flags as lists of strings) and raises a ``ValueError`` naming the first bad flag;
:func:`check_flag` checks one flag alone and is what the binary registers as its
absl validators, so a bad value stops the binary before any output is written.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
import dataclasses
import math
from typing import Any

from experiments.best_of_n import references


@dataclasses.dataclass(frozen=True)
class Config:
  """The study's settings (field names are the binary's flag names)."""

  seed: int = 0
  n_max: int = 10_000
  num_n: int = 41
  uniform_sizes: tuple[int, ...] = (10, 100, 1000, 10000)
  cherry_eps: float = 1e-4
  cherry_size: int = 100
  cherry_step: float = 100.0
  dirichlet_alphas: tuple[float, ...] = (0.1, 1.0)
  dirichlet_size: int = 1000
  num_mc_draws: int = 100
  num_thresholds: int = 25
  # Try limits of rewind-and-repeat besides the unlimited one, which always runs.
  rr_max_tries: tuple[int, ...] = (16,)
  float64: bool = True
  # Best-of-n selected by a noisy proxy score (experiments.best_of_n.proxy).
  proxy_arms: int = 1000
  proxy_sigmas: tuple[float, ...] = (0.0, 0.5, 1.0, 2.0)
  proxy_t_df: float = 2.0
  proxy_n_max: int = 1024
  proxy_num_n: int = 21
  proxy_mc_draws: int = 200


def _int(value: Any, low: int) -> int:
  rule = f"must be an integer >= {low}"
  if isinstance(value, str):
    try:
      value = int(value)
    except ValueError:
      raise ValueError(rule) from None
  if isinstance(value, bool) or not isinstance(value, int) or value < low:
    raise ValueError(rule)
  return value


def _float(value: Any) -> float:
  if isinstance(value, bool):
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


def _distinct(values: Sequence[Any], key: Callable[[Any], Any] = lambda v: v) -> None:
  seen = set()
  for v in values:
    if key(v) in seen:
      raise ValueError(f"lists {v!r} twice")
    seen.add(key(v))


def _items(value: Any, parse: Callable[[str], Any], rule: str) -> tuple[Any, ...]:
  """Parses every element of a list flag (or comma-separated string) with ``parse``."""
  if isinstance(value, str):
    value = value.split(",")
  out = []
  for item in (str(v).strip() for v in value):
    try:
      out.append(parse(item))
    except ValueError:
      raise ValueError(f"has {item!r}: must be a comma-separated list of {rule}") from None
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
  def parse(v: str) -> float:
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
  tries = _items(value, lambda v: None if v.lower() == "none" else _int(v, 1), rule)
  tries = tuple(t for t in tries if t is not None)
  _distinct(tries)
  return tries


def _bool(value: Any) -> bool:
  if not isinstance(value, bool):
    raise ValueError("must be a boolean")
  return value


# Parsers of the raw flag values; each raises ValueError("<rule>") on a bad value.
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
}


def check_flag(name: str, value: Any) -> Any:
  """Parses the raw value of flag ``name``; returns the parsed value.

  Raises:
    ValueError: ``"--NAME=VALUE <rule>"`` if the value breaks the flag's rule.
  """
  try:
    return PARSERS[name](value)
  except ValueError as e:
    shown = ",".join(value) if isinstance(value, list | tuple) else value
    raise ValueError(f"--{name}={shown} {e}.") from None


def check_staircase(cherry_eps: float, cherry_step: float) -> None:
  """Checks that the staircase reference of ``cherry_eps`` and ``cherry_step`` exists.

  Raises:
    ValueError: naming both flags when the levels would take more than all the mass.
  """
  try:
    references.staircase_probs(cherry_eps, cherry_step)
  except ValueError:
    raise ValueError(
      f"--cherry_step={cherry_step} is too small for --cherry_eps={cherry_eps}: the "
      "staircase levels above the lowest would take all the mass (use about 2 or more)."
    ) from None


def from_flag_values(values: Mapping[str, Any]) -> Config:
  """A :class:`Config` from raw flag values; missing names keep their defaults.

  Args:
    values: flag name -> value as absl holds it (list flags: lists of strings, or
      comma-separated strings). Names that are not fields (e.g. ``out_dir``) are
      ignored.

  Raises:
    ValueError: naming the first flag whose value is bad.
  """
  fields = {f.name for f in dataclasses.fields(Config)}
  parsed = {k: check_flag(k, v) for k, v in values.items() if k in fields}
  config = Config(**parsed)
  check_staircase(config.cherry_eps, config.cherry_step)
  return config
