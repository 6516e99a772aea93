"""The variance atlas table (README, the index page and ``atlas.md``), from ``atlas.csv``.

Plain Python on the CSV's rows (values may be strings), so that the reproduction's index
page builds it without importing JAX.  One line per (bandit, k, estimator) of the
estimators that claim to be unbiased (``unbiased == "always"``) and are measured unbiased
in every row (``biased``), then the best constant baseline; one column per n; each cell
the row's ``variance_to_floor`` (the variance over the floor of any baseline of the other
samples' rewards, :mod:`experiments.bandits.atlas`), ``*`` marking a Monte Carlo value.

``python -m experiments.bandit_variance.atlas_table`` rewrites README.md's atlas block
(the table and one sentence per estimator, :func:`summary`) from the committed
``docs/variance_atlas/atlas.csv``; ``tests/experiments/bandit_variance/atlas_readme_test.py``
checks that README holds exactly that block.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
import csv
import math
import os
from typing import Any

Row = Mapping[str, Any]
CONSTANT = "best constant baseline"
_TIE = 1e-9  # Relative: variances this close share a cell's "least variance".


def to_float(value: Any) -> float:
  """``float(value)``, NaN for an empty or non-numeric cell."""
  try:
    return float(value)
  except (TypeError, ValueError):
    return math.nan


def biased(rows: Sequence[Row]) -> bool:
  """Whether any row says biased (``biased`` a bool, or "True"/"False" from a CSV)."""
  return any(str(r["biased"]) == "True" for r in rows)


def cells(rows: Sequence[Row]) -> tuple[list[str], list[list[str]]]:
  """The table's header and rows of display strings (module docstring)."""
  ns = sorted({int(r["n"]) for r in rows})
  names = []
  for name in dict.fromkeys(r["estimator"] for r in rows):
    own = [r for r in rows if r["estimator"] == name]
    if all(r["unbiased"] == "always" for r in own) and not biased(own):
      names.append(name)
  out = []
  for bandit in dict.fromkeys(r["bandit"] for r in rows):
    for k in sorted({int(r["k"]) for r in rows if r["bandit"] == bandit}):
      cell = [r for r in rows if r["bandit"] == bandit and int(r["k"]) == k]
      for name in [*names, CONSTANT]:
        values = []
        for n in ns:
          at_n = [r for r in cell if int(r["n"]) == n]
          if name == CONSTANT:
            value = (
              to_float(at_n[0]["constant_floor"]) / to_float(at_n[0]["floor"]) if at_n else math.nan
            )
            monte_carlo = False
          else:
            match = [r for r in at_n if r["estimator"] == name]
            value = to_float(match[0]["variance_to_floor"]) if match else math.nan
            monte_carlo = bool(match) and match[0]["method"] != "exact"
          values.append(f"{value:.3f}{'*' if monte_carlo else ''}" if math.isfinite(value) else "")
        if any(values):
          out.append([bandit, str(k), name, *values])
  return ["bandit", "k", "estimator", *(f"n = {n}" for n in ns)], out


def markdown(rows: Sequence[Row]) -> str:
  """The table in markdown, with a line saying what ``*`` marks."""
  header, body = cells(rows)
  lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
  lines += ["| " + " | ".join(row) + " |" for row in body]
  return "\n".join(lines) + "\n\n`*`: Monte Carlo (JSPO's batches); every other value is exact.\n"


def _num(x: float) -> str:
  """Two decimals, or three significant digits from 1000 on (ratios reach 1e14)."""
  return f"{x:.2f}" if abs(x) < 1000 else f"{x:.3g}"


def _span(values: Sequence[float]) -> str:
  lo, hi = _num(min(values)), _num(max(values))
  return lo if lo == hi else f"{lo} to {hi}"


def _least_variance_wins(
  rows: Sequence[Row], cells: Sequence[tuple[str, int, int]]
) -> dict[str, int]:
  """Per estimator, the cells in which it has the least variance of the exact unbiased
  estimators (ties within rounding shared)."""
  best: dict[str, int] = {}
  for cell in cells:
    at = [
      r
      for r in rows
      if (r["bandit"], int(r["k"]), int(r["n"])) == cell
      and r["unbiased"] == "always"
      and r["method"] == "exact"
      and not biased([r])
      and math.isfinite(to_float(r["variance_to_floor"]))
    ]
    if at:
      # Estimators equal to the least within rounding (e.g. loo_centered and
      # loo_minus_one, the same at k = 1) each count the cell.
      least = min(to_float(r["variance"]) for r in at)
      for r in at:
        if to_float(r["variance"]) <= least * (1 + _TIE):
          best[r["estimator"]] = best.get(r["estimator"], 0) + 1
  return best


def _estimator_sentence(name: str, own: Sequence[Row], wins: int, num_cells: int) -> str:
  """Where estimator ``name`` stands against the floor in its cells ``own``."""
  ratios = [to_float(r["variance_to_floor"]) for r in own]
  ratios = [x for x in ratios if math.isfinite(x)]
  where = f"{len(own)} cells" + (f", {len(ratios)} with a floor" if len(ratios) < len(own) else "")
  if not ratios:
    return f"`{name}`: no cell with a floor ({where})."
  median = float(sorted(ratios)[len(ratios) // 2])
  num_biased = sum(biased([r]) for r in own)
  monte_carlo = sum(r["method"] != "exact" for r in own)
  mc = f"; {monte_carlo} Monte Carlo" if monte_carlo else ""
  if num_biased or any(r["unbiased"] != "always" for r in own):
    worst = max(to_float(r["direction_error"]) for r in own)
    return (
      f"`{name}`: biased for max@k in {num_biased} of {len(own)} cells (its mean off "
      f"∇max@k's direction by up to {worst:.0%}); rescaled, {_span(ratios)} times the "
      f"floor{mc}."
      if num_biased
      else f"`{name}`: biased by construction, its bias not detected in {len(own)} "
      f"cells{mc}; {_span(ratios)} times the floor."
    )
  ranked = (
    f"the least variance of the exact unbiased estimators (ties shared) in {wins} of {num_cells}"
    if not monte_carlo
    else f"{monte_carlo} Monte Carlo, not ranked"
  )
  return f"`{name}`: {_span(ratios)} times the floor (median {_num(median)}) in {where}; {ranked}."


def summary(rows: Sequence[Row]) -> list[str]:
  """One sentence per estimator on where it stands against the floor, then how MaxPO's
  leave-two-out baseline (``loo_centered``) compares with the non-centred ones; every
  number counted from ``rows``."""
  cells_ = sorted({(r["bandit"], int(r["k"]), int(r["n"])) for r in rows})
  best = _least_variance_wins(rows, cells_)
  lines = [
    _estimator_sentence(
      name, [r for r in rows if r["estimator"] == name], best.get(name, 0), len(cells_)
    )
    for name in dict.fromkeys(r["estimator"] for r in rows)
  ]
  constant = [to_float(r["constant_floor"]) / to_float(r["floor"]) for r in _one_per_cell(rows)]
  constant = [x for x in constant if math.isfinite(x)]
  if constant:
    lines.append(f"The best constant baseline: {_span(constant)} times the floor.")
  centred = _compare(rows, "loo_centered", ("none", "loo", "loo_minus_one"))
  if centred:
    lines.append(
      "MaxPO's leave-two-out baseline (`loo_centered`) has less variance than "
      + ", ".join(f"`{other}` in {wins} of {total} cells" for other, wins, total in centred)
      + "."
    )
  return lines


def _one_per_cell(rows: Sequence[Row]) -> list[Row]:
  seen: dict[tuple[str, int, int], Row] = {}
  for r in rows:
    seen.setdefault((r["bandit"], int(r["k"]), int(r["n"])), r)
  return list(seen.values())


def _compare(rows: Sequence[Row], name: str, others: Sequence[str]) -> list[tuple[str, int, int]]:
  """(other, cells where ``name`` has less variance, cells with both) per other."""
  variance = {(r["bandit"], r["k"], r["n"], r["estimator"]): to_float(r["variance"]) for r in rows}
  out = []
  for other in others:
    pairs = [
      (v, variance[(b, k, n, other)])
      for (b, k, n, e), v in variance.items()
      if e == name and (b, k, n, other) in variance
    ]
    if pairs:
      out.append((other, sum(a < b for a, b in pairs), len(pairs)))
  return out


BEGIN = (
  "<!-- variance-atlas:begin; generated by `python -m experiments.bandit_variance.atlas_table`"
  " from docs/variance_atlas/atlas.csv -->"
)
END = "<!-- variance-atlas:end -->"


def readme_block(rows: Sequence[Row]) -> str:
  """README's atlas block, markers included: the table, then :func:`summary`'s lines."""
  items = "\n".join(f"- {line}" for line in summary(rows))
  return f"{BEGIN}\n{markdown(rows)}\n{items}\n{END}"


def replace_block(text: str, block: str) -> str:
  """``text`` with its block between :data:`BEGIN` and :data:`END` replaced by ``block``.

  Raises:
    ValueError: when ``text`` has no such block.
  """
  start, end = text.find(BEGIN), text.find(END)
  if start < 0 or end < start:
    raise ValueError("README.md has no variance-atlas block (its begin and end markers).")
  return text[:start] + block + text[end + len(END) :]


def main() -> None:
  """Rewrites README.md's atlas block from docs/variance_atlas/atlas.csv (repository root)."""
  root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
  with open(os.path.join(root, "docs", "variance_atlas", "atlas.csv"), newline="") as f:
    rows = list(csv.DictReader(f))
  path = os.path.join(root, "README.md")
  with open(path) as f:
    text = f.read()
  with open(path, "w") as f:
    f.write(replace_block(text, readme_block(rows)))


if __name__ == "__main__":
  main()
