"""Tests for experiments.best_of_n.proxy: best-of-n selected by a noisy proxy score."""

import numpy as np

from experiments.best_of_n import proxy
import maxk

_SETTINGS = dict(seed=3, num_arms=30, sigmas=(0.0, 1.0), t_df=2.0, ns=[1, 2, 8, 32])


def test_rows_are_deterministic_and_the_monte_carlo_check_agrees():
  rows = proxy.rows(**_SETTINGS, num_mc_draws=400)
  assert rows == proxy.rows(**_SETTINGS, num_mc_draws=400)  # Same seed: same numbers.
  assert len(rows) == 2 * 2 * 4 and set(rows[0]) == set(proxy.COLUMNS)
  probs, rewards, _ = proxy.policy(3, 30, (0.0, 1.0), 2.0)
  z = [
    abs(r["true_reward_mc_mean"] - r["true_reward_exact"]) / r["true_reward_mc_stderr"]
    for r in rows
    if r["n"] > 1 or r["sigma"] > 0
  ]
  assert max(z) < 4.5 and np.mean(np.asarray(z) < 2) > 0.8, z
  for r in rows:
    assert r["kl"] <= r["kl_bound"] + 1e-6
    if r["n"] == 1:  # One draw: the base policy's mean reward, and no KL.
      np.testing.assert_allclose(r["true_reward_exact"], probs @ rewards, rtol=1e-5)
      assert abs(r["kl"]) < 1e-6
    if r["sigma"] == 0:  # An exact proxy: the selected reward is max@n.
      want = float(maxk.max_at_k_exact(probs, rewards, r["n"]))
      np.testing.assert_allclose(r["true_reward_exact"], want, rtol=1e-5)
      np.testing.assert_allclose(r["proxy_score_exact"], want, rtol=1e-5)


def test_monte_carlo_breaks_score_ties_uniformly():
  probs = np.array([0.2, 0.3, 0.5])
  rewards = np.array([1.0, 0.0, -1.0])
  scores = np.array([[1.0, 1.0, 0.0]])  # Arms 0 and 1 tie at the top.
  mean, stderr = proxy.monte_carlo(probs, rewards, scores, 3, 20000, np.random.default_rng(0))
  exact = float(maxk.selected_at_k_exact(probs, scores[0], rewards, 3))
  assert abs(mean[0] - exact) < 4 * stderr[0], (mean, exact)


def test_peaks_pick_the_largest_true_reward_per_family_and_sigma():
  def row(errors, sigma, n, value):
    return dict(errors=errors, sigma=sigma, n=n, true_reward_exact=value, kl=0.1 * n)

  rows = [
    row("gaussian", 1.0, 1, 0.0),
    row("gaussian", 1.0, 4, 1.0),
    row("gaussian", 1.0, 16, 2.0),
    row("student_t", 1.0, 1, 0.0),
    row("student_t", 1.0, 4, 1.5),
    row("student_t", 1.0, 16, 0.5),
  ]
  peaks = proxy.peaks(rows)
  assert [(p["errors"], p["peak_n"], p["true_reward_at_n_max"]) for p in peaks] == [
    ("gaussian", 16, 2.0),
    ("student_t", 4, 0.5),
  ]


def test_figure_draws_every_curve(tmp_path):
  rows = proxy.rows(**_SETTINGS, num_mc_draws=2)
  fig = proxy.figure(rows, t_df=2.0)
  assert len(fig.axes) == 3
  assert len(fig.axes[0].get_lines()) >= 2 * 4  # A line and a peak per sigma (+ error bars).
  fig.savefig(tmp_path / "proxy.png")
