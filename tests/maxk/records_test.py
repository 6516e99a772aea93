"""records.group_records: its column-wise path (NumPy over whole columns, for well-formed
JSON records) gives exactly the groups of its record-by-record path, and leaves every
malformed input to the latter, which names the record and the column."""

import dataclasses

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import numpy as np
import pytest

from maxk._src import records

_PROBLEMS = st.one_of(
  st.lists(st.sampled_from(["a", "b", "c", "07", "7"]), min_size=1, max_size=30),
  st.lists(st.sampled_from([1, 2, 3.0, 7]), min_size=1, max_size=30),
)


def _same(a, b):
  for field in dataclasses.fields(records.Groups):
    x, y = getattr(a, field.name), getattr(b, field.name)
    if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
      assert x is not None and y is not None, field.name
      assert x.dtype == y.dtype and np.array_equal(x, y), field.name
    else:
      assert x == y, field.name


@settings(max_examples=200, deadline=None)
@given(data=st.data(), problems=_PROBLEMS, two_sources=st.booleans())
def test_column_path_equals_the_row_path(data, problems, two_sources):
  n = len(problems)
  correct = data.draw(st.lists(st.sampled_from([True, False]), min_size=n, max_size=n))
  answers = data.draw(st.lists(st.sampled_from(["x", "y", "", None, "z"]), min_size=n, max_size=n))
  rewards = data.draw(st.lists(st.sampled_from([0, 0.5, -1.25, 3]), min_size=n, max_size=n))
  rows = [
    {"problem_id": p, "correct": c, "answer": a, "reward": r, "sample_id": i}
    for i, (p, c, a, r) in enumerate(zip(problems, correct, answers, rewards))
  ]
  cut = n // 2 if two_sources and n > 1 else n
  sources = [records.as_source(rows[:cut])] + ([records.as_source(rows[cut:])] if cut < n else [])
  for columns in ({}, {"sample_id": "sample_id"}):
    used = records.resolve_columns(rows[0], columns)
    slow = records._group_rows(sources, used, False)
    fast = records._group_columns(sources, used, False)
    assert fast is not None
    _same(fast, slow)
    _same(records.group_records(sources, columns), slow)


@pytest.mark.parametrize(
  "rows, columns, check, match",
  [
    ([{"problem_id": "a", "correct": 1}, {"problem_id": "a", "correct": 2}], {}, False, "0/1"),
    ([{"problem_id": "a", "correct": True}, {"problem_id": 1, "correct": True}], {}, False, "a"),
    ([{"problem_id": "a", "correct": True}, {"problem_id": "", "correct": True}], {}, False, "id"),
    (
      [
        {"problem_id": "a", "correct": True, "answer": "x"},
        {"problem_id": "a", "correct": False, "answer": "x"},
      ],
      {},
      True,
      "both|correct here",
    ),
    ([{"problem_id": "a", "correct": True, "answer": None}], {}, True, "abstention"),
    ([{"problem_id": "a", "reward": float("inf")}], {}, False, "finite"),
    (
      [{"problem_id": "a", "correct": True, "s": 1}, {"problem_id": "a", "correct": True, "s": 1}],
      {"sample_id": "s"},
      False,
      "repeats",
    ),
    ([{"problem_id": "a", "correct": True}, {"problem_id": "a"}], {}, False, "missing"),
  ],
)
def test_malformed_records_leave_the_column_path_to_the_located_error(rows, columns, check, match):
  source = records.as_source(rows)
  used = records.resolve_columns(rows[0], columns)
  assert records._group_columns([source], used, check) is None
  with pytest.raises(records.RecordError, match=match):
    records.group_records([source], columns, check_answers=check)
