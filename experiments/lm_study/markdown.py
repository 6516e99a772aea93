"""Markdown building blocks of the study's README: cells with intervals, p-values,
run labels, tables, figures with their explanation, and the declared contrasts'
table."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
import math
from typing import Any


def cell(mean: float, lo: float, hi: float, fmt: str = ".3f") -> str:
  """``mean [lo, hi]``, or the mean alone where there is no interval."""
  mean, lo, hi = float(mean), float(lo), float(hi)
  if not math.isfinite(lo):
    return f"{mean:{fmt}}"
  return f"{mean:{fmt}} [{lo:{fmt}}, {hi:{fmt}}]"


def estimate(row: dict[str, Any], metric: str) -> str:
  """:func:`cell` of ``row``'s ``metric`` and its ``_lo`` / ``_hi`` columns."""
  return cell(row[metric], row[f"{metric}_lo"], row[f"{metric}_hi"])


def label(r: dict[str, Any]) -> str:
  """A run in tables: ``base``, or its ``method`` in backticks with ``k=<k_opt>``."""
  if r["stage"] == "base":
    return "base"
  k_opt = "" if r["k_opt"] in ("", "n/a") else f" k={r['k_opt']}"
  return f"`{r['method']}`{k_opt}"


def run_label(r: dict[str, Any]) -> str:
  """:func:`label` of a row with ``rl_run``, ``method`` and ``k_opt`` (no stage)."""
  return label({**r, "stage": "base" if r["rl_run"] == "base" else "rl"})


def table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
  """A Markdown table's lines (and a blank line after it)."""
  lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
  lines += ["| " + " | ".join(row) + " |" for row in rows]
  return lines + [""]


def p_text(p: float) -> str:
  """A p-value to 3 decimals, ``<0.001`` below that."""
  p = float(p)
  if not math.isfinite(p):
    return "–"
  return "<0.001" if p < 0.001 else f"{p:.3f}"


DECLARED_HEADER = (
  "task",
  "declared contrast",
  "a − b [floored interval]",
  "p",
  "Holm p",
  "verdict",
)


def verdict_text(row: dict[str, Any]) -> str:
  """A declared contrast's verdict as tables print it: ``not detected`` with the
  power of its test at the margin (``not detected (power 0.07 at ±0.02)``),
  ``equivalent`` with its margin, other verdicts as they are."""
  verdict = str(row["verdict"])
  margin = float(row.get("margin", "nan") or "nan")
  power = float(row.get("power", "nan") or "nan")
  if verdict == "not detected" and math.isfinite(power) and math.isfinite(margin):
    return f"not detected (power {power:.2f} at ±{margin:g})"
  if verdict == "equivalent" and math.isfinite(margin):
    return f"equivalent within ±{margin:g}"
  return verdict


def declared_question(row: dict[str, Any]) -> str:
  """A declared contrast's question, and for one at matched KL its level and the seeds
  that reached it: ``k_opt = 8 vs GRPO at pass@8 (at KL 0.5 nats; 7 of 8 seeds)``."""
  at_kl = str(row.get("at_kl", "final") or "final")
  if at_kl == "final":
    return str(row["question"])
  reached, seeds = row["num_seeds_reached"], row["num_seeds"]
  return f"{row['question']} (at KL {float(at_kl):g} nats; {reached} of {seeds} seeds)"


def declared_table(rows: Sequence[dict[str, Any]]) -> list[str]:
  """The declared contrasts (contrasts.csv rows) as a Markdown table, a row each."""
  return table(
    DECLARED_HEADER,
    (
      (
        r["task"],
        declared_question(r),
        cell(r["diff"], r["lo"], r["hi"]),
        p_text(r["p_value"]),
        p_text(r["p_holm"]),
        verdict_text(r),
      )
      for r in rows
    ),
  )


def n_of(summary: Sequence[dict[str, Any]], task: str) -> int:
  """The evaluation's n of ``task``: its largest k in summary rows."""
  return max(int(r["k_eval"]) for r in summary if r["task"] == task)


def seed_values(row: dict[str, Any]) -> list[float]:
  """The per-seed values of a row's ``value_seeds``."""
  return [float(v) for v in str(row["value_seeds"]).split()]


def figure(name: str, alt: str, explanation: str) -> list[str]:
  """A figure embedded with ``alt`` text and one line of ``explanation`` below it."""
  return [f"![{alt}]({name})", "", f"*{explanation}*", ""]
