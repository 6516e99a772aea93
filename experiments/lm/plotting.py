"""Figures of the LM experiment, with 95% intervals over prompts as shaded bands.

* ``pass_at_k.png`` (:func:`plot_pass_at_k`): held-out pass@k and max@k against k
  (log axis), the base model and each RL run (rows of ``results.csv``).
* ``bins.png`` (:func:`plot_bins`): pass@k (top) and max@k (bottom) against k within
  each base-difficulty bin (rows of ``bins.csv``), and, on the right, the fraction
  of base-unsolved problems each model solves and the number of problems per bin
  (``unsolved.csv``).

Each estimator keeps its colour of :mod:`experiments.plot_style` (the base model is
black and dashed); several runs of one estimator get shades of it.

The study's figures across seeds are in :mod:`experiments.lm_study.plot_curves` and
:mod:`experiments.lm_study.plot_bars`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from matplotlib import ticker
from matplotlib.axes import Axes
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


def _curves(rows: Sequence[dict[str, Any]], metric: str) -> dict[str, tuple[np.ndarray, ...]]:
  """label -> (k, mean, lo, hi) arrays sorted by k."""
  out: dict[str, list[tuple[float, ...]]] = {}
  for r in rows:
    # A results.csv written before intervals existed has no bounds: no band (NaN).
    columns = ("k_eval", metric, f"{metric}_lo", f"{metric}_hi")
    point = tuple(float(r.get(c, "nan")) for c in columns)
    out.setdefault(label(r), []).append(point)
  return {lab: tuple(np.array(x) for x in zip(*sorted(points))) for lab, points in out.items()}


def _draw(
  ax: Axes,
  rows: Sequence[dict[str, Any]],
  metric: str,
  styles: dict[str, dict[str, Any]],
) -> None:
  """One panel: each label's curve of ``metric`` over k (log axis) and its band."""
  for lab, (ks, mean, lo, hi) in _curves(rows, metric).items():
    style = styles[lab]
    ax.plot(ks, mean, markersize=3, label=lab, **style)
    ax.fill_between(ks, lo, hi, color=style["color"], alpha=0.15, linewidth=0)
  ax.set_xscale("log", base=2)
  ax.xaxis.set_major_formatter(ticker.FuncFormatter(lambda k, _: f"{k:g}"))
  ax.set_xlabel("k (evaluation)")


def solved_bars(
  ax: Axes,
  unsolved: Sequence[dict[str, Any]],
  colors: Sequence[str],
  tick_labels: Sequence[str],
  *,
  text_max: float,
) -> None:
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
  solved_bars(ax, unsolved, colors, [""] * len(unsolved), text_max=0.9)
  total = int(unsolved[0]["num_base_unsolved"]) if unsolved else 0
  ax.set_title(f"base-unsolved problems solved\n(of {total}; >= 1 of n correct)")
  ax = axes[1, -1]
  counts = [int(next(r["num_problems"] for r in rows if r["bin"] == b)) for b in bins]
  ax.bar(bins, counts, color="0.6")
  ax.set_title("problems per base bin")
  fig.suptitle("Held-out problems binned by the base model's pass@1 (95% intervals)")
  plot_style.legend(fig, axes)
  return fig
