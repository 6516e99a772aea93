"""Held out at the answer level: which evaluation problems a warm-start solution solves.

Evaluation problems are held out by problem key (``splits``), yet a different
training problem can share an answer with one: countdown's reference solution
``"3*8"`` of a training problem with numbers 3, 8, 5 and target 24 also solves the
held-out 3, 8, 11 -> 24, and the warm start (SFT) teaches that very string. An
evaluation problem's answer is *seen* when the exact completion string of some SFT
example (``task.example(row).solution`` of a row ``streams.sft_problems`` draws)
scores ``binary`` 1 on it under the task's own verifier (``task.score``).

``answer_seen`` measures it per evaluation problem. A task with an answer index
(``tasks.base.AnswerIndexed``: ``answer_signatures`` of solutions,
``solver_signatures`` of problems) costs one sort of the SFT rows' signatures and a
binary search per evaluation problem (countdown: a solution over the multiset U with
value v solves exactly the problems with target v whose numbers contain U; program:
a reference solution solves its own function only; addition: every problem with
its sum). A task without one is measured by brute force: every distinct solution
string scored on every evaluation problem.

``config.task.novel_answers`` (optional, default False) builds the split so that no
answer is seen: the SFT draws also reject every problem whose reference solution
solves an evaluation problem (``sft_reject``, replayed by ``splits.make_split``), so
``answer_seen`` is all False by construction.

The RL draws are not filtered: RL prompts carry no solution, so the model is never
shown an answer there. What RL reinforces is what the policy itself produced and the
reward accepted, which is the learning the evaluation measures; that an RL problem
can share an answer with an evaluation problem is the neighbour relation ``splits``
already counts (``near_eval_problems``), not an answer given to the model.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
import dataclasses

import ml_collections
import numpy as np

from experiments.lm import tasks as tasks_lib

RULE = (
  "an evaluation problem's answer is seen when the exact solution string of some "
  "warm-start (SFT) example scores binary reward 1 on it under the task's verifier"
)


@dataclasses.dataclass(frozen=True)
class AnswerSeen:
  """Per evaluation problem (in evaluation order): whether a warm-start solution
  string solves it (``seen [E]`` bool) and one such string (``examples [E]``, None
  where none does)."""

  seen: np.ndarray
  examples: list[str | None]

  @property
  def share(self) -> float:
    """The share of evaluation problems whose answer is seen (0 for none)."""
    return float(self.seen.mean()) if self.seen.size else 0.0


def novel_answers(config: ml_collections.ConfigDict) -> bool:
  """``config.task.novel_answers``, False when the config has no such field.

  Raises:
    ValueError: if it is present and not a bool.
  """
  value = config.task.get("novel_answers", False)
  if not isinstance(value, bool):
    raise ValueError(f"config.task.novel_answers={value!r} must be True or False.")
  return value


def _first_rows(signatures: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
  """The distinct signatures, ascending, and the index of the first row with each."""
  order = np.argsort(signatures, kind="stable")
  ordered = signatures[order]
  first = np.ones(ordered.size, bool)
  first[1:] = ordered[1:] != ordered[:-1]
  return ordered[first], order[first]


def _distinct_solutions(task: tasks_lib.Task, problems: np.ndarray) -> list[str]:
  """The distinct reference solutions of ``problems``, in order of first appearance."""
  return list(dict.fromkeys(task.example(row).solution for row in problems))


def _solves(task: tasks_lib.Task, prompt: str, solution: str) -> bool:
  return task.score(prompt, solution).binary == 1.0


def answer_seen(
  task: tasks_lib.Task,
  sft_problems: np.ndarray,
  eval_prompts: Sequence[str],
  *,
  brute_force: bool = False,
) -> AnswerSeen:
  """Which evaluation problems a reference solution of ``sft_problems`` solves.

  Args:
    task: the task.
    sft_problems: ``[N, F]`` rows of the warm start's draws (``streams.training_problems``).
    eval_prompts: ``[E]`` evaluation prompts, in evaluation order.
    brute_force: score every distinct solution string on every prompt even when the
      task has an answer index (the tests' reference; ``E x distinct`` scores).

  Returns:
    ``AnswerSeen``. On the indexed path every example found is scored again by
    ``task.score``.

  Raises:
    RuntimeError: if an indexed example does not score 1 (a broken index).
  """
  prompts = list(eval_prompts)
  examples: list[str | None] = [None] * len(prompts)
  if brute_force or not isinstance(task, tasks_lib.AnswerIndexed):
    solutions = _distinct_solutions(task, sft_problems)
    for e, prompt in enumerate(prompts):
      examples[e] = next((s for s in solutions if _solves(task, prompt, s)), None)
  elif len(sft_problems) and prompts:
    values, rows = _first_rows(task.answer_signatures(sft_problems))
    keys = np.array([task.prompt_key(p) for p in prompts], np.int64)
    wanted = task.solver_signatures(keys)  # [E, m]
    index = np.minimum(np.searchsorted(values, wanted), values.size - 1)
    hit = values[index] == wanted
    for e in np.flatnonzero(hit.any(axis=1)).tolist():
      solution = task.example(sft_problems[rows[index[e, np.argmax(hit[e])]]]).solution
      if not _solves(task, prompts[e], solution):
        raise RuntimeError(
          f"Task {task.name}'s answer index says {solution!r} solves {prompts[e]!r}, "
          "but it does not score 1."
        )
      examples[e] = solution
  seen = np.array([x is not None for x in examples], bool)
  return AnswerSeen(seen=seen, examples=examples)


def answer_filter(
  task: tasks_lib.Task, eval_prompts: Sequence[str], *, brute_force: bool = False
) -> Callable[[np.ndarray], np.ndarray]:
  """``reject(rows) -> [num]`` bool: whether each row's reference solution solves one of
  ``eval_prompts`` (binary 1), a deterministic function of the rows.

  Indexed tasks: a binary search of the rows' answer signatures among the evaluation
  problems' solver signatures. Others (or ``brute_force``): each distinct solution
  is scored on every prompt once and remembered.
  """
  prompts = list(eval_prompts)
  if not brute_force and isinstance(task, tasks_lib.AnswerIndexed):
    keys = np.array([task.prompt_key(p) for p in prompts], np.int64)
    solved = np.sort(task.solver_signatures(keys).ravel()) if prompts else np.zeros(0, np.int64)

    def reject(rows: np.ndarray) -> np.ndarray:
      return tasks_lib.contains(solved, task.answer_signatures(rows))

    return reject

  known: dict[str, bool] = {}

  def reject_by_scoring(rows: np.ndarray) -> np.ndarray:
    out = np.zeros(len(rows), bool)
    for i, row in enumerate(rows):
      solution = task.example(row).solution
      if solution not in known:
        known[solution] = any(_solves(task, p, solution) for p in prompts)
      out[i] = known[solution]
    return out

  return reject_by_scoring


def sft_reject(
  task: tasks_lib.Task, config: ml_collections.ConfigDict, eval_prompts: Sequence[str]
) -> Callable[[np.ndarray], np.ndarray] | None:
  """The SFT draws' ``reject`` (``streams.sft_problems``): ``answer_filter`` of the
  evaluation prompts when ``config.task.novel_answers``, else None (no filter)."""
  return answer_filter(task, eval_prompts) if novel_answers(config) else None
