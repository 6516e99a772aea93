"""Tests of experiments.lm.dynamics: steps.csv rows from a run's log records."""

from experiments.lm import dynamics


def test_step_rows_follow_the_records():
  records = [
    {"stage": "sft", "step": 1, "loss": 2.0, "grad_norm": 3.0},
    {"stage": "sft", "step": 2, "loss": 1.5, "grad_norm": 2.0, "warm_pass_at_1": 0.25, "warm_n": 4},
    {"stage": "base", "step": 2, "method": "base", "eval_pass_at_k": [0.3]},
    {
      "stage": "rl",
      "run": "a",
      "method": "m",
      "k_opt": 4,
      "step": 1,
      "reward": 0.5,
      "last_clip_frac": 0.1,
      "last_ess_frac": 0.9,
      "grad_clipped": 0.0,
      "train_solved_keys": [5, 7],
    },
    {"stage": "rl", "run": "b", "method": "g", "k_opt": 1, "step": 1, "train_solved_keys": [5]},
    {
      "stage": "rl",
      "run": "a",
      "method": "m",
      "k_opt": 4,
      "step": 2,
      "grad_clipped": 1.0,
      "train_solved_keys": [7, 9],
      "eval_pass_at_k": [0.4, 0.6],
      "eval_max_at_k": [0.5, 0.7],
    },
  ]
  rows = dynamics.step_rows(records)
  assert [(r["stage"], r["run"], r["step"]) for r in rows] == [
    ("sft", "", 1),
    ("sft", "", 2),
    ("rl", "a", 1),
    ("rl", "b", 1),
    ("rl", "a", 2),
  ]
  assert all(list(r) == list(dynamics.STEP_COLUMNS) for r in rows)
  assert rows[0]["warm_pass_at_1"] == "" and rows[1]["warm_pass_at_1"] == 0.25
  assert (rows[2]["clip_frac"], rows[2]["ess_frac"], rows[2]["reward"]) == (0.1, 0.9, 0.5)
  # Distinct keys solved so far, per run: a has {5, 7} then {5, 7, 9}; b has {5}.
  assert [r["solved_cumulative"] for r in rows[2:]] == [2, 1, 3]
  assert (rows[4]["eval_pass_at_1"], rows[4]["eval_max_at_1"]) == (0.4, 0.5)
  assert rows[2]["eval_pass_at_1"] == "" and rows[4]["grad_clipped"] == 1.0
