"""What a task is (the ``Task`` protocol and its ``Example``/``Score`` records) and the
checks and rejection sampler that task implementations share."""

from __future__ import annotations

from collections.abc import Callable
import dataclasses
from typing import Protocol, runtime_checkable

import numpy as np

# Keys are int64; every task checks that its largest key fits.
MAX_KEY = 2**62


@dataclasses.dataclass(frozen=True)
class Example:
  """A prompt and its reference solution (the supervised warm start's target)."""

  prompt: str
  solution: str


@dataclasses.dataclass(frozen=True)
class Score:
  """A completion's two rewards: ``binary`` (fully correct: 1.0, else 0.0) and
  ``continuous`` (partial credit in [0, 1], 1.0 exactly when ``binary`` is)."""

  binary: float
  continuous: float


class Task(Protocol):
  """A verifiable task: fixed-length prompts, a vectorised sampler, keys and a verifier.

  A task also carries what ``splits`` records of it: ``key_description`` (what makes
  two prompts the same problem) and ``near_description`` (when two distinct problems
  are near), in words, beside the arrays that compute them (``problem_keys``,
  ``prompt_key``, ``near_signatures``).
  """

  @property
  def name(self) -> str:
    """The registry name (``config.task.name``)."""
    ...

  @property
  def prompt_len(self) -> int:
    """Characters of every prompt (prompts batch without padding)."""
    ...

  @property
  def completion_len(self) -> int:
    """Generation budget in tokens, EOS included."""
    ...

  @property
  def key_description(self) -> str:
    """What makes two prompts the same problem (recorded in ``split.json``)."""
    ...

  @property
  def near_description(self) -> str:
    """When two distinct problems are near (recorded in ``split.json``)."""
    ...

  def sample_problems(self, rng: np.random.Generator, num: int) -> np.ndarray:
    """``[num, F]`` int64: one row per problem, a deterministic function of ``rng``'s state."""
    ...

  def problem_keys(self, problems: np.ndarray) -> np.ndarray:
    """``[num]`` int64 canonical keys of rows of ``sample_problems``."""
    ...

  def example(self, problem: np.ndarray) -> Example:
    """Prompt and reference solution of one row."""
    ...

  def prompt_key(self, prompt: str) -> int:
    """The key of the problem a prompt poses (ValueError if it poses none)."""
    ...

  def key_text(self, key: int) -> str:
    """A readable canonical form of a key."""
    ...

  def near_signatures(self, keys: np.ndarray) -> np.ndarray:
    """``[num, m]`` int64 signatures of problem keys: two problems are *near* (the
    same problem but for one component) exactly when they share a signature. A key
    shares all its signatures with itself."""
    ...

  def score(self, prompt: str, completion: str) -> Score:
    """Both rewards of ``completion`` (text) for ``prompt``."""
    ...


@runtime_checkable
class AnswerIndexed(Protocol):
  """A task that indexes which reference solutions solve which problems (optional).

  ``answer_overlap`` uses it to find, without scoring every pair, the held-out
  problems that a warm-start solution string solves. The contract, for every row
  ``r`` of ``sample_problems`` and problem key ``k``: ``example(r).solution`` scores
  ``binary`` 1 on every prompt with key ``k`` exactly when
  ``answer_signatures(r)`` is among ``solver_signatures(k)``. A task without these
  methods is measured by scoring every distinct solution on every problem.
  """

  def answer_signatures(self, problems: np.ndarray) -> np.ndarray:
    """``[num]`` int64: what decides which problems each row's reference solution
    solves (>= 0)."""
    ...

  def solver_signatures(self, keys: np.ndarray) -> np.ndarray:
    """``[num, m]`` int64: the answer signatures of the reference solutions that solve
    each problem key (repeats allowed)."""
    ...


def accepted_rows(
  draw: Callable[[np.random.Generator, int], tuple[np.ndarray, np.ndarray]],
  rng: np.random.Generator,
  num: int,
  name: str,
  oversample: int,
) -> np.ndarray:
  """The first ``num`` valid rows of repeated ``draw(rng, size) -> (rows, valid)``.

  Each round draws ``oversample`` times the rows still missing, plus 8, so that a
  task accepting about 1/oversample of its draws rarely needs a second round.

  Raises:
    RuntimeError: if 1000 rounds leave fewer than ``num`` valid rows.
  """
  rows, valid = draw(rng, oversample * num + 8)
  parts, have, rounds = [rows[valid]], int(valid.sum()), 1
  while have < num:
    if rounds >= 1000:
      raise RuntimeError(f"Task {name} drew only {have} valid problems in {rounds} rounds.")
    rows, valid = draw(rng, oversample * (num - have) + 8)
    parts.append(rows[valid])
    have += int(valid.sum())
    rounds += 1
  return np.concatenate(parts)[:num]


def check_integer(value: int, name: str, minimum: int = 1) -> None:
  """ValueError naming ``name`` unless ``value`` is an integer (not a bool) >= ``minimum``."""
  if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
    raise ValueError(f"{name}={value!r} must be an integer >= {minimum}.")


def check_key(key: int, limit: int) -> int:
  """``key`` as an int; ValueError unless it is an integer in [0, limit)."""
  if isinstance(key, bool) or not isinstance(key, (int, np.integer)) or not 0 <= key < limit:
    raise ValueError(f"key={key!r} is not a problem key of this task (0 <= key < {limit}).")
  return int(key)


def bad_prompt(prompt: str, task: str, why: str) -> ValueError:
  """The error of a prompt that task ``task`` cannot read."""
  return ValueError(f"prompt={prompt!r} is not a {task} prompt: {why}.")
