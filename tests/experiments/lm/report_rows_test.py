"""Tests of experiments.lm.report_rows: the report's rows, bins, intervals over prompts and
paired differences, against hand-computed values."""

import math

import numpy as np
import pytest

from experiments.lm import prompt_records
from experiments.lm import report_rows

# The first columns of results.csv, in order, as the outputs' contract lists them.
CONTRACT_COLUMNS = [
  "stage",
  "method",
  "k_opt",
  "k_eval",
  "seed",
  "pass_at_k",
  "pass_at_k_lo",
  "pass_at_k_hi",
  "max_at_k",
  "max_at_k_lo",
  "max_at_k_hi",
]
Z95 = 1.959963984540054  # The 0.975 quantile of N(0, 1).


def _eval(run, correct, rewards, stage="rl", k_opt="4"):
  return prompt_records.Evaluation(
    run=run,
    stage=stage,
    method="base" if stage == "base" else f"{run}/exact",
    k_opt="" if stage == "base" else k_opt,
    correct_P=np.asarray(correct),
    rewards_Pxn=np.asarray(rewards, np.float32),
  )


# Three prompts, n = 2 samples each; continuous reward 1 exactly when correct.
BASE = _eval("base", [0, 1, 2], [[0.0, 0.5], [1.0, 0.25], [1.0, 1.0]], stage="base")
RUN = _eval("max_at_k", [1, 1, 2], [[1.0, 0.0], [0.5, 1.0], [1.0, 1.0]])


def _mean_ci(values, low=0.0):
  """Normal 95% interval of the mean, intersected with [low, 1] (the estimates' range)."""
  values = np.asarray(values, np.float64)
  se = values.std(ddof=1) / math.sqrt(len(values))
  return values.mean(), max(low, values.mean() - Z95 * se), min(1.0, values.mean() + Z95 * se)


def test_difficulty_bins_thresholds():
  bins = report_rows.difficulty_bins(np.array([0, 1, 2, 3, 4, 5, 10]), 10)
  assert bins.tolist() == ["unsolved", "hard", "hard", "medium", "medium", "medium", "easy"]
  assert report_rows.difficulty_bins(np.array([0, 1, 3, 4]), 5).tolist() == [
    "unsolved",
    "hard",  # 1/5 = 0.2 is hard.
    "medium",  # 3/5 = 0.6 is medium.
    "easy",
  ]
  with pytest.raises(ValueError, match="correct_P"):
    report_rows.difficulty_bins(np.array([3]), 2)
  with pytest.raises(ValueError, match="n=0"):
    report_rows.difficulty_bins(np.array([0]), 0)


def test_result_rows_have_the_contract_columns_and_intervals_over_prompts():
  rows = report_rows.result_rows([BASE, RUN], seed=7)
  assert list(rows[0])[:11] == CONTRACT_COLUMNS
  assert len(rows) == 4 and all(r["seed"] == 7 for r in rows)
  by = {(r["rl_run"], r["k_eval"]): r for r in rows}
  # Base pass@1 per prompt: c/n = 0, 1/2, 1; pass@2: 0, 1, 1.
  for k, per_prompt in ((1, [0, 0.5, 1]), (2, [0, 1, 1])):
    mean, lo, hi = _mean_ci(per_prompt)
    row = by[("base", k)]
    assert (row["pass_at_k"], row["pass_at_k_lo"], row["pass_at_k_hi"]) == pytest.approx(
      (mean, lo, hi), abs=1e-6
    )
  # Run max@2 per prompt: the max of both samples = 1, 1, 1: no spread.
  row = by[("max_at_k", 2)]
  assert (row["max_at_k"], row["max_at_k_lo"], row["max_at_k_hi"]) == pytest.approx((1, 1, 1))
  # Base max@1 per prompt: mean rewards 0.25, 0.625, 1.
  mean, lo, hi = _mean_ci([0.25, 0.625, 1.0])
  row = by[("base", 1)]
  assert (row["max_at_k"], row["max_at_k_lo"], row["max_at_k_hi"]) == pytest.approx(
    (mean, lo, hi), abs=1e-6
  )


def test_paired_rows_use_per_prompt_differences():
  rows = report_rows.paired_rows([BASE, RUN], seed=0)
  assert {(r["a_run"], r["b_run"]) for r in rows} == {("max_at_k", "base")}
  row = next(r for r in rows if r["metric"] == "pass_at_k" and r["k_eval"] == 1)
  mean, lo, hi = _mean_ci([0.5 - 0.0, 0.5 - 0.5, 1.0 - 1.0], low=-1.0)  # A difference.
  assert (row["diff"], row["diff_lo"], row["diff_hi"]) == pytest.approx((mean, lo, hi), abs=1e-6)
  assert report_rows.paired_ks(16) == [1, 2, 4, 8, 16]
  assert report_rows.paired_ks(12) == [1, 2, 4, 8, 12]
  third = _eval("grpo", [0, 0, 0], np.zeros((3, 2)), k_opt="n/a")
  pairs = {(r["a_run"], r["b_run"]) for r in report_rows.paired_rows([BASE, RUN, third], 0)}
  assert pairs == {("max_at_k", "base"), ("grpo", "base"), ("grpo", "max_at_k")}


def test_bins_and_unsolved_rows():
  # Binning counts (independent samples): prompt 0 unsolved, 1 and 2 easy (n = 2).
  bin_correct = np.array([0, 2, 2])
  rows = report_rows.bin_rows([BASE, RUN], 0, bin_correct)
  assert {(r["rl_run"], r["bin"], r["num_problems"]) for r in rows} == {
    ("base", "unsolved", 1),
    ("base", "easy", 2),
    ("max_at_k", "unsolved", 1),
    ("max_at_k", "easy", 2),
  }
  one = next(r for r in rows if (r["rl_run"], r["bin"], r["k_eval"]) == ("max_at_k", "unsolved", 1))
  assert one["pass_at_k"] == pytest.approx(0.5) and math.isnan(one["pass_at_k_lo"])  # 1 prompt.
  easy = next(r for r in rows if (r["rl_run"], r["bin"], r["k_eval"]) == ("base", "easy", 1))
  assert easy["pass_at_k"] == pytest.approx(0.75)  # Prompts 1 and 2: 1/2 and 1.
  unsolved = {
    r["rl_run"]: r for r in report_rows.unsolved_rows([BASE, RUN], 0, np.array([0, 0, 2]))
  }
  assert unsolved["base"]["num_base_unsolved"] == 2
  assert unsolved["base"]["solved"] == 1  # The base model, sampled again, solves prompt 1.
  assert unsolved["max_at_k"]["solved"] == 2
  assert unsolved["max_at_k"]["solved_fraction"] == pytest.approx(1.0)
  assert unsolved["max_at_k"]["diff_vs_base"] == pytest.approx(0.5)
  assert math.isnan(unsolved["base"]["diff_vs_base"])


def test_reward_histogram_counts_every_sample_once():
  rewards = np.array([[0.0, 0.1, 0.1000001, 0.95], [1.0, 0.999999, 0.5, 0.0]], np.float32)
  ev = prompt_records.Evaluation("r", "rl", "m", "4", np.array([0, 1]), rewards)
  rows = report_rows.reward_histogram_rows([ev], seed=0)
  counts = {r["bin"]: r["count"] for r in rows}
  flat = rewards.ravel().astype(np.float64)
  assert counts["0"] == np.sum(flat == 0) == 2 and counts["1"] == 1
  assert counts["(0,0.1]"] == np.sum((flat > 0) & (flat <= np.float32(0.1))) == 1
  assert counts["(0.1,0.2]"] == 1 and counts["(0.4,0.5]"] == 1
  assert counts["(0.9,1)"] == 2  # 0.95 and 0.999999.
  assert sum(counts.values()) == rewards.size
  assert sum(r["fraction"] for r in rows) == 1.0
