"""The variance atlas figure and table: each max@k estimator's variance over the floor.

Reads the ``atlas.csv`` rows of :func:`experiments.bandits.atlas.run`.  The figure has
one row of panels per bandit and one column per k; in each, every estimator's
``variance_to_floor`` (tr Cov of ĝ / c over the floor of any baseline of the other
samples' rewards) against n, log-log.  Unbiased estimators are solid lines; estimators
whose mean is not along ∇max@k in a panel (``biased``) are dashed there: their ratio is that
of an estimator of another objective, and below 1 it says nothing about max@k.  Monte
Carlo points are hollow.  The line at 1 is the floor; the dotted grey line is the best
constant baseline's variance.

The table of README and the index page is :mod:`experiments.bandit_variance.atlas_table`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from experiments import plot_style
from experiments.bandit_variance.atlas_table import biased
from experiments.bandit_variance.atlas_table import to_float

Row = Mapping[str, Any]


def plot_atlas(rows: Sequence[Row], path: str) -> str:
  """Writes the atlas figure (module docstring) to ``path``; returns ``path``."""
  bandits = list(dict.fromkeys(r["bandit"] for r in rows))
  ks = sorted({int(r["k"]) for r in rows})
  names = list(dict.fromkeys(r["estimator"] for r in rows))
  fig, axes = plot_style.figure(len(bandits), len(ks), legend_width=3.4, sharex=True)
  for i, bandit in enumerate(bandits):
    for j, k in enumerate(ks):
      ax = axes[i, j]
      cell = [r for r in rows if r["bandit"] == bandit and int(r["k"]) == k]
      for name in names:
        points = sorted(
          (r for r in cell if r["estimator"] == name and to_float(r["variance_to_floor"]) > 0),
          key=lambda r: int(r["n"]),
        )
        if not points:
          continue
        dashed = biased(points)
        color = plot_style.color(name)
        x = [int(r["n"]) for r in points]
        y = [to_float(r["variance_to_floor"]) for r in points]
        ax.plot(x, y, color=color, linestyle="--" if dashed else "-", label=name, linewidth=1.2)
        for r, xx, yy in zip(points, x, y):
          exact = r["method"] == "exact"
          ax.plot(
            [xx],
            [yy],
            linestyle="none",
            marker=plot_style.marker(name),
            markerfacecolor=color if exact else "white",
            markeredgecolor=color,
            markersize=5,
          )
      constant = sorted(
        {(int(r["n"]), to_float(r["constant_floor"]) / to_float(r["floor"])) for r in cell},
      )
      constant = [(x, y) for x, y in constant if np.isfinite(y)]
      if constant:
        ax.plot(*zip(*constant), color="#555555", linestyle=":", label="best constant baseline")
      ax.axhline(1.0, color="black", linewidth=0.8, label="floor (best b(r_-i))")
      ax.set_xscale("log", base=2)
      ax.set_yscale("log")
      ax.set_title(f"{bandit} bandit, max@{k}")
      if i == len(bandits) - 1:
        ax.set_xlabel("n (samples per group)")
      if j == 0:
        ax.set_ylabel("variance / floor")
  plot_style.legend(fig, axes, title="dashed: biased (another objective)\nhollow: Monte Carlo")
  return plot_style.save(fig, path)
