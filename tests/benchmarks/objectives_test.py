"""benchmarks.objectives: every timed call is valid, and the binary prints its rows."""

import numpy as np
import pytest

from benchmarks import objectives
import maxk
from tests import binaries


def test_every_call_evaluates_on_a_small_batch():
  s, r, c, a = objectives.inputs(3, 8, 3, 0)
  for name, call in objectives.CALLS.items():
    out = np.asarray(call(s, r, c, a, 3))
    assert out.shape[0] == 3 and np.all(np.isfinite(out)), name
  # The inputs are consistent: an answer's correctness is a function of its id.
  assert np.all(np.asarray(c) == (np.asarray(a) == 0))
  # Each function of "Beyond the max" that has a batch form is timed.
  timed = set(objectives.CALLS)
  assert {"selected_at_k", "maj_at_k", "pass_at_k_curve", "success_objective_advantages"} <= timed
  assert timed - {"argsort"} <= set(maxk.__all__)


def _rows(out: str, batch: int, n: int) -> list[list[str]]:
  return [line.split() for line in out.splitlines() if line.split()[1:3] == [str(batch), str(n)]]


@pytest.mark.slow  # Integration: a binary in a subprocess (README's second test step).
def test_binary_prints_a_row_per_function_with_the_documented_flags():
  # The flags its docstring (its --help) names: --shapes, --repeats.
  out = binaries.run(
    "benchmarks.objectives",
    "--objectives=max_at_k,pass_hat_k",
    "--shapes=4x8,2x16",
    "--repeats=1",
    "--k=4",
  ).stdout
  rows = _rows(out, 4, 8)
  assert [row[0] for row in rows] == ["max_at_k", "pass_hat_k"]
  assert all(row[3] == "4" and float(row[4]) > 0 and float(row[6]) > 0 for row in rows)
  assert [row[0] for row in _rows(out, 2, 16)] == ["max_at_k", "pass_hat_k"]


@pytest.mark.slow  # Integration: a binary in a subprocess (README's second test step).
def test_binary_accepts_the_earlier_flag_names():
  out = binaries.run(
    "benchmarks.objectives",
    "--objectives=max_at_k",
    "--objective_shapes=3x8",
    "--objective_repeats=1",
  ).stdout
  assert [row[0] for row in _rows(out, 3, 8)] == ["max_at_k"]
