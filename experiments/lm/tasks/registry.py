"""The task registry: ``config.task.name`` -> the task's constructor.

Each task module registers its task when imported (``tasks/__init__.py`` imports
them all); a test or another module may register its own with ``register``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from experiments.lm.tasks import base

TASKS: dict[str, Callable[..., base.Task]] = {}


def register(name: str, factory: Callable[..., base.Task]) -> None:
  """Registers ``factory`` (a task class, or any callable returning a task whose
  ``name`` is ``name``) under ``name``, so that ``make_task(name, **difficulty)``
  and ``config.task.name = name`` build it.

  Raises:
    ValueError: if ``name`` is empty or already registered, or ``factory`` is not
      callable.
  """
  if not isinstance(name, str) or not name:
    raise ValueError(f"name={name!r} must be a non-empty string.")
  if name in TASKS:
    raise ValueError(f"name={name!r} is already registered (to {TASKS[name]!r}).")
  if not callable(factory):
    raise ValueError(f"factory={factory!r} must be callable.")
  TASKS[name] = factory


def make_task(name: str, **difficulty: Any) -> base.Task:
  """Builds a registered task; ``difficulty`` holds its constructor arguments.

  Raises:
    ValueError: if ``name`` is not registered, its factory rejects ``difficulty``, or
      the task it builds has another name.
  """
  if name not in TASKS:
    raise ValueError(f"Unknown task {name!r}; valid: {sorted(TASKS)}.")
  task = TASKS[name](**difficulty)
  if task.name != name:
    raise ValueError(f"Task {name!r} built a task named {task.name!r}.")
  return task
