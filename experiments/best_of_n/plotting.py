"""Figures of the best-of-n study, drawn from its result rows.

Each function returns a :class:`matplotlib.figure.Figure` built without pyplot (no
global state, any backend) in the style of :mod:`experiments.plot_style`: the binary
saves it with :func:`save`, a notebook shows it with ``display(fig)``. Monte Carlo
quantities carry their uncertainty (error bars: +-2 standard errors).
"""

from __future__ import annotations

from collections.abc import Sequence
import math

from matplotlib.figure import Figure
import numpy as np

from experiments import plot_style
from experiments.best_of_n import study
from experiments.best_of_n.references import Reference

# Fixed colours of the curves (the same in every figure of the study).
_EXACT = "#1f77b4"
_EXPECTED = "#ff7f0e"
_MONTE_CARLO = "#2ca02c"


def _grid(num: int) -> tuple[Figure, np.ndarray]:
  if num < 1:
    raise ValueError("refs must hold at least one reference.")
  cols = min(num, 3)
  nrows = math.ceil(num / cols)
  fig, axes = plot_style.figure(nrows, cols)
  for ax in list(axes.flat)[num:]:
    ax.axis("off")
  return fig, axes


def kl_vs_n_figure(rows: Sequence[study.Row], refs: Sequence[Reference], title: str) -> Figure:
  """One panel per reference: exact KL, log n - (n-1)/n, E[d_n] and Monte Carlo d_n vs n."""
  fig, axes = _grid(len(refs))
  for ax, ref in zip(axes.flat, refs):
    sel = study.select(rows, method="best_of_n", reference=ref.name)
    n = study.column(sel, "n")
    stderr = study.column(sel, "d_n_mc_stderr")  # NaN (no bar) with one draw.
    ax.plot(n, study.column(sel, "kl_bound"), "k--", label="log n - (n-1)/n")
    ax.plot(n, study.column(sel, "kl"), "-", color=_EXACT, lw=5, alpha=0.5, label="exact KL")
    ax.plot(n, study.column(sel, "d_n_expected"), "-", color=_EXPECTED, label="E[d_n] (exact)")
    ax.errorbar(
      n,
      study.column(sel, "d_n_mc_mean"),
      yerr=None if np.isnan(stderr).all() else 2 * stderr,
      fmt="o",
      ms=4,
      color=_MONTE_CARLO,
      capsize=2,
      label=f"d_n, mean of {int(sel[0]['num_mc_draws'])} draws (±2 s.e.)",
    )
    ax.set_xscale("log")
    ax.set_title(f"{ref.name} (L={len(ref.probs)})")
    ax.set_xlabel("n")
    ax.set_ylabel("KL(π_n ‖ π) [nats]")
  axes.flat[0].legend(loc="upper left")
  fig.suptitle(title)
  fig.tight_layout()
  return fig


def kl_gap_figure(rows: Sequence[study.Row], refs: Sequence[Reference]) -> Figure:
  """The gap log n - (n-1)/n - KL vs n with its upper and lower bounds (log-log)."""
  fig, axes = plot_style.figure(1, 1, figsize=(10.0, 5.5))
  ax = axes[0, 0]
  for i, ref in enumerate(refs):
    sel = study.select(rows, method="best_of_n", reference=ref.name)
    sel = [r for r in sel if r["n"] > 1]
    n = study.column(sel, "n")
    c = plot_style.FALLBACK_PALETTE[i % len(plot_style.FALLBACK_PALETTE)]
    ax.plot(n, np.maximum(study.column(sel, "kl_gap"), 1e-9), "-", color=c, label=ref.name)
    ax.plot(n, study.column(sel, "kl_gap_upper_bound"), ":", color=c, lw=1.3)
    lower = study.column(sel, "kl_gap_lower_bound")
    ax.plot(n[lower > 0], lower[lower > 0], "--", color=c, lw=1.3)
  ax.set_xscale("log")
  ax.set_yscale("log")
  ax.set_ylim(1e-11, 30)
  ax.set_xlabel("n")
  ax.set_ylabel("gap = log n - (n-1)/n - KL")
  ax.set_title("KL gap (solid), 2n(n-1)exp(-H₂) (dotted), log(n ε_∞) - (n-1)/n (dashed)")
  ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False, title="reference")
  fig.tight_layout()
  return fig


def win_rate_figure(rows: Sequence[study.Row], refs: Sequence[Reference], *, n_max: int) -> Figure:
  """One panel per reference: win rate vs KL for best-of-n and each rewind-and-repeat
  try limit, beside the curve (log n - (n-1)/n, n/(n+1)) for n from 1 to ``n_max``."""
  fig, axes = _grid(len(refs))
  n_dense = np.unique(np.round(np.logspace(0, math.log10(max(n_max, 2)), 200)))
  tries = sorted(
    {r["max_tries"] for r in rows if r["method"] == "rewind_repeat"},
    key=lambda m: (m != "none", str(m)),
  )
  for ax, ref in zip(axes.flat, refs):
    ax.plot(
      np.log(n_dense) - (n_dense - 1) / n_dense,
      n_dense / (n_dense + 1),
      "k--",
      label="(log n - (n-1)/n, n/(n+1))",
    )
    sel = study.select(rows, method="best_of_n", reference=ref.name)
    kl = study.column(sel, "kl")
    ax.plot(kl, study.column(sel, "win_rate"), "-o", color=_EXACT, ms=4, label="best-of-n")
    for j, m in enumerate(tries):
      rr = study.select(rows, method="rewind_repeat", reference=ref.name, max_tries=m)
      # In threshold order: with a try limit the KL first grows, then falls back
      # to 0 as the acceptance probability vanishes (the last draw is kept).
      ax.plot(
        study.column(rr, "kl"),
        study.column(rr, "win_rate"),
        "-s",
        color=plot_style.FALLBACK_PALETTE[(j + 1) % len(plot_style.FALLBACK_PALETTE)],
        ms=4,
        lw=1.3,
        label=f"rewind-repeat (max_tries={m})",
      )
    ax.set_title(ref.name)
    ax.set_xlabel("KL(policy ‖ π) [nats]")
    ax.set_ylabel("win rate vs π")
    ax.set_xlim(0, max(10.0, float(np.nanmax(kl)) + 0.5))
  axes.flat[0].legend(loc="lower right")
  fig.suptitle("Win rate vs KL: best-of-n and rewind-and-repeat")
  fig.tight_layout()
  return fig


def save(fig: Figure, path: str) -> str:
  """Writes ``fig`` as a PNG (:func:`experiments.plot_style.save`); returns ``path``."""
  return plot_style.save(fig, path)
