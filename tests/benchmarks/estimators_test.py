"""benchmarks.estimators: its NumPy matrix form agrees with maxk, and it runs.

Its per-group loop is the tests' float64 reference (``enumeration.advantages_float64``),
checked against maxk in tests/maxk/advantages_test.py.
"""

import numpy as np
import pytest

from benchmarks import estimators
import maxk
from tests import binaries


@pytest.mark.parametrize("n", [5, 16])
def test_numpy_matrix_form_agrees_with_maxk(n):
  rng = np.random.default_rng(n)
  r = rng.random((3, n))
  lr = 0.1 * rng.standard_normal((3, n))
  for k in sorted({1, 2, 4, n}):
    for name in maxk.BASELINES:
      want = np.asarray(maxk.max_at_k_advantages(r.astype(np.float32), k, baseline=name))
      np.testing.assert_allclose(estimators._numpy_matrix(r, lr, k, name), want, atol=1e-5)
    want = np.asarray(
      maxk.max_at_k_advantages_off_policy(
        r.astype(np.float32), lr.astype(np.float32), k, method="first_order"
      )
    )
    np.testing.assert_allclose(
      estimators._numpy_matrix(r, lr, k, "off_policy_first_order"), want, atol=1e-5
    )


@pytest.mark.slow  # Integration: a binary in a subprocess (README's second test step).
def test_binary_runs_and_prints_a_row_per_cell():
  """``--quick`` on a one-cell grid (the full ``--quick`` grid takes about a minute)."""
  out = binaries.run(
    "benchmarks.estimators", "--quick", "--batches=2", "--sizes=8", "--ks=2", "--repeats=1"
  ).stdout
  rows = [line for line in out.splitlines() if line.startswith("| ") and "| 2 | 8 | 2 |" in line]
  names = [row.split("|")[1].strip() for row in rows]
  assert names == [*maxk.BASELINES, "off_policy_exact", "off_policy_first_order"]
