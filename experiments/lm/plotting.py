"""Figures of the LM experiment, with 95% intervals over prompts as shaded bands.

* ``pass_at_k.png`` (:func:`plot_pass_at_k`): held-out pass@k and max@k against k
  (log axis), the base model and each RL run (rows of ``results.csv``).
* ``bins.png`` (:func:`plot_bins`): pass@k (top) and max@k (bottom) against k within
  each base-difficulty bin (rows of ``bins.csv``), and, on the right, the fraction
  of base-unsolved problems each model solves and the number of problems per bin
  (``unsolved.csv``).

Each estimator keeps its colour of :mod:`experiments.plot_style` (the base model is
black and dashed); several runs of one estimator get shades of it.

The study's figures (``study_*``, drawn by :mod:`experiments.lm.study_summary`) show
means over seeds with intervals over seeds: pass@k / max@k curves, difficulty bins,
paired differences, training curves against the RL step, the warm-start curve, and
reward histograms.
"""

from __future__ import annotations

from collections.abc import Sequence
import math
from typing import Any

from matplotlib import lines
from matplotlib import ticker
from matplotlib.figure import Figure
import numpy as np

from experiments import plot_style

BIN_ORDER = ("unsolved", "hard", "medium", "easy")
_LEGEND_WIDTH = 4.6  # Inches: method labels are long.


def label(row: dict[str, Any]) -> str:
  """The legend label of a row: ``base`` or ``<method>, k_opt=<k>``."""
  if row["stage"] == "base":
    return "base"
  k_opt = str(row.get("k_opt", ""))
  if k_opt in ("", "n/a"):
    return str(row["method"])
  return f"{row['method']}, k_opt={k_opt}"


def _family(method: str) -> str:
  return "base" if method == "base" else str(method).split("/")[0]


def _styles(rows: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
  """Plot keyword arguments per label: the estimator's colour, shaded within it."""
  labels = list(dict.fromkeys(label(r) for r in rows))
  families = {lab: _family(r["method"]) for r in rows for lab in [label(r)]}
  styles = {}
  for lab in labels:
    family = families[lab]
    mine = [x for x in labels if families[x] == family]
    index = mine.index(lab)
    if family == "base":
      styles[lab] = {"color": "black", "linestyle": "--", "marker": "o"}
    else:
      styles[lab] = {
        "color": plot_style.shade(family, index, len(mine)),
        "linestyle": plot_style.LINESTYLES[index % len(plot_style.LINESTYLES)],
        "marker": plot_style.marker(family),
      }
  return styles


def _curves(rows: Sequence[dict[str, Any]], metric: str):
  """label -> (k, mean, lo, hi) arrays sorted by k."""
  out: dict[str, list[tuple[float, ...]]] = {}
  for r in rows:
    # A results.csv written before intervals existed has no bounds: no band (NaN).
    columns = ("k_eval", metric, f"{metric}_lo", f"{metric}_hi")
    point = tuple(float(r.get(c, "nan")) for c in columns)
    out.setdefault(label(r), []).append(point)
  return {lab: tuple(np.array(x) for x in zip(*sorted(points))) for lab, points in out.items()}


def _draw(ax, rows, metric, styles) -> None:
  for lab, (ks, mean, lo, hi) in _curves(rows, metric).items():
    style = styles[lab]
    ax.plot(ks, mean, markersize=3, label=lab, **style)
    ax.fill_between(ks, lo, hi, color=style["color"], alpha=0.15, linewidth=0)
  ax.set_xscale("log", base=2)
  ax.xaxis.set_major_formatter(ticker.FuncFormatter(lambda k, _: f"{k:g}"))
  ax.set_xlabel("k (evaluation)")


def _solved_bars(ax, unsolved, colors, tick_labels, *, text_max: float) -> None:
  """Horizontal bars of the fraction of base-unsolved problems each row solves, with
  its interval and the count right of it (at most ``text_max`` along x), top down."""
  mean = np.array([float(r["solved_fraction"]) for r in unsolved])
  lo = np.array([float(r["solved_fraction_lo"]) for r in unsolved])
  hi = np.array([float(r["solved_fraction_hi"]) for r in unsolved])
  y = np.arange(len(unsolved))
  err = np.nan_to_num(np.stack([mean - lo, hi - mean]), nan=0.0)
  ax.barh(y, np.nan_to_num(mean), xerr=err, color=list(colors), error_kw={"ecolor": "0.45"})
  for i, r in enumerate(unsolved):  # The count, right of the bar and its interval.
    right = np.nanmax([mean[i], hi[i], 0.0])
    ax.text(min(right + 0.02, text_max), i, f"{r['solved']}/{r['num_base_unsolved']}", va="center")
  ax.set_yticks(y, list(tick_labels))
  ax.invert_yaxis()
  ax.set_xlim(0, 1)


def plot_pass_at_k(rows: Sequence[dict[str, Any]], path: str) -> str:
  """Saves :func:`pass_at_k_figure` to ``path``; returns ``path``."""
  return plot_style.save(pass_at_k_figure(rows), path)


def plot_bins(rows: Sequence[dict[str, Any]], unsolved: Sequence[dict[str, Any]], path: str) -> str:
  """Saves :func:`bins_figure` to ``path``; returns ``path``."""
  return plot_style.save(bins_figure(rows, unsolved), path)


def pass_at_k_figure(rows: Sequence[dict[str, Any]]) -> Figure:
  """results.csv rows (dicts, values as numbers or CSV strings): one line and 95% band
  per (stage, method, k_opt), pass@k and max@k against k."""
  styles = _styles(rows)
  fig, axes = plot_style.figure(1, 2, legend_width=_LEGEND_WIDTH)
  for ax, metric, name in zip(
    axes[0], ("pass_at_k", "max_at_k"), ("pass@k (binary reward)", "max@k (continuous reward)")
  ):
    _draw(ax, rows, metric, styles)
    ax.set_ylabel(name)
  num = rows[0].get("num_prompts", "?")
  fig.suptitle(f"Held-out pass@k / max@k, {num} problems (unbiased estimates, 95% intervals)")
  plot_style.legend(fig, axes)
  return fig


def bins_figure(rows: Sequence[dict[str, Any]], unsolved: Sequence[dict[str, Any]]) -> Figure:
  """bins.csv rows (per bin: pass@k and max@k vs k) and unsolved.csv rows."""
  bins = [b for b in BIN_ORDER if any(r["bin"] == b for r in rows)]
  styles = _styles(rows)
  fig, axes = plot_style.figure(2, len(bins) + 1, legend_width=_LEGEND_WIDTH)
  for j, name in enumerate(bins):
    mine = [r for r in rows if r["bin"] == name]
    count = int(mine[0]["num_problems"])
    for i, metric in enumerate(("pass_at_k", "max_at_k")):
      _draw(axes[i, j], mine, metric, styles)
      axes[i, j].set_title(f"{name} ({count} problems)")
      axes[i, j].set_ylim(-0.02, 1.02)
    axes[0, j].set_ylabel("pass@k")
    axes[1, j].set_ylabel("max@k")
  ax = axes[0, -1]
  colors = [styles[label(r)]["color"] for r in unsolved]
  _solved_bars(ax, unsolved, colors, [""] * len(unsolved), text_max=0.9)
  total = int(unsolved[0]["num_base_unsolved"]) if unsolved else 0
  ax.set_title(f"base-unsolved problems solved\n(of {total}; >= 1 of n correct)")
  ax = axes[1, -1]
  counts = [int(next(r["num_problems"] for r in rows if r["bin"] == b)) for b in bins]
  ax.bar(bins, counts, color="0.6")
  ax.set_title("problems per base bin")
  fig.suptitle("Held-out problems binned by the base model's pass@1 (95% intervals)")
  plot_style.legend(fig, axes)
  return fig


# --------------------------------------------------------------- the seed study
# Figures of experiments.lm.study_summary: means over seeds with their across-seeds
# intervals. Each panel holds one question's runs, with its own legend, so that no
# panel has more than five bands.

# (panel title, [(rl_run, legend label, colour, line style)]).
STUDY_PANELS = (
  (
    "estimators",
    [
      ("base", "base (warm start)", "#000000", "--"),
      ("grpo", "GRPO", plot_style.color("grpo"), "-"),
      ("rloo", "RLOO", plot_style.color("rloo"), "-"),
      ("max_at_k_k1", "max@k, k_opt=1", plot_style.shade("max_at_k", 0, 3), "-"),
      ("max_at_k_k8", "max@k, k_opt=8", plot_style.shade("max_at_k", 2, 3), "-"),
    ],
  ),
  (
    "k_opt and annealing",
    [
      ("base", "base (warm start)", "#000000", "--"),
      ("max_at_k_k1", "k_opt=1", plot_style.shade("max_at_k", 0, 3), "-"),
      ("max_at_k_k4", "k_opt=4", plot_style.shade("max_at_k", 1, 3), "-"),
      ("max_at_k_k8", "k_opt=8", plot_style.shade("max_at_k", 2, 3), "-"),
      ("max_at_k_k8-60-1", "annealed 8 -> 1", plot_style.color("top_m"), "-."),
    ],
  ),
  (
    "off-policy weights, k_opt=4",
    [
      ("base", "base (warm start)", "#000000", "--"),
      ("max_at_k_k4", "exact", plot_style.color("exact"), "-"),
      ("max_at_k_k4_first_order", "first-order", plot_style.color("first_order"), "-"),
      ("max_at_k_k4_ppo_clip", "PPO-clip", plot_style.color("ppo_clip"), "-"),
    ],
  ),
)


# Labels of runs shown outside their panel's context (the bins figure, one legend).
_STANDALONE_LABELS = {
  "max_at_k_k4": "max@k, k_opt=4 (exact)",
  "max_at_k_k8-60-1": "max@k, annealed 8 -> 1",
  "max_at_k_k4_first_order": "max@k, k_opt=4, first-order",
  "max_at_k_k4_ppo_clip": "max@k, k_opt=4, PPO-clip",
}


def _study_label_color(run: str) -> tuple[str, str]:
  """A run's standalone label and the colour of its first panel in :data:`STUDY_PANELS`
  (an unknown run: its name and :func:`plot_style.color`)."""
  for _, runs in STUDY_PANELS:
    for name, lab, color, _ in runs:
      if name == run:
        return _STANDALONE_LABELS.get(run, lab), color
  return run, plot_style.color(run)


def study_pass_at_k_figure(rows: Sequence[dict[str, Any]], title: str) -> Figure:
  """Summary rows of one task over all problems (``rl_run``, ``k_eval``, metric and
  ``_lo``/``_hi``): pass@k (top) and max@k (bottom) against k, one column per
  question of :data:`STUDY_PANELS` that holds at least two runs besides base (a panel
  with one would repeat another's curve), every k from 1 to n on a log axis."""
  present = {r["rl_run"] for r in rows}
  panels = [
    (panel, runs)
    for panel, runs in STUDY_PANELS
    if sum(name in present for name, *_ in runs if name != "base") >= 2
  ] or list(STUDY_PANELS[:1])
  n = max(int(r["k_eval"]) for r in rows)
  fig, axes = plot_style.figure(2, len(panels), figsize=(4.8 * len(panels), 7.6), sharey="row")
  for j, (panel, runs) in enumerate(panels):
    for i, metric in enumerate(("pass_at_k", "max_at_k")):
      ax = axes[i, j]
      for name, lab, color, linestyle in runs:
        mine = sorted((r for r in rows if r["rl_run"] == name), key=lambda r: int(r["k_eval"]))
        if not mine:
          continue
        ks = np.array([int(r["k_eval"]) for r in mine])
        mean, lo, hi = (
          np.array([float(r[c]) for r in mine]) for c in (metric, f"{metric}_lo", f"{metric}_hi")
        )
        ax.plot(ks, mean, color=color, linestyle=linestyle, label=lab)
        ax.fill_between(ks, lo, hi, color=color, alpha=0.12, linewidth=0)
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


def study_bins_figure(
  rows: Sequence[dict[str, Any]], unsolved: Sequence[dict[str, Any]], title: str
) -> Figure:
  """Per base-difficulty bin, pass@1 and pass@n of every run (mean over seeds and
  its interval: ``rows`` are summary rows with ``scope`` = bin), and the fraction
  of base-unsolved problems each run solves (``unsolved``: pooled rows)."""
  runs = list(dict.fromkeys(r["rl_run"] for r in rows))
  bins = [b for b in BIN_ORDER if any(r["scope"] == b for r in rows)]
  n = max(int(r["k_eval"]) for r in rows)
  fig, axes = plot_style.figure(1, 3, figsize=(15.5, 4.6), width_ratios=(1.0, 1.0, 0.8))
  width = 0.8 / max(1, len(runs))
  for ax, k in zip(axes[0, :2], (1, n)):
    for i, run in enumerate(runs):
      lab, color = _study_label_color(run)
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
  labels, colors = zip(*(_study_label_color(r["rl_run"]) for r in unsolved))
  _solved_bars(axes[0, 2], unsolved, colors, labels, text_max=0.85)
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
# experiments.lm.contrasts' verdicts: declared contrasts after Holm, then exploratory.
VERDICT_COLORS = {
  "significant": "#1f77b4",
  "not significant": "#bdbdbd",
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


# (steps.csv column, axis label) of the training figure's panels.
TRAINING_PANELS = (
  ("reward", "mean training reward"),
  ("entropy", "token entropy (nats)"),
  ("kl_to_warm_start", "KL(policy || warm start) (nats)"),
  ("clip_frac", "clip fraction (last inner epoch)"),
)


def study_training_figure(
  curves: dict[str, dict[str, tuple[np.ndarray, ...]]], title: str
) -> Figure:
  """One task's training curves against the RL step, a panel per column of
  :data:`TRAINING_PANELS`: per RL run the mean over seeds and a shaded band
  (``curves``: rl_run -> column -> (step, mean, lo, hi), e.g. the pointwise t-interval
  over seeds; a NaN band is not drawn)."""
  fig, axes = plot_style.figure(2, 2, figsize=(12.0, 7.6))
  for ax, (column, name) in zip(axes.ravel(), TRAINING_PANELS):
    for run, by_column in curves.items():
      lab, color = _study_label_color(run)
      step, mean, lo, hi = by_column[column]
      ax.plot(step, mean, color=color, label=lab, linewidth=1.4)
      ax.fill_between(step, lo, hi, color=color, alpha=0.12, linewidth=0)
    ax.set_xlabel("RL step")
    ax.set_ylabel(name)
  fig.suptitle(title)
  _legend_below(fig, axes[0, 0], -0.05)
  fig.tight_layout()
  return fig


def _legend_below(fig: Figure, ax, offset: float) -> None:
  """One legend of ``ax``'s lines for the whole figure, centred below it."""
  handles, labels_ = ax.get_legend_handles_labels()
  fig.legend(
    handles,
    labels_,
    loc="lower center",
    ncol=min(6, max(1, len(labels_))),
    frameon=False,
    bbox_to_anchor=(0.5, offset),
  )


def study_warm_start_figure(
  warm: dict[int, np.ndarray], target: tuple[float, float], title: str
) -> Figure:
  """The warm-start curve of one task: held-out pass@1 against the SFT step, one thin
  line per seed (``warm``: seed -> ``[E, 2]`` rows (step, pass@1)) and their mean at
  the steps every seed evaluated (bold), with the ``target`` range shaded."""
  fig, axes = plot_style.figure(1, 1)
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


def study_reward_hist_figure(rows: Sequence[dict[str, Any]], title: str) -> Figure:
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
    lab, color = _study_label_color(run)
    x = np.arange(len(bins)) - 0.42 + width * (i + 0.5)
    y = [index.get((run, b), np.nan) for b in bins]
    ax.bar(x, y, width=width, color=color, label=lab)
  ax.set_yscale("log")
  ax.set_xticks(range(len(bins)), bins)
  ax.set_xlabel("continuous reward of a sample")
  ax.set_ylabel("fraction of samples (log)")
  ax.set_title(title)
  _legend_below(fig, ax, -0.08)
  fig.tight_layout()
  return fig
