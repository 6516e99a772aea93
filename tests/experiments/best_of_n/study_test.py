"""Tests for experiments.best_of_n.study (float32, as the test suite runs JAX)."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from experiments.best_of_n import references
from experiments.best_of_n import study


def _rows(refs, ns, num_mc_draws=4, seed=0):
  probs, rewards = references.pad(refs, jnp.float32)
  return study.best_of_n_rows(
    refs,
    probs,
    rewards,
    ns=ns,
    num_mc_draws=num_mc_draws,
    key=jax.random.key(seed),
    progress=False,
  )


_REFS = [references.uniform(2), references.cherry_top(6, 0.05)]


@pytest.fixture(scope="module")
def rows():
  """Best-of-n rows at n = 1, 2, 8 (400 draws) and rewind-and-repeat rows of _REFS."""
  probs, rewards = references.pad(_REFS, jnp.float32)
  out = _rows(_REFS, [1, 2, 8], num_mc_draws=400)
  return out + study.rewind_repeat_rows(
    _REFS,
    probs,
    rewards,
    thresholds=study.thresholds(_REFS, 3),
    max_tries=[None, 4],
    progress=False,
  )


def test_n_grid():
  assert study.n_grid(100, 3) == [1, 10, 100]
  assert study.n_grid(1, 5) == [1]
  grid = study.n_grid(10, 41)  # Rounding duplicates are dropped.
  assert grid == sorted(set(grid)) and grid[0] == 1 and grid[-1] == 10
  with pytest.raises(ValueError, match="n_max=0"):
    study.n_grid(0, 3)
  with pytest.raises(ValueError, match="num_n=0"):
    study.n_grid(10, 0)


def test_best_of_n_rows_two_outcome_closed_form(rows):
  # pi uniform on rewards {0, 1}: pi_2 = (1/4, 3/4).
  sel = study.select(rows, method="best_of_n", reference="uniform_L2")
  assert [r["n"] for r in sel] == [1, 2, 8] and list(sel[0]) == list(study.COLUMNS)
  one, two, _ = sel
  assert abs(one["kl"]) < 1e-6 and abs(one["kl_gap_upper_bound"]) == 0.0
  kl = 0.25 * math.log(0.5) + 0.75 * math.log(1.5)
  bound = math.log(2) - 0.5
  # d_2(1/2) = (1/4)(log 2 + log(1/2) - 1/2) + (3/4) log((3/4) / (1/2)), both outcomes.
  d_2 = -0.125 + 0.75 * math.log(1.5)
  expected = dict(
    kl=kl,
    kl_bound=bound,
    kl_gap=bound - kl,
    kl_gap_upper_bound=2 * 2 * 1 * 0.5,  # 2n(n-1) exp(-H_2), exp(-H_2) = 1/4 + 1/4.
    kl_gap_lower_bound=0.0,  # log(2 * 1/2) - 1/2 < 0.
    d_n_expected=d_2,
    d_n_mc_mean=d_2,  # d_2 is the same at both outcomes: no Monte Carlo noise.
    d_n_mc_stderr=0.0,
    win_rate=0.75 * 0.5 + 0.5 * 0.5,  # P(Y_2 = 1, Y = 0) + half of P(tie).
    win_rate_bound=2 / 3,
    win_rate_gap_upper_bound=0.5 * 1 * 0.5,
  )
  for name, value in expected.items():
    assert float(two[name]) == pytest.approx(value, abs=1e-6), name
  assert two["method"] == "best_of_n" and two["threshold"] == "" and two["num_mc_draws"] == 400


def test_gap_bounds_use_the_reward_collision_probability():
  # Regression: exp(-H_2) sums squared masses of reward classes (0.5^2 + 0.5^2 with
  # the tie below), not squared outcome probabilities (0.375).
  ref = references.Reference("tied", "test", np.array([0.25, 0.25, 0.5]), np.array([0.0, 0.0, 1.0]))
  # Padded next to _REFS[1] with the fixture's draw count: the [2, 6] shapes of `rows`
  # (no new compilations); padding outcomes have probability 0.
  row, other = _rows([ref, _REFS[1]], [3], num_mc_draws=400)
  assert row["reference"] == "tied" and other["reference"] == "cherry_top"
  assert row["kl_gap_upper_bound"] == pytest.approx(2 * 3 * 2 * 0.5)
  assert row["win_rate_gap_upper_bound"] == pytest.approx(0.5 * 2 * 0.5)


def test_monte_carlo_d_n_tracks_its_expectation(rows):
  sel = study.select(rows, method="best_of_n", reference="cherry_top")
  for row in sel[1:]:
    assert row["d_n_mc_stderr"] > 0
    assert abs(row["d_n_mc_mean"] - row["d_n_expected"]) < 5 * row["d_n_mc_stderr"]
  # Same key, same draws; a single draw has no standard error.
  again = _rows(_REFS, [1, 2, 8], num_mc_draws=400)
  assert [r["d_n_mc_mean"] for r in again] == [
    r["d_n_mc_mean"] for r in rows if r["method"] == "best_of_n"
  ]
  single = _rows(_REFS, [2], num_mc_draws=1)
  assert [r["d_n_mc_stderr"] for r in single] == ["", ""]
  with pytest.raises(ValueError, match="num_mc_draws=0"):
    _rows(_REFS, [2], num_mc_draws=0)


def test_thresholds_have_log_spaced_acceptance():
  # Uniform on 0..3: P(r >= t) = 1, 1/2, 1/4 at t = 0, 2, 3.
  th = study.thresholds([references.uniform(4), references.uniform(2)], 3)
  np.testing.assert_array_equal(th[:, 0], [0, 2, 3])
  np.testing.assert_array_equal(th[:, 1], [0, 1, 1])  # 1, 1/sqrt(2) -> r >= 1 has 1/2.
  with pytest.raises(ValueError, match="num=0"):
    study.thresholds([references.uniform(2)], 0)


def test_rewind_repeat_rows():
  # uniform(4) is padded next to _REFS[1] to the [2, 6] shapes of `rows` (no new
  # compilations); its rows are the first of each try limit.
  refs = [references.uniform(4), _REFS[1]]
  probs, rewards = references.pad(refs, jnp.float32)
  rows = study.rewind_repeat_rows(
    refs, probs, rewards, thresholds=np.array([[2.0, 0.5]]), max_tries=[None, 1], progress=False
  )
  unlimited, _, one_try, _ = rows
  assert unlimited["reference"] == one_try["reference"] == "uniform_L4"
  # Until r >= 2: uniform on {2, 3}; it beats Y ~ pi w.p. (0.625 + 0.875) / 2.
  assert unlimited["max_tries"] == "none" and one_try["max_tries"] == 1
  assert unlimited["kl"] == pytest.approx(math.log(2), abs=1e-6)
  assert unlimited["win_rate"] == pytest.approx(0.75, abs=1e-6)
  assert unlimited["accept_prob"] == pytest.approx(0.5)
  # One try keeps the first draw whatever its reward: the reference itself.
  assert one_try["kl"] == pytest.approx(0.0, abs=1e-6)
  assert one_try["win_rate"] == pytest.approx(0.5, abs=1e-6)
  assert one_try["n"] == "" and one_try["d_n_expected"] == ""


def test_select_and_column():
  rows = [dict(a=1, b=""), dict(a=2, b="3.5")]
  assert study.select(rows, a=2) == [rows[1]]
  np.testing.assert_array_equal(study.column(rows, "b"), [np.nan, 3.5])


def test_analytic_curve_inverts_the_formula():
  kl = np.array([0.0, math.log(10) - 0.9, math.log(1000) - 0.999])
  np.testing.assert_allclose(study.analytic_curve(kl), [0.5, 10 / 11, 1000 / 1001], atol=1e-8)


def test_summarize(rows):
  summary = study.summarize(rows, _REFS)
  assert list(summary) == ["uniform_L2", "cherry_top"]
  two = summary["uniform_L2"]
  kl_8 = study.select(rows, method="best_of_n", reference="uniform_L2", n=8)[0]["kl"]
  assert two["num_outcomes"] == 2 and two["kl_at_n_max"] == kl_8
  assert two["formula_at_n_max"] == pytest.approx(math.log(8) - 7 / 8)
  # The formula overshoots by 0.32 of itself at n = 2 already.
  assert two["first_n_with_formula_10pct_above_kl"] == 2.0
  assert 0 <= two["d_n_mc_within_2se_fraction"] <= 1
  for m in ("none", 4):
    assert f"rr_max_tries_{m}_win_rate_minus_bon_at_equal_kl_max" in two
