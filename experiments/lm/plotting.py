"""Figures: held-out pass@k and max@k against k (log axis), base vs each RL run."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top


def plot_pass_at_k(rows: Sequence[dict[str, Any]], path: str) -> str:
  """Plots results.csv rows, one line per (stage, method, k_opt); returns ``path``."""
  curves: dict[str, list[tuple[int, float, float]]] = {}
  for row in rows:
    label = "base" if row["stage"] == "base" else f"{row['method']}, k_opt={row['k_opt']}"
    curves.setdefault(label, []).append((row["k_eval"], row["pass_at_k"], row["max_at_k"]))
  fig, axes = plt.subplots(1, 2, figsize=(10, 4))
  for label, points in curves.items():
    ks, pass_k, max_k = zip(*sorted(points))
    style = {"color": "black", "linestyle": "--"} if label == "base" else {}
    axes[0].plot(ks, pass_k, marker="o", markersize=3, label=label, **style)
    axes[1].plot(ks, max_k, marker="o", markersize=3, label=label, **style)
  for ax, name in zip(axes, ("pass@k (binary reward)", "max@k (continuous reward)")):
    ax.set_xscale("log", base=2)
    ax.set_xlabel("k")
    ax.set_ylabel(name)
    ax.grid(True, which="both", alpha=0.3)
  axes[0].legend(fontsize=8)
  fig.suptitle("Held-out pass@k / max@k (unbiased estimators)")
  fig.tight_layout()
  fig.savefig(path, dpi=120)
  plt.close(fig)
  return path
