"""The study's figures per task, drawn from its computed tables (module docstring of
:mod:`experiments.lm_study.summary`): ``pass_at_k``, ``bins``, ``contrasts``,
``rewards``, from the runs' ``steps.csv`` ``training`` and ``warm_start``, and from
``frontier.csv`` (where the runs hold checkpoints) ``frontier``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
import os
from typing import Any

from matplotlib.figure import Figure

from experiments import plot_style
from experiments.lm_study import frontier
from experiments.lm_study import methods as methods_lib
from experiments.lm_study import plot_bars
from experiments.lm_study import plot_curves
from experiments.lm_study import plot_frontier
from experiments.lm_study import steps as steps_lib
from experiments.lm_study import styles as styles_lib
from experiments.lm_study import training_tables


def pass_at_k_figure(summary: Sequence[dict[str, Any]], task: str) -> Figure:
  """The pass@k figure of ``task`` from summary.csv rows (also a committed
  summary.csv whose run folders are gone)."""
  overall = [r for r in summary if r["task"] == task and r["scope"] == "all"]
  n = max(int(r["k_eval"]) for r in overall)
  methods = methods_lib.methods_of_rows(overall)
  return plot_curves.study_pass_at_k_figure(
    overall,
    styles_lib.pass_at_k_panels(methods),
    styles_lib.run_styles(methods),
    f"{task}: held-out pass@k and max@k, k = 1..{n}, mean over seeds with 95% "
    "t-interval over seeds",
  )


def _evaluation_figures(
  tables: dict[str, list[dict[str, Any]]], task: str
) -> dict[str, Callable[[], Figure]]:
  """file name -> a function drawing it, for the figures of ``task``'s evaluations."""
  mine = [r for r in tables["summary.csv"] if r["task"] == task]
  overall = [r for r in mine if r["scope"] == "all"]
  n = max(int(r["k_eval"]) for r in mine)
  methods = methods_lib.methods_of_rows(overall)
  styles = styles_lib.run_styles(methods)
  paired = [r for r in tables["paired_summary.csv"] if r["task"] == task]
  pairs = methods_lib.key_pairs(
    methods,
    {(r["a_run"], r["b_run"]) for r in paired},
    methods_lib.declared_pairs(tables.get("contrasts.csv", []), task),
  )
  return {
    f"pass_at_k_{task}.png": lambda: pass_at_k_figure(tables["summary.csv"], task),
    f"bins_{task}.png": lambda: plot_bars.study_bins_figure(
      [r for r in mine if r["scope"] != "all"],
      [r for r in tables["unsolved_summary.csv"] if r["task"] == task],
      styles,
      f"{task}: held-out problems by the base model's pass@1 (its own independent samples), "
      "mean over seeds with 95% t-interval over seeds",
    ),
    f"contrasts_{task}.png": lambda: plot_bars.study_contrasts_figure(
      paired,
      pairs,
      task,
      (1, n),
      f"{task}: differences between methods (a − b), paired on the same problems per seed",
    ),
    f"rewards_{task}.png": lambda: plot_bars.study_reward_hist_figure(
      [r for r in tables["reward_hist.csv"] if r["task"] == task],
      styles,
      f"{task}: continuous rewards of the final evaluations' samples, all seeds pooled",
    ),
  }


def _training_figures(
  tables: dict[str, list[dict[str, Any]]], steps: dict[tuple[str, int], steps_lib.Steps], task: str
) -> dict[str, Callable[[], Figure]]:
  """file name -> a function drawing it, for the figures of ``task``'s steps.csv."""
  overall = [r for r in tables["summary.csv"] if r["task"] == task and r["scope"] == "all"]
  methods = methods_lib.methods_of_rows(overall)
  styles = styles_lib.run_styles(methods)
  curves = training_tables.training_curves(steps, task, [c for c, _ in plot_curves.TRAINING_PANELS])
  warm = {seed: s.warm for (t, seed), s in steps.items() if t == task}
  return {
    f"training_{task}.png": lambda: plot_curves.study_training_figure(
      curves,
      styles,
      f"{task}: training curves, mean over seeds with the pointwise 95% t-interval over seeds",
      methods_lib.coinciding_runs(methods.values()),
    ),
    f"warm_start_{task}.png": lambda: plot_curves.study_warm_start_figure(
      warm, training_tables.WARM_TARGET, f"{task}: warm start (SFT), held-out pass@1 per seed"
    ),
  }


def write_figures(
  workdir: str,
  tables: dict[str, list[dict[str, Any]]],
  tasks: Sequence[str],
  steps: dict[tuple[str, int], steps_lib.Steps] | None = None,
) -> list[str]:
  """Draws the figures of every task of ``tasks`` into ``workdir``; returns their
  paths. Without ``steps`` (no run has a steps.csv) there are no training and
  warm-start figures; without frontier.csv rows of a task (no checkpoints.csv) no
  ``frontier_<task>.png``."""
  paths = []
  for task in tasks:
    figures = _evaluation_figures(tables, task)
    if steps and any(t == task for t, _ in steps):
      figures.update(_training_figures(tables, steps, task))
    for name, draw in figures.items():
      paths.append(plot_style.save(draw(), os.path.join(workdir, name)))
    rows = [r for r in tables.get(frontier.FILE, []) if r["task"] == task]
    if rows:
      ks = sorted({int(r["k"]) for r in rows})
      path = os.path.join(workdir, f"frontier_{task}.png")
      paths.append(plot_frontier.plot_frontier(rows, path, ks=ks))
  return paths
