r"""The checker of a README block's claims: it parses the block's prose and table on
its own, without the generators, and checks them against contrasts.csv.

:func:`claim_problems` (the 8-seed block, :mod:`~experiments.lm_study.readme_8seed`,
and every block's shared claims) reads the block's table and prose with regular
expressions and checks every count "N of M declared contrasts" (or "N of M primary
declared contrasts": the rows of that ``family`` alone), every "a − b at pass@k is x
[lo, hi]" (or "at pass@k at matched KL") naming a declared contrast, every power and
Holm p beside it, and every verdict phrase ("beats", "does not beat", "is below",
"are equivalent", "not detected", "significant") against contrasts.csv rows; it
refuses the causal phrases of :data:`CAUSAL_PHRASES`, which no generated sentence
uses (a declared contrast compares outcomes; it does not say why they differ).

:func:`matched_kl_claim_problems` (the matched-KL study's block,
:mod:`~experiments.lm_study.readme_matched_kl`) runs :func:`claim_problems` on its
block and checks what that one does not know: the table's ``family`` and ``matched
KL`` cells and every "(at KL x nats; N of M seeds)" against the contrast it follows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
import math
import re

from experiments.lm_study import readme_8seed
from experiments.lm_study import readme_block
from experiments.lm_study import readme_matched_kl as mk
from experiments.lm_study import readme_verdicts as rv

# Phrases that attribute a cause; a declared contrast does not support them.
CAUSAL_PHRASES = (
  "because",
  "causes",
  "caused by",
  "due to",
  "leads to",
  "thanks to",
  "results in",
  "therefore",
  "so max@k",
  "so grpo",
  "trade-off holds",
  "recovers",
)

_NUM = r"[+−-]?\d+(?:\.\d+)?"
_AT = r"(?:pass|max)@\d+(?: at matched KL)?"  # contrast_words' third element.


def _number(text: str) -> float:
  return float(text.replace(rv.MINUS, "-").replace("+", ""))


def _close(text: str, value: float, decimals: int = 3) -> bool:
  return abs(_number(text) - value) <= 0.5 * 10**-decimals + 1e-9


def _p_ok(text: str, value: float) -> bool:
  return value < 0.001 if text == "<0.001" else _close(text, value)


def _table_problems(lines: Sequence[str], rows: Sequence[rv.Row]) -> tuple[list[str], set[int]]:
  """Problems of the declared table in ``lines`` and the indices of its lines."""
  header = "| " + " | ".join(rv.TABLE_HEADER)
  starts = [i for i, line in enumerate(lines) if line.startswith(header)]
  if len(starts) != 1:
    return [f"{len(starts)} declared-contrast tables, not 1"], set()
  first = last = starts[0] + 2
  while last < len(lines) and lines[last].startswith("|"):
    last += 1
  table = [[c.strip() for c in line.strip().strip("|").split("|")] for line in lines[first:last]]
  problems = []
  if len(table) != len(rows):
    problems.append(f"the table has {len(table)} rows, contrasts.csv {len(rows)}")
  for cells, row in zip(table, rows):
    cell = re.fullmatch(rf"({_NUM}) \[({_NUM}), ({_NUM})\]", cells[2]) if len(cells) > 2 else None
    ok = (
      len(cells) >= 6
      and cells[0] == row["task"]
      and cells[1] == row["question"]
      and cells[5] == rv.verdict_of(row)
      and cell is not None
      and all(_close(x, rv.number(row, c)) for x, c in zip(cell.groups(), ("diff", "lo", "hi")))
      and _p_ok(cells[3], rv.number(row, "p_value"))
      and _p_ok(cells[4], rv.number(row, "p_holm"))
    )
    if ok and len(cells) > 6 and cells[6] != "–":
      power = re.fullmatch(r"(\d+)% at ±([\d.]+)", cells[6])
      ok = power is not None and _power_ok(power.group(1), power.group(2), row)
    if not ok:
      problems.append(f"table row {cells} is not contrasts.csv's {row['task']}, {row['question']}")
  return problems, set(range(starts[0], last))


def _power_ok(percent_text: str, margin_text: str, row: rv.Row) -> bool:
  power, margin = rv.power_of(row), rv.margin_of(row)
  return (
    math.isfinite(power)
    and abs(float(percent_text) - 100 * power) <= 0.5 + 1e-9
    and math.isfinite(margin)
    and abs(float(margin_text) - margin) <= 1e-9
  )


def _aliases(rows: Sequence[rv.Row]) -> dict[str, set[str]]:
  """Label -> runs: each contrast's a and b labels, ``max@k`` (every max@k run),
  ``the base model``."""
  out: dict[str, set[str]] = {}
  for r in rows:
    a, b, _ = rv.contrast_words(r)
    out.setdefault(a, set()).add(str(r["a"]))
    out.setdefault(b, set()).add(str(r["b"]))
  runs = {str(r[c]) for r in rows for c in ("a", "b")}
  out["max@k"] = {x for x in runs if x.startswith("max_at_k")}
  out["the base model"] = {"base"}
  return out


# Verdict phrases: (regex over "<X> phrase <Y>", the verdicts it allows for a − b
# with a in X and b in Y).
_PHRASES = (
  ("does not beat", (rv.EQUIVALENT,)),
  ("beats", (rv.BETTER,)),
  ("is below", (rv.WORSE,)),
)


_SWAPPED = {
  rv.BETTER: rv.WORSE,
  rv.WORSE: rv.BETTER,
  rv.EQUIVALENT: rv.EQUIVALENT,
  rv.NOT_DETECTED: rv.NOT_DETECTED,
}


def _sentences(text: str) -> list[str]:
  """Prose split into sentences (a full stop followed by space) and bullets."""
  out = []
  for block in re.split(r"\n(?=- )|\n\n", text):
    flat = " ".join(block.split())
    out += [s for s in re.split(r"(?<=\.)(?:\*\*)?\s+", flat) if s]
  return out


def claim_problems(text: str, rows: Sequence[rv.Row]) -> list[str]:
  """What in ``text`` (a README, or the block alone) disagrees with contrasts.csv
  ``rows``: the declared table's cells, the counts "N of M declared contrasts",
  every "a − b at pass@k is x [lo, hi]" of a declared contrast with its verdict
  words, power and Holm p, every verdict phrase between two contrast labels, and
  any phrase of :data:`CAUSAL_PHRASES`. Parses the prose independently of
  :func:`block_text`; an empty list means no problem found."""
  lines = text.split("\n")
  try:
    start, end = readme_block.marker_lines(lines, readme_8seed.BEGIN, readme_8seed.END)
    lines = lines[start + 1 : end]
  except ValueError:
    pass  # The block alone.
  problems, table_lines = _table_problems(lines, rows)
  prose = "\n".join(line for i, line in enumerate(lines) if i not in table_lines)
  tasks = rv.tasks_of(rows)
  by_words = {(str(r["task"]), *rv.contrast_words(r)): r for r in rows}
  aliases = _aliases(rows)
  alias_re = "|".join(re.escape(a) for a in sorted(aliases, key=len, reverse=True))
  task = tasks[0] if tasks else ""
  lowered = prose.lower()
  for phrase in CAUSAL_PHRASES:
    for m in re.finditer(rf"\b{re.escape(phrase)}\b", lowered):
      problems.append(
        f"causal phrase {phrase!r} in '{lowered[max(0, m.start() - 40) : m.end() + 20]}'"
      )
  for sentence in _sentences(prose):
    named = [t for t in tasks if re.search(rf"\b{t}\b", sentence, re.IGNORECASE)]
    task = named[-1] if named else task
    problems += _count_problems(sentence, named, rows)
    named_rows = []
    for m in re.finditer(
      rf"({alias_re}) − ({alias_re}) at ({_AT}) is ({_NUM}) \[({_NUM}), ({_NUM})\]",
      sentence,
    ):
      row = by_words.get((task, m.group(1), m.group(2), m.group(3)))
      if row is None:
        continue  # Not a declared contrast: exploratory, not checked here.
      named_rows.append(row)
      if not all(
        _close(x, rv.number(row, c)) for x, c in zip(m.groups()[3:], ("diff", "lo", "hi"))
      ):
        problems.append(f"'{m.group(0)}' is not contrasts.csv's {task} {row['question']}")
    problems += _verdict_problems(sentence, task, named_rows, rows, aliases, alias_re)
  return problems


def _count_problems(sentence: str, named: Sequence[str], rows: Sequence[rv.Row]) -> list[str]:
  problems = []
  pattern = r"(\d+) of (\d+) (?:([a-z]+) )?declared contrasts (detected|equivalent)"
  for m in re.finditer(pattern, sentence):
    family = m.group(3)
    scope = [
      r
      for r in rows
      if (not named or r["task"] == named[-1]) and (family is None or r.get("family") == family)
    ]
    wanted = rv.DETECTED if m.group(4) == "detected" else (rv.EQUIVALENT,)
    count = sum(rv.verdict_of(r) in wanted for r in scope)
    if (int(m.group(1)), int(m.group(2))) != (count, len(scope)):
      where = (named[-1] if named else "all tasks") + (f", {family} family" if family else "")
      problems.append(f"'{m.group(0)}' ({where}): contrasts.csv has {count} of {len(scope)}")
  return problems


def _verdict_problems(
  sentence: str,
  task: str,
  named_rows: Sequence[rv.Row],
  rows: Sequence[rv.Row],
  aliases: Mapping[str, set[str]],
  alias_re: str,
) -> list[str]:
  problems = []
  claims: list[tuple[str, list[rv.Row], tuple[str, ...]]] = []
  task_rows = [r for r in rows if r["task"] == task]
  at = re.search(rf"\bat ({_AT})", sentence)
  for phrase, allowed in _PHRASES:
    for m in re.finditer(rf"(?<![\w@>])({alias_re}) {phrase} ({alias_re})", sentence):
      x, y = aliases[m.group(1)], aliases[m.group(2)]
      matched = [
        r for r in task_rows if (r["a"] in x and r["b"] in y) or (r["a"] in y and r["b"] in x)
      ]
      if at:
        matched = [r for r in matched if rv.contrast_words(r)[2] == at.group(1)] or matched
      claims.append((m.group(0), matched, allowed))
      for r in matched:
        verdict = rv.verdict_of(r) if r["a"] in x else _SWAPPED[rv.verdict_of(r)]
        if verdict not in allowed:
          problems.append(f"'{m.group(0)}' but {task} {r['question']} is {rv.verdict_of(r)}")
      if not matched:
        problems.append(f"'{m.group(0)}' names no declared contrast of {task}")
  for m in re.finditer(rf"(?<![\w@>])({alias_re}) and ({alias_re}) are equivalent", sentence):
    x, y = aliases[m.group(1)], aliases[m.group(2)]
    matched = [r for r in task_rows if {r["a"], r["b"]} <= x | y and r["a"] != r["b"]]
    matched = [r for r in matched if (r["a"] in x) != (r["a"] in y) or x == y]
    if at:
      matched = [r for r in matched if rv.contrast_words(r)[2] == at.group(1)] or matched
    if not matched or any(rv.verdict_of(r) != rv.EQUIVALENT for r in matched):
      problems.append(f"'{m.group(0)}' but {task} has no such equivalence verdict")
  subjects = list(named_rows) or [r for _, matched, _ in claims for r in matched]
  for m in re.finditer(r"(not )?(significant|detected)\b", sentence):
    negated = bool(m.group(1))
    if m.group(2) == "detected" and not negated:
      continue  # "N of M declared contrasts detected" is checked as a count.
    if not subjects:
      if m.group(2) == "significant" and not negated:
        problems.append(f"'{sentence[:80]}' claims significance for no declared contrast")
      continue
    wanted = (rv.EQUIVALENT, rv.NOT_DETECTED) if negated else rv.DETECTED
    for r in subjects:
      if rv.verdict_of(r) not in wanted:
        problems.append(f"'{m.group(0)}' but {task} {r['question']} is {rv.verdict_of(r)}")
  for r in named_rows:
    power = re.search(r"power (\d+)% at ±([\d.]+)", sentence)
    if power and not _power_ok(power.group(1), power.group(2), r):
      problems.append(f"'{power.group(0)}' is not {task} {r['question']}'s power")
    holm = re.search(r"Holm p (<0\.001|[\d.]+\d)", sentence)
    if holm and not _p_ok(holm.group(1), rv.number(r, "p_holm")):
      problems.append(f"'{holm.group(0)}' is not {task} {r['question']}'s Holm p")
  return problems


# ------------------------------------------------------ the matched-KL block

_MATCHED = re.compile(r"\((?:at KL )?([\d.]+) nats; (\d+) of (\d+) seeds\)")


def _matched_ok(cells: Sequence[str], row: rv.Row) -> bool:
  """Whether (level, reached, seeds) text ``cells`` are the row's."""
  level, reached, seeds = cells
  return (
    row["at_kl"] != mk.FINAL
    and math.isclose(float(level), float(row["at_kl"]))
    and int(reached) == int(row["num_seeds_reached"])
    and int(seeds) == int(row["num_seeds"])
  )


def _extra_table_problems(lines: Sequence[str], rows: Sequence[rv.Row]) -> list[str]:
  header = "| " + " | ".join(rv.TABLE_HEADER)
  starts = [i for i, line in enumerate(lines) if line.startswith(header)]
  if len(starts) != 1:
    return []  # claim_problems reports it.
  names = [c.strip() for c in lines[starts[0]].strip().strip("|").split("|")]
  if any(name not in names for name in mk.EXTRA_HEADER):
    return [f"the declared table lacks the columns {mk.EXTRA_HEADER}"]
  family, matched = (names.index(name) for name in mk.EXTRA_HEADER)
  problems = []
  table = []
  for line in lines[starts[0] + 2 :]:
    if not line.startswith("|"):
      break
    table.append([c.strip() for c in line.strip().strip("|").split("|")])
  for cells, row in zip(table, rows):
    if len(cells) <= max(family, matched):
      problems.append(f"table row {cells} lacks the family and matched KL cells")
      continue
    m = re.fullmatch(r"([\d.]+) nats; (\d+) of (\d+) seeds", cells[matched])
    ok = cells[family] == row["family"] and (
      (cells[matched] == mk.FINAL_CELL and row["at_kl"] == mk.FINAL)
      or (m is not None and _matched_ok(m.groups(), row))
    )
    if not ok:
      problems.append(
        f"table row {row['question']}: family {cells[family]!r}, matched KL "
        f"{cells[matched]!r} are not contrasts.csv's"
      )
  return problems


def matched_kl_claim_problems(text: str, rows: Sequence[rv.Row]) -> list[str]:
  """What in ``text`` (a README holding the block, or the block alone) disagrees with
  contrasts.csv ``rows``: :func:`claim_problems`'s findings, the table's
  family and matched-KL cells, and every "(at KL x nats; N of M seeds)" against the
  declared contrast whose question precedes it. Parses the prose independently of
  :func:`~experiments.lm_study.readme_matched_kl.block_text`; an empty list means no
  problem found."""
  try:
    block = mk.block_of(text)
  except ValueError:
    block = text  # The block alone.
  problems = claim_problems(block, rows)
  lines = block.split("\n")
  problems += _extra_table_problems(lines, rows)
  prose = " ".join(" ".join(line for line in lines if not line.startswith("|")).split())
  questions = sorted({str(r["question"]) for r in rows}, key=len, reverse=True)
  for m in _MATCHED.finditer(prose):
    before = prose[: m.start()].rstrip()
    question = next((q for q in questions if before.endswith(q)), None)
    row = next((r for r in rows if r["question"] == question), None)
    if row is None or not _matched_ok(m.groups(), row):
      problems.append(f"'{before[-60:]} {m.group(0)}' is no declared contrast's matched KL")
  return problems
