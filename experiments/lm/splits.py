"""Train / evaluation split by problem key, and its record ``split.json``.

The evaluation problems (``evaluation.make_eval_set``: distinct problem keys from
their own random stream) are excluded from every training batch *by key*
(``tasks.draw_problems(..., exclude=keys)``): a training prompt that poses the
same problem as an evaluation prompt in another form (countdown numbers
reordered, addends swapped, the same hidden function shown on other inputs) is
never drawn. Excluding exact prompt strings instead would let the same problems
through in another form.

Training data are a deterministic function of (seed, stage, step): SFT step s
draws ``sft.batch_size`` problems and RL step s ``rl.prompts_per_step`` problems
(shared by every RL run), from the streams of ``streams``. ``make_split`` replays
these draws without a model (3-4 seconds for the paper
config's 768,000 draws on 2 busy CPU cores, nearly all of it the replay), so
``split.json`` records exactly what a run trains on, and a test checks every
shipped config.

Excluding keys keeps the very problems out, not their neighbours: when training
covers most of a small problem universe, most evaluation problems differ from some
training problem in one component only (countdown: the same target and all numbers
but one). ``split.json`` counts them (``near_eval_problems``, ``near_eval_share``,
``near_definition``; the task's ``near_signatures`` say what is near) so that a
held-out score can be read as what it is: generalisation to new problems or to
neighbours of seen ones.

Different problems can also share an answer: ``answer_seen`` marks the evaluation
problems that some warm-start solution string solves verbatim (``answer_overlap``),
``answer_seen_share`` is their share and ``answer_seen_rule`` says what seen means.
With ``config.task.novel_answers`` the SFT draws reject such problems, and the share
is 0 by construction.
"""

from __future__ import annotations

import json
import os
from typing import Any

import ml_collections
import numpy as np

from experiments.lm import answer_overlap
from experiments.lm import streams
from experiments.lm import tasks as tasks_lib

SPLIT_FILE = "split.json"


def _distinct(keys: np.ndarray) -> np.ndarray:
  """The distinct keys, ascending, by one sort (NumPy 2.4's hash-based ``np.unique``
  takes about a second on 10^6 int64 keys here, a sort about 10 ms)."""
  ordered = np.sort(np.asarray(keys, np.int64).ravel())
  keep = np.ones(ordered.size, bool)
  keep[1:] = ordered[1:] != ordered[:-1]
  return ordered[keep]


def overlap(train_keys: np.ndarray, eval_keys: np.ndarray) -> int:
  """The number of distinct training problems that share a key with an eval problem."""
  eval_keys = _distinct(eval_keys)
  shared = tasks_lib.contains(_distinct(train_keys), eval_keys)
  return int(shared.sum())


def near_eval_problems(
  task: tasks_lib.Task, train_keys: np.ndarray, eval_keys: np.ndarray
) -> np.ndarray:
  """``[E]`` bool: whether each evaluation problem has a near training problem.

  Near: a training problem with another key that shares a near signature
  (``task.near_signatures``). A training problem with the evaluation problem's own
  key does not count (``overlap`` counts those). Costs one ``near_signatures`` call
  on the distinct training keys and a sort of their signatures.
  """
  eval_keys = np.asarray(eval_keys, np.int64)
  train = _distinct(train_keys)
  signatures = np.sort(task.near_signatures(train), axis=1)
  # A signature a key has twice (countdown's 3,3,7 dropping either 3) counts it once.
  first = np.ones(signatures.shape, bool)
  first[:, 1:] = signatures[:, 1:] != signatures[:, :-1]
  values, counts = np.unique(signatures[first], return_counts=True)
  # Training keys per signature of each evaluation problem, less the problem itself.
  if not values.size:
    return np.zeros(eval_keys.shape, bool)
  eval_signatures = task.near_signatures(eval_keys)
  index = np.minimum(np.searchsorted(values, eval_signatures), values.size - 1)
  hits = np.where(values[index] == eval_signatures, counts[index], 0)
  itself = tasks_lib.contains(train, eval_keys).astype(np.int64)
  return np.any(hits - itself[:, None] > 0, axis=1)


def make_split(
  task: tasks_lib.Task, config: ml_collections.ConfigDict, eval_keys: np.ndarray
) -> dict[str, Any]:
  """The JSON-ready record of a run's split (see the module docstring).

  Fields: ``task`` and its ``key`` (``task.key_description``: what makes two
  prompts one problem),
  ``eval_problems`` (readable keys, in evaluation order), the number of SFT and RL
  draws and of distinct problems among them (``distinct_training_problems``: SFT and
  RL together), and ``overlap``: distinct training problems with an evaluation key.
  It is 0 by construction; the record lets anyone check it. ``near_eval_problems``
  counts the evaluation problems with a near training problem (SFT or RL; see
  ``near_eval_problems``), ``near_eval_share`` is their share of the evaluation
  problems and ``near_definition`` (``task.near_description``) says what near means
  for the task.

  At the answer level (``answer_overlap``): ``novel_answers`` (the config's
  ``task.novel_answers``), ``answer_seen`` (per evaluation problem, in evaluation
  order: whether an SFT solution string solves it), ``answer_seen_examples`` (one such
  string, or None), ``answer_seen_share`` and ``answer_seen_rule``. The evaluation
  prompts are replayed from their stream (``tasks.heldout_problems``).

  Raises:
    ValueError: if ``eval_keys`` repeats a key or are not the config's held-out
      problems (``tasks.heldout_problems(task, config.seed, len(eval_keys))``).
  """
  eval_keys = np.asarray(eval_keys, np.int64)
  if _distinct(eval_keys).size != eval_keys.size:
    raise ValueError("eval_keys must be distinct problem keys.")
  eval_rows = tasks_lib.heldout_problems(task, config.seed, eval_keys.size)
  if not np.array_equal(task.problem_keys(eval_rows), eval_keys):
    raise ValueError("eval_keys must be the config's held-out problems, in evaluation order.")
  eval_prompts = [task.example(row).prompt for row in eval_rows]
  reject = answer_overlap.sft_reject(task, config, eval_prompts)
  sft_rows, rl_rows = streams.training_problems(task, config, eval_keys, sft_reject=reject)
  sft, rl = task.problem_keys(sft_rows), task.problem_keys(rl_rows)
  both = np.concatenate([sft, rl])
  near = near_eval_problems(task, both, eval_keys)
  seen = answer_overlap.answer_seen(task, sft_rows, eval_prompts)
  return {
    "task": task.name,
    "key": task.key_description,
    "num_eval_problems": int(eval_keys.size),
    "eval_problems": [task.key_text(int(k)) for k in eval_keys],
    "sft_draws": int(sft.size),
    "rl_draws": int(rl.size),
    "distinct_sft_problems": int(_distinct(sft).size),
    "distinct_rl_problems": int(_distinct(rl).size),
    "distinct_training_problems": int(_distinct(both).size),
    "overlap": overlap(both, eval_keys),
    "near_eval_problems": int(near.sum()),
    "near_eval_share": float(near.mean()) if near.size else 0.0,
    "near_definition": task.near_description,
    "novel_answers": answer_overlap.novel_answers(config),
    "answer_seen": seen.seen.tolist(),
    "answer_seen_examples": seen.examples,
    "answer_seen_share": seen.share,
    "answer_seen_rule": answer_overlap.RULE,
  }


def write_split(workdir: str, split: dict[str, Any]) -> str:
  """Writes ``split`` to ``workdir/split.json`` atomically; returns the path."""
  path = os.path.join(workdir, SPLIT_FILE)
  tmp = path + ".tmp"
  with open(tmp, "w") as f:
    json.dump(split, f, indent=1)
    f.write("\n")
  os.replace(tmp, path)
  return path
