r"""A declared contrast in a README block's prose: its verdict, its sentence, the
declared table and the counts, from contrasts.csv rows.

**Verdicts.** A declared contrast's verdict (:func:`verdict_of`) is one of
:data:`VERDICTS`: ``better`` (Holm p < 0.05, diff > 0), ``worse`` (Holm p < 0.05,
diff < 0), ``equivalent`` (a declared margin and its Holm-adjusted equivalence p <
0.05) or ``not detected``. contrasts.csv's ``verdict`` column holds them; a file
from before the margin columns says ``significant`` (read as better or worse by the
sign of diff) or ``not significant`` (``not detected``, with no power figure). Each
verdict has one sentence template (:func:`verdict_sentence`): better "a − b at
pass@k is +x [lo, hi]: a beats b"; worse "...: a is below b"; equivalent "...: a
and b are equivalent within ±margin"; not detected "...: a difference is not
detected (power P at ±margin)", or "(Holm p q)" where contrasts.csv has no power.
"Does not beat" is never written: it would state an absence of evidence as a
finding.

Both blocks (:mod:`~experiments.lm_study.readme_8seed`,
:mod:`~experiments.lm_study.readme_matched_kl`) write their verdicts, tables and
counts with these functions and fill their prose to :data:`WIDTH` (:func:`wrap`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
import csv
import math
import re
import textwrap
from typing import Any

BETTER, WORSE, EQUIVALENT, NOT_DETECTED = "better", "worse", "equivalent", "not detected"
VERDICTS = (BETTER, WORSE, EQUIVALENT, NOT_DETECTED)
DETECTED = (BETTER, WORSE)
TABLE_HEADER = ("task", "declared contrast", "a − b [floored interval]", "p", "Holm p", "verdict")
POWER_HEADER = "power at ±margin"
MINUS = "−"  # U+2212, the prose's minus sign; tables use "-".
Row = Mapping[str, Any]


def number(row: Row, column: str) -> float:
  """The row's ``column`` as a float (NaN where empty or absent)."""
  value = row.get(column, "")
  return float(value) if value not in ("", None) else math.nan


def verdict_of(row: Row) -> str:
  """A contrasts.csv row's verdict among :data:`VERDICTS` (module docstring).

  Raises:
    ValueError: for a ``verdict`` that is neither one of :data:`VERDICTS` nor an
      old ``significant`` / ``not significant``.
  """
  verdict = str(row["verdict"])
  if verdict in VERDICTS:
    return verdict
  if verdict == "significant":  # Files written before the verdicts below.
    return BETTER if number(row, "diff") > 0 else WORSE
  if verdict == "not significant":
    return NOT_DETECTED
  raise ValueError(f"row verdict={verdict!r} is not one of {VERDICTS} (or significant).")


def power_of(row: Row) -> float:
  """The row's ``power`` column (NaN where contrasts.csv has none)."""
  return number(row, "power")


def margin_of(row: Row) -> float:
  """The row's ``margin`` column (NaN where contrasts.csv has none)."""
  return number(row, "margin")


def resolved_k(row: Row) -> int:
  """The contrast's k (``"n"`` already resolved in contrasts.csv's ``k``)."""
  return int(float(row["k"]))


def contrast_words(row: Row) -> tuple[str, str, str]:
  """(a's label, b's label, ``pass@k`` with k resolved) from the row's question
  ``"<a> vs <b> at <measure>@<k>"``, optionally followed by ``", matched KL"`` (a
  contrast at matched KL to the warm start: ``pass@k at matched KL``).

  Raises:
    ValueError: for a question not of that form.
  """
  match = re.fullmatch(r"(.+?) vs (.+?) at (pass|max)@\w+(, matched KL)?", str(row["question"]))
  if not match:
    raise ValueError(f"question={row['question']!r} is not '<a> vs <b> at <measure>@<k>'.")
  where = " at matched KL" if match.group(4) else ""
  return match.group(1), match.group(2), f"{match.group(3)}@{resolved_k(row)}{where}"


def signed(x: float, fmt: str = ".3f") -> str:
  """``+0.062`` or ``−0.113`` (U+2212)."""
  text = f"{abs(x):{fmt}}"
  return f"+{text}" if x > 0 else (f"{MINUS}{text}" if x < 0 else text)


def plain(x: float, fmt: str = ".3f") -> str:
  """``0.050`` or ``−0.144`` (U+2212)."""
  return f"{MINUS}{abs(x):{fmt}}" if x < 0 else f"{x:{fmt}}"


def estimate_text(diff: float, lo: float, hi: float, fmt: str = ".3f") -> str:
  """``+x [lo, hi]`` with the prose's signs."""
  return f"{signed(diff, fmt)} [{plain(lo, fmt)}, {plain(hi, fmt)}]"


def percent(x: float) -> str:
  """A share as a whole percentage, ``7%``."""
  return f"{100 * x:.0f}%"


def verdict_sentence(row: Row, *, holm: bool = False) -> str:
  """The row's sentence by its verdict's template (module docstring); with ``holm``
  its Holm p follows the interval: "a − b at pass@k is +x [lo, hi], Holm p q: ..."."""
  a, b, at = contrast_words(row)
  estimate = estimate_text(number(row, "diff"), number(row, "lo"), number(row, "hi"))
  head = f"{a} − {b} at {at} is {estimate}"
  if holm:
    head += f", Holm p {p_text(number(row, 'p_holm'))}"
  verdict = verdict_of(row)
  if verdict == BETTER:
    return f"{head}: {a} beats {b}."
  if verdict == WORSE:
    return f"{head}: {a} is below {b}."
  margin = margin_of(row)
  if verdict == EQUIVALENT:
    return f"{head}: {a} and {b} are equivalent within ±{margin:g}."
  power = power_of(row)
  if math.isfinite(power) and math.isfinite(margin):
    return f"{head}: a difference is not detected (power {percent(power)} at ±{margin:g})."
  if holm:
    return f"{head}: a difference is not detected."
  return f"{head}: a difference is not detected (Holm p {p_text(number(row, 'p_holm'))})."


def p_text(p: float) -> str:
  """A p-value as the block writes it: ``<0.001`` or three decimals."""
  return "<0.001" if p < 0.001 else f"{p:.3f}"


def cell(diff: float, lo: float, hi: float) -> str:
  """``0.062 [0.010, 0.114]``: a table cell's estimate and interval."""
  return f"{diff:.3f} [{lo:.3f}, {hi:.3f}]"


def declared_table(rows: Sequence[Row]) -> list[str]:
  """The declared contrasts as a Markdown table with :func:`verdict_of`'s verdicts
  (and a power column where contrasts.csv has one)."""
  with_power = any(math.isfinite(power_of(r)) for r in rows)
  header = TABLE_HEADER + ((POWER_HEADER,) if with_power else ())
  lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
  for r in rows:
    cells = [
      str(r["task"]),
      str(r["question"]),
      cell(number(r, "diff"), number(r, "lo"), number(r, "hi")),
      p_text(number(r, "p_value")),
      p_text(number(r, "p_holm")),
      verdict_of(r),
    ]
    if with_power:
      power, margin = power_of(r), margin_of(r)
      cells.append(f"{percent(power)} at ±{margin:g}" if math.isfinite(power) else "–")
    lines.append("| " + " | ".join(cells) + " |")
  return lines


def count_sentence(task: str, rows: Sequence[Row], *, family: str | None = None) -> str:
  """``**Countdown: 5 of 8 declared contrasts detected after Holm.**`` (and how many
  are equivalent, where any is); with ``family`` (contrasts.csv's ``family``, e.g.
  ``primary``) over that family's rows alone: ``**Countdown: 4 of 4 primary declared
  contrasts detected after Holm.**``."""
  mine = [r for r in rows if r["task"] == task and (family is None or r["family"] == family)]
  verdicts = [verdict_of(r) for r in mine]
  detected = sum(v in DETECTED for v in verdicts)
  declared = f"{family} declared" if family else "declared"
  text = (
    f"**{task.capitalize()}: {detected} of {len(mine)} {declared} contrasts detected after Holm"
  )
  equivalent = verdicts.count(EQUIVALENT)
  if equivalent:
    text += f", {equivalent} of {len(mine)} {declared} contrasts equivalent within their margin"
  return text + ".**"


def read_csv(path: str) -> list[dict[str, str]]:
  """The rows of the CSV file ``path``."""
  with open(path, newline="") as f:
    return list(csv.DictReader(f))


WIDTH = 88  # README's prose width.


def wrap(lines: Sequence[str]) -> list[str]:
  """Paragraphs and bullets filled to :data:`WIDTH`; table lines and blank lines kept."""
  out = []
  for line in lines:
    if not line or line.startswith("|"):
      out.append(line)
      continue
    bullet = line.startswith("- ")
    out += textwrap.wrap(
      line,
      WIDTH,
      subsequent_indent="  " if bullet else "",
      break_long_words=False,
      break_on_hyphens=False,
    )
  return out


def tasks_of(rows: Iterable[Row]) -> list[str]:
  """The tasks of contrasts.csv ``rows``, in their order."""
  return list(dict.fromkeys(str(r["task"]) for r in rows))
