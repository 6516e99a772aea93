"""Piecewise-constant k_opt schedules, shared by the bandit and LM experiments.

A schedule is written ``"k"`` (k throughout) or ``"k0:t1:k1[:t2:k2...]"``: k0 for
the first ``t1`` training steps, k1 from then on until step ``t2``, and so on.
Steps are indexed from 0, so ``k_at(t)`` is k0 for ``0 <= t < t1``. For example,
with 400 steps ``"8:200:1"`` uses k=8 for steps 0-199 and k=1 for steps 200-399
(PKPO anneals k this way, Fig. 3). The switch steps must strictly increase, be
positive and, where the run's length is known, be smaller than it (every segment
is at least one step long).

References: Walder & Karkhanis, "Pass@K Policy Optimization", arXiv 2505.15201, Fig. 3.
"""

from __future__ import annotations

import dataclasses

_SYNTAX = "'k' or 'k0:t1:k1[:t2:k2...]' (integers)"


@dataclasses.dataclass(frozen=True)
class Schedule:
  """A piecewise-constant k_opt schedule.

  Attributes:
    spec: the text it was parsed from (its label in results files).
    ks: ``(k0, k1, ...)``, the k of each segment in order.
    switches: ``(t1, t2, ...)``, the step index at which each later segment starts;
      strictly increasing and positive, one fewer than ``ks``.
  """

  spec: str
  ks: tuple[int, ...]
  switches: tuple[int, ...] = ()

  def __post_init__(self) -> None:
    if not self.ks or len(self.switches) != len(self.ks) - 1:
      raise ValueError(
        f"schedule={self.spec!r}: needs one k more than switch steps; got ks={self.ks}, "
        f"switches={self.switches}."
      )
    for k in self.ks:
      if k < 1:
        raise ValueError(f"schedule={self.spec!r}: k={k} must satisfy k >= 1.")
    bounds = (0, *self.switches)
    if any(not lo < hi for lo, hi in zip(bounds[:-1], bounds[1:])):
      raise ValueError(
        f"schedule={self.spec!r}: switch steps {list(self.switches)} must be positive and "
        "strictly increasing."
      )

  @property
  def max_k(self) -> int:
    return max(self.ks)

  def k_at(self, step: int) -> int:
    """k_opt of the training step with 0-based index ``step``."""
    k = self.ks[0]
    for switch, value in zip(self.switches, self.ks[1:]):
      if step >= switch:
        k = value
    return k

  def check_num_steps(self, num_steps: int) -> None:
    """Raises ``ValueError`` unless every segment fits inside ``num_steps`` steps."""
    if num_steps < 1:
      raise ValueError(f"num_steps={num_steps} must satisfy num_steps >= 1.")
    if self.switches and self.switches[-1] >= num_steps:
      raise ValueError(
        f"schedule={self.spec!r}: switch steps {list(self.switches)} must be smaller than "
        f"num_steps={num_steps}."
      )

  def segments(self, num_steps: int) -> tuple[tuple[int, int], ...]:
    """``((k, length), ...)`` over a run of ``num_steps`` steps; lengths sum to it."""
    self.check_num_steps(num_steps)
    bounds = (0, *self.switches, num_steps)
    return tuple((k, hi - lo) for k, lo, hi in zip(self.ks, bounds[:-1], bounds[1:]))


def constant(k: int, *, spec: str | None = None) -> Schedule:
  """The schedule that uses ``k`` throughout (labelled ``spec``, default ``str(k)``)."""
  return Schedule(str(k) if spec is None else spec, (int(k),))


def parse_schedule(spec: str, *, num_steps: int | None = None, n: int | None = None) -> Schedule:
  """Parses ``"k"`` or ``"k0:t1:k1[:t2:k2...]"`` (see the module docstring).

  Args:
    spec: the schedule text.
    num_steps: the run's length when known: switch steps must then be smaller.
    n: the group size when known: every k must then satisfy ``k <= n``.

  Returns:
    The :class:`Schedule`, with ``spec`` kept as its label.

  Raises:
    ValueError: on malformed text, k < 1 (or k > n), or switch steps that are not
      positive and strictly increasing (and smaller than ``num_steps`` when given).
  """
  text = str(spec).strip()
  parts = text.split(":")
  if len(parts) % 2 != 1:
    raise ValueError(f"schedule={spec!r} must look like {_SYNTAX}.")
  try:
    values = [int(p) for p in parts]
  except ValueError:
    raise ValueError(f"schedule={spec!r} must look like {_SYNTAX}.") from None
  schedule = Schedule(text, tuple(values[0::2]), tuple(values[1::2]))
  if n is not None and schedule.max_k > n:
    raise ValueError(f"schedule={spec!r}: k={schedule.max_k} must satisfy 1 <= k <= n={n}.")
  if num_steps is not None:
    schedule.check_num_steps(num_steps)
  return schedule
