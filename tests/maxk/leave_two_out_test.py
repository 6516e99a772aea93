"""MaxPO's leave-two-out baseline: the subset identity and its exact gradient moments.

``enumeration.leave_two_out`` evaluates the pairwise definition by enumerating the
(k − 1)-subsets of the other n − 2 samples; the library computes the baseline as
``"loo_centered"``.  The variance comparison uses the exact count-vector moments of
:func:`maxk.testing.gradient_moments` in float64.
"""

import itertools

import jax
import numpy as np
import pytest

import maxk
from tests.maxk import enumeration


def _reward_rows(n, rng):
  """Continuous rewards, integer rewards with many ties, and a constant group."""
  return [rng.standard_normal(n), rng.integers(0, 3, n).astype(float), np.full(n, 0.7)]


@pytest.mark.parametrize("n", range(2, 10))
def test_pairwise_leave_two_out_is_n_over_k_times_loo_centered(n):
  rng = np.random.default_rng(n)
  with jax.enable_x64(True):
    for r, k in itertools.product(_reward_rows(n, rng), range(1, n)):
      pairwise = enumeration.leave_two_out(r, k)
      got = np.asarray(maxk.max_at_k_advantages(r, k, baseline="leave_two_out"))
      centred = np.asarray(maxk.max_at_k_advantages(r, k, baseline="loo_centered"))
      np.testing.assert_allclose(pairwise, n / k * got, rtol=1e-12, atol=1e-12)
      np.testing.assert_array_equal(got, centred)
      assert abs(pairwise.sum()) < 1e-12 * max(1.0, np.abs(pairwise).max())
      if k == 1:  # RLOO: r_i − mean of the others.
        np.testing.assert_allclose(pairwise, r - (r.sum() - r) / (n - 1), atol=1e-12)


@pytest.mark.parametrize("n", range(3, 8))
def test_each_others_credit_without_i_is_the_loo_baseline_and_not_centred(n):
  # b_i = (1/(n−1)) Σ_{j≠i} S_{−i}(j) is k/(n−1) · M(r_{−i}, k): "loo", whose sum is
  # not 0 in general.
  rng = np.random.default_rng(10 + n)
  r = rng.standard_normal(n) + 1.0
  with jax.enable_x64(True):
    for k in range(1, n):
      s = enumeration.s_values(r, k)
      b = np.array([enumeration.s_values(np.delete(r, i), k).sum() / (n - 1) for i in range(n)])
      loo = np.asarray(maxk.max_at_k_advantages(r, k, baseline="loo"))
      np.testing.assert_allclose(s - b, loo, atol=1e-12)
      assert abs(loo.sum()) > 1e-3


def test_n_equals_k_and_where_follow_loo_centered():
  r = np.array([[0.3, 0.9, 0.1, 0.5], [1.0, 0.0, 2.0, np.nan]], np.float32)
  where = np.array([[True, True, False, True], [True, True, True, True]])
  for k in (1, 3, 4):
    np.testing.assert_array_equal(
      maxk.max_at_k_advantages(r, k, baseline="leave_two_out"),
      maxk.max_at_k_advantages(r, k, baseline="loo_centered"),
    )
  for k in (1, 2, 3):
    np.testing.assert_array_equal(
      maxk.max_at_k_advantages(r, k, baseline="leave_two_out", where=where),
      maxk.max_at_k_advantages(r, k, baseline="loo_centered", where=where),
    )
  np.testing.assert_array_equal(
    maxk.max_at_k_advantages(r[0], 4, baseline="leave_two_out"),
    maxk.max_at_k_advantages(r[0], 4, baseline="none"),
  )


# Softmax bandits: (arm probabilities, arm rewards).
_BANDITS = {
  "binary p=0.2": ([0.8, 0.2], [0.0, 1.0]),
  "binary p=0.6": ([0.4, 0.6], [0.0, 1.0]),
  "3 arms": ([0.5, 0.3, 0.2], [0.0, 0.5, 1.0]),
  "3 arms, skewed": ([0.1, 0.2, 0.7], [0.0, 0.3, 1.0]),
  "4 arms, negative": ([0.25, 0.25, 0.25, 0.25], [-1.0, 0.0, 2.0, 3.0]),
}
_COMPARED = ("leave_two_out", "none", "loo", "loo_minus_one")


def _padded(x, k, baseline):
  """max_at_k_advantages on x padded to 1024 groups: one shape per n (the kernel takes
  k as an argument), so the grid compiles a few times instead of once per call shape."""
  rows = x.shape[0]
  padded = np.concatenate([x, np.zeros((1024 - rows, x.shape[1]))])
  return np.asarray(maxk.max_at_k_advantages(padded, k, baseline=baseline))[:rows]


@pytest.fixture(scope="module")
def traces():
  """(bandit, n, k) -> {baseline: tr Cov[ĝ]}, exact; every estimate checked unbiased."""
  out = {}
  with jax.enable_x64(True):
    for (name, (p, r)), n, k in itertools.product(_BANDITS.items(), (4, 8, 16), (1, 2, 4)):
      row = {}
      for b in _COMPARED:
        m = maxk.testing.gradient_moments(
          lambda x, b=b, k=k: _padded(x, k, b), p, r, n, weights=maxk.rank_weights("max", k)
        )
        assert m.method == "exact"
        np.testing.assert_allclose(m.mean, m.exact, atol=1e-12)  # Unbiased for ∇ max@k.
        row[b] = m.trace
      out[name, n, k] = row
  return out


def test_leave_two_out_variance_against_the_non_centred_baselines(traces):
  for (name, n, k), t in traces.items():
    l2o = t["leave_two_out"]
    if n == k:  # No leave-one-out estimate: all three are S.
      np.testing.assert_allclose([t["none"], t["loo"]], [l2o, l2o], rtol=1e-12)
    elif k >= 2:  # MaxPO's claim against the baseline-free estimator holds on the grid.
      assert l2o < t["none"], (name, n, k)
    if k == 1:  # loo_minus_one is loo_centered at k = 1.
      np.testing.assert_allclose(t["loo_minus_one"], l2o, rtol=1e-12)
    if k == 4 and n > k:  # loo_minus_one has the lower variance in every case.
      assert t["loo_minus_one"] < l2o, (name, n, k)
  # Counterexamples on the grid: at k = 1 no baseline, or "loo", can be better.
  for n in (4, 8, 16):
    assert traces["3 arms, skewed", n, 1]["none"] < traces["3 arms, skewed", n, 1]["leave_two_out"]
  for n in (8, 16):
    assert traces["binary p=0.2", n, 1]["loo"] < traces["binary p=0.2", n, 1]["leave_two_out"]
  # At k = 2 the order against loo_minus_one depends on the policy.
  mixed, policy = traces["3 arms", 8, 2], traces["binary p=0.6", 8, 2]
  assert mixed["leave_two_out"] < mixed["loo_minus_one"]
  assert policy["loo_minus_one"] < policy["leave_two_out"]
