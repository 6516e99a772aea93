"""Operations on any task's problems: training draws that skip held-out keys, the
held-out evaluation problems, and rewards of a batch of completions."""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence

import numpy as np

from experiments.lm.tasks import base
from experiments.lm.tasks import tokenizer


def _sorted_keys(keys: Collection[int] | np.ndarray) -> np.ndarray:
  """``keys`` as an ascending int64 array (the form ``contains`` searches)."""
  if isinstance(keys, np.ndarray):
    return np.sort(keys.astype(np.int64).ravel())
  return np.sort(np.fromiter(keys, np.int64, count=len(keys)))


def contains(sorted_keys: np.ndarray, keys: np.ndarray) -> np.ndarray:
  """Whether each of ``keys`` is in ``sorted_keys`` (ascending), by binary search."""
  if not len(sorted_keys):
    return np.zeros(keys.shape, bool)
  index = np.minimum(np.searchsorted(sorted_keys, keys), len(sorted_keys) - 1)
  return sorted_keys[index] == keys


def draw_problems(
  task: base.Task,
  rng: np.random.Generator,
  num: int,
  *,
  exclude: Collection[int] | np.ndarray = frozenset(),
  reject: Callable[[np.ndarray], np.ndarray] | None = None,
) -> np.ndarray:
  """``num`` problem rows whose keys are not in ``exclude`` (held-out problem keys)
  and, with ``reject`` (rows -> ``[num]`` bool), for which ``reject`` is False.

  Draws rounds of ``num`` rows and keeps, in order, those with allowed keys, so the
  result is a deterministic function of the generator's state (and of ``reject``,
  which must be a function of the rows only: ``answer_overlap.answer_filter``).
  """
  excluded = _sorted_keys(exclude)
  parts: list[np.ndarray] = []
  have = rounds = 0
  while True:
    rows = task.sample_problems(rng, num)
    rows = rows[~contains(excluded, task.problem_keys(rows))]
    if reject is not None:
      rows = rows[~np.asarray(reject(rows), bool)]
    parts.append(rows)
    have += len(rows)
    rounds += 1
    if have >= num:
      return np.concatenate(parts)[:num]
    if rounds >= 1000:
      raise RuntimeError(
        f"Task {task.name} cannot produce problems outside the {len(excluded)} held-out keys"
        + (" whose reference solutions solve no held-out problem." if reject else ".")
      )


def sample_examples(
  task: base.Task,
  rng: np.random.Generator,
  num: int,
  *,
  exclude: Collection[int] | np.ndarray = frozenset(),
) -> list[base.Example]:
  """``num`` examples whose problem keys are not in ``exclude`` (see ``draw_problems``)."""
  return [task.example(row) for row in draw_problems(task, rng, num, exclude=exclude)]


def heldout_problems(task: base.Task, seed: int, num: int) -> np.ndarray:
  """The evaluation problems: ``num`` rows with distinct keys, from their own stream."""
  base.check_integer(num, "num")
  rng = np.random.default_rng([seed, 7919])
  parts: list[np.ndarray] = []
  seen: set[int] = set()
  rounds = 0
  while sum(len(p) for p in parts) < num:
    rounds += 1
    if rounds > 1000:
      raise RuntimeError(f"Task {task.name} has fewer than {num} distinct problems.")
    rows = task.sample_problems(rng, num)
    keep = []
    for index, key in enumerate(task.problem_keys(rows).tolist()):
      if key not in seen:
        seen.add(key)
        keep.append(index)
    parts.append(rows[keep])
  return np.concatenate(parts)[:num]


def score_batch(
  task: base.Task, prompts: Sequence[str], completion_ids: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
  """Rewards of ``completion_ids [P, n, C]`` for ``prompts [P]``.

  Returns:
    ``(binary, continuous)``, float32 arrays of shape ``[P, n]``.
  """
  num_prompts, n, _ = completion_ids.shape
  binary = np.zeros((num_prompts, n), np.float32)
  continuous = np.zeros((num_prompts, n), np.float32)
  for p in range(num_prompts):
    for i in range(n):
      s = task.score(prompts[p], tokenizer.decode_completion(completion_ids[p, i]))
      binary[p, i], continuous[p, i] = s.binary, s.continuous
  return binary, continuous
