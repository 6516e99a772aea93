"""Tests of experiments.lm.train's guards and log schedule: log checks, result completeness,
distributed init."""

import jax
import pytest

from experiments.lm import log_schedule
from experiments.lm import prompt_records
from experiments.lm import report_rows
from experiments.lm import runs as runs_lib
from experiments.lm import train
from experiments.lm import workdir
from experiments.lm.configs import tiny


def _records(keys):
  return [{"stage": stage, "run": run, "step": step} for stage, run, step in keys]


def test_log_problem():
  expected = [("sft", "", 1), ("sft", "", 2), ("base", "", 2)]
  assert log_schedule.log_problem(_records(expected), expected) is None
  # Records after the checkpoint are dropped, not a problem.
  assert log_schedule.log_problem(_records(expected + [("rl", "grpo", 1)]), expected) is None
  assert log_schedule.log_problem([], []) is None
  assert "holds 0 readable records where 3" in log_schedule.log_problem([], expected)
  assert "holds 2 readable records where 3" in log_schedule.log_problem(
    _records(expected[:2]), expected
  )
  damaged = _records([expected[0], expected[2]])  # A lost line in the middle.
  assert "has record 2 = ('base', '', 2), expected ('sft', '', 2)" in log_schedule.log_problem(
    damaged, expected
  )


def test_logging_schedule():
  config = tiny.get_config("micro")
  config.log_every = 3
  config.eval.every = 2
  assert [s for s in range(1, 7) if log_schedule.sft_logged(config, s)] == [3, 6]
  assert [s for s in range(1, 5) if log_schedule.rl_evaluated(config, s)] == [2, 4]
  assert [s for s in range(1, 5) if log_schedule.rl_logged(config, s)] == [2, 3, 4]
  keys = log_schedule.logged_keys(config, ["a", "b"], (3, 2))
  assert keys == [
    ("sft", "", 3),
    ("sft", "", 6),
    ("base", "", 6),
    ("rl", "a", 2),
    ("rl", "a", 3),
    ("rl", "a", 4),
    ("rl", "b", 2),
  ]


def test_result_rows_refuse_a_missing_final_evaluation():
  runs = runs_lib.parse_runs("max_at_k@2,grpo", 2)
  k_labels = {r.name: r.k_label for r in runs}  # As final_outputs.write passes them.
  base = {
    "stage": "base",
    "method": "base",
    "eval_pass_at_k": [0.1, 0.2],
    "eval_max_at_k": [0.3, 0.4],
    "eval_correct": [0, 1],  # Per-prompt data (prompt_records.prompt_fields), 2 prompts.
    "eval_rewards": ["0 0.5", "1 0"],
    "bin_correct": [0, 1],
  }
  grpo = {**base, "stage": "rl", "run": "grpo", "method": "grpo"}
  with pytest.raises(workdir.WorkdirError, match=r"lacks the evaluation of \['max_at_k_k2'\]"):
    prompt_records.final_evaluations([base, grpo], 2, k_labels)
  full = {**grpo, "run": "max_at_k_k2", "method": "max_at_k/loo_minus_one"}
  evals, _ = prompt_records.final_evaluations([base, grpo, full], 2, k_labels)
  assert len(report_rows.result_rows(evals, 0)) == 6


def test_initialize_distributed_is_idempotent(monkeypatch):
  calls = []
  monkeypatch.setattr(jax.distributed, "initialize", lambda: calls.append(1))
  monkeypatch.setattr(jax.distributed, "is_initialized", lambda: True)  # launch.distributed did.
  train.initialize_distributed(True)
  assert calls == []
  monkeypatch.setattr(jax.distributed, "is_initialized", lambda: False)
  train.initialize_distributed(False)
  assert calls == []
  train.initialize_distributed(True)
  assert calls == [1]


def test_method_labels_name_annealing_and_the_off_policy_method():
  config = tiny.get_config("micro")
  config.rl.runs = "max_at_k@2:3:1,max_at_k@2/ppo_clip,max_at_k@4,grpo,rloo"
  config.rl.off_policy = "first_order"
  config.rl.baseline = "loo"
  runs = runs_lib.parse_runs(config.rl.runs, 4, off_policy=config.rl.off_policy)
  assert [train.method_label(config, r) for r in runs] == [
    "max_at_k/loo/anneal/first_order",
    "max_at_k/loo/ppo_clip",
    "max_at_k/loo/first_order",
    "grpo/ppo_clip",
    "rloo/ppo_clip",
  ]
  config.rl.inner_epochs = 1  # On-policy: no off-policy method applies.
  assert [train.method_label(config, r) for r in runs][:2] == [
    "max_at_k/loo/anneal",
    "max_at_k/loo",
  ]
