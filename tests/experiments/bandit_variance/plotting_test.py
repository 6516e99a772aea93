"""Tests for experiments.bandit_variance.plotting: uncertainty on every Monte Carlo number."""

import math

from matplotlib.collections import PolyCollection
import pytest

from experiments import plot_style
from experiments.bandit_variance import plotting


def _row(estimator, n, k, variance, **extra):
  return {
    "policy": "gaussian",
    "objective": "max",
    "estimator": estimator,
    "n": n,
    "k": k,
    "num_replicates": 201,
    "variance": variance,
    "relative_variance": variance / 4,
    "exact_gradient": 2.0,
    "bias": 0.01,
    "stderr": math.sqrt(variance / 201),
    "expected_unbiased": estimator != "grpo",
    **extra,
  }


def test_variance_stderr_normal_theory_or_the_study_s_own():
  # Var of a sample variance of R normal draws: 2 sigma^4 / (R - 1); R = 201: s.e. = s^2 / 10.
  assert plotting.variance_stderr(_row("loo", 4, 1, 3.0)) == pytest.approx(0.3)
  assert plotting.variance_stderr(_row("loo", 4, 1, 3.0, variance_stderr=0.7)) == 0.7
  assert math.isnan(plotting.variance_stderr({"variance": 1.0}))


def test_variance_and_bias_figures_show_uncertainty_in_fixed_colours(tmp_path, monkeypatch):
  rows = [
    _row(name, n, k, 1.0 / n)
    for name in ("none", "loo_minus_one", "grpo")
    for k in (1, 4)
    for n in (4, 8, 16)
    if k <= n
  ]
  figures = {}
  real_save = plot_style.save

  def save(fig, path):
    figures[path] = fig
    return real_save(fig, path)

  monkeypatch.setattr(plot_style, "save", save)
  variance_png = plotting.plot_variance(rows, "gaussian", str(tmp_path / "variance.png"))
  bias_png = plotting.plot_bias(rows, "gaussian", str(tmp_path / "bias.png"))
  top_left = figures[variance_png].axes[0]
  # One line and one +-2 s.e. band per estimator, in its colour of the shared style.
  assert [line.get_color() for line in top_left.lines] == [
    plot_style.color(n) for n in ("none", "loo_minus_one", "grpo")
  ]
  bands = [c for c in top_left.collections if isinstance(c, PolyCollection)]
  assert len(bands) == 3
  # Bias: error bars for every estimator in the bottom row (all estimators).
  bottom_left = figures[bias_png].axes[2]
  assert len(bottom_left.containers) == 3
  assert all(c.has_yerr for c in bottom_left.containers)
  # The legend names each estimator once.
  legend = figures[variance_png].legends[0]
  assert [t.get_text() for t in legend.get_texts()] == ["none", "loo_minus_one", "grpo"]
