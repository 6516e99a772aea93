"""The study's bar and interval figures: pass@1 and pass@n per base-difficulty bin
with the base-unsolved problems solved, the forest plot of paired differences, and
the reward histograms, one label and colour per run
(:mod:`experiments.lm_study.styles`)."""

from __future__ import annotations

from collections.abc import Sequence
import math
from typing import Any

from matplotlib import lines
from matplotlib.figure import Figure
import numpy as np

from experiments import plot_style
from experiments.lm import plotting
from experiments.lm_study import plot_curves
from experiments.lm_study import styles as styles_lib


def study_bins_figure(
  rows: Sequence[dict[str, Any]],
  unsolved: Sequence[dict[str, Any]],
  styles: dict[str, styles_lib.Style],
  title: str,
) -> Figure:
  """Per base-difficulty bin, pass@1 and pass@n of every run (mean over seeds and
  its interval: ``rows`` are summary rows with ``scope`` = bin), and the fraction
  of base-unsolved problems each run solves (``unsolved``: pooled rows)."""
  runs = list(dict.fromkeys(r["rl_run"] for r in rows))
  bins = [b for b in plotting.BIN_ORDER if any(r["scope"] == b for r in rows)]
  n = max(int(r["k_eval"]) for r in rows)
  fig, axes = plot_style.figure(1, 3, figsize=(15.5, 4.6), width_ratios=(1.0, 1.0, 0.8))
  width = 0.8 / max(1, len(runs))
  for ax, k in zip(axes[0, :2], (1, n)):
    for i, run in enumerate(runs):
      lab, color = styles[run].label, styles[run].color
      for j, name in enumerate(bins):
        r = next(
          (x for x in rows if x["rl_run"] == run and x["scope"] == name and int(x["k_eval"]) == k),
          None,
        )
        if r is None:
          continue
        x = j - 0.4 + width * (i + 0.5)
        mean, lo, hi = (float(r[c]) for c in ("pass_at_k", "pass_at_k_lo", "pass_at_k_hi"))
        err = np.nan_to_num([[mean - lo], [hi - mean]], nan=0.0)
        ax.errorbar(
          x,
          mean,
          yerr=err,
          fmt="o",
          color=color,
          markersize=4,
          elinewidth=1.2,
          label=lab if j == 0 else None,
        )
    counts = {
      b: next(r["num_problems_seeds"] for r in rows if r["scope"] == b).replace(" ", "+")
      for b in bins
    }
    ax.set_xticks(range(len(bins)), [f"{b}\n({counts[b]})" for b in bins])
    ax.set_ylim(-0.02, 1.02)
    ax.set_ylabel(f"pass@{k}")
    ax.set_title(f"pass@{k} by base bin (problems per seed)")
  labels = [styles[r["rl_run"]].label for r in unsolved]
  colors = [styles[r["rl_run"]].color for r in unsolved]
  plotting.solved_bars(axes[0, 2], unsolved, colors, labels, text_max=0.85)
  axes[0, 2].set_title(f"base-unsolved problems solved\n(>= 1 of {n} correct; pooled, Wilson)")
  handles, labels_ = axes[0, 0].get_legend_handles_labels()
  fig.suptitle(title)
  fig.legend(
    handles,
    labels_,
    loc="lower center",
    ncol=min(5, len(labels_)),
    frameon=False,
    bbox_to_anchor=(0.5, -0.12),
  )
  fig.tight_layout()
  return fig


# Verdict -> colour of the across-seeds bar in the contrasts figure.
# experiments.lm_study.significance's verdicts: declared contrasts after Holm, then exploratory.
VERDICT_COLORS = {
  "better": "#1f77b4",
  "worse": "#d62728",
  "equivalent": "#2ca02c",
  "not detected": "#bdbdbd",
  "not tested (fewer than 2 seeds)": "#f0f0f0",
  "exploratory, excludes 0": "#9ecae1",
  "exploratory, includes 0": "#e0e0e0",
}


def study_contrasts_figure(
  rows: Sequence[dict[str, Any]],
  contrasts: Sequence[tuple[str, str, str]],
  task: str,
  ks: Sequence[int],
  title: str,
) -> Figure:
  """Forest plot of one task's paired differences a − b: pass@k (top row) and max@k
  (bottom row) at each k of ``ks`` (columns; capped at n), the mean over seeds with
  its floored interval over seeds (thick bar, coloured by ``verdict``) and each seed's
  difference with its interval over problems (thin grey lines).

  ``rows``: paired summary rows; ``contrasts``: (a_run, b_run, label), top to bottom.
  """
  index = {(r["task"], r["a_run"], r["b_run"], r["metric"], int(r["k_eval"])): r for r in rows}
  n = max(int(r["k_eval"]) for r in rows if r["task"] == task)
  metrics = (("pass_at_k", "pass"), ("max_at_k", "max"))
  fig, axes = plot_style.figure(
    len(metrics), len(ks), figsize=(13.0, 1.4 + 0.75 * len(contrasts)), sharey=True
  )
  y = np.arange(len(contrasts))
  for mi, (metric, short) in enumerate(metrics):
    for ki, k in enumerate(ks):
      ax = axes[mi, ki]
      k = min(k, n)
      for i, (a, b, _) in enumerate(contrasts):
        r = index.get((task, a, b, metric, k))
        if r is None:
          continue
        seeds = [float(x) for x in r["diff_seeds"].split()]
        s_lo = [float(x) for x in r["diff_lo_seeds"].split()]
        s_hi = [float(x) for x in r["diff_hi_seeds"].split()]
        for j, (d, lo, hi) in enumerate(zip(seeds, s_lo, s_hi)):
          yy = i + 0.12 + 0.1 * j
          ax.plot([lo, hi], [yy, yy], color="0.55", linewidth=0.8)
          ax.plot([d], [yy], "|", color="0.35", markersize=5)
        mean, lo, hi = (float(r[c]) for c in ("diff", "diff_lo", "diff_hi"))
        if math.isfinite(lo):
          color = VERDICT_COLORS[r["verdict"]]
          ax.plot([lo, hi], [i - 0.12] * 2, color=color, linewidth=5, solid_capstyle="butt")
        ax.plot([mean], [i - 0.12], "o", color="black", markersize=4)
      ax.axvline(0, color="black", linewidth=0.8)
      ax.set_yticks(y, [c[2] for c in contrasts])
      ax.set_title(f"{short}@{k}, a − b")
  axes[0, 0].invert_yaxis()  # The axes share y: this inverts all of them.
  for ax in axes[-1]:
    ax.set_xlabel("paired difference (same problems and sampling keys)")
  handles = [
    lines.Line2D([], [], color=c, linewidth=5, label=f"mean over seeds, floored 95% interval: {v}")
    for v, c in VERDICT_COLORS.items()
  ]
  handles.append(
    lines.Line2D(
      [], [], color="0.55", linewidth=0.8, marker="|", label="each seed, 95% interval over problems"
    )
  )
  fig.suptitle(title)
  fig.legend(
    handles=handles, loc="lower center", ncol=2, frameon=False, bbox_to_anchor=(0.5, -0.06)
  )
  fig.tight_layout()
  return fig


def study_reward_hist_figure(
  rows: Sequence[dict[str, Any]], styles: dict[str, styles_lib.Style], title: str
) -> Figure:
  """Reward histograms of one task's final evaluations: per reward bin (x) one bar
  per evaluation, the fraction of its samples (summed over seeds; ``rows``: the
  study's reward_hist rows of one task), on a log axis so that small bins show."""
  runs = list(dict.fromkeys(r["rl_run"] for r in rows))
  bins = list(dict.fromkeys(r["bin"] for r in rows))
  index = {(r["rl_run"], r["bin"]): float(r["fraction"]) for r in rows}
  fig, axes = plot_style.figure(1, 1, figsize=(13.0, 4.8))
  ax = axes[0, 0]
  width = 0.84 / max(1, len(runs))
  for i, run in enumerate(runs):
    lab, color = styles[run].label, styles[run].color
    x = np.arange(len(bins)) - 0.42 + width * (i + 0.5)
    y = [index.get((run, b), np.nan) for b in bins]
    ax.bar(x, y, width=width, color=color, label=lab)
  ax.set_yscale("log")
  ax.set_xticks(range(len(bins)), bins)
  ax.set_xlabel("continuous reward of a sample")
  ax.set_ylabel("fraction of samples (log)")
  ax.set_title(title)
  handles, labels = ax.get_legend_handles_labels()
  plot_curves.legend_below(fig, handles, labels, -0.08)
  fig.tight_layout()
  return fig
