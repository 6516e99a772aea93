"""Tests of experiments.bandits.variance_check: the statistics and the unbiasedness check."""

import math

import numpy as np

from experiments.bandits import variance
from experiments.bandits import variance_check


def test_summarize_statistics():
  x = np.array([0.0, 0.0, 0.0, 4.0])
  v = np.array([1.0, 2.0, 1.0, 2.0])
  out = variance_check.summarize(x, v)
  assert math.isclose(out["empirical_variance"], np.var(x, ddof=1))
  assert math.isclose(out["mean_estimated_variance"], 1.5)
  assert math.isclose(out["mean_estimated_variance_stderr"], np.std(v, ddof=1) / 2)
  assert math.isclose(out["difference"], 1.5 - np.var(x, ddof=1))
  m4 = np.mean((x - 1.0) ** 4)
  assert math.isclose(
    out["empirical_variance_stderr"], math.sqrt((m4 - np.var(x, ddof=1) ** 2) / 4)
  )
  assert math.isclose(
    out["difference_stderr"],
    math.hypot(out["empirical_variance_stderr"], out["mean_estimated_variance_stderr"]),
  )
  assert math.isclose(out["z"], out["difference"] / out["difference_stderr"])


def test_estimated_variance_matches_empirical_variance():
  rows = variance_check.run_check(
    [variance.gaussian_setting(), variance.categorical_setting(5, seed=0)],
    ns=[6],
    ks=[1, 3],
    num_replicates=20_000,
    seed=0,
    pass_threshold=0.5,
  )
  assert len(rows) == 2 * 2 * 2  # Two policies, two (n, k) cells, two statistics.
  assert {(r["n"], r["k"], r["statistic"]) for r in rows} == {
    (6, k, s) for k in (1, 3) for s in ("max_at_k", "pass_at_k")
  }
  # No cell with n >= 2k: no rows.
  assert not variance_check.run_check(
    [variance.gaussian_setting()], ns=[4], ks=[3], num_replicates=2, seed=0, pass_threshold=0.5
  )
  for r in rows:
    assert r["empirical_variance"] > 0, r
    assert abs(r["difference"]) < 4 * r["difference_stderr"], r


def test_check_detects_a_biased_variance_estimator():
  rng = np.random.default_rng(0)
  x = rng.standard_normal((20_000, 6))
  est, var = x.mean(axis=1), x.var(axis=1, ddof=0) / 6  # ddof=0: biased low by 5/6.
  assert variance_check.summarize(est, var)["z"] < -4
  assert abs(variance_check.summarize(est, x.var(axis=1, ddof=1) / 6)["z"]) < 4
