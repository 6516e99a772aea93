"""Figures of the bandit variance study: variance and bias vs n, one column per k.

The max@k figures read the ``results.csv`` rows of
:func:`experiments.bandits.variance.run_study` for one policy; ``plot_objective``
reads the rows of one rank objective; ``plot_variance_check`` the rows of
``variance_check.csv``.

References: PKPO, arXiv 2505.15201, Fig. 4.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from experiments import estimators as estimators_lib

_KNOWN = frozenset(estimators_lib.ESTIMATOR_NAMES)


def _style(names: Sequence[str]) -> dict[str, dict[str, Any]]:
  import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top

  cmap = plt.get_cmap("tab20")
  markers = "osD^v<>phX*"
  every = list(estimators_lib.ESTIMATOR_NAMES) + [n for n in names if n not in _KNOWN]
  return {
    name: {"color": cmap(i % 20), "marker": markers[i % len(markers)]}
    for i, name in enumerate(every)
    if name in names
  }


def _select(rows, **where):
  return [r for r in rows if all(r[key] == value for key, value in where.items())]


def _figure(rows: Sequence[dict[str, Any]], policy: str):
  """The common set-up of the per-policy figures: a 2 x len(ks) grid of axes.

  Returns (pyplot, the policy's rows, ks, estimator names present, styles, fig, axes).
  """
  import matplotlib  # pylint: disable=g-import-not-at-top

  matplotlib.use("Agg")
  import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top

  rows = _select(rows, policy=policy)
  ks = sorted({r["k"] for r in rows})
  names = [n for n in estimators_lib.ESTIMATOR_NAMES if _select(rows, estimator=n)]
  style = _style(names)
  fig, axes = plt.subplots(2, len(ks), figsize=(4.5 * len(ks) + 2.5, 7.5), squeeze=False)
  return plt, rows, ks, names, style, fig, axes


def _finish_figure(plt, fig, legend_ax, path: str) -> None:
  """The common ending of the per-policy figures: legend on the right, save, close."""
  handles, labels = legend_ax.get_legend_handles_labels()
  fig.legend(handles, labels, loc="center right", fontsize=8)
  fig.tight_layout(rect=(0, 0, 1 - 2.3 / fig.get_figwidth(), 1))
  fig.savefig(path, dpi=120)
  plt.close(fig)


def plot_variance(rows: Sequence[dict[str, Any]], policy: str, path: str) -> None:
  """Variance vs n per estimator, log-log, one column per k (PKPO Fig. 4).

  The bottom row shows ``variance / |mean|^2``, which is comparable across
  estimators whose advantages are on different scales (GRPO, Pass@k Training).
  """
  plt, rows, ks, names, style, fig, axes = _figure(rows, policy)
  for c, k in enumerate(ks):
    for row_idx, (column, label) in enumerate(
      [("variance", "variance (sum over coords)"), ("relative_variance", "variance / |mean|^2")]
    ):
      ax = axes[row_idx, c]
      for name in names:
        sel = sorted(_select(rows, k=k, estimator=name), key=lambda r: r["n"])
        xs = [r["n"] for r in sel]
        ys = [r[column] for r in sel]
        # Drop numerically-zero variances (an estimator whose advantages vanish,
        # e.g. mean_std at n == k): they are float noise, not a measurement.
        keep = [
          (x, y)
          for x, y, r in zip(xs, ys, sel)
          if np.isfinite(y) and y > 0 and r["variance"] > 1e-9 * r["exact_gradient"] ** 2
        ]
        if not keep:
          continue
        ax.plot(*zip(*keep), label=name, **style[name], markersize=4)
      ax.set_xscale("log", base=2)
      ax.set_yscale("log")
      ax.set_xlabel("n (samples per group)")
      ax.set_ylabel(label)
      ax.set_title(f"{policy}, k={k}")
      ax.grid(True, which="both", alpha=0.3)
  _finish_figure(plt, fig, axes[0, 0], path)


def plot_bias(rows: Sequence[dict[str, Any]], policy: str, path: str) -> None:
  """Relative bias vs n with +-2 standard-error bars, one column per k.

  Top row: the estimators expected to be unbiased (linear axis: their bias should
  be within a few standard errors of 0). Bottom row: every estimator (symlog axis).
  For vector gradients the bias is the norm of the bias vector (hence >= 0).
  """
  plt, rows, ks, names, style, fig, axes = _figure(rows, policy)
  for c, k in enumerate(ks):
    for row_idx, only_unbiased in enumerate([True, False]):
      ax = axes[row_idx, c]
      for j, name in enumerate(names):
        sel = sorted(_select(rows, k=k, estimator=name), key=lambda r: r["n"])
        if only_unbiased:
          sel = [r for r in sel if r["expected_unbiased"]]
        if not sel:
          continue
        scale = [r["exact_gradient"] if r["exact_gradient"] != 0 else 1.0 for r in sel]
        # Small horizontal offsets keep the error bars apart.
        xs = [r["n"] * 2 ** (0.04 * (j - len(names) / 2)) for r in sel]
        ys = [r["bias"] / abs(s) for r, s in zip(sel, scale)]
        es = [2 * r["stderr"] / abs(s) for r, s in zip(sel, scale)]
        ax.errorbar(
          xs, ys, yerr=es, label=name, capsize=2, linestyle="-", markersize=4, **style[name]
        )
      ax.axhline(0.0, color="k", linewidth=0.8)
      ax.set_xscale("log", base=2)
      if not only_unbiased:
        ax.set_yscale("symlog", linthresh=1e-2)
      ax.set_xlabel("n (samples per group)")
      ax.set_ylabel("bias / |exact gradient|  (+-2 s.e.)")
      ax.set_title(
        f"{policy}, k={k}: "
        + ("expected-unbiased estimators" if only_unbiased else "all estimators")
      )
      ax.grid(True, which="both", alpha=0.3)
  _finish_figure(plt, fig, axes[1, 0], path)


def plot_objective(rows: Sequence[dict[str, Any]], objective: str, path: str) -> None:
  """One rank objective: variance (top) and relative bias +-2 s.e. (bottom) vs n, per k.

  Reads the ``results.csv`` rows of that objective (every policy present; the
  rank objectives run on the categorical bandit).
  """
  import matplotlib  # pylint: disable=g-import-not-at-top

  matplotlib.use("Agg")
  import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top

  rows = _select(rows, objective=objective)
  ks = sorted({r["k"] for r in rows})
  names = list(dict.fromkeys(r["estimator"] for r in rows))
  style = _style(names)
  fig, axes = plt.subplots(2, len(ks), figsize=(4.5 * len(ks) + 2.5, 7.5), squeeze=False)
  for c, k in enumerate(ks):
    for j, name in enumerate(names):
      for policy in dict.fromkeys(r["policy"] for r in rows):
        sel = sorted(_select(rows, k=k, estimator=name, policy=policy), key=lambda r: r["n"])
        keep = [r for r in sel if np.isfinite(r["variance"]) and r["variance"] > 0]
        if keep:
          axes[0, c].plot(
            [r["n"] for r in keep], [r["variance"] for r in keep], label=name, **style[name]
          )
        scale = [abs(r["exact_gradient"]) or 1.0 for r in sel]
        axes[1, c].errorbar(
          [r["n"] * 2 ** (0.04 * (j - len(names) / 2)) for r in sel],
          [r["bias"] / s for r, s in zip(sel, scale)],
          yerr=[2 * r["stderr"] / s for r, s in zip(sel, scale)],
          capsize=2,
          markersize=4,
          **style[name],
        )
    axes[0, c].set_yscale("log")
    axes[0, c].set_ylabel("variance (sum over coords)")
    axes[1, c].axhline(0.0, color="k", linewidth=0.8)
    axes[1, c].set_ylabel("|bias| / |exact gradient|  (+-2 s.e.)")
    for ax in axes[:, c]:
      ax.set_xscale("log", base=2)
      ax.set_xlabel("n (samples per group)")
      ax.set_title(f"objective {objective}, k={k}")
      ax.grid(True, which="both", alpha=0.3)
  _finish_figure(plt, fig, axes[0, 0], path)


def plot_variance_check(rows: Sequence[dict[str, Any]], path: str) -> None:
  """Mean estimated variance vs empirical variance (+-2 s.e. bars), one panel per statistic.

  Reads the ``variance_check.csv`` rows; unbiased variance estimators lie on y = x.
  """
  import matplotlib  # pylint: disable=g-import-not-at-top

  matplotlib.use("Agg")
  import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top

  statistics = list(dict.fromkeys(r["statistic"] for r in rows))
  policies = list(dict.fromkeys(r["policy"] for r in rows))
  ks = sorted({r["k"] for r in rows})
  markers = "osD^v<>phX*"
  fig, axes = plt.subplots(
    1, len(statistics), figsize=(5.5 * len(statistics) + 2.5, 5), squeeze=False
  )
  for ax, statistic in zip(axes[0], statistics):
    for p, policy in enumerate(policies):
      for i, k in enumerate(ks):
        sel = _select(rows, statistic=statistic, policy=policy, k=k)
        if not sel:
          continue
        ax.errorbar(
          [r["empirical_variance"] for r in sel],
          [r["mean_estimated_variance"] for r in sel],
          xerr=[2 * r["empirical_variance_stderr"] for r in sel],
          yerr=[2 * r["mean_estimated_variance_stderr"] for r in sel],
          linestyle="none",
          marker=markers[i % len(markers)],
          color=f"C{p}",
          capsize=2,
          label=f"{policy}, k={k}",
        )
    values = [r[c] for r in rows for c in ("empirical_variance", "mean_estimated_variance")]
    values = [v for v in values if np.isfinite(v) and v > 0]
    if values:
      lo, hi = min(values) / 1.5, max(values) * 1.5
      ax.plot([lo, hi], [lo, hi], color="k", linewidth=0.8, label="y = x")
      ax.set_xscale("log")
      ax.set_yscale("log")
    ax.set_xlabel("empirical variance of the estimates over replicates")
    ax.set_ylabel("mean of the estimated variance")
    ax.set_title(f"{statistic}: one point per (n, k)")
    ax.grid(True, which="both", alpha=0.3)
  _finish_figure(plt, fig, axes[0, 0], path)
