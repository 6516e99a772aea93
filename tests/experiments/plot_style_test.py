"""The shared figure style: fixed colours per name, legible sizes, saving."""

import os
import subprocess
import sys

import matplotlib
import pytest

from experiments import estimators as estimators_lib
from experiments import objectives
from experiments import plot_style
import maxk
from tests import REPO_ROOT

matplotlib.use("Agg")


def _png_width(path):
  with open(path, "rb") as f:
    return int.from_bytes(f.read(24)[16:20], "big")


def test_every_estimator_and_baseline_has_its_own_fixed_colour():
  names = [
    *(e.name for e in estimators_lib.ESTIMATORS.values()),
    *maxk.BASELINES,
    "ppo_clip",
    "base",
  ]
  for name in names:
    assert name in plot_style.colors(), name
  for e in estimators_lib.ESTIMATORS.values():  # The registry's colour and marker.
    assert (plot_style.color(e.name), plot_style.marker(e.name)) == (e.color, e.marker)
  for objective in objectives.OBJECTIVES:
    colours = [plot_style.color(n) for n in estimators_lib.names(objective)]
    assert len(set(colours)) == len(colours), objective  # Told apart within one figure.
  # Namesakes of different objectives (the rank objectives' baselines) share a style.
  assert plot_style.color("loo") == estimators_lib.get("loo", "min").color
  # Aliases share their estimator's colour; a label keeps its estimator's colour.
  assert plot_style.color("exact") == plot_style.color("off_policy_exact")
  assert plot_style.color("first_order") == plot_style.color("off_policy_first_order")
  assert plot_style.color("loo_minus_one k=8:200:1") == plot_style.color("loo_minus_one")
  assert plot_style.color("grpo, k_opt=4") == plot_style.color("grpo")
  assert plot_style.marker("loo k=2") == plot_style.marker("loo")


@pytest.mark.slow  # Integration: a binary in a subprocess (README's second test step).
def test_unknown_names_get_a_colour_that_does_not_depend_on_the_process():
  names = ["some_new_estimator", "another one", "x"]
  here = [plot_style.color(n) for n in names]
  assert all(c in plot_style.FALLBACK_PALETTE for c in here)
  code = f"from experiments import plot_style; print([plot_style.color(n) for n in {names!r}])"
  for seed in ("1", "2"):  # Python's str hash() differs between these processes.
    env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": REPO_ROOT}
    proc = subprocess.run(
      [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert proc.stdout.strip() == repr(here)


def test_shades_keep_the_hue_light_to_dark():
  shades = [plot_style.shade("loo_minus_one", i, 4) for i in range(4)]
  assert len(set(shades)) == 4
  lightness = [sum(matplotlib.colors.to_rgb(c)) for c in shades]
  assert lightness == sorted(lightness, reverse=True)
  assert plot_style.shade("grpo", 0, 1) == plot_style.color("grpo")


@pytest.mark.parametrize("nrows, ncols, min_px", [(1, 1, 900), (1, 2, 1000), (2, 5, 1000)])
def test_figures_are_saved_at_a_legible_size(nrows, ncols, min_px, tmp_path):
  fig, axes = plot_style.figure(nrows, ncols, legend_width=2.0)
  assert axes.shape == (nrows, ncols)
  for i, name in enumerate(["none", "loo", "unknown"]):
    axes[0, 0].plot([1, 2], [i, i + 1], label=name, **plot_style.style(name))
  plot_style.legend(fig, axes, title="estimator")
  path = plot_style.save(fig, tmp_path / "sub" / "fig.png")
  assert path == str(tmp_path / "sub" / "fig.png")
  width = _png_width(path)
  assert min_px <= width <= 2600
  assert matplotlib.rcParams["font.size"] >= 10  # figure() applied the style.
