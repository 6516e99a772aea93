"""Figures of the bandit variance study: variance and bias vs n, one column per k.

The max@k figures read the ``results.csv`` rows of
:func:`experiments.bandits.variance.run_study` for one policy; ``plot_objective``
reads the rows of one rank objective; ``plot_variance_check`` the rows of
``variance_check.csv``. Every estimator keeps its colour of
:mod:`experiments.plot_style`; every Monte Carlo quantity is drawn with its
uncertainty (+-2 standard errors).

Two estimators whose estimates agree on every replicate (e.g. ``off_policy_first_order``
and ``off_policy_exact`` at k = 1, ``max_minus_second`` and ``loo_minus_one`` at n = k;
the replicates are shared) draw one curve over the other: a note under the figure names
them (:func:`coinciding`).

References: PKPO, arXiv 2505.15201, Fig. 4.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
import math
from typing import Any

from matplotlib.axes import Axes
from matplotlib.figure import Figure
import numpy as np

from experiments import estimators as estimators_lib
from experiments import plot_style

# One results.csv row (typed values).
Row = Mapping[str, Any]

# Inches on the right of the per-policy figures for their legend.
_LEGEND_WIDTH = 2.6
# Two estimators' points coincide when their bias and variance agree to this relative
# tolerance: identical estimates on every replicate agree to float rounding (~1e-7), while
# different estimators on shared replicates differ by a sizeable part of a standard error.
_SAME_RTOL = 1e-4
# The bottom row of the bias figures shows z = bias / s.e. up to this |z|; a point beyond
# is drawn at the edge and labelled with its value, so that one strongly biased estimator
# does not flatten the others.
Z_LIMIT = 10.0


def _select(rows: Sequence[Row], **where: Any) -> list[Row]:
  return [r for r in rows if all(r[key] == value for key, value in where.items())]


def variance_stderr(row: Mapping[str, Any]) -> float:
  """The standard error of a row's Monte Carlo ``variance``.

  The row's ``variance_stderr`` where the study wrote one; else the normal-theory
  value ``variance * sqrt(2 / (R - 1))`` for ``R = num_replicates`` (it understates
  the error of heavy-tailed gradients; NaN without ``num_replicates``).
  """
  if row.get("variance_stderr") not in (None, ""):
    return float(row["variance_stderr"])
  replicates = float(row.get("num_replicates") or "nan")
  if not replicates > 1:
    return float("nan")
  return float(row["variance"]) * math.sqrt(2.0 / (replicates - 1))


def _variance_with_band(
  ax: Axes, rows: Sequence[Row], column: str, name: str, label: str | None, line: int = 0
) -> None:
  """``column`` (the variance or a multiple of it) vs n with a +-2 s.e. band.

  Numerically-zero variances (an estimator whose advantages vanish, e.g. mean_std at
  n == k) are float noise, not a measurement, and are dropped.
  """
  rows = sorted(rows, key=lambda r: r["n"])
  keep = [
    r
    for r in rows
    if np.isfinite(r[column])
    and r[column] > 0
    and r["variance"] > 1e-9 * float(r.get("exact_gradient", 1.0) or 1.0) ** 2
  ]
  if not keep:
    return
  x = np.array([r["n"] for r in keep], float)
  y = np.array([r[column] for r in keep], float)
  rel = np.array([2 * variance_stderr(r) / r["variance"] for r in keep])
  ax.plot(x, y, label=label, **plot_style.style(name, line))
  if np.isfinite(rel).all():
    # Clipped below so the band stays on the log axis.
    lo, hi = y * np.maximum(1 - rel, 0.05), y * (1 + rel)
    plot_style.band(ax, x.tolist(), lo.tolist(), hi.tolist(), name)


def _bias_bars(ax: Axes, rows: Sequence[Row], name: str, offset: float, label: str | None) -> None:
  """Relative bias vs n with +-2 s.e. bars (|exact| == 0: absolute bias)."""
  rows = sorted(rows, key=lambda r: r["n"])
  scale = [abs(r["exact_gradient"]) or 1.0 for r in rows]
  ax.errorbar(
    [r["n"] * 2**offset for r in rows],  # Small offsets keep the bars apart.
    [r["bias"] / s for r, s in zip(rows, scale)],
    yerr=[2 * r["stderr"] / s for r, s in zip(rows, scale)],
    label=label,
    capsize=2,
    markersize=5,
    **plot_style.style(name),
  )


def _bias_z_points(
  ax: Axes, rows: Sequence[Row], name: str, offset: float, label: str | None
) -> None:
  """z = bias / s.e. vs n, clipped to +-:data:`Z_LIMIT` (a clipped point: a triangle at
  the edge labelled with its z)."""
  rows = sorted(rows, key=lambda r: r["n"])
  x = np.array([r["n"] * 2**offset for r in rows], float)
  z = np.array([r["bias"] / r["stderr"] if r["stderr"] > 0 else np.nan for r in rows])
  ax.plot(x, np.clip(z, -Z_LIMIT, Z_LIMIT), label=label, markersize=5, **plot_style.style(name))
  for xi, zi in zip(x, z):
    if abs(zi) > Z_LIMIT:
      edge = math.copysign(Z_LIMIT, zi)
      ax.plot(xi, edge, marker="^" if zi > 0 else "v", markersize=9, color=plot_style.color(name))
      ax.annotate(
        f"{zi:.0f}",
        (xi, edge),
        xytext=(4, -3 if zi > 0 else 3),
        textcoords="offset points",
        va="top" if zi > 0 else "bottom",
        fontsize=8,
        color=plot_style.color(name),
      )


def _z_axis(ax: Axes, values: Sequence[float]) -> None:
  """A linear z axis from -top to top, top = min(:data:`Z_LIMIT`, max(3, max |z|)) * 1.1,
  with the band |z| <= 2 (no detectable bias) shaded."""
  finite = [abs(v) for v in values if np.isfinite(v)]
  top = 1.1 * min(Z_LIMIT, max([3.0, *finite]))
  ax.axhspan(-2.0, 2.0, color="0.9", linewidth=0, zorder=0)
  ax.set_ylim(-top, top)


def coinciding(rows: Sequence[Mapping[str, Any]]) -> list[tuple[str, str, int, list[int]]]:
  """Estimators whose points coincide with an earlier estimator's, per k.

  Returns ``(estimator, same_as, k, ns)``: at every n of ``ns`` the rows of ``estimator``
  and ``same_as`` (its first predecessor in row order that matches) for that k have the
  same bias and variance (relative tolerance ``1e-4``), i.e. the same estimate on every
  replicate.
  """

  def same(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    return all(
      abs(a[c] - b[c]) <= _SAME_RTOL * max(abs(a[c]), abs(b[c]), a["stderr"], 1e-30)
      for c in ("bias", "variance")
    )

  names = list(dict.fromkeys(r["estimator"] for r in rows))
  found = []
  for k in sorted({r["k"] for r in rows}):
    at = {(r["estimator"], r["n"]): r for r in rows if r["k"] == k}
    for j, name in enumerate(names):
      for earlier in names[:j]:
        ns = sorted(
          n
          for (e, n), row in at.items()
          if e == name and (earlier, n) in at and same(row, at[earlier, n])
        )
        if ns:
          found.append((name, earlier, k, ns))
          break
  return found


def _coincidence_note(fig: Figure, rows: Sequence[Row]) -> None:
  """Names the estimators whose curves coincide under the figure (nothing if none)."""
  pairs = coinciding(rows)
  if not pairs:
    return
  text = "; ".join(
    f"{name} = {same_as} at k = {k} (n = {', '.join(map(str, ns))})"
    for name, same_as, k, ns in pairs
  )
  fig.text(
    0.01,
    0.0,
    f"Curves drawn over each other (the same estimate on every replicate): {text}.",
    ha="left",
    va="top",
    fontsize=9,
    wrap=True,
  )


def _n_axis(ax: Axes, ns: Sequence[int]) -> None:
  ax.set_xscale("log", base=2)
  ax.set_xticks(ns, [str(n) for n in ns])
  ax.minorticks_off()
  ax.set_xlabel("n (samples per group)")


def _per_policy_figure(
  rows: Sequence[Row], policy: str
) -> tuple[list[Row], list[int], list[int], list[str], Figure, Any]:
  """The 2 x len(ks) grid of the per-policy figures: (rows, ks, ns, names, fig, axes)."""
  rows = _select(rows, policy=policy)
  ks = sorted({r["k"] for r in rows})
  ns = sorted({r["n"] for r in rows})
  known = [n for n in estimators_lib.names() if _select(rows, estimator=n)]
  names = known + [n for n in dict.fromkeys(r["estimator"] for r in rows) if n not in known]
  fig, axes = plot_style.figure(2, len(ks), legend_width=_LEGEND_WIDTH)
  return rows, ks, ns, names, fig, axes


def plot_variance(rows: Sequence[Row], policy: str, path: str) -> str:
  """Variance vs n per estimator, log-log, one column per k (PKPO Fig. 4).

  The bottom row shows ``variance / |mean|^2``, which is comparable across
  estimators whose advantages are on different scales (GRPO, Pass@k Training).
  Bands: +-2 standard errors of the Monte Carlo variance (:func:`variance_stderr`).
  """
  rows, ks, ns, names, fig, axes = _per_policy_figure(rows, policy)
  panels = [("variance", "gradient variance"), ("relative_variance", "variance / |mean|²")]
  for c, k in enumerate(ks):
    for r, (column, ylabel) in enumerate(panels):
      ax = axes[r, c]
      for name in names:
        sel = _select(rows, k=k, estimator=name)
        _variance_with_band(ax, sel, column, name, name if (r, c) == (0, 0) else None)
      ax.set_yscale("log")
      _n_axis(ax, ns)
      ax.set_ylabel(ylabel if c == 0 else "")
      ax.set_title(f"k = {k}")
  fig.suptitle(f"Gradient variance vs n, {policy} policy (bands: ±2 s.e.)")
  plot_style.legend(fig, axes, title="estimator")
  _coincidence_note(fig, rows)
  return plot_style.save(fig, path)


def plot_bias(rows: Sequence[Row], policy: str, path: str) -> str:
  """Bias vs n, one column per k: relative (top) and in standard errors (bottom).

  Top row: the estimators expected to be unbiased, bias / |exact gradient| with +-2
  standard-error bars (linear axis: their bias should be within a few standard errors of
  0). Bottom row: every estimator, z = bias / standard error on a linear axis clipped at
  +-:data:`Z_LIMIT` (beyond it: a triangle at the edge with the value), the band
  |z| <= 2 shaded; a scale that no single strongly biased or noisy point can set (a
  symlog axis of the relative bias was set by the largest one). For vector gradients the
  bias is the norm of the bias vector (hence >= 0; z is of order 1 when unbiased).
  """
  rows, ks, ns, names, fig, axes = _per_policy_figure(rows, policy)
  for c, k in enumerate(ks):
    top, bottom = axes[0, c], axes[1, c]
    for j, name in enumerate(names):
      sel = _select(rows, k=k, estimator=name)
      offset = 0.04 * (j - len(names) / 2)
      unbiased = [row for row in sel if row["expected_unbiased"]]
      if unbiased:
        _bias_bars(top, unbiased, name, offset, None)
      if sel:
        _bias_z_points(bottom, sel, name, offset, name)
    top.axhline(0.0, color="k", linewidth=0.8)
    bottom.axhline(0.0, color="k", linewidth=0.8)
    sel = _select(rows, k=k)
    _z_axis(bottom, [r["bias"] / r["stderr"] for r in sel if r["stderr"] > 0])
    top.set_ylabel("bias / |exact gradient|" if c == 0 else "")
    bottom.set_ylabel("z = bias / s.e." if c == 0 else "")
    top.set_title(f"k = {k}: expected-unbiased estimators (bars ±2 s.e.)")
    bottom.set_title(f"k = {k}: all estimators, bias in s.e.")
    for ax in (top, bottom):
      _n_axis(ax, ns)
  fig.suptitle(
    f"Bias vs n, {policy} policy (bottom: shaded |z| ≤ 2, no detectable bias; "
    f"|z| > {Z_LIMIT:.0f} at the edge with its value)"
  )
  plot_style.legend(fig, axes, title="estimator")
  _coincidence_note(fig, rows)
  return plot_style.save(fig, path)


def plot_objective(rows: Sequence[Row], objective: str, path: str) -> str:
  """One rank objective: variance (top) and relative bias +-2 s.e. (bottom) vs n, per k.

  Reads the ``results.csv`` rows of that objective (every policy present, told apart
  by line style; the rank objectives run on the categorical bandit).
  """
  rows = _select(rows, objective=objective)
  ks = sorted({r["k"] for r in rows})
  ns = sorted({r["n"] for r in rows})
  names = list(dict.fromkeys(r["estimator"] for r in rows))
  policies = list(dict.fromkeys(r["policy"] for r in rows))
  fig, axes = plot_style.figure(2, len(ks), legend_width=_LEGEND_WIDTH)
  for c, k in enumerate(ks):
    for j, name in enumerate(names):
      for p, policy in enumerate(policies):
        sel = _select(rows, k=k, estimator=name, policy=policy)
        label = name if len(policies) == 1 else f"{name} ({policy})"
        _variance_with_band(axes[0, c], sel, "variance", name, label, p)
        if sel:
          _bias_bars(axes[1, c], sel, name, 0.04 * (j - len(names) / 2), None)
    axes[0, c].set_yscale("log")
    axes[0, c].set_ylabel("gradient variance" if c == 0 else "")
    axes[1, c].axhline(0.0, color="k", linewidth=0.8)
    axes[1, c].set_ylabel("|bias| / |exact gradient|" if c == 0 else "")
    for ax in axes[:, c]:
      _n_axis(ax, ns)
      ax.set_title(f"k = {k}")
  fig.suptitle(
    f"Objective {objective}: gradient variance (bands ±2 s.e.) and bias (bars ±2 s.e.) vs n"
  )
  plot_style.legend(fig, axes, title="estimator")
  return plot_style.save(fig, path)


def plot_variance_check(rows: Sequence[Row], path: str) -> str:
  """Mean estimated variance vs empirical variance (+-2 s.e. bars), one panel per statistic.

  Reads the ``variance_check.csv`` rows; unbiased variance estimators lie on y = x.
  Colour: the policy; marker: k.
  """
  statistics = list(dict.fromkeys(r["statistic"] for r in rows))
  policies = list(dict.fromkeys(r["policy"] for r in rows))
  ks = sorted({r["k"] for r in rows})
  markers = "osD^v<>phX*"
  fig, axes = plot_style.figure(1, len(statistics), legend_width=_LEGEND_WIDTH)
  for ax, statistic in zip(axes[0], statistics):
    for policy in policies:
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
          markersize=6,
          color=plot_style.color(policy),
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
    ax.set_xlabel("empirical variance over replicates")
    ax.set_ylabel("mean estimated variance")
    ax.set_title(f"{statistic}: one point per (n, k)")
  fig.suptitle("Variance estimators vs the empirical variance (bars: ±2 s.e.)")
  plot_style.legend(fig, axes, title="policy, k")
  return plot_style.save(fig, path)
