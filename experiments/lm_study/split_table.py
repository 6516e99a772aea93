"""``splits.csv``: each run's held-out split (its ``split.json``), checked to share no
problem with training."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from experiments.lm_study import files
from experiments.lm_study import loading
from experiments.lm_study import runs as runs_lib

SPLIT_FIELDS = (
  "num_eval_problems",
  "distinct_sft_problems",
  "distinct_rl_problems",
  "distinct_training_problems",
  "overlap",
  "key",
)


# Fields of split.json files written since the near-duplicate count existed; empty
# in splits.csv for older ones.
NEAR_FIELDS = ("near_eval_problems", "near_eval_share", "near_definition")


def split_rows(runs: Sequence[runs_lib.Run]) -> list[dict[str, Any]]:
  """splits.csv: per run, the held-out split's sizes, ``overlap`` and how many
  evaluation problems have a near neighbour among the training problems
  (``near_eval_problems``, ``near_eval_share``, ``near_definition``; empty where
  split.json lacks them), from split.json (no rows when no run has one).

  Raises:
    StudyError: if only some runs have a split.json, one is malformed, or one
      reports training problems that share a key with an evaluation problem
      (``overlap`` > 0).
  """
  out = []
  for run, path in loading.every_or_no_run(runs, "split.json"):
    split = files.read_json(path)
    if not isinstance(split, dict) or not all(f in split for f in SPLIT_FIELDS):
      raise files.StudyError(f"{path} lacks one of the fields {list(SPLIT_FIELDS)}.")
    if split["overlap"] != 0:
      raise files.StudyError(
        f"{path}: {split['overlap']} training problems are evaluation problems."
      )
    out.append(
      {
        "task": run.task,
        "seed": run.seed,
        **{f: split[f] for f in SPLIT_FIELDS},
        **{f: split.get(f, "") for f in NEAR_FIELDS},
      }
    )
  return out
