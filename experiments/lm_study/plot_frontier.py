"""The frontier figure: pass@k against the held-out KL to the warm start, one panel
per k, from ``frontier.csv``'s rows (:func:`experiments.lm_study.frontier.frontier_rows`).

Per run: the mean over seeds on its KL grid (a line, up to the largest KL every seed
reached) with the pointwise 95% t-interval over seeds (a band), and its evaluated
checkpoints (markers at the mean KL and mean pass@k over seeds), so that how far each
arm moved is visible beside what it reached; the base model is one point at KL 0,
shared by every arm. Colours and labels are the study's
(:mod:`experiments.lm_study.styles`), markers :func:`experiments.plot_style.marker`'s.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
import math
from typing import Any

from matplotlib.axes import Axes

from experiments import plot_style
from experiments.lm_study import methods as methods_lib
from experiments.lm_study import styles as styles_lib


def frontier_styles(
  rows: Sequence[dict[str, Any]], labels: Mapping[str, str] | None = None
) -> dict[str, styles_lib.Style]:
  """run -> :class:`~experiments.lm_study.styles.Style` of the study's runs in
  ``rows``. A run drawn like an earlier one (e.g. a second GRPO at a lower learning
  rate, which the study's styles cannot tell apart) gets the next line style and its
  run name in its label; ``labels`` (run -> label) override any label."""
  methods = methods_lib.methods_of_rows(
    {"rl_run": r["run"], "method": r["method"], "k_opt": r["k_opt"]} for r in rows
  )
  seen: dict[tuple[str, str], int] = {}
  out = {}
  for run, style in styles_lib.run_styles(methods).items():
    count = seen.get((style.label, style.color), 0)
    seen[style.label, style.color] = count + 1
    label = style.label if count == 0 else f"{style.label} ({run})"
    linestyle = style.linestyle if count == 0 else plot_style.LINESTYLES[count % 4]
    out[run] = styles_lib.Style((labels or {}).get(run, label), style.color, linestyle)
  return out


def _floats(rows: Sequence[dict[str, Any]], column: str) -> list[float]:
  return [float(r[column]) for r in rows]


def _draw_run(ax: Axes, rows: Sequence[dict[str, Any]], style: styles_lib.Style, mark: str) -> None:
  """One run in one panel: its grid curve and band, and its checkpoints."""
  grid = sorted((r for r in rows if r["point"] == "grid"), key=lambda r: float(r["kl"]))
  points = sorted((r for r in rows if r["point"] == "checkpoint"), key=lambda r: float(r["kl"]))
  kl, mean, lo, hi = (_floats(grid, c) for c in ("kl", "mean", "lo", "hi"))
  if len(grid) > 1:
    ax.plot(kl, mean, color=style.color, linestyle=style.linestyle, label=style.label)
    if all(math.isfinite(x) for x in lo + hi):
      ax.fill_between(kl, lo, hi, color=style.color, alpha=0.15, linewidth=0)
  moved = [r for r in points if float(r["kl"]) > 0 or len(grid) == 1]
  if moved:
    ax.plot(
      _floats(moved, "kl"),
      _floats(moved, "mean"),
      linestyle="none",
      marker=mark,
      color=style.color,
      markersize=5 if len(grid) > 1 else 8,
      label=None if len(grid) > 1 else style.label,
      zorder=3,
    )


def plot_frontier(
  rows: Sequence[dict[str, Any]],
  path: str,
  *,
  ks: Sequence[int],
  labels: Mapping[str, str] | None = None,
  title: str | None = None,
) -> str:
  """Draws the frontier figure of one task's ``frontier.csv`` rows (values as
  written or as read back: strings are parsed) to ``path`` (PNG at the project's
  dpi, >= 9 inches wide); returns the path.

  Args:
    rows: frontier rows of a single task, holding every k of ``ks``.
    path: the PNG to write.
    ks: keyword-only, one panel per k, in order.
    labels: keyword-only, run -> legend label, overriding the study's labels.
    title: keyword-only, the figure's title (default: the task and what is drawn).

  Raises:
    ValueError: if ``rows`` hold several tasks or no row of some k of ``ks``.
  """
  tasks = {r["task"] for r in rows}
  missing = [k for k in ks if not any(int(r["k"]) == k for r in rows)]
  if len(tasks) != 1 or missing or not ks:
    raise ValueError(f"rows must hold one task (got {sorted(tasks)}) and every k of ks={ks}.")
  styles = frontier_styles(rows, labels)
  fig, axes = plot_style.figure(1, len(ks), legend_width=3.0)
  for ax, k in zip(axes[0], ks):
    for run, style in styles.items():
      mine = [r for r in rows if r["run"] == run and int(r["k"]) == k]
      if not mine:
        continue
      mark = plot_style.marker(methods_lib.method_of(run, mine[0]["method"], "").family)
      _draw_run(ax, mine, style, mark)
    ax.set_title(f"pass@{k}")
    ax.set_xlabel("held-out KL to the warm start (nats)")
    ax.set_xlim(left=0)
  axes[0, 0].set_ylabel("held-out pass@k")
  axes[0, -1].plot([], [], linestyle="none", marker="o", color="0.4", label="checkpoints")
  fig.suptitle(
    title
    or f"{tasks.pop()}: pass@k against KL to the warm start, mean over seeds with the "
    "pointwise 95% t-interval over seeds; markers: evaluated checkpoints"
  )
  plot_style.legend(fig, axes)
  return plot_style.save(fig, path)
