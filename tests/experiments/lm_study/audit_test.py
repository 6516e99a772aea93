"""Tests of experiments.lm_study.audit: power against simulated t-tests, the
within-seed R² against a regression with seed dummies, and the committed audit's
numbers recomputed from the raw CSV files."""

import csv
import glob
import math
import os

import numpy as np
import pytest
from scipy import stats

from experiments.lm_study import audit_measures
from experiments.lm_study import significance

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
DOCS = os.path.join(_ROOT, "docs", "lm_study_8seed")


def test_power_is_the_rejection_rate_of_simulated_t_tests():
  """d_s ~ N(δ, σ²), S seeds: t = mean / (s / √S) is noncentral t(S − 1, δ√S/σ), so
  the formula with SE = σ/√S must match the simulated two-sided rejection rate."""
  rng = np.random.default_rng(0)
  S, sigma, alpha = 8, 0.03, 0.05 / 16
  t_crit = stats.t.ppf(1 - alpha / 2, S - 1)
  for delta in (0.0, 0.02, 0.05):
    d = rng.normal(delta, sigma, (200_000, S))
    t = d.mean(1) / (d.std(1, ddof=1) / math.sqrt(S))
    rate = np.mean(np.abs(t) > t_crit)
    expected = audit_measures.power(delta, sigma / math.sqrt(S), S - 1, alpha=alpha)
    assert abs(rate - expected) < 4 * math.sqrt(expected * (1 - expected) / 200_000) + 1e-4
  assert audit_measures.power(0.0, 0.01, 7, alpha=0.05) == pytest.approx(0.05)
  with pytest.raises(ValueError, match="se > 0"):
    audit_measures.power(0.01, 0.0, 7, alpha=0.05)


def test_min_detectable_and_seeds_for_power_meet_the_target():
  se, df, alpha = 0.01, 7, 0.05 / 16
  mde = audit_measures.min_detectable(se, df, alpha=alpha)
  assert audit_measures.power(mde, se, df, alpha=alpha) == pytest.approx(0.8, abs=1e-6)
  var = 0.001
  s = audit_measures.seeds_for_power(0.02, var, alpha=alpha)
  powers = [
    audit_measures.power(0.02, math.sqrt(var / n), n - 1, alpha=alpha) for n in range(2, s + 1)
  ]
  assert powers[-1] >= 0.8 and max(powers[:-1]) < 0.8  # The first S that reaches it.
  assert audit_measures.seeds_for_power(1e-6, var, alpha=alpha) is None


def test_floored_se_floors_the_sample_variance():
  row = {"diff_seeds": "0.01 0.01 0.01 0.01", "se_seeds": "0.02 0.02 0.02 0.02"}
  assert audit_measures.floored_se(row) == pytest.approx((math.sqrt(0.0004 / 4), 3, 0.0004))
  row = {"diff_seeds": "0 0.1 0 0.1", "se_seeds": "0 0 0 0"}
  assert audit_measures.floored_se(row)[2] == pytest.approx(np.var([0, 0.1, 0, 0.1], ddof=1))


def _r2_with_seed_dummies(kl, y):
  """R² of y on KL within seeds: least squares of y on KL and one dummy per seed
  (Frisch-Waugh gives the demeaned slope), R² over the within-seed variance."""
  S, A = kl.shape
  X = np.column_stack([kl.ravel(), np.kron(np.eye(S), np.ones((A, 1)))])
  coef, *_ = np.linalg.lstsq(X, y.ravel(), rcond=None)
  resid = y.ravel() - X @ coef
  within = y - y.mean(1, keepdims=True)
  return coef[0], 1 - (resid**2).sum() / (within**2).sum()


def test_within_seed_r2_is_the_regression_with_seed_dummies():
  rng = np.random.default_rng(1)
  kl = rng.uniform(0, 1, (8, 6))
  y = 0.1 * kl + rng.normal(0, 0.02, (8, 6)) + rng.normal(0, 1, (8, 1))  # Seed offsets.
  slope, r2 = audit_measures.within_seed_r2(kl, y)
  assert (slope, r2) == pytest.approx(_r2_with_seed_dummies(kl, y))
  assert audit_measures.within_seed_r2(kl, 2 * kl + 5)[1] == pytest.approx(1.0)
  with pytest.raises(ValueError, match="vary"):
    audit_measures.within_seed_r2(np.ones((3, 2)), kl[:3, :2])


# ------------------------------------------------- the committed audit, recomputed


def _read(path):
  with open(path, newline="") as f:
    return list(csv.DictReader(f))


@pytest.fixture(name="report", scope="module")
def _report():
  with open(os.path.join(DOCS, "README.md")) as f:
    return f.read()


def test_the_audit_opens_the_archived_readme(report):
  lines = report.splitlines()
  assert lines[2] == "## Audit"
  assert report.index("## Audit") < report.index("## Runs")


def test_the_audits_kl_shares_recompute_from_steps_and_results(report):
  """Countdown: the last RL step's kl_to_warm_start of each arm (steps.csv; base 0)
  and final pass@1 and pass@128 (results.csv), R² by the seed-dummy regression."""
  results = _read(os.path.join(DOCS, "results.csv"))
  kl, seeds = {}, []
  for path in sorted(glob.glob(os.path.join(DOCS, "runs", "*countdown*", "steps.csv"))):
    rows = [r for r in _read(path) if r["stage"] == "rl"]
    seed = int(os.path.basename(os.path.dirname(path)).rsplit("-", 1)[1])
    seeds.append(seed)
    for r in rows:
      kl[seed, r["run"]] = float(r["kl_to_warm_start"])  # Rows in step order: the last wins.
  arms = ["base", *sorted({a for _, a in kl})]
  X = np.array([[0.0 if a == "base" else kl[s, a] for a in arms] for s in seeds])
  flat = " ".join(report.split())
  for k in (128, 1):
    value = {
      (r["rl_run"], int(r["seed"])): float(r["pass_at_k"])
      for r in results
      if r["task"] == "countdown" and int(r["k_eval"]) == k
    }
    Y = np.array([[value[a, s] for a in arms] for s in seeds])
    _, with_base = _r2_with_seed_dummies(X, Y)
    _, rl_only = _r2_with_seed_dummies(X[:, 1:], Y[:, 1:])
    expected = f"pass@{k}: {100 * with_base:.0f}% with the base arm, {100 * rl_only:.0f}% across"
    assert expected in flat


def test_the_audits_reward_windows_recompute_from_steps(report):
  """Program GRPO: mean reward over RL steps 1-10 and 111-120, mean over seeds."""
  early, late = [], []
  for path in sorted(glob.glob(os.path.join(DOCS, "runs", "*program*", "steps.csv"))):
    rewards = [float(r["reward"]) for r in _read(path) if r["stage"] == "rl" and r["run"] == "grpo"]
    early.append(np.mean(rewards[:10]))
    late.append(np.mean(rewards[-10:]))
  program = report[report.index("   **program**:") :]
  row = next(line for line in program.splitlines() if line.startswith("   | `grpo"))
  assert f"| {np.mean(early):.3f} [" in row and f"| {np.mean(late):.3f} [" in row


def test_power_integrates_where_scipys_noncentral_t_fails(monkeypatch):
  expected = [
    audit_measures.power(d, 0.01, df, alpha=0.01) for d in (0.0, 0.03, 0.1) for df in (2, 7)
  ]
  monkeypatch.setattr(significance.stats.nct, "sf", lambda *args: math.nan)
  got = [audit_measures.power(d, 0.01, df, alpha=0.01) for d in (0.0, 0.03, 0.1) for df in (2, 7)]
  assert got == pytest.approx(expected, rel=1e-6, abs=1e-9)
