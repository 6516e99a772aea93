"""Tests of the study design: power (experiments.lm_study.power), the pilot's readers
(experiments.lm_study.pilot) and the declared rules (experiments.lm_study.design_rules)."""

import json
import math
import os

import numpy as np
import pytest
from scipy import stats

from experiments.lm_study import design_rules
from experiments.lm_study import files
from experiments.lm_study import pilot
from experiments.lm_study import power
from experiments.lm_study import significance

# ------------------------------------------------------------------------ power


def test_variance_components_recover_a_simulated_study():
  """Many simulated studies of known τ² and ω²: the estimates average to the truth
  (τ² up to its truncation at 0, negligible at this τ²)."""
  rng = np.random.default_rng(0)
  tau2, omega2, S, P = 4e-4, 0.04, 8, 128
  between, within = [], []
  for _ in range(4000):
    d = rng.normal(0.0, math.sqrt(tau2), S) + rng.normal(0.0, math.sqrt(omega2 / P), S)
    se = np.full(S, math.sqrt(omega2 / P))
    vc = power.variance_components(d, se, num_problems=P)
    between.append(vc.between)
    within.append(vc.within)
  assert np.mean(within) == pytest.approx(omega2, rel=1e-12)
  assert np.mean(between) == pytest.approx(tau2, rel=0.05)
  assert vc.seed_variance(4 * P) == pytest.approx(vc.between + omega2 / (4 * P))


def test_variance_components_refuse_bad_input():
  with pytest.raises(ValueError, match="diffs_S"):
    power.variance_components([0.1], [0.01], num_problems=128)
  with pytest.raises(ValueError, match="stderrs_S"):
    power.variance_components([0.1, 0.2], [0.01, -0.01], num_problems=128)
  with pytest.raises(ValueError, match="num_problems"):
    power.variance_components([0.1, 0.2], [0.01, 0.01], num_problems=1)


def test_simulated_power_equals_the_noncentral_t_when_the_floor_never_decides():
  """τ² much larger than ω²/P: the floored test is the plain t-test, whose power is
  the noncentral t's (significance.power)."""
  vc = power.VarianceComponents(between=1e-3, within=1e-6, num_seeds=8, num_problems=128)
  for effect, S in ((0.02, 12), (0.03, 8)):
    simulated = power.simulated_power(
      effect, vc, seeds=S, problems=512, alpha=0.0125, draws=40000, seed=1
    )
    exact = significance.power(effect, math.sqrt(vc.seed_variance(512) / S), S - 1, alpha=0.0125)
    assert simulated == pytest.approx(exact, abs=0.012)


def test_simulated_power_keeps_the_level_and_the_floor_only_lowers_power():
  vc = power.VarianceComponents(between=0.0, within=0.04, num_seeds=8, num_problems=128)
  level = power.simulated_power(0.0, vc, seeds=8, problems=128, alpha=0.05, draws=40000)
  assert level <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / 40000)
  floored = power.simulated_power(0.02, vc, seeds=8, problems=128, alpha=0.05, draws=40000)
  unfloored = significance.power(0.02, math.sqrt(vc.seed_variance(128) / 8), 7, alpha=0.05)
  assert floored <= unfloored + 0.01
  # Equivalence at a true difference equal to the margin: at most the level.
  at_margin = power.simulated_power(
    0.02, vc, seeds=8, problems=4096, alpha=0.05, margin=0.02, draws=40000
  )
  assert at_margin <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / 40000)


def test_minimal_detectable_effect_has_the_target_power():
  vc = power.VarianceComponents(between=4e-4, within=0.04, num_seeds=8, num_problems=128)
  mde = power.minimal_detectable_effect(vc, seeds=20, problems=512, alpha=0.0125)
  stderr = math.sqrt(vc.seed_variance(512) / 20)
  assert significance.power(mde, stderr, 19, alpha=0.0125) == pytest.approx(0.8, abs=1e-6)
  # The normal approximation (z quantiles) is a slightly smaller effect.
  z = (stats.norm.ppf(1 - 0.0125 / 2) + stats.norm.ppf(0.8)) * stderr
  assert z < mde < 1.15 * z


def test_design_rows_cost_and_grid():
  vc = {"pass@8": power.VarianceComponents(4e-4, 0.04, 8, 128)}
  cost = power.CostModel(fixed_s=3600.0, per_problem_s=3.6)
  rows = power.design_rows(
    vc, margin=0.02, family=4, seeds=(8, 16), problems=(128, 512), cost=cost, draws=2000
  )
  assert [(r["seeds"], r["problems"]) for r in rows] == [(8, 128), (8, 512), (16, 128), (16, 512)]
  assert rows[3]["hours"] == pytest.approx(16 * (3600 + 3.6 * 512) / 3600)
  # More seeds and problems never lose power (same simulation seed).
  assert rows[3]["power_difference"] > rows[0]["power_difference"]
  assert rows[3]["power_difference_inflated"] < rows[3]["power_difference"]


# ----------------------------------------------------------------- design rules


def test_matched_learning_rate_by_hand():
  # log KL linear in log lr through (1e-4, 1.0) and (5e-5, 0.25): KL = 1e8 lr^2, so
  # KL 0.49 is reached at lr = 7e-5.
  assert design_rules.matched_learning_rate([(1e-4, 1.0), (5e-5, 0.25)], 0.49) == pytest.approx(
    7e-5
  )
  # Bracketed by the lower pair of three.
  lr = design_rules.matched_learning_rate([(1e-4, 1.0), (7e-5, 0.6), (5e-5, 0.4)], 0.5)
  expected = math.exp(
    math.log(5e-5)
    + (math.log(0.5) - math.log(0.4))
    / (math.log(0.6) - math.log(0.4))
    * (math.log(7e-5) - math.log(5e-5))
  )
  assert lr == pytest.approx(float(f"{expected:.1e}"))
  # Below every candidate: extrapolated from the lowest two.
  assert design_rules.matched_learning_rate([(1e-4, 1.0), (5e-5, 0.25)], 0.0625) == pytest.approx(
    2.5e-5
  )
  with pytest.raises(files.StudyError):
    design_rules.matched_learning_rate([(1e-4, 1.0)], 0.5)


def test_matched_kl_level():
  assert design_rules.matched_kl_level([1.2, 0.9, 1.5], fraction=0.75, step=0.05) == pytest.approx(
    0.65
  )
  assert design_rules.matched_kl_level([0.02], fraction=0.75, step=0.05) == pytest.approx(0.05)
  with pytest.raises(files.StudyError):
    design_rules.matched_kl_level([], fraction=0.75, step=0.05)


def _row(contrast, seeds, problems, hours, diff, equiv):
  return {
    "contrast": contrast,
    "seeds": seeds,
    "problems": problems,
    "hours": hours,
    "power_difference": diff,
    "power_equivalence": equiv,
  }


def test_choose_design_takes_the_cheapest_that_meets_the_target():
  rows = [
    _row("pass@8", 16, 512, 20.0, 0.70, 0.60),
    _row("pass@128", 16, 512, 20.0, 0.95, 0.95),
    _row("pass@8", 20, 512, 25.0, 0.82, 0.80),
    _row("pass@128", 20, 512, 25.0, 0.97, 0.97),
    _row("pass@8", 24, 512, 30.0, 0.90, 0.90),
    _row("pass@128", 24, 512, 30.0, 0.99, 0.99),
    _row("pass@8", 40, 512, 50.0, 0.99, 0.99),
    _row("pass@128", 40, 512, 50.0, 1.0, 1.0),
  ]
  chosen = design_rules.choose_design(rows, budget_hours=30)
  assert (chosen["seeds"], chosen["problems"], chosen["meets_target"]) == (20, 512, True)
  # A budget that only affords designs below the target: the most powerful of them.
  chosen = design_rules.choose_design(rows, budget_hours=21)
  assert (chosen["seeds"], chosen["meets_target"]) == (16, False)
  assert chosen["power_difference"] == 0.70 and chosen["power_equivalence"] == 0.60
  with pytest.raises(files.StudyError, match="budget"):
    design_rules.choose_design(rows, budget_hours=1)


def test_primary_components_from_paired_summary_rows():
  row = {
    "task": "countdown",
    "metric": "pass_at_k",
    "k_eval": "8",
    "a_run": "grpo",
    "b_run": "max_at_k_k8",
    "diff_seeds": "0.01 0.03 -0.01",
    "diff_se_seeds": "0.01 0.01 0.01",
  }
  out = design_rules.primary_components(
    [row], task="countdown", a="max_at_k_k8", b="grpo", ks=(8,), num_problems=128
  )
  vc = out["pass@8"]
  assert vc.within == pytest.approx(128 * 1e-4)
  assert vc.between == pytest.approx(max(0.0, np.var([0.01, 0.03, -0.01], ddof=1) - 1e-4))
  with pytest.raises(files.StudyError, match="pass@128"):
    design_rules.primary_components(
      [row], task="countdown", a="max_at_k_k8", b="grpo", ks=(128,), num_problems=128
    )


# ---------------------------------------------------------------------- pilot


def _write_pilot(folder, *, steps=30, every=30):
  os.makedirs(folder)
  config = {"rl": {"learning_rate": 1e-4}, "eval": {"every": every, "num_prompts": 64, "n": 128}}
  with open(os.path.join(folder, "config.json"), "w") as f:
    json.dump(config, f)
  lines, records, t = [], [], 0.0
  for s in range(1, 11):  # SFT: 0.5 s a step.
    t += 0.5
    lines.append(f"I1203 17:00:{t:09.6f} 1 train.py:203] sft step {s}/10 loss 1.0 (x)")
  for s in range(1, steps + 1):  # RL: 2 s a step, and 32 s more when it evaluates.
    t += 2.0 + (32.0 if s % every == 0 else 0.0)
    clock = f"{17 + int(t // 3600):02d}:{int(t % 3600 // 60):02d}:{t % 60:09.6f}"
    lines.append(f"I1203 {clock} 1 train.py:301] rl grpo step {s}/{steps} reward 0.1 (x)")
    record = {"stage": "rl", "run": "grpo", "step": s, "kl_to_warm_start": 0.01 * s}
    if s % every == 0:
      record["eval_pass_at_k"] = [0.1 * (k + 1) / 128 for k in range(128)]
    records.append(record)
  with open(os.path.join(folder, "log.txt"), "w") as f:
    f.write("\n".join(["unrelated line", *lines]) + "\n")
  with open(os.path.join(folder, "metrics.jsonl"), "w") as f:
    f.writelines(json.dumps(r) + "\n" for r in records)


def test_pilot_timing_and_arms(tmp_path):
  folder = str(tmp_path / "lr1e-4")
  _write_pilot(folder)
  timing = pilot.timing(folder)
  assert timing.sft_step == pytest.approx(0.5, abs=1e-6)
  assert timing.rl_step == pytest.approx(2.0, abs=1e-6)
  assert timing.eval_per_problem == pytest.approx(32.0 / 64, abs=1e-6)
  (row,) = pilot.arm_rows([folder], tail=10)
  assert row["run"] == "grpo" and row["learning_rate"] == 1e-4 and row["steps"] == 30
  assert row["final_kl"] == pytest.approx(np.mean([0.01 * s for s in range(21, 31)]))
  assert row["pass@8"] == pytest.approx(0.1 * 8 / 128)
  assert math.isnan(pilot.arm_rows([folder], tail=10, ks=(256,))[0]["pass@256"])
  with pytest.raises(files.StudyError, match="fewer than 40"):
    pilot.arm_rows([folder], tail=40)
  with pytest.raises(files.StudyError, match="config.json"):
    pilot.timing(str(tmp_path))
