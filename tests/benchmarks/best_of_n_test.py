"""benchmarks.best_of_n runs and times every best-of-n function it is asked for."""

import pytest

from tests import binaries


@pytest.mark.slow  # Integration: a binary in a subprocess (README's second test step).
def test_binary_runs_and_prints_a_row_per_function():
  out = binaries.run("benchmarks.best_of_n", "--sizes=1000", "--repeats=1", "--n=16").stdout
  rows = [line.split() for line in out.splitlines() if line.split()[1:2] == ["1000"]]
  assert [row[0] for row in rows] == ["bon_kl", "bon_pmf", "bon_win_rate", "max_at_k_exact"]
  assert all(float(row[3]) > 0 for row in rows)
