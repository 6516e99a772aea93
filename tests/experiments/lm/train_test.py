"""Tests of experiments.lm.train's guards and log schedule: log checks, result completeness,
distributed init; common evaluation keys and a run's own learning rate and KL."""

import csv
import json
import os
import shutil

import jax
import pytest

from experiments.lm import components
from experiments.lm import eval_records
from experiments.lm import log_schedule
from experiments.lm import parallel
from experiments.lm import prompt_records
from experiments.lm import report_rows
from experiments.lm import run_specs
from experiments.lm import stages
from experiments.lm import train
from experiments.lm import validation
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
  keys = log_schedule.logged_keys(config, ["a", "b"], ("rl/b", 2))
  assert keys == [
    ("sft", "", 3),
    ("sft", "", 6),
    ("base", "", 6),
    ("rl", "a", 2),
    ("rl", "a", 3),
    ("rl", "a", 4),
    ("rl", "b", 2),
  ]


def test_checkpoint_evaluations_every_50_of_300_steps_leave_step_0_to_the_base_model():
  config = tiny.get_config("micro")
  config.rl.steps, config.eval.every, config.checkpoint_every, config.log_every = 300, 50, 50, 50
  evaluated = [s for s in range(1, 301) if log_schedule.rl_evaluated(config, s)]
  assert evaluated == [50, 100, 150, 200, 250, 300]
  keys = log_schedule.logged_keys(config, ["grpo"], ("rl/grpo", 300))
  assert [k for k in keys if k[0] == "base"] == [("base", "", config.sft.steps)]
  assert [k[2] for k in keys if k[0] == "rl"] == evaluated


def test_result_rows_refuse_a_missing_final_evaluation():
  runs = run_specs.parse_runs("max_at_k@2,grpo", 2)
  k_labels = {r.name: r.k_label for r in runs}  # As run_outputs.write passes them.
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
  config.rl.runs = ("max_at_k@2:3:1", "max_at_k@2/ppo_clip", "max_at_k@4", "grpo", "rloo")
  config.rl.off_policy = "first_order"
  config.rl.baseline = "loo"
  runs = run_specs.parse_runs(config.rl.runs, 4, off_policy=config.rl.off_policy)
  assert [stages.method_label(config, r) for r in runs] == [
    "max_at_k/loo/anneal/first_order",
    "max_at_k/loo/ppo_clip",
    "max_at_k/loo/first_order",
    "grpo/ppo_clip",
    "rloo/ppo_clip",
  ]
  config.rl.inner_epochs = 1  # On-policy: no off-policy method applies.
  assert [stages.method_label(config, r) for r in runs][:2] == [
    "max_at_k/loo/anneal",
    "max_at_k/loo",
  ]


def _parts(config):
  valid = validation.validate_config(config, device_count=jax.device_count())
  return components.build(valid, parallel.make_mesh(config.num_devices))


def test_common_keys_evaluate_every_step_with_the_base_models_samples():
  """The same parameters evaluated as the base model (step 0) and as RL step 4 (the
  last, with per-prompt rewards) draw the same samples only with eval.common_keys."""
  fields = {}
  for common in (True, False):
    config = tiny.get_config("micro")
    config.eval.common_keys = common
    parts = _parts(config)
    params = parts.init_params
    base = eval_records.base_fields(parts, params)
    final = eval_records.rl_fields(parts, params, params, config.rl.steps)
    middle = eval_records.rl_fields(parts, params, params, 2)
    assert "eval_rewards" not in middle and len(middle["eval_correct"]) == 8  # eval.kl.
    assert base["eval_kl"] == final["eval_kl"] == [0.0] * 8  # The warm start itself.
    fields[common] = base, final
  (base, final), (base_own, final_own) = fields[True], fields[False]
  assert base == base_own  # The base model's key is (EVAL_STREAM, 0) either way.
  assert final["eval_rewards"] == base["eval_rewards"]
  assert final["eval_pass_at_k"] == base["eval_pass_at_k"]
  assert final_own["eval_rewards"] != base["eval_rewards"]


def _rl_records(workdir):
  with open(os.path.join(workdir, "metrics.jsonl")) as f:
    records = [json.loads(line) for line in f]
  return [r for r in records if r["stage"] == "rl"]


def _without_names(record):
  return {k: v for k, v in record.items() if k not in ("run", "method", "crc32")}


def _short_config(runs, **rl):
  config = tiny.get_config("micro")
  config.sft.steps, config.sft.eval_every = 2, 0
  config.rl.steps, config.eval.every, config.checkpoint_every = 2, 1, 1
  config.rl.runs = runs
  config.eval.checkpoint_rewards = True
  config.rl.update(rl)
  return config


@pytest.mark.slow  # Integration: five training runs (README's second test step).
def test_a_runs_own_learning_rate_and_kl_equal_a_whole_config_of_them(tmp_path):
  own, whole = tmp_path / "own", tmp_path / "whole"
  # The config's 1e-3 and 0.05, then its own.
  config = _short_config(("grpo", "grpo[lr=3e-3,kl=0.2]"))
  train.run(config, str(own))
  train.run(_short_config(("grpo",), learning_rate=3e-3, kl_coef=0.2), str(whole))
  records = _rl_records(own)
  default = [r for r in records if r["run"] == "grpo"]
  mine = [r for r in records if r["run"] == "grpo_lr0.003_kl0.2"]
  assert {r["method"] for r in mine} == {"grpo/lr0.003/kl0.2/ppo_clip"}
  assert [_without_names(r) for r in mine] == [_without_names(r) for r in _rl_records(whole)]
  assert mine[-1]["eval_rewards"] != default[-1]["eval_rewards"]  # Their settings matter.
  for steps, kl_coef in ((default, 0.05), (mine, 0.2)):  # loss = pg_loss + kl_coef * kl.
    step = steps[1]  # Step 2: the policy has left the warm start.
    assert step["kl"] > 0
    assert step["loss"] - step["pg_loss"] == pytest.approx(kl_coef * step["kl"], rel=1e-3)
  # checkpoints.csv with eval.checkpoint_rewards: the rewards of every evaluation.
  with open(own / "checkpoints.csv") as f:
    rows = list(csv.DictReader(f))
  assert list(rows[0])[-1] == "rewards" and len(rows) == (1 + 2 * 2) * 8
  first = [r["rewards"] for r in rows if (r["run"], r["step"]) == ("grpo_lr0.003_kl0.2", "1")]
  assert first == mine[0]["eval_rewards"]
  # Resume with the run's own optimiser: drop its last checkpoint, rerun, same log.
  before = {name: (own / name).read_bytes() for name in ("metrics.jsonl", "checkpoints.csv")}
  shutil.rmtree(own / "checkpoints" / "rl_grpo_lr0.003_kl0.2" / "2")
  os.remove(own / "checkpoints.csv")
  train.run(config, str(own))
  assert {name: (own / name).read_bytes() for name in before} == before


def test_pending_stages_resume_from_the_checkpointed_stage_by_name():
  stages = log_schedule.stages(["a", "b"])
  assert stages == ["sft", "base", "rl/a", "rl/b"]
  assert log_schedule.pending(stages, None) == dict.fromkeys(stages, None)
  assert log_schedule.pending(stages, log_schedule.Position("sft", 4)) == {
    "sft": 4,
    "base": None,
    "rl/a": None,
    "rl/b": None,
  }
  assert log_schedule.pending(stages, log_schedule.Position("rl/a", 2)) == {"rl/a": 2, "rl/b": None}
  assert log_schedule.pending(stages, log_schedule.Position("rl/b", 4)) == {"rl/b": 4}
  with pytest.raises(ValueError, match="names no stage"):
    log_schedule.pending(stages, log_schedule.Position("rl/c", 1))
