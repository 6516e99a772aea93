"""benchmarks.objectives: every timed call is valid, and the binary prints its rows."""

import numpy as np

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


def test_binary_prints_a_row_per_function():
  out = binaries.run(
    "benchmarks.objectives",
    "--objectives=max_at_k,pass_hat_k",
    "--objective_shapes=4x8",
    "--objective_repeats=1",
  ).stdout
  rows = [line.split() for line in out.splitlines() if line.split()[1:3] == ["4", "8"]]
  assert [row[0] for row in rows] == ["max_at_k", "pass_hat_k"]
  assert all(float(row[4]) > 0 and float(row[6]) > 0 for row in rows)
