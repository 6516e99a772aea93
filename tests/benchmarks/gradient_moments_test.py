"""benchmarks.gradient_moments: every estimator is exact at a small size, and the binary
prints its table."""

import math

import numpy as np
import pytest

from benchmarks import gradient_moments
from tests import binaries


def test_every_estimator_is_equivariant_and_timed():
  for name, fn in gradient_moments.ESTIMATORS.items():
    assert gradient_moments.time_moments(fn, 3, 4, repeats=1) >= 0, name
    r = np.array([[0.0, 1.0, 1.0, 2.0]])
    assert np.asarray(fn(r)).shape == r.shape, name


@pytest.mark.slow  # Integration: a binary in a subprocess (README's second test step).
def test_binary_prints_a_row_per_estimator_and_size():
  out = binaries.run("benchmarks.gradient_moments", "--sizes=3x4,4x6", "--repeats=1").stdout
  rows = [line.rsplit(maxsplit=4) for line in out.splitlines() if line[:1].isalpha()]
  rows = [row for row in rows if row[1:2] in (["3"], ["4"])]
  assert [row[0].strip() for row in rows[::2]] == list(gradient_moments.ESTIMATORS)
  for _, arms, n, count, seconds in rows:
    assert int(count) == math.comb(int(n) + int(arms) - 1, int(arms) - 1)
    assert float(seconds) >= 0


def test_a_bad_size_is_one_line():
  result = binaries.run("benchmarks.gradient_moments", "--sizes=4by6", check=False)
  assert result.returncode == 1 and "--sizes" in result.stderr
