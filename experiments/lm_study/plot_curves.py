"""The study's curve figures: pass@k and max@k against k, the training curves against
the RL step and the warm-start curve against the SFT step, each a mean over seeds
with its interval over seeds, one label and colour per run
(:mod:`experiments.lm_study.styles`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from matplotlib import lines
from matplotlib import ticker
from matplotlib.axes import Axes
from matplotlib.figure import Figure
import numpy as np

from experiments import plot_style
from experiments.lm_study import styles as styles_lib


def _draw_pass_at_k(
  ax: Axes, rows: Sequence[dict[str, Any]], runs: Sequence[str], metric: str, styles: Any
) -> None:
  """One panel: each run's mean curve of ``metric`` over k and its band."""
  for name in runs:
    mine = sorted((r for r in rows if r["rl_run"] == name), key=lambda r: int(r["k_eval"]))
    if not mine:
      continue
    style = styles[name]
    ks = np.array([int(r["k_eval"]) for r in mine])
    mean, lo, hi = (
      np.array([float(r[c]) for r in mine]) for c in (metric, f"{metric}_lo", f"{metric}_hi")
    )
    ax.plot(ks, mean, color=style.color, linestyle=style.linestyle, label=style.label)
    ax.fill_between(ks, lo, hi, color=style.color, alpha=0.12, linewidth=0)


def study_pass_at_k_figure(
  rows: Sequence[dict[str, Any]],
  panels: Sequence[tuple[str, Sequence[str]]],
  styles: dict[str, styles_lib.Style],
  title: str,
) -> Figure:
  """Summary rows of one task over all problems (``rl_run``, ``k_eval``, metric and
  ``_lo``/``_hi``): pass@k (top) and max@k (bottom) against k, one column per panel
  (title, runs) of ``panels``, every k from 1 to n on a log axis."""
  n = max(int(r["k_eval"]) for r in rows)
  fig, axes = plot_style.figure(2, len(panels), figsize=(4.8 * len(panels), 7.6), sharey="row")
  for j, (panel, runs) in enumerate(panels):
    for i, metric in enumerate(("pass_at_k", "max_at_k")):
      ax = axes[i, j]
      _draw_pass_at_k(ax, rows, runs, metric, styles)
      ax.set_xscale("log", base=2)
      ax.set_xlim(1, n)
      ax.xaxis.set_major_formatter(ticker.FuncFormatter(lambda k, _: f"{k:g}"))
      ax.set_xlabel("k (evaluation)")
      if i == 0:
        ax.set_title(panel)
        ax.legend(loc="lower right", fontsize="small", frameon=False)
      if j == 0:
        ax.set_ylabel(
          "pass@k (binary reward)" if metric == "pass_at_k" else "max@k (continuous reward)"
        )
  fig.suptitle(title)
  fig.tight_layout()
  return fig


# (steps.csv column, axis label) of the training figure's panels.
TRAINING_PANELS = (
  ("reward", "mean training reward"),
  ("entropy", "token entropy (nats)"),
  ("kl_to_warm_start", "KL(policy || warm start) (nats)"),
  ("clip_frac", "clip fraction (last inner epoch)"),
)


def study_training_figure(
  curves: dict[str, dict[str, tuple[np.ndarray, ...]]],
  styles: dict[str, styles_lib.Style],
  title: str,
  coinciding: Sequence[tuple[str, str, int]] = (),
) -> Figure:
  """One task's training curves against the RL step, a panel per column of
  :data:`TRAINING_PANELS`: per RL run the mean over seeds and a shaded band
  (``curves``: rl_run -> column -> (step, mean, lo, hi), e.g. the pointwise t-interval
  over seeds; a NaN band is not drawn). Each (run a, run b, step) of ``coinciding``
  (curves identical up to that step by construction) gets a dotted line at the step
  and a legend entry that says so, since one curve hides the other there."""
  fig, axes = plot_style.figure(2, 2, figsize=(12.0, 7.6))
  for ax, (column, name) in zip(axes.ravel(), TRAINING_PANELS):
    for run, by_column in curves.items():
      style = styles[run]
      step, mean, lo, hi = by_column[column]
      ax.plot(step, mean, color=style.color, label=style.label, linewidth=1.4)
      ax.fill_between(step, lo, hi, color=style.color, alpha=0.12, linewidth=0)
    for a, b, last in coinciding:
      if a in curves and b in curves:
        ax.axvline(last, color="0.3", linestyle=":", linewidth=1.0)
    ax.set_xlabel("RL step")
    ax.set_ylabel(name)
  handles, labels = axes[0, 0].get_legend_handles_labels()
  fig.suptitle(title)
  legend_below(fig, handles, labels, -0.05)
  notes = [
    f"dotted line: step {last}; up to it {styles[a].label} and {styles[b].label} are "
    "identical by construction (same k, prompts and sampling keys), one curve hides the other"
    for a, b, last in coinciding
    if a in curves and b in curves
  ]
  if notes:
    dotted = [lines.Line2D([], [], color="0.3", linestyle=":", linewidth=1.0) for _ in notes]
    fig.legend(dotted, notes, loc="lower center", ncol=1, frameon=False, bbox_to_anchor=(0.5, -0.1))
  fig.tight_layout()
  return fig


def legend_below(fig: Figure, handles: list[Any], labels: list[str], offset: float) -> None:
  """One legend for the whole figure, centred below it."""
  fig.legend(
    handles,
    labels,
    loc="lower center",
    ncol=min(6, max(1, len(labels))),
    frameon=False,
    bbox_to_anchor=(0.5, offset),
  )


def study_warm_start_figure(
  warm: dict[int, np.ndarray], target: tuple[float, float], title: str
) -> Figure:
  """The warm-start curve of one task: held-out pass@1 against the SFT step, one thin
  line per seed (``warm``: seed -> ``[E, 2]`` rows (step, pass@1)) and their mean at
  the steps every seed evaluated (bold), with the ``target`` range shaded."""
  # Its legend sits inside the panel, so the saved PNG is the panel cropped to its
  # content: drawn at the multi-panel width to stay >= 900 px wide.
  size = (plot_style.MIN_MULTI_WIDTH, plot_style.PANEL[1] + 0.6)
  fig, axes = plot_style.figure(1, 1, figsize=size)
  ax = axes[0, 0]
  ax.axhspan(*target, color="#2ca02c", alpha=0.12, linewidth=0, label=f"target {list(target)}")
  for _, curve in sorted(warm.items()):
    ax.plot(curve[:, 0], curve[:, 1], color="0.6", linewidth=0.9, marker=".")
  ax.plot([], [], color="0.6", linewidth=0.9, marker=".", label=f"each seed ({len(warm)})")
  common = sorted(set.intersection(*(set(c[:, 0].tolist()) for c in warm.values()))) if warm else []
  if common:
    mean = [np.mean([c[c[:, 0] == s, 1][0] for c in warm.values()]) for s in common]
    ax.plot(common, mean, color="black", linewidth=2.2, label="mean over seeds")
  ax.set_xlabel("SFT step")
  ax.set_ylabel("held-out pass@1 (sampled)")
  ax.set_ylim(bottom=0)
  ax.legend(loc="upper left", frameon=False)
  ax.set_title(title)
  return fig
