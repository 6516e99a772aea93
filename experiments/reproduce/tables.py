"""The key tables of each finished stage, computed for the index page.

Each table is a :class:`Table` of display strings (numbers already formatted by
:func:`format_number`); ``index_markdown`` and ``index_html`` render it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
import csv
import json
import math
import os
from typing import Any, NamedTuple

from experiments.bandit_variance import atlas_table as atlas_table_lib


class Table(NamedTuple):
  """One table of the page: a one-line explanation above its cells.

  A table that could not be built has only its title (a note naming the error) and
  no header or rows.
  """

  title: str
  header: tuple[str, ...] = ()
  rows: tuple[tuple[str, ...], ...] = ()


def read_csv(path: str) -> list[dict[str, str]]:
  """The rows of the CSV file at ``path``, as dicts by column name."""
  with open(path, newline="") as f:
    return list(csv.DictReader(f))


def format_number(x: Any, digits: int = 4) -> str:
  """A table cell: integers as integers, other numbers to ``digits`` significant digits.

  Anything that is not a number (labels, empty cells) is shown as it is; NaN and
  +-inf as ``nan``, ``inf`` and ``-inf``.
  """
  try:
    v = float(x)
  except (TypeError, ValueError):
    return str(x)
  if math.isnan(v):
    return "nan"
  if math.isinf(v):
    return "inf" if v > 0 else "-inf"
  if v == int(v) and abs(v) < 1e6:
    return str(int(v))
  return f"{v:.{digits}g}"


def make_table(title: str, header: Sequence[str], rows: Sequence[Sequence[Any]]) -> Table:
  """A :class:`Table` of ``rows`` under ``header``, each cell by :func:`format_number`."""
  cells = tuple(tuple(format_number(c) for c in row) for row in rows)
  return Table(title, tuple(header), cells)


_OBJECTIVE_TITLES = {
  "top_m": "mean of the top m of k (top_m)",
  "min": "min@k",
  "maxrl": "MaxRL's sum_{j<=k} pass@j / j",
}


def variance_table(
  rows: Sequence[Mapping[str, str]], policy: str, objective: str = "max"
) -> Table | None:
  """Estimator x n table of the gradient variance at one k, for ``bandit_variance``.

  Rows of one policy and objective (rows without an ``objective`` column are max@k).
  k is the largest k > 1 that every n has, else the largest k below the largest n.
  The last column is the largest |bias_z| over every k of the estimator.
  """
  rows = [r for r in rows if r["policy"] == policy and r.get("objective", "max") == objective]
  if not rows:
    return None
  ks = sorted({int(r["k"]) for r in rows})
  ns = sorted({int(r["n"]) for r in rows})
  k = max([kk for kk in ks if 1 < kk <= min(ns)] or [kk for kk in ks if 1 < kk < max(ns)] or ks)
  table: list[list[Any]] = []
  for estimator in dict.fromkeys(r["estimator"] for r in rows):
    mine = [r for r in rows if r["estimator"] == estimator]
    cells = {int(r["n"]): r["variance"] for r in mine if int(r["k"]) == k}
    bias_z = [abs(float(r["bias_z"])) for r in mine if r["bias_z"] not in ("", "nan")]
    table.append([estimator] + [cells.get(n, "") for n in ns] + [max(bias_z) if bias_z else ""])
  header = ["estimator"] + [f"var n={n}" for n in ns] + ["max abs bias_z"]
  setting = " (PKPO's toy, Fig. 4)" if policy == "gaussian" else " (softmax bandit)"
  target = "" if objective == "max" else f" of {_OBJECTIVE_TITLES.get(objective, objective)}"
  title = (
    f"Gradient variance{target} of each estimator vs n, {policy} policy{setting}, k={k}; "
    "max |bias_z| (bias in standard errors over every k) > 3 flags a biased estimator."
  )
  return make_table(title, header, table)


def variance_check_table(rows: Sequence[Mapping[str, str]]) -> Table | None:
  """``bandit_variance``'s variance_check.csv: estimated vs empirical variance per cell."""
  if not rows:
    return None
  columns = (
    "empirical_variance",
    "empirical_variance_stderr",
    "mean_estimated_variance",
    "mean_estimated_variance_stderr",
    "z",
  )
  table = [[r["policy"], r["statistic"], r["n"], r["k"]] + [r[c] for c in columns] for r in rows]
  header = ["policy", "statistic", "n", "k", "empirical var", "s.e.", "mean estimated var"]
  header += ["s.e.", "z"]
  title = (
    "Check of maxk.max_at_k_variance / maxk.pass_at_k_variance: the empirical variance of "
    "the estimates over replicates beside the mean of their estimated variance; z (their "
    "difference in standard errors added in quadrature) is within about +-3 for unbiased "
    "variance estimators."
  )
  return make_table(title, header, table)


def atlas_table(rows: Sequence[Mapping[str, str]]) -> Table | None:
  """``bandit_variance``'s atlas.csv: variance / floor of the unbiased max@k estimators."""
  if not rows:
    return None
  header, body = atlas_table_lib.cells(rows)
  title = (
    "Variance atlas: tr Cov of each unbiased max@k estimator over the floor (the least "
    "variance of any baseline of the other samples' rewards), exact; * Monte Carlo."
  )
  return Table(title, tuple(header), tuple(tuple(row) for row in body))


def training_table(rows: Sequence[Mapping[str, str]]) -> Table | None:
  """Final exact max@k (mean over seeds) per bandit, estimator and schedule, per k_eval."""
  if not rows:
    return None
  col = "final_max_at_k_mean"
  k_evals = sorted({int(r["k_eval"]) for r in rows})
  keys = list(dict.fromkeys((r["bandit"], r["estimator"], r["schedule"]) for r in rows))
  table = []
  for key in keys:
    cells = {
      int(r["k_eval"]): r[col] for r in rows if (r["bandit"], r["estimator"], r["schedule"]) == key
    }
    table.append(list(key) + [cells.get(k, "") for k in k_evals])
  header = ["bandit", "estimator", "k_opt schedule"] + [f"max@{k}" for k in k_evals]
  title = "Exact max@k of the trained policy (mean over seeds) at each k_eval."
  return make_table(title, header, table)


def _with_interval(row: Mapping[str, str], metric: str) -> str:
  """``mean [lo, hi]`` where the row has the metric's interval bounds, else the mean."""
  mean = format_number(row[metric], 3)
  lo, hi = row.get(f"{metric}_lo", ""), row.get(f"{metric}_hi", "")
  if lo in ("", None) or hi in ("", None) or "nan" in (lo.lower(), hi.lower()):
    return mean
  return f"{mean} [{format_number(lo, 3)}, {format_number(hi, 3)}]"


def lm_table(rows: Sequence[Mapping[str, str]]) -> Table | None:
  """pass@k and max@k with their 95% intervals at the smallest, middle and largest
  k_eval per stage/method/k_opt (and seed, where the rows hold several)."""
  if not rows:
    return None
  k_evals = sorted({int(r["k_eval"]) for r in rows})
  shown = sorted({k_evals[0], k_evals[len(k_evals) // 2], k_evals[-1]})
  seeds = list(dict.fromkeys(r.get("seed", "") for r in rows))
  keyed = ["stage", "method", "k_opt"] + (["seed"] if len(seeds) > 1 else [])
  keys = list(dict.fromkeys(tuple(r[c] for c in keyed) for r in rows))
  table = []
  for key in keys:
    cells = {int(r["k_eval"]): r for r in rows if tuple(r[c] for c in keyed) == key}
    table.append(
      list(key)
      + [_with_interval(cells[k], "pass_at_k") if k in cells else "" for k in shown]
      + [_with_interval(cells[k], "max_at_k") if k in cells else "" for k in shown]
    )
  header = keyed + [f"pass@{k}" for k in shown] + [f"max@{k}" for k in shown]
  seed_note = f", seed {seeds[0]}" if len(seeds) == 1 and seeds[0] != "" else ""
  title = (
    f"Small LM: pass@k and max@k on held-out problems{seed_note}, after SFT (base) and "
    "after RL, with 95% intervals over problems."
  )
  return make_table(title, header, table)


_BEST_OF_N_COLUMNS = (
  "num_outcomes",
  "kl_at_n_max",
  "formula_at_n_max",
  "formula_max_overshoot",
  "d_n_expected_max_abs_error",
  "d_n_mc_within_2se_fraction",
)


def best_of_n_table(summary: Mapping[str, Any]) -> Table | None:
  """Per reference of ``best_of_n``'s summary.json: the bound's overshoot, d_n's error."""
  refs = [(name, v) for name, v in summary.items() if isinstance(v, Mapping)]
  if not refs:
    return None
  table = [[name] + [v[c] for c in _BEST_OF_N_COLUMNS] for name, v in refs]
  title = (
    "Best-of-n per reference (summary.json): exact KL and the formula log n - (n-1)/n "
    "at the largest n, the formula's worst overshoot, d_n's worst error (nats)."
  )
  return make_table(title, ["reference", *_BEST_OF_N_COLUMNS], table)


def stage_tables(workdir: str, stage: str) -> list[Table]:
  """The key tables of the stage whose outputs are in ``workdir/stage``.

  A table that cannot be built from the files found becomes a one-line note naming
  the error, so that one malformed file never stops the index page.
  """
  stage_dir = os.path.join(workdir, stage)
  path = os.path.join(stage_dir, "results.csv")
  tables: list[Table | None] = []
  try:
    if stage == "best_of_n":
      summary_path = os.path.join(stage_dir, "summary.json")
      if os.path.exists(summary_path):
        with open(summary_path) as f:
          tables.append(best_of_n_table(json.load(f)))
    elif stage == "bandit_variance" and os.path.exists(path):
      rows = read_csv(path)
      tables += [variance_table(rows, "gaussian"), variance_table(rows, "categorical")]
      tables += [variance_table(rows, "categorical", o) for o in _OBJECTIVE_TITLES]
      check_path = os.path.join(stage_dir, "variance_check.csv")
      if os.path.exists(check_path):
        tables.append(variance_check_table(read_csv(check_path)))
      atlas_path = os.path.join(stage_dir, "atlas.csv")
      if os.path.exists(atlas_path):
        tables.append(atlas_table(read_csv(atlas_path)))
    elif stage == "bandit_training" and os.path.exists(path):
      tables.append(training_table(read_csv(path)))
    elif stage == "lm" and os.path.exists(path):
      tables.append(lm_table(read_csv(path)))
  except (KeyError, ValueError, TypeError) as e:
    tables.append(Table(f"(table unavailable: {type(e).__name__}: {e})"))
  return [t for t in tables if t]
