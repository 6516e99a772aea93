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
  # Bias: error bars for every expected-unbiased estimator in the top row; the bottom row
  # (all estimators) shows each bias in standard errors, z = bias / stderr.
  top_bias = figures[bias_png].axes[0]
  assert len(top_bias.containers) == 2
  assert all(c.has_yerr for c in top_bias.containers)
  bottom_left = figures[bias_png].axes[2]
  assert [line.get_label() for line in bottom_left.lines[:3]] == ["none", "loo_minus_one", "grpo"]
  for line in bottom_left.lines[:3]:
    n = [4, 8, 16]
    want = [0.01 / math.sqrt(1.0 / m / 201) for m in n]
    assert list(line.get_ydata()) == pytest.approx(want)
  # The legend names each estimator once.
  legend = figures[variance_png].legends[0]
  assert [t.get_text() for t in legend.get_texts()] == ["none", "loo_minus_one", "grpo"]


def _bias_figure(rows, tmp_path, monkeypatch):
  figures = []
  real_save = plot_style.save
  monkeypatch.setattr(
    plot_style, "save", lambda fig, path: figures.append(fig) or real_save(fig, path)
  )
  plotting.plot_bias(rows, "gaussian", str(tmp_path / "bias.png"))
  return figures[0]


def test_bias_in_standard_errors_is_not_scaled_by_one_large_point(tmp_path, monkeypatch):
  # The bottom row plots z = bias / stderr on a linear axis from -top to top, top =
  # 1.1 * min(Z_LIMIT, max(3, max |z|)); a point beyond Z_LIMIT sits at the edge, labelled.
  se = math.sqrt(1.0 / 201)
  rows = [
    _row(name, n, 1, 1.0, bias=b * se) for name, b in (("none", -1.4), ("loo", 0.5)) for n in (4, 8)
  ]
  rows += [_row("grpo", 4, 1, 1.0, bias=1.2 * se), _row("grpo", 8, 1, 1.0, bias=2.5 * se)]
  bottom = _bias_figure(rows, tmp_path, monkeypatch).axes[1]
  assert bottom.get_yscale() == "linear"
  assert bottom.get_ylim() == pytest.approx((-3.3, 3.3))
  assert "bias in s.e." in bottom.get_title()
  # One large, noisy point (z = -300) no longer sets the scale: the axis stops at
  # 1.1 * Z_LIMIT and the point is drawn at -Z_LIMIT with its value; the others keep theirs.
  rows[-2]["bias"], rows[-1]["bias"] = 5 * se, -300 * se
  bottom = _bias_figure(rows, tmp_path, monkeypatch).axes[1]
  assert bottom.get_ylim() == pytest.approx((-1.1 * plotting.Z_LIMIT, 1.1 * plotting.Z_LIMIT))
  by_label = {line.get_label(): list(line.get_ydata()) for line in bottom.lines}
  assert by_label["grpo"] == pytest.approx([5.0, -plotting.Z_LIMIT])
  assert by_label["none"] == pytest.approx([-1.4, -1.4])
  assert [t.get_text() for t in bottom.texts] == ["-300"]


def test_coinciding_estimators_are_named_under_the_figures(tmp_path, monkeypatch):
  # max_minus_second equals loo_minus_one at n = k = 4 (same bias and variance up to
  # float rounding), not at n = 8.
  rows = [
    _row(name, n, 4, v, bias=b)
    for name, n, v, b in [
      ("loo_minus_one", 4, 0.5, 0.02),
      ("loo_minus_one", 8, 0.25, 0.01),
      ("max_minus_second", 4, 0.5 * (1 + 1e-7), 0.02 * (1 - 1e-7)),
      ("max_minus_second", 8, 0.5, -0.3),
      ("grpo", 4, 0.5, 0.021),  # a different bias: not the same curve
      ("grpo", 8, 0.26, 0.01),  # a different variance
    ]
  ]
  assert plotting.coinciding(rows) == [("max_minus_second", "loo_minus_one", 4, [4])]
  assert plotting.coinciding([r for r in rows if r["n"] == 8]) == []
  fig = _bias_figure(rows, tmp_path, monkeypatch)
  notes = [t.get_text() for t in fig.texts]
  assert any("max_minus_second = loo_minus_one at k = 4 (n = 4)" in t for t in notes)
  fig = _bias_figure([r for r in rows if r["n"] == 8], tmp_path, monkeypatch)
  assert not any("drawn over each other" in t.get_text() for t in fig.texts)
