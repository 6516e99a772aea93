"""Tests of experiments.lm.prompt_records: per-prompt rewards and the log's final evaluations."""

import numpy as np
import pytest

from experiments.lm import prompt_records
from experiments.lm import workdir


def test_rewards_round_trip_exactly():
  rewards = np.array([0.0, 1.0, 2 / 3, 1 / 7, 0.125], np.float32)
  text = prompt_records.encode_rewards(rewards)
  assert text.split()[:2] == ["0", "1"]
  np.testing.assert_array_equal(prompt_records.decode_rewards(text), rewards)
  fields = prompt_records.prompt_fields(
    {"binary": np.array([[1.0, 0.0, 1.0], [0.0, 0.0, 0.0]]), "continuous": np.ones((2, 3)) / 3}
  )
  assert fields["eval_correct"] == [2, 0]
  assert len(fields["eval_rewards"]) == 2


def _record(stage, run, correct, rewards, **extra):
  return {
    "stage": stage,
    "run": run,
    "method": stage if stage == "base" else f"{run}/exact",
    "eval_pass_at_k": [0.0, 0.0],
    "eval_correct": correct,
    "eval_rewards": [prompt_records.encode_rewards(r) for r in rewards],
    **extra,
  }


def test_final_evaluations_reads_the_log_and_refuses_gaps():
  base = _record("base", "", [0, 1], [[0, 0.5], [1, 0]], bin_correct=[0, 2])
  early = _record("rl", "run", [0, 0], [[0, 0], [0, 0]])
  final = _record("rl", "run", [1, 2], [[1, 0], [1, 1]])
  evals, bin_correct = prompt_records.final_evaluations([base, early, final], 2, {"run": "4"})
  assert [e.run for e in evals] == ["base", "run"]
  assert evals[1].correct_P.tolist() == [1, 2] and evals[1].k_opt == "4"
  assert bin_correct.tolist() == [0, 2]
  with pytest.raises(workdir.WorkdirError, match=r"lacks the evaluation of \['run'\]"):
    prompt_records.final_evaluations([base], 2, {"run": "4"})
  bare = {k: v for k, v in final.items() if k != "eval_rewards"}
  with pytest.raises(workdir.WorkdirError, match="lacks per-prompt rewards"):
    prompt_records.final_evaluations([base, bare], 2, {"run": "4"})
  with pytest.raises(workdir.WorkdirError, match="does not hold 3 rewards per prompt"):
    prompt_records.final_evaluations([base, final], 3, {"run": "4"})
  no_bins = {k: v for k, v in base.items() if k != "bin_correct"}
  with pytest.raises(workdir.WorkdirError, match="bin_correct"):
    prompt_records.final_evaluations([no_bins, final], 2, {"run": "4"})


def test_checkpoint_rows_hold_every_evaluation_once_per_prompt():
  base = _record("base", "", [0, 1], [[0, 0.5], [1, 0]], step=6, eval_kl=[0.0, 0.0])
  train = {"stage": "rl", "run": "run", "step": 1, "reward": 0.5}  # No evaluation.
  early = _record("rl", "run", [1, 0], [[1, 0], [0, 0]], step=2, eval_kl=[0.25, 0.5])
  del early["eval_rewards"]  # Rewards at the last step only, unless checkpoint_rewards.
  final = _record("rl", "run", [1, 2], [[1, 0], [1, 1]], step=4, eval_kl=[1.0, 0.125])
  records = [{"stage": "sft", "step": 6}, base, train, early, final]
  rows = prompt_records.checkpoint_rows(records, k_labels={"run": "8:2:1"}, seed=3, n_eval=2)
  assert [list(row.values()) for row in rows] == [
    ["base", "base", "", 3, 0, 0, 2, 0, 0.0],
    ["base", "base", "", 3, 0, 1, 2, 1, 0.0],
    ["run", "run/exact", "8:2:1", 3, 2, 0, 2, 1, 0.25],
    ["run", "run/exact", "8:2:1", 3, 2, 1, 2, 0, 0.5],
    ["run", "run/exact", "8:2:1", 3, 4, 0, 2, 1, 1.0],
    ["run", "run/exact", "8:2:1", 3, 4, 1, 2, 2, 0.125],
  ]
  assert list(rows[0]) == list(prompt_records.CHECKPOINT_COLUMNS)
  with pytest.raises(workdir.WorkdirError, match="evaluation of run at step 2 lacks"):
    prompt_records.checkpoint_rows(records, k_labels={"run": "8"}, seed=3, n_eval=2, rewards=True)
  early["eval_rewards"] = ["1 0", "0 0"]
  rows = prompt_records.checkpoint_rows(
    records, k_labels={"run": "8"}, seed=3, n_eval=2, rewards=True
  )
  assert [row["rewards"] for row in rows] == ["0 0.5", "1 0", "1 0", "0 0", "1 0", "1 1"]
  no_kl = {k: v for k, v in final.items() if k != "eval_kl"}
  with pytest.raises(workdir.WorkdirError, match="eval_kl"):
    prompt_records.checkpoint_rows([base, no_kl], k_labels={"run": "8"}, seed=3, n_eval=2)
  short = {**final, "eval_kl": [1.0]}  # One prompt's KL for two prompts' counts.
  with pytest.raises(workdir.WorkdirError, match="lacks per-prompt"):
    prompt_records.checkpoint_rows([base, short], k_labels={"run": "8"}, seed=3, n_eval=2)
