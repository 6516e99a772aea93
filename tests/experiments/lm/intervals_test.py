"""Tests of experiments.lm.intervals: Wilson's interval against scipy's."""

import math

import pytest
from scipy import stats

from experiments.lm import intervals


@pytest.mark.parametrize(
  "successes, trials", [(0, 5), (5, 5), (0, 7), (3, 7), (7, 7), (1, 1), (40, 64)]
)
def test_solved_fraction_interval_is_wilsons_and_stays_in_0_1(successes, trials):
  want = stats.binomtest(successes, trials).proportion_ci(0.95, method="wilson")
  p, se, lo, hi = intervals.wilson_interval(successes, trials)
  assert p == pytest.approx(successes / trials)
  assert se == pytest.approx(math.sqrt(p * (1 - p) / trials))
  assert (lo, hi) == pytest.approx((want.low, want.high), abs=1e-9)
  assert 0.0 <= lo <= p <= hi <= 1.0
