"""Tests for experiments.best_of_n.plotting."""

import jax
import jax.numpy as jnp
import pytest

from experiments.best_of_n import plotting
from experiments.best_of_n import references
from experiments.best_of_n import study


def test_figures_with_a_single_monte_carlo_draw(tmp_path):
  # Regression: one draw leaves d_n_mc_stderr empty, which the KL figure failed to
  # convert ("could not convert string to float: ''").
  refs = [references.uniform(2), references.cherry_top(6, 0.05)]  # Shapes of study_test.
  probs, rewards = references.pad(refs, jnp.float32)
  rows = study.best_of_n_rows(
    refs, probs, rewards, ns=[1, 2], num_mc_draws=1, key=jax.random.key(0), progress=False
  )
  rows += study.rewind_repeat_rows(
    refs, probs, rewards, thresholds=study.thresholds(refs, 2), max_tries=[None, 2], progress=False
  )
  figures = {
    "kl.png": plotting.kl_vs_n_figure(rows, refs, "title"),
    "gap.png": plotting.kl_gap_figure(rows, refs),
    "win_rate.png": plotting.win_rate_figure(rows, refs, n_max=2),
  }
  assert len(figures["kl.png"].axes) == 2 and len(figures["win_rate.png"].axes) == 2
  # Both try limits and best-of-n, beside the analytic curve.
  assert len(figures["win_rate.png"].axes[0].lines) == 4
  for name, fig in figures.items():
    plotting.save(fig, str(tmp_path / name))
    assert (tmp_path / name).stat().st_size > 1000
  with pytest.raises(ValueError, match="at least one reference"):
    plotting.kl_vs_n_figure(rows, [], "title")
