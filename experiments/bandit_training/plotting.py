"""Figures of the bandit training study: exact max@k and pass@k curves per run.

References: PKPO, arXiv 2505.15201, Fig. 3.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def plot_curves(
  runs: Sequence[tuple[str, dict[str, np.ndarray]]],
  *,
  title: str,
  k_evals: Sequence[int],
  path: str,
) -> None:
  """Exact max@k (top row) and pass@k (bottom row) vs step, one column per k_eval.

  Lines are the mean over seeds; bands span the 10th to 90th percentile of the seeds.
  """
  import matplotlib  # pylint: disable=g-import-not-at-top

  matplotlib.use("Agg")
  import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top

  fig, axes = plt.subplots(
    2, len(k_evals), figsize=(3.4 * len(k_evals) + 2.8, 6.4), squeeze=False, sharex=True
  )
  cmap = plt.get_cmap("tab10")
  for row, metric in enumerate(["max_at_k", "pass_at_k"]):
    for col, k in enumerate(k_evals):
      ax = axes[row, col]
      for i, (label, curves) in enumerate(runs):
        values = curves[metric][:, :, col]
        lo, hi = np.percentile(values, [10, 90], axis=0)
        steps = np.arange(values.shape[1])
        ax.plot(steps, values.mean(0), color=cmap(i % 10), label=label, linewidth=1.2)
        ax.fill_between(steps, lo, hi, color=cmap(i % 10), alpha=0.12, linewidth=0)
      ax.set_title(f"{metric.replace('_at_', '@')} (k={k})")
      ax.grid(True, alpha=0.3)
      if row == 1:
        ax.set_xlabel("step")
  handles, labels = axes[0, 0].get_legend_handles_labels()
  fig.legend(handles, labels, loc="center right", fontsize=8, title="estimator / k_opt")
  fig.suptitle(title)
  fig.tight_layout(rect=(0, 0, 1 - 2.6 / fig.get_figwidth(), 1))
  fig.savefig(path, dpi=110)
  plt.close(fig)
