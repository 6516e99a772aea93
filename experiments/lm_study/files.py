"""Reading a study's files: one error type, and JSON and CSV readers that name the
file and line of anything malformed."""

from __future__ import annotations

from collections.abc import Sequence
import csv
import json
from typing import Any


class StudyError(ValueError):
  """A study folder that cannot be summarised (missing, unfinished or inconsistent runs)."""


def read_json(path: str) -> Any:
  """The JSON value in ``path``; StudyError naming the file if it cannot be read."""
  try:
    with open(path) as f:
      return json.load(f)
  except OSError as e:
    raise StudyError(f"{path} cannot be read ({e.strerror}).") from None
  except ValueError as e:
    raise StudyError(f"{path} is not valid JSON ({e}).") from None


def read_csv(path: str, columns: Sequence[str] = ()) -> list[dict[str, str]]:
  """The rows of ``path``; StudyError naming the file and line if it cannot be read,
  lacks one of ``columns``, or a row has more or fewer fields than the header (a
  truncated or edited file)."""
  try:
    with open(path, newline="") as f:
      reader = csv.DictReader(f)
      missing = [c for c in columns if c not in (reader.fieldnames or [])]
      if missing:
        raise StudyError(f"{path} lacks the column(s) {missing}.")
      rows = []
      for row in reader:
        if None in row or None in row.values():  # Extra fields / fields missing.
          fields = sum(v is not None for k, v in row.items() if k is not None)
          fields += len(row.get(None) or [])
          raise StudyError(
            f"{path}, line {reader.line_num}: {fields} of {len(reader.fieldnames or [])} "
            "fields (a truncated or damaged file)."
          )
        rows.append(row)
  except OSError as e:
    raise StudyError(f"{path} cannot be read ({e.strerror}).") from None
  except csv.Error as e:
    raise StudyError(f"{path} is not a readable CSV file ({e}).") from None
  return rows
