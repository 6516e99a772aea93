"""Tests for experiments.best_of_n.frontier: every policy family's win rate vs KL."""

import csv
import json
import os

import numpy as np
import pytest

from experiments.best_of_n import frontier
from experiments.best_of_n import proxy
from experiments.best_of_n import study
from experiments.best_of_n.configs import default
import maxk
from tests import REPO_ROOT

_SETTINGS = dict(seed=2, num_arms=40, sigma=1.0, t_df=2.0, n_max=12, num_points=4, lams=(0.5,))


def test_rows_match_the_library_and_the_figure_draws_both_panels():
  rows, best = frontier.rows(**_SETTINGS)
  assert set(rows[0]) == set(frontier.COLUMNS)
  assert {r["setting"] for r in rows} == set(frontier.SETTINGS)
  assert {r["policy"] for r in rows} == set(frontier.POLICIES)
  probs, rewards, scores = proxy.policy(2, 40, (1.0,), 2.0)
  p32, r32 = probs.astype(np.float32), rewards.astype(np.float32)
  bon = study.select(rows, setting="true", policy="best_of_n")
  assert [r["value"] for r in bon] == list(range(1, 13))
  for r in bon:
    n = int(r["value"])
    np.testing.assert_allclose(r["kl"], maxk.bon_kl(p32, r32, n), rtol=1e-3, atol=1e-5)
    np.testing.assert_allclose(r["win_rate"], maxk.bon_win_rate(p32, r32, n), atol=1e-5)
  assert bon[0]["kl"] < 1e-5 and abs(bon[0]["win_rate"] - 0.5) < 1e-5
  # Under the proxy the true reward is proxy_bon_reward's, and the best n is its argmax.
  s = scores["student_t"][0].astype(np.float32)
  hacked = study.select(rows, setting="proxy", policy="best_of_n")
  values = [float(maxk.proxy_bon_reward(p32, r32, s, int(r["value"]))) for r in hacked]
  np.testing.assert_allclose(study.column(hacked, "true_reward"), values, rtol=1e-5, atol=1e-6)
  assert best["best_n"] == int(np.argmax(values)) + 1
  np.testing.assert_allclose(best["true_reward_at_best_n"], max(values), rtol=1e-5)
  # The chi2 optimum at large beta and the tilt at small beta stay near the reference.
  for policy, pick in (("chi2", max), ("tilt", min)):
    sel = study.select(rows, setting="true", policy=policy)
    near = pick(sel, key=lambda r: r["value"])
    assert near["kl"] < 0.05 and abs(near["win_rate"] - 0.5) < 0.1
  fig = frontier.figure(rows, best, sigma=1.0)
  assert len(fig.axes) == 2 and all(ax.lines for ax in fig.axes)


# The frontier study's outputs at the default config, committed beside README's figure
# (docs/best_of_n_frontier.png): README's numbers are read from these.
_COMMITTED_CSV = os.path.join(REPO_ROOT, "docs", "best_of_n_frontier.csv")
_COMMITTED_BEST = os.path.join(REPO_ROOT, "docs", "best_of_n_frontier_best_n.json")
_TEXT_COLUMNS = ("setting", "policy", "parameter")


def _committed() -> tuple[list[dict[str, object]], dict[str, float]]:
  with open(_COMMITTED_CSV, newline="") as f:
    rows = [
      {k: v if k in _TEXT_COLUMNS else float(v) for k, v in row.items()}
      for row in csv.DictReader(f)
    ]
  with open(_COMMITTED_BEST) as f:
    return rows, json.load(f)


def test_readme_states_the_committed_frontier_numbers():
  rows, best = _committed()

  def family(policy):
    return [r for r in rows if r["setting"] == "proxy" and r["policy"] == policy]

  def peak(policy):
    return max(family(policy), key=lambda r: r["true_reward"])

  bon = family("best_of_n")
  n_max = int(max(r["value"] for r in bon))
  at_best = next(r for r in bon if int(r["value"]) == best["best_n"])
  assert at_best is peak("best_of_n")
  assert at_best["true_reward"] == pytest.approx(best["true_reward_at_best_n"], rel=1e-6)
  bop, chi2, tilt = peak("best_of_poisson"), peak("chi2"), peak("tilt")
  reference = bon[0]["true_reward"]  # n = 1: the reference policy itself
  assert abs(bop["true_reward"] - at_best["true_reward"]) < 0.02  # "as high"
  assert chi2["true_reward"] < at_best["true_reward"]  # "lower"
  assert min(r["true_reward"] for r in family("tilt")) < reference  # "below the reference"
  with open(os.path.join(REPO_ROOT, "README.md"), encoding="utf-8") as f:
    readme = " ".join(f.read().split())
  for phrase in (
    f"peaks at n = {best['best_n']} ({at_best['true_reward']:.3f}, KL {at_best['kl']:.2f})",
    f"falls to {best['true_reward_at_n_max']:.3f} at n = {n_max}",
    f"peaks as high ({bop['true_reward']:.3f} at μ = {bop['value']:g})",
    f"the χ² optimum lower ({chi2['true_reward']:.3f})",
    f"barely gains ({tilt['true_reward']:.3f})",
  ):
    assert phrase in readme


@pytest.mark.slow
def test_committed_frontier_is_what_the_default_config_computes():
  config = default.get_config()
  rows, best = frontier.rows(
    seed=config.seed,
    num_arms=config.proxy_arms,
    sigma=config.frontier_sigma,
    t_df=config.proxy_t_df,
    n_max=config.frontier_n_max,
    num_points=config.frontier_num_points,
    lams=config.frontier_lams,
  )
  committed, committed_best = _committed()
  assert len(rows) == len(committed)
  for row, want in zip(rows, committed):
    assert [row[k] for k in _TEXT_COLUMNS] == [want[k] for k in _TEXT_COLUMNS]
    numbers = [k for k in frontier.COLUMNS if k not in _TEXT_COLUMNS]
    np.testing.assert_allclose(
      [row[k] for k in numbers], [want[k] for k in numbers], rtol=1e-5, atol=1e-6
    )
  assert best["best_n"] == committed_best["best_n"]
  for key in ("true_reward_at_best_n", "true_reward_at_n_max"):
    assert best[key] == pytest.approx(committed_best[key], rel=1e-5)
