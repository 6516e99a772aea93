"""Tests of experiments.lm.reporting (intervals, bins, paired differences) and plotting."""

import csv
import math

import numpy as np
import pytest
from scipy import stats

from experiments.lm import plotting
from experiments.lm import reporting
from experiments.lm import workdir

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
  return reporting.Evaluation(
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
  bins = reporting.difficulty_bins(np.array([0, 1, 2, 3, 4, 5, 10]), 10)
  assert bins.tolist() == ["unsolved", "hard", "hard", "medium", "medium", "medium", "easy"]
  assert reporting.difficulty_bins(np.array([0, 1, 3, 4]), 5).tolist() == [
    "unsolved",
    "hard",  # 1/5 = 0.2 is hard.
    "medium",  # 3/5 = 0.6 is medium.
    "easy",
  ]
  with pytest.raises(ValueError, match="correct_P"):
    reporting.difficulty_bins(np.array([3]), 2)
  with pytest.raises(ValueError, match="n=0"):
    reporting.difficulty_bins(np.array([0]), 0)


def test_rewards_round_trip_exactly():
  rewards = np.array([0.0, 1.0, 2 / 3, 1 / 7, 0.125], np.float32)
  text = reporting.encode_rewards(rewards)
  assert text.split()[:2] == ["0", "1"]
  np.testing.assert_array_equal(reporting.decode_rewards(text), rewards)
  fields = reporting.prompt_fields(
    {"binary": np.array([[1.0, 0.0, 1.0], [0.0, 0.0, 0.0]]), "continuous": np.ones((2, 3)) / 3}
  )
  assert fields["eval_correct"] == [2, 0]
  assert len(fields["eval_rewards"]) == 2


def test_result_rows_have_the_contract_columns_and_intervals_over_prompts():
  rows = reporting.result_rows([BASE, RUN], seed=7)
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
  rows = reporting.paired_rows([BASE, RUN], seed=0)
  assert {(r["a_run"], r["b_run"]) for r in rows} == {("max_at_k", "base")}
  row = next(r for r in rows if r["metric"] == "pass_at_k" and r["k_eval"] == 1)
  mean, lo, hi = _mean_ci([0.5 - 0.0, 0.5 - 0.5, 1.0 - 1.0], low=-1.0)  # A difference.
  assert (row["diff"], row["diff_lo"], row["diff_hi"]) == pytest.approx((mean, lo, hi), abs=1e-6)
  assert reporting.paired_ks(16) == [1, 2, 4, 8, 16]
  assert reporting.paired_ks(12) == [1, 2, 4, 8, 12]
  third = _eval("grpo", [0, 0, 0], np.zeros((3, 2)), k_opt="n/a")
  pairs = {(r["a_run"], r["b_run"]) for r in reporting.paired_rows([BASE, RUN, third], 0)}
  assert pairs == {("max_at_k", "base"), ("grpo", "base"), ("grpo", "max_at_k")}


def test_bins_and_unsolved_rows():
  # Binning counts (independent samples): prompt 0 unsolved, 1 and 2 easy (n = 2).
  bin_correct = np.array([0, 2, 2])
  rows = reporting.bin_rows([BASE, RUN], 0, bin_correct)
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
  unsolved = {r["rl_run"]: r for r in reporting.unsolved_rows([BASE, RUN], 0, np.array([0, 0, 2]))}
  assert unsolved["base"]["num_base_unsolved"] == 2
  assert unsolved["base"]["solved"] == 1  # The base model, sampled again, solves prompt 1.
  assert unsolved["max_at_k"]["solved"] == 2
  assert unsolved["max_at_k"]["solved_fraction"] == pytest.approx(1.0)
  assert unsolved["max_at_k"]["diff_vs_base"] == pytest.approx(0.5)
  assert math.isnan(unsolved["base"]["diff_vs_base"])


@pytest.mark.parametrize(
  "successes, trials", [(0, 5), (5, 5), (0, 7), (3, 7), (7, 7), (1, 1), (40, 64)]
)
def test_solved_fraction_interval_is_wilsons_and_stays_in_0_1(successes, trials):
  want = stats.binomtest(successes, trials).proportion_ci(0.95, method="wilson")
  p, se, lo, hi = reporting.wilson_interval(successes, trials)
  assert p == pytest.approx(successes / trials)
  assert se == pytest.approx(math.sqrt(p * (1 - p) / trials))
  assert (lo, hi) == pytest.approx((want.low, want.high), abs=1e-9)
  assert 0.0 <= lo <= p <= hi <= 1.0


def _record(stage, run, correct, rewards, **extra):
  return {
    "stage": stage,
    "run": run,
    "method": stage if stage == "base" else f"{run}/exact",
    "eval_pass_at_k": [0.0, 0.0],
    "eval_correct": correct,
    "eval_rewards": [reporting.encode_rewards(r) for r in rewards],
    **extra,
  }


def test_final_evaluations_reads_the_log_and_refuses_gaps():
  base = _record("base", "", [0, 1], [[0, 0.5], [1, 0]], bin_correct=[0, 2])
  early = _record("rl", "run", [0, 0], [[0, 0], [0, 0]])
  final = _record("rl", "run", [1, 2], [[1, 0], [1, 1]])
  evals, bin_correct = reporting.final_evaluations([base, early, final], 2, {"run": "4"})
  assert [e.run for e in evals] == ["base", "run"]
  assert evals[1].correct_P.tolist() == [1, 2] and evals[1].k_opt == "4"
  assert bin_correct.tolist() == [0, 2]
  with pytest.raises(workdir.WorkdirError, match=r"lacks the evaluation of \['run'\]"):
    reporting.final_evaluations([base], 2, {"run": "4"})
  bare = {k: v for k, v in final.items() if k != "eval_rewards"}
  with pytest.raises(workdir.WorkdirError, match="lacks per-prompt rewards"):
    reporting.final_evaluations([base, bare], 2, {"run": "4"})
  with pytest.raises(workdir.WorkdirError, match="does not hold 3 rewards per prompt"):
    reporting.final_evaluations([base, final], 3, {"run": "4"})
  no_bins = {k: v for k, v in base.items() if k != "bin_correct"}
  with pytest.raises(workdir.WorkdirError, match="bin_correct"):
    reporting.final_evaluations([no_bins, final], 2, {"run": "4"})


def test_write_reports_and_figures(tmp_path):
  prompts, keys = ["a=", "b=", "c="], ["ka", "kb", "kc"]
  tables = reporting.write_reports(
    str(tmp_path), [BASE, RUN], np.array([0, 1, 2]), seed=3, prompts=prompts, keys=keys
  )
  for name in reporting.FILES:
    with open(tmp_path / name) as f:
      rows = list(csv.DictReader(f))
    assert len(rows) == len(tables[name]) > 0, name
    assert all(r["seed"] == "3" for r in rows), name
    assert "run" not in rows[0], name  # launch.local adds its own run column when gathering.
  with open(tmp_path / "prompts.csv") as f:
    prompt_rows = list(csv.DictReader(f))
  assert len(prompt_rows) == 2 * 3
  row = prompt_rows[1]  # Base, prompt 1.
  assert (row["problem_key"], row["correct"], row["base_bin"]) == ("kb", "1", "medium")
  assert float(row["reward_mean"]) == pytest.approx(0.625) and row["rewards"] == "1 0.25"
  for name, draw in (
    ("pass_at_k.png", lambda p: plotting.plot_pass_at_k(tables["results.csv"], p)),
    ("bins.png", lambda p: plotting.plot_bins(tables["bins.csv"], tables["unsolved.csv"], p)),
  ):
    path = str(tmp_path / name)
    assert draw(path) == path
    with open(path, "rb") as f:
      header = f.read(24)
    width = int.from_bytes(header[16:20], "big")
    assert header[:8] == b"\x89PNG\r\n\x1a\n" and width >= 1000, (name, width)


def test_reward_histogram_counts_every_sample_once():
  rewards = np.array([[0.0, 0.1, 0.1000001, 0.95], [1.0, 0.999999, 0.5, 0.0]], np.float32)
  ev = reporting.Evaluation("r", "rl", "m", "4", np.array([0, 1]), rewards)
  rows = reporting.reward_histogram_rows([ev], seed=0)
  counts = {r["bin"]: r["count"] for r in rows}
  flat = rewards.ravel().astype(np.float64)
  assert counts["0"] == np.sum(flat == 0) == 2 and counts["1"] == 1
  assert counts["(0,0.1]"] == np.sum((flat > 0) & (flat <= np.float32(0.1))) == 1
  assert counts["(0.1,0.2]"] == 1 and counts["(0.4,0.5]"] == 1
  assert counts["(0.9,1)"] == 2  # 0.95 and 0.999999.
  assert sum(counts.values()) == rewards.size
  assert sum(r["fraction"] for r in rows) == 1.0
