"""Figures of the bandit training study: exact max@k and pass@k curves per run.

Each estimator keeps its colour of :mod:`experiments.plot_style`; its runs with
different k_opt schedules are shades of that colour (light: small k) and line styles.
Runs whose curves are the same (e.g. ``max_minus_second`` and ``loo_minus_one`` at
k_opt = n, whose advantages are equal by construction) are drawn over each other; the
legend says so (:func:`coinciding_runs`).

References: PKPO, arXiv 2505.15201, Fig. 3.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from experiments import plot_style


def _estimator(label: str) -> str:
  """The estimator of a run label ``"<estimator> k=<schedule>"`` (or ``"<estimator>"``)."""
  return label.split(" ", 1)[0]


# Two runs coincide when every curve value agrees to this fraction of the curves' largest
# magnitude: equal advantages give equal updates, up to float rounding.
_SAME_RTOL = 1e-4


def coinciding_runs(runs: Sequence[tuple[str, dict[str, np.ndarray]]]) -> dict[str, str]:
  """Each run whose curves equal an earlier run's: ``{label: earlier label}``.

  Equal: the same metrics, and every value (seed, step, k_eval) within ``1e-4`` times
  the largest magnitude of the two runs' curves.
  """

  def same(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> bool:
    if a.keys() != b.keys() or any(a[m].shape != b[m].shape for m in a):
      return False
    scale = max(max(np.abs(a[m]).max(initial=0.0), np.abs(b[m]).max(initial=0.0)) for m in a)
    return all(np.abs(a[m] - b[m]).max(initial=0.0) <= _SAME_RTOL * scale for m in a)

  found: dict[str, str] = {}
  for i, (label, curves) in enumerate(runs):
    for earlier, earlier_curves in runs[:i]:
      if earlier not in found and same(curves, earlier_curves):
        found[label] = earlier
        break
  return found


def plot_curves(
  runs: Sequence[tuple[str, dict[str, np.ndarray]]],
  *,
  title: str,
  k_evals: Sequence[int],
  path: str,
) -> str:
  """Exact max@k (top row) and pass@k (bottom row) vs step, one column per k_eval.

  ``runs``: (label, curves) with ``curves[metric]`` of shape ``[seeds, steps, k_evals]``.
  Lines are the mean over seeds; bands span the 10th to 90th percentile of the seeds. A
  run whose curves equal an earlier run's is labelled ``"<label> (= <earlier label>)"``.
  Returns ``path``.
  """
  fig, axes = plot_style.figure(2, len(k_evals), legend_width=2.8, sharex=True)
  estimators = [_estimator(label) for label, _ in runs]
  same_as = coinciding_runs(runs)
  for row, metric in enumerate(["max_at_k", "pass_at_k"]):
    for col, k in enumerate(k_evals):
      ax = axes[row, col]
      for i, (label, curves) in enumerate(runs):
        name = estimators[i]
        mine = [j for j, e in enumerate(estimators) if e == name]
        index = mine.index(i)
        colour = plot_style.shade(name, index, len(mine))
        values = curves[metric][:, :, col]
        lo, hi = np.percentile(values, [10, 90], axis=0)
        steps = np.arange(values.shape[1])
        linestyle = plot_style.LINESTYLES[index % len(plot_style.LINESTYLES)]
        shown = f"{label} (= {same_as[label]})" if label in same_as else label
        ax.plot(steps, values.mean(0), color=colour, linestyle=linestyle, label=shown)
        ax.fill_between(steps, lo, hi, color=colour, alpha=0.07, linewidth=0)
      ax.set_title(f"{metric.replace('_at_', '@')} (k = {k})")
      if row == 1:
        ax.set_xlabel("training step")
  fig.suptitle(title)
  plot_style.legend(fig, axes, title="estimator, k_opt")
  return plot_style.save(fig, path)
