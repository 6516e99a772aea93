"""experiments.lm_study.answer_shares replays a run's answer-level overlap from its
config.json alone; checked against brute-force scoring of every warm-start solution."""

import json
import os

import numpy as np
import pytest

from experiments.lm import answer_overlap
from experiments.lm import streams
from experiments.lm import tasks as tasks_lib
from experiments.lm.configs import tiny
from experiments.lm_study import answer_shares
from experiments.lm_study import files


def test_replay_equals_brute_force_scoring(tmp_path):
  config = tiny.get_config()
  config.sft.steps = 20
  folder = tmp_path / "run"
  os.makedirs(folder)
  with open(folder / "config.json", "w") as f:
    json.dump(config.to_dict(), f)
  row = answer_shares.replay_share(str(folder))

  task = tasks_lib.make_task(config.task.name, **dict(config.task.kwargs))
  rows = tasks_lib.heldout_problems(task, config.seed, config.eval.num_prompts)
  prompts = [task.example(r).prompt for r in rows]
  sft, _ = streams.training_problems(task, config, task.problem_keys(rows))
  solutions = {task.example(r).solution for r in sft}
  seen = [any(task.score(p, s).binary == 1.0 for s in solutions) for p in prompts]
  assert row["problems"] == len(prompts) and row["answer_seen"] == int(np.sum(seen)) > 0
  assert row["share"] == np.mean(seen)
  shares = answer_shares.task_shares([str(folder), str(folder)])
  assert shares == {
    config.task.name: (2 * len(prompts), 2 * int(np.sum(seen)), row["share"], row["share"])
  }
  # The fast path is the one answer_overlap tests against brute force; both agree here.
  assert answer_overlap.answer_seen(task, sft, prompts, brute_force=True).seen.tolist() == seen


def test_a_folder_without_a_full_config_is_left_out(tmp_path):
  folder = tmp_path / "by_hand"
  os.makedirs(folder)
  with open(folder / "config.json", "w") as f:
    json.dump({"task": {"name": "countdown"}, "seed": 0}, f)
  with pytest.raises(files.StudyError, match="cannot be replayed"):
    answer_shares.replay_share(str(folder))
  assert answer_shares.task_shares([str(folder)]) == {}
