"""maxk.testing.variance_floor: below every leave-one-out estimator, equal to a direct
numerical minimisation, unbiased, and Greensmith's b* over constants."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import optimize

import maxk
from maxk import testing


def _x64(fn):
  """fn in float64 on [T, n] rewards padded with zero rows to 8192 (or the next power of
  two): the groups are independent, and the jitted kernels see one shape per n."""

  def wrapped(r):
    r = np.asarray(r, np.float64)
    rows = r.shape[0]
    padded = np.zeros((max(8192, 1 << (rows - 1).bit_length()), *r.shape[1:]))
    padded[:rows] = r
    with jax.enable_x64(True):
      return np.asarray(fn(jnp.asarray(padded)))[:rows]

  return wrapped


def _max_at_k(k, baseline):
  return _x64(lambda r: maxk.max_at_k_advantages(r, k, baseline=baseline))


def _order_stat(weights, baseline):
  return _x64(lambda r: maxk.order_stat_advantages(r, weights, baseline=baseline))


def _table_advantages(floor, transform):
  """s_i − b(multiset of the other rewards), looking b up in the floor's table."""
  table = {tuple(c): b for c, b in zip(floor.baseline_counts.tolist(), floor.baseline)}
  values = floor.reward_values

  def fn(r):
    r = np.asarray(r)
    value = np.argmin(np.abs(r[..., None] - values), axis=-1)
    counts = np.stack([(value == v).sum(axis=-1) for v in range(values.size)], axis=-1)
    b = np.zeros(r.shape)
    for idx in np.ndindex(r.shape):
      others = counts[idx[:-1]].copy()
      others[value[idx]] -= 1
      b[idx] = table[tuple(others.tolist())]
    return transform(r) - b

  return fn


_BANDITS = [
  ([0.5, 0.3, 0.2], [0.0, 0.5, 1.0]),
  ([0.7, 0.3], [0.0, 1.0]),
  ([0.4, 0.3, 0.2, 0.1], [0.3, 1.0, 0.0, 0.6]),
  ([0.25, 0.35, 0.4], [0.0, 1.0, 1.0]),  # Two arms share a reward.
]


@pytest.mark.parametrize("probs,rewards", _BANDITS)
@pytest.mark.parametrize("n", [3, 5])
def test_max_at_k_floor_is_below_every_leave_one_out_baseline(probs, rewards, n):
  for k in sorted({1, 2, n} & set(range(1, n + 1))):
    floor = testing.variance_floor(_max_at_k(k, "none"), probs, rewards, n)
    assert floor.trace <= floor.constant_trace * (1 + 1e-12) + 1e-15
    assert floor.constant_trace <= floor.none_trace * (1 + 1e-12) + 1e-15
    for baseline in ("none", "loo", "loo_centered", "loo_minus_one"):
      moments = testing.gradient_moments(_max_at_k(k, baseline), probs, rewards, n)
      np.testing.assert_allclose(moments.mean, floor.mean, atol=1e-12)
      assert floor.trace <= moments.trace * (1 + 1e-12) + 1e-15, (k, baseline)
    none = testing.gradient_moments(_max_at_k(k, "none"), probs, rewards, n)
    np.testing.assert_allclose(floor.none_trace, none.trace, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("n", [2, 4, 6])
def test_rloo_and_pass_at_k_and_a_rank_objective_are_above_their_floors(n):
  probs, rewards = [0.5, 0.3, 0.2], [0.0, 1.0, 0.4]
  # RLOO follows n ∇E[r]: the transform r ↦ r on that scale.
  floor = testing.variance_floor(lambda r: np.asarray(r, np.float64), probs, rewards, n)
  assert (
    floor.trace <= testing.gradient_moments(_x64(maxk.rloo_advantages), probs, rewards, n).trace
  )
  # pass@k: max@k on binary rewards (two arms correct).
  binary = [0.0, 1.0, 1.0]
  for k in sorted({1, 2, n}):
    floor = testing.variance_floor(_max_at_k(k, "none"), probs, binary, n)
    for baseline in ("loo", "loo_centered", "loo_minus_one"):
      trace = testing.gradient_moments(_max_at_k(k, baseline), probs, binary, n).trace
      assert floor.trace <= trace * (1 + 1e-12) + 1e-15
  # A rank objective: the median of k = 3 (n >= 3).
  if n >= 3:
    weights = maxk.rank_weights("median", 3)
    floor = testing.variance_floor(_order_stat(weights, "none"), probs, rewards, n)
    for baseline in ("loo", "loo_centered"):
      trace = testing.gradient_moments(_order_stat(weights, baseline), probs, rewards, n).trace
      assert floor.trace <= trace * (1 + 1e-12) + 1e-15


@pytest.mark.parametrize("probs,rewards", _BANDITS)
@pytest.mark.parametrize("n,k", [(3, 2), (4, 4), (5, 1)])
def test_the_optimal_baseline_is_unbiased_and_reaches_the_floor(probs, rewards, n, k):
  floor = testing.variance_floor(_max_at_k(k, "none"), probs, rewards, n)
  fn = _table_advantages(floor, _max_at_k(k, "none"))
  moments = testing.gradient_moments(fn, probs, rewards, n, weights=maxk.rank_weights("max", k))
  np.testing.assert_allclose(moments.bias, 0.0, atol=1e-12)
  np.testing.assert_allclose(moments.trace, floor.trace, rtol=1e-10, atol=1e-14)


@pytest.mark.parametrize(
  "probs,rewards,n,k",
  [([0.5, 0.3, 0.2], [0.0, 0.5, 1.0], 3, 2), ([0.25, 0.35, 0.4], [0.0, 1.0, 1.0], 4, 2)],
)
def test_floor_equals_a_direct_minimisation(probs, rewards, n, k):
  floor = testing.variance_floor(_max_at_k(k, "none"), probs, rewards, n)
  transform = _max_at_k(k, "none")

  def trace(beta):
    table = floor.__class__(**{**floor.__dict__, "baseline": np.asarray(beta)})
    return testing.gradient_moments(_table_advantages(table, transform), probs, rewards, n).trace

  start = np.zeros(floor.baseline.size)
  result = optimize.minimize(trace, start, method="BFGS", options={"gtol": 1e-12})
  assert abs(result.fun - floor.trace) <= 1e-9
  assert floor.trace <= result.fun + 1e-12


@pytest.mark.parametrize("probs,rewards", _BANDITS)
def test_constant_floor_is_greensmiths_baseline(probs, rewards):
  p, r = np.asarray(probs), np.asarray(rewards)
  norms = 1 - 2 * p + np.sum(p**2)  # ‖e_a − π‖².
  want = np.sum(p * r * norms) / np.sum(p * norms)
  for n in (1, 3, 6):
    floor = testing.variance_floor(lambda x: np.asarray(x, np.float64), probs, rewards, n)
    np.testing.assert_allclose(floor.constant_baseline, want, rtol=1e-12)
    # With that b, tr Cov = n (E[(r − b)² ‖s‖²] − ‖E[r s]‖²) for s = e_y − π.
    s = np.eye(p.size) - p
    mean = p @ (r[:, None] * s)
    direct = n * (np.sum(p * (r - want) ** 2 * norms) - mean @ mean)
    np.testing.assert_allclose(floor.constant_trace, direct, rtol=1e-12, atol=1e-15)


def test_bad_input():
  with pytest.raises(ValueError, match="probs"):
    testing.variance_floor(lambda r: r, [[0.5, 0.5]], [[0.0, 1.0]], 2)
  with pytest.raises(ValueError, match="MAX_FLOOR_ENTRIES"):
    testing.variance_floor(lambda r: r, np.full(8, 1 / 8), np.arange(8.0), 12, method="dense")
  with pytest.raises(ValueError, match="MAX_COUNT_VECTORS"):
    testing.variance_floor(lambda r: r, np.full(8, 1 / 8), np.arange(8.0), 64)
  for bad in ({"method": "lstsq"}, {"tol": 0.0}, {"tol": 1.5}, {"max_iterations": 0}):
    with pytest.raises(ValueError, match=next(iter(bad))):
      testing.variance_floor(lambda r: r, [0.5, 0.5], [0.0, 1.0], 3, **bad)
  with pytest.raises(ValueError, match="equivariant"):
    testing.variance_floor(lambda r: r * np.arange(r.shape[-1]), [0.5, 0.5], [0.0, 1.0], 3)


@pytest.mark.parametrize("probs,rewards", _BANDITS)
@pytest.mark.parametrize("n,k", [(3, 2), (5, 1), (6, 3), (8, 4)])
def test_iterative_solver_agrees_with_the_dense_one(probs, rewards, n, k):
  dense = testing.variance_floor(_max_at_k(k, "none"), probs, rewards, n, method="dense")
  iterative = testing.variance_floor(_max_at_k(k, "none"), probs, rewards, n, method="iterative")
  assert (dense.method, dense.iterations) == ("dense", 0)
  assert iterative.method == "iterative" and iterative.iterations > 0
  np.testing.assert_allclose(iterative.trace, dense.trace, rtol=1e-12, atol=1e-16)
  for field in ("constant_trace", "none_trace", "constant_baseline", "mean"):
    np.testing.assert_allclose(getattr(iterative, field), getattr(dense, field), rtol=1e-12)


@pytest.mark.parametrize("probs,rewards", _BANDITS[2:])
def test_iterative_baseline_is_unbiased_and_has_the_variance_reported(probs, rewards):
  n, k = 5, 2
  floor = testing.variance_floor(_max_at_k(k, "none"), probs, rewards, n, method="iterative")
  fn = _table_advantages(floor, _max_at_k(k, "none"))
  moments = testing.gradient_moments(fn, probs, rewards, n, weights=maxk.rank_weights("max", k))
  np.testing.assert_allclose(moments.bias, 0.0, atol=1e-12)
  np.testing.assert_allclose(moments.trace, floor.trace, rtol=1e-10, atol=1e-14)


def test_auto_takes_the_iterative_solver_beyond_the_dense_limit(monkeypatch):
  probs, rewards, n = [0.4, 0.3, 0.2, 0.1], [0.3, 1.0, 0.0, 0.6], 6
  dense = testing.variance_floor(_max_at_k(2, "none"), probs, rewards, n)
  assert dense.method == "dense"
  from maxk._src import variance_floors  # pylint: disable=g-import-not-at-top

  monkeypatch.setattr(variance_floors, "MAX_FLOOR_ENTRIES", 100)
  auto = testing.variance_floor(_max_at_k(2, "none"), probs, rewards, n)
  assert auto.method == "iterative"
  np.testing.assert_allclose(auto.trace, dense.trace, rtol=1e-12)


def test_iterative_solver_says_when_it_stops_short():
  with pytest.raises(RuntimeError, match="max_iterations = 1"):
    testing.variance_floor(
      _max_at_k(2, "none"),
      [0.4, 0.3, 0.2, 0.1],
      [0.3, 1.0, 0.0, 0.6],
      8,
      method="iterative",
      max_iterations=1,
    )


def test_floor_at_n_32_is_below_the_leave_one_out_baselines():
  # Beyond the dense limit at 4 arms: the hard bandit of the variance atlas.
  probs, rewards, n, k = [0.55, 0.25, 0.15, 0.05], [0.0, 1 / 3, 2 / 3, 1.0], 32, 4
  floor = testing.variance_floor(_max_at_k(k, "none"), probs, rewards, n)
  assert floor.method == "iterative"
  assert floor.trace <= floor.constant_trace <= floor.none_trace
  for baseline in ("loo", "loo_centered", "loo_minus_one"):
    moments = testing.gradient_moments(_max_at_k(k, baseline), probs, rewards, n)
    np.testing.assert_allclose(moments.mean, floor.mean, rtol=1e-10, atol=1e-15)
    assert floor.trace < moments.trace, baseline
