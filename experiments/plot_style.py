"""One plotting style for the experiments' and notebooks' figures.

Every figure of the repository goes through this module so that they share sizes,
fonts and colours:

* :func:`apply` sets matplotlib's rcParams (font sizes, line widths, dpi); notebooks
  call it once at the top, the figure functions below call it themselves.
* :func:`color` and :func:`marker` give each estimator, baseline or method one fixed
  colour and marker, the same in every figure ("loo_minus_one" is always red): an
  estimator's are those of its :mod:`experiments.estimators` entry, other names'
  are :data:`COLORS` and :data:`MARKERS`.
* :func:`figure` makes a figure at a legible size: panels of :data:`PANEL` inches,
  multi-panel figures at least :data:`MIN_MULTI_WIDTH` inches wide, i.e. at least
  ~1000 px when saved at :data:`DPI`.
* :func:`save` writes a PNG at :data:`DPI`.

The figures are built without pyplot by default (no global state, any backend): a
notebook shows one with ``display(fig)``.
"""

from __future__ import annotations

from collections.abc import Sequence
import os
import re
import sys
from typing import Any
import zlib

import matplotlib
from matplotlib import colors as mcolors
from matplotlib.figure import Figure
import numpy as np

from experiments import estimators as estimators_lib

# Saved and inline resolution (pixels per inch).
DPI = 110
# The size of one panel in inches (width, height).
PANEL = (4.6, 3.5)
# Multi-panel figures are at least this wide (inches): >= ~1000 px at DPI.
MIN_MULTI_WIDTH = 10.0
# Single-panel figures are at least this wide (inches): ~990 px at DPI, so that a figure
# cropped to its content (bbox_inches="tight", as inline and saved) keeps >= 900 px.
MIN_SINGLE_WIDTH = 9.0
# The panels of a row together are at most this wide (inches): many columns get
# narrower panels instead of an ever wider figure.
MAX_PANELS_WIDTH = 15.0

# Keys typed Any: matplotlib's stubs accept only literal rcParams names as keys.
RC_PARAMS: dict[Any, Any] = {
  "figure.dpi": DPI,
  "savefig.dpi": DPI,
  "figure.figsize": (8.0, 4.5),
  "font.size": 11,
  "axes.titlesize": 12,
  "axes.labelsize": 11,
  "xtick.labelsize": 10,
  "ytick.labelsize": 10,
  "legend.fontsize": 10,
  "legend.title_fontsize": 10,
  "figure.titlesize": 14,
  "lines.linewidth": 1.8,
  "lines.markersize": 5,
  "errorbar.capsize": 2,
  "axes.grid": True,
  "grid.alpha": 0.3,
  "axes.spines.top": False,
  "axes.spines.right": False,
  "savefig.bbox": "tight",
  "savefig.pad_inches": 0.1,
  "savefig.facecolor": "white",
}

# One colour per name that is not an estimator, fixed across every figure; the
# estimators carry theirs (:func:`experiments.estimators.colors`, which includes
# the off-policy method names "exact" and "first_order").
COLORS: dict[str, str] = {
  # maxk.BASELINES option that is no estimator of the registry (= loo_centered).
  "leave_two_out": "#bcbd22",
  # LM off-policy methods that are no estimator of the registry.
  "ppo_clip": "#7b4173",
  "surrogate": "#c49c94",
  # Methods / references.
  "base": "#000000",
  "max_at_k": "#d62728",
  "pass_at_k": "#1f77b4",
  "best_of_n": "#1f77b4",
  "rewind_repeat": "#ff7f0e",
  # Policies and bandits of the bandit studies.
  "gaussian": "#4e79a7",
  "categorical": "#e15759",
  "easy": "#59a14f",
  "hard": "#b07aa1",
  # Majority vote: maxk.maj_at_k, maj_at_k_advantages, maj_at_k_exact.
  "maj_at_k": "#e7ba52",
  "maj_at_k_advantages": "#bd9e39",
  "maj_at_k_exact": "#8c6d31",
  # Rank objectives ("maxrl" is coloured as its estimator).
  "max": "#d62728",
  "top_m": "#6b6ecf",
  "min": "#2f4f4f",
  # Stability metrics (maxk.pass_hat_k, maxk.g_pass_at_k, maxk.mg_pass_at_k).
  "pass_hat_k": "#117a65",
  "g_pass_at_k": "#b8860b",
  "mg_pass_at_k": "#6c3483",
  # Best-of-k chosen by a score (maxk.selected_at_k, selected_at_k_exact, selected_pmf).
  "selected_at_k": "#e6550d",
  "selected_at_k_exact": "#e6550d",
  "selected_pmf": "#fdae6b",
  "selected_at_k_advantages": "#e6550d",
  # Curves over every k share their single-k estimator's colour.
  "pass_at_k_curve": "#1f77b4",
  "pass_at_k_curve_variance": "#1f77b4",
  "max_at_k_curve": "#d62728",
  "max_at_k_curve_variance": "#d62728",
  "pass_hat_k_curve": "#117a65",
  # Any mixture of pass@j (maxk.success_objective_advantages).
  "success_objective_advantages": "#843c39",
}

# Markers of names that are not estimators (the estimators carry theirs).
MARKERS: dict[str, str] = {
  "ppo_clip": "*",
  "surrogate": "h",
  "base": "o",
}

# Colours for names outside COLORS, chosen by a stable hash of the name.
FALLBACK_PALETTE = (
  "#4e79a7",
  "#f28e2b",
  "#59a14f",
  "#b07aa1",
  "#76b7b2",
  "#edc948",
  "#ff9da7",
  "#9c755f",
  "#86bcb6",
  "#d37295",
)
_FALLBACK_MARKERS = "osD^v<>phX*"
# Line styles told apart within one colour (e.g. one estimator at several k).
LINESTYLES = ("-", "--", ":", "-.")


def _stable_index(name: str, size: int) -> int:
  return zlib.crc32(name.encode("utf-8")) % size


def colors() -> dict[str, str]:
  """Name -> colour of every known name: the registered estimators, then :data:`COLORS`."""
  return {**estimators_lib.colors(), **COLORS}


def _key(name: str, known: dict[str, str]) -> str | None:
  """The known name that ``name`` is, or starts with (``"loo k=4"`` -> ``"loo"``)."""
  if name in known:
    return name
  head = re.split(r"[\s,:(=]", name.strip(), maxsplit=1)[0]
  return head if head in known else None


def color(name: str) -> str:
  """The fixed colour (hex string) of an estimator, baseline, method or objective
  (an estimator's is its registry entry's ``color``).

  A label that starts with a known name followed by a space, comma, colon, ``(`` or
  ``=`` gets that name's colour (``"loo_minus_one k=4"`` is coloured as
  ``loo_minus_one``). Any other name gets a colour of :data:`FALLBACK_PALETTE` picked
  by a stable hash (CRC-32) of the name, the same in every process.
  """
  known = colors()
  key = _key(name, known)
  if key is not None:
    return known[key]
  return FALLBACK_PALETTE[_stable_index(name, len(FALLBACK_PALETTE))]


def marker(name: str) -> str:
  """The fixed marker of a name (as :func:`color`; unknown names: stable hash)."""
  key = _key(name, colors())
  markers = {**estimators_lib.markers(), **MARKERS}
  if key is not None and key in markers:
    return markers[key]
  return _FALLBACK_MARKERS[_stable_index(name, len(_FALLBACK_MARKERS))]


def style(name: str, index: int = 0) -> dict[str, Any]:
  """Keyword arguments for ``ax.plot``: colour and marker of ``name``, and the
  ``index``-th line style (to tell apart several lines of one name)."""
  return {
    "color": color(name),
    "marker": marker(name),
    "linestyle": LINESTYLES[index % len(LINESTYLES)],
  }


def shade(name: str, index: int, count: int) -> str:
  """The ``index``-th of ``count`` shades of ``name``'s colour, light to dark: tells
  apart several lines of one estimator (e.g. one per k) while keeping its hue."""
  rgb = np.array(mcolors.to_rgb(color(name)))
  t = 0.0 if count <= 1 else index / (count - 1) - 0.5  # -0.5 (light) .. 0.5 (dark)
  mixed = rgb + (1 - rgb) * (-t) * 1.1 if t < 0 else rgb * (1 - t * 0.9)
  r, g, b = (float(x) for x in np.clip(mixed, 0, 1))
  return mcolors.to_hex((r, g, b))


def sequential(index: int, count: int) -> str:
  """The ``index``-th of ``count`` colours of an ordered quantity (e.g. k), from dark
  blue (first) through magenta to yellow-orange (last): for lines that are not
  estimators."""
  cmap = matplotlib.colormaps["plasma"]
  t = 0.0 if count <= 1 else index / (count - 1)
  return mcolors.to_hex(cmap(0.05 + 0.8 * t))


def apply() -> None:
  """Sets matplotlib's rcParams for legible figures (fonts, line widths, dpi)."""
  matplotlib.rcParams.update(RC_PARAMS)


def size_for(nrows: int = 1, ncols: int = 1, *, legend_width: float = 0.0) -> tuple[float, float]:
  """The size (inches) of a ``nrows x ncols`` grid of :data:`PANEL` panels, plus
  ``legend_width`` inches on the right. The panels of a row take at least
  :data:`MIN_MULTI_WIDTH` (several panels) or :data:`MIN_SINGLE_WIDTH` (one panel) and
  at most :data:`MAX_PANELS_WIDTH` inches together."""
  minimum = MIN_MULTI_WIDTH if nrows * ncols > 1 else MIN_SINGLE_WIDTH
  panels = max(min(PANEL[0] * ncols, MAX_PANELS_WIDTH), minimum)
  return panels + legend_width, PANEL[1] * nrows + 0.6


def figure(
  nrows: int = 1,
  ncols: int = 1,
  *,
  legend_width: float = 0.0,
  figsize: tuple[float, float] | None = None,
  pyplot: bool = False,
  **kwargs: Any,
) -> tuple[Figure, Any]:
  """A figure at a legible size and its axes (``squeeze=False``: a 2-D array).

  Args:
    nrows, ncols: the grid of panels.
    legend_width: inches added on the right for a figure legend (see :func:`legend`).
    figsize: overrides the computed size.
    pyplot: create the figure through pyplot (shown by a notebook's inline backend
      without ``display``; closed by :func:`save`). By default the figure is built
      without pyplot.
    **kwargs: passed to ``subplots`` (``sharex``, ``sharey``, ``squeeze``, ...).
  """
  apply()
  size = figsize or size_for(nrows, ncols, legend_width=legend_width)
  kwargs.setdefault("squeeze", False)
  if pyplot:
    import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top

    fig = plt.figure(figsize=size)
  else:
    fig = Figure(figsize=size)
  # Our own attribute of the figure, read by legend().
  fig._maxk_legend_width = legend_width  # type: ignore[attr-defined]
  axes = fig.subplots(nrows, ncols, **kwargs)
  return fig, axes


def legend(fig: Figure, axes: Any, *, title: str | None = None, **kwargs: Any) -> None:
  """One legend for the whole figure, on its right, from the labelled lines of ``axes``
  (an Axes or an array of them; duplicates of a label are dropped); lays out the
  figure with room for it (the ``legend_width`` of :func:`figure`, else 2.6 in)."""
  handles, labels = [], []
  for ax in np.atleast_1d(axes).flat:
    for handle, label in zip(*ax.get_legend_handles_labels()):
      if label not in labels and not label.startswith("_"):
        handles.append(handle)
        labels.append(label)
  width = getattr(fig, "_maxk_legend_width", 0.0) or 2.6
  right = 1 - width / fig.get_figwidth()
  fig.legend(
    handles,
    labels,
    loc="center left",
    bbox_to_anchor=(right + 0.01, 0.5),
    title=title,
    frameon=False,
    **kwargs,
  )
  fig.tight_layout(rect=(0, 0, right, 1))


def band(ax: Any, x: Sequence[float], lo: Sequence[float], hi: Sequence[float], name: str) -> None:
  """A shaded uncertainty band between ``lo`` and ``hi`` in ``name``'s colour."""
  ax.fill_between(x, lo, hi, color=color(name), alpha=0.18, linewidth=0)


def save(fig: Figure, path: str | os.PathLike[str]) -> str:
  """Writes ``fig`` as a PNG at :data:`DPI` (tight bounding box) to ``path`` (its
  folder is created); closes it if pyplot holds it; returns ``path`` as a string."""
  path = os.fspath(path)
  folder = os.path.dirname(path)
  if folder:
    os.makedirs(folder, exist_ok=True)
  fig.savefig(path, dpi=DPI, bbox_inches="tight", pad_inches=0.1, facecolor="white")
  plt = sys.modules.get("matplotlib.pyplot")
  if plt is not None and plt.fignum_exists(getattr(fig, "number", -1)):
    plt.close(fig)
  return path
