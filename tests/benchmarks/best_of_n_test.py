"""benchmarks.best_of_n runs and times every best-of-n function it is asked for."""

import os
import subprocess
import sys

from tests import REPO_ROOT


def test_binary_runs_and_prints_a_row_per_function():
  out = subprocess.run(
    [sys.executable, "-m", "benchmarks.best_of_n", "--sizes=1000", "--repeats=1", "--n=16"],
    cwd=REPO_ROOT,
    env=dict(os.environ, JAX_PLATFORMS="cpu"),
    capture_output=True,
    text=True,
    check=True,
    timeout=300,
  ).stdout
  rows = [line.split() for line in out.splitlines() if line.split()[1:2] == ["1000"]]
  assert [row[0] for row in rows] == ["bon_kl", "bon_pmf", "bon_win_rate", "max_at_k_exact"]
  assert all(float(row[3]) > 0 for row in rows)
