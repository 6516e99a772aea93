"""Tests for the rank objectives: rank weights, lifting, order-statistic estimates
and advantages, against subset enumeration and exact outcome-tuple expectations."""

import fractions
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import maxk
from tests.maxk import enumeration
from tests.maxk.variants import VARIANTS

BASELINES = ["none", "loo", "loo_centered"]


def _rewards(n, rng):
  """[2, 3, n]: along the middle axis normal, tied integer and binary rewards."""
  return np.stack(
    [
      rng.normal(size=(2, n)),
      rng.integers(-2, 3, size=(2, n)).astype(np.float64),
      (rng.random((2, n)) < 0.4).astype(np.float64),
    ],
    axis=1,
  )


def _named_weights(k):
  """Every kind of maxk.rank_weights at k, plus signed random weights."""
  out = {kind: maxk.rank_weights(kind, k) for kind in ("max", "min", "mean", "median")}
  out["top_m"] = maxk.rank_weights("top_m", k, m=(k + 1) // 2)
  out["bottom_m"] = maxk.rank_weights("bottom_m", k, m=max(1, k - 1))
  out["upper_tail_mean"] = maxk.rank_weights("upper_tail_mean", k, alpha=0.3)
  out["random"] = np.random.default_rng(k).normal(size=k)
  return out


# ----------------------------------------------------------------------------
# maxk.rank_weights
# ----------------------------------------------------------------------------


def test_rank_weights_values():
  np.testing.assert_array_equal(maxk.rank_weights("max", 4), [0, 0, 0, 1])
  np.testing.assert_array_equal(maxk.rank_weights("min", 4), [1, 0, 0, 0])
  np.testing.assert_array_equal(maxk.rank_weights("mean", 4), [0.25] * 4)
  np.testing.assert_array_equal(maxk.rank_weights("median", 5), [0, 0, 1, 0, 0])
  np.testing.assert_array_equal(maxk.rank_weights("median", 4), [0, 0.5, 0.5, 0])
  np.testing.assert_array_equal(maxk.rank_weights("median", 1), [1])
  np.testing.assert_array_equal(maxk.rank_weights("top_m", 5, m=2), [0, 0, 0, 0.5, 0.5])
  np.testing.assert_array_equal(maxk.rank_weights("bottom_m", 5, m=2), [0.5, 0.5, 0, 0, 0])
  np.testing.assert_array_equal(
    maxk.rank_weights("upper_tail_mean", 10, alpha=0.3), [0] * 7 + [1 / 3] * 3
  )
  # 0.07 * 100 = 7.000000000000001 in floating point: still the top 7 ranks, not 8.
  assert 0.07 * 100 > 7 and 0.28 * 150 > 42
  assert np.count_nonzero(maxk.rank_weights("upper_tail_mean", 100, alpha=0.07)) == 7
  assert np.count_nonzero(maxk.rank_weights("upper_tail_mean", 150, alpha=0.28)) == 42
  np.testing.assert_array_equal(
    maxk.rank_weights("upper_tail_mean", 10, alpha=0.31), [0] * 6 + [0.25] * 4
  )
  np.testing.assert_array_equal(maxk.rank_weights("upper_tail_mean", 10, alpha=0.01), [0] * 9 + [1])
  np.testing.assert_array_equal(maxk.rank_weights("upper_tail_mean", 3, alpha=1.0), [1 / 3] * 3)
  for k in range(1, 200):
    for a in (0.07, 0.1, 0.14, 0.2, 0.28, 0.3, 0.7, 0.9):
      want = max(1, math.ceil(fractions.Fraction(str(a)) * k))
      assert np.count_nonzero(maxk.rank_weights("upper_tail_mean", k, alpha=a)) == want, (k, a)
  for kind, w in _named_weights(6).items():
    assert w.dtype == np.float64 and w.shape == (6,)
    if kind != "random":
      assert math.isclose(w.sum(), 1.0)


@pytest.mark.parametrize("n", [3, 5, 6])
def test_rank_weight_kinds_are_their_definitions(n):
  """Each kind's estimate equals the mean over k-subsets of its statistic, written
  directly (max, min, mean, median, mean of top / bottom m)."""
  rng = np.random.default_rng(n)
  r = rng.integers(-3, 4, size=n).astype(np.float64)
  for k in range(1, n + 1):
    subs = [np.sort(r[list(s)]) for s in enumeration.subsets(n, k)]
    m = (k + 1) // 2
    tail = max(1, math.ceil(0.5 * k))
    defs = {
      ("max", ()): lambda x: x.max(),
      ("min", ()): lambda x: x.min(),
      ("mean", ()): lambda x: x.mean(),
      ("median", ()): lambda x: np.median(x),
      ("top_m", (("m", m),)): lambda x: x[-m:].mean(),
      ("bottom_m", (("m", m),)): lambda x: x[:m].mean(),
      ("upper_tail_mean", (("alpha", 0.5),)): lambda x: x[-tail:].mean(),
    }
    for (kind, params), stat in defs.items():
      want = np.mean([stat(x) for x in subs])
      got = maxk.order_stat_at_k(r.astype(np.float32), maxk.rank_weights(kind, k, **dict(params)))
      np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=f"{kind} k={k}")


def test_rank_weights_bad_input():
  with pytest.raises(ValueError, match=r"Unknown kind='maxx'"):
    maxk.rank_weights("maxx", 3)
  with pytest.raises(ValueError, match=r"k=2.5 must be a Python int.*no unbiased.*randomised"):
    maxk.rank_weights("max", 2.5)
  with pytest.raises(ValueError, match=r"k=0 must satisfy k >= 1"):
    maxk.rank_weights("max", 0)
  with pytest.raises(ValueError, match=r"takes parameters \['m'\]; missing \['m'\]"):
    maxk.rank_weights("top_m", 3)
  with pytest.raises(ValueError, match=r"unexpected \['m'\]"):
    maxk.rank_weights("max", 3, m=1)
  with pytest.raises(ValueError, match=r"missing \[\], unexpected \['beta'\]"):
    maxk.rank_weights("upper_tail_mean", 3, alpha=0.5, beta=1)
  with pytest.raises(ValueError, match=r"m=4 must satisfy 1 <= m <= k=3"):
    maxk.rank_weights("bottom_m", 3, m=4)
  with pytest.raises(ValueError, match=r"m=0 must satisfy"):
    maxk.rank_weights("top_m", 3, m=0)
  with pytest.raises(ValueError, match=r"alpha=0.0 must satisfy 0 < alpha <= 1"):
    maxk.rank_weights("upper_tail_mean", 3, alpha=0.0)
  with pytest.raises(ValueError, match=r"alpha=1.5 must satisfy"):
    maxk.rank_weights("upper_tail_mean", 3, alpha=1.5)
  with pytest.raises(ValueError, match=r"alpha='x' must be a real number"):
    maxk.rank_weights("upper_tail_mean", 3, alpha="x")


# ----------------------------------------------------------------------------
# maxk.lift_rank_weights
# ----------------------------------------------------------------------------


def test_lift_keeps_the_objective_by_enumeration():
  """U-statistics of w over k-subsets and of lift(w, size) over size-subsets agree."""
  rng = np.random.default_rng(0)
  n = 7
  r = rng.integers(-2, 3, size=n).astype(np.float64)
  for k in range(1, n + 1):
    w = rng.normal(size=k)
    for size in range(k, n + 1):
      v = maxk.lift_rank_weights(w, size)
      assert v.shape == (size,) and v.dtype == np.float64
      np.testing.assert_allclose(
        enumeration.order_stat_at_k(r, v), enumeration.order_stat_at_k(r, w), atol=1e-12
      )
      np.testing.assert_allclose(v.sum(), w.sum(), atol=1e-12)
      # The library estimate is unchanged too (float32).
      np.testing.assert_allclose(
        maxk.order_stat_at_k(r.astype(np.float32), v), enumeration.order_stat_at_k(r, w), atol=2e-6
      )
    np.testing.assert_allclose(maxk.lift_rank_weights(w, k), w, rtol=1e-13)


def test_lift_keeps_the_exact_objective():
  p = np.array([0.2, 0.5, 0.3])
  values = np.array([1.0, -1.0, 1.0])
  for k in (1, 2, 3):
    w = np.random.default_rng(k).normal(size=k)
    want = enumeration.exact_order_stat(p, values, w)
    for size in range(k, 5):
      got = enumeration.exact_order_stat(p, values, maxk.lift_rank_weights(w, size))
      np.testing.assert_allclose(got, want, atol=1e-12)


def test_lift_of_max_matches_exact_rationals_at_large_size():
  """lift(e_k, size)_i = C(i-1, k-1) / C(size, k), from exact integer arithmetic."""
  size = 400
  for k in (1, 2, 17, 200, 399, 400):
    v = maxk.lift_rank_weights(maxk.rank_weights("max", k), size)
    want = np.array(
      [
        float(fractions.Fraction(math.comb(i - 1, k - 1), math.comb(size, k)))
        for i in range(1, size + 1)
      ]
    )
    np.testing.assert_allclose(v, want, rtol=1e-11, atol=1e-300)


def test_maxrl_mixture_is_one_weight_vector():
  """Σ_{k<=K} (1/k) pass@k (MaxRL) as one vector of length K, on binary data."""
  K, n = 5, 8
  mix = sum(maxk.lift_rank_weights(maxk.rank_weights("max", k), K) / k for k in range(1, K + 1))
  assert mix.shape == (K,)
  c = (np.random.default_rng(2).random((2, 3, n)) < 0.3).astype(np.float32)
  want = sum(np.asarray(maxk.pass_at_k(c, k)) / k for k in range(1, K + 1))
  np.testing.assert_allclose(maxk.order_stat_at_k(c, mix), want, rtol=1e-5, atol=1e-6)
  # ... and the sum over k of the per-k enumeration.
  row = c[0, 0].astype(np.float64)
  np.testing.assert_allclose(
    maxk.order_stat_at_k(row, mix),
    sum(enumeration.pass_at_k(row, k) / k for k in range(1, K + 1)),
    rtol=1e-5,
  )


def test_lift_bad_input():
  with pytest.raises(ValueError, match=r"size=2 must satisfy size >= 3"):
    maxk.lift_rank_weights([0.0, 0.0, 1.0], 2)
  with pytest.raises(ValueError, match="weights must be 1-D"):
    maxk.lift_rank_weights([[1.0]], 2)
  with pytest.raises(ValueError, match="size=2.0 must be a Python int"):
    maxk.lift_rank_weights([1.0], 2.0)


# ----------------------------------------------------------------------------
# maxk.order_stat_at_k
# ----------------------------------------------------------------------------


@pytest.mark.parametrize("n", range(1, 9))
def test_order_stat_at_k_matches_enumeration(n):
  rng = np.random.default_rng(n)
  r = _rewards(n, rng)
  for k in range(1, n + 1):
    for wname, w in _named_weights(k).items():
      got = np.asarray(maxk.order_stat_at_k(r.astype(np.float32), w))
      want = np.apply_along_axis(enumeration.order_stat_at_k, -1, r, w)
      assert got.shape == r.shape[:-1]
      np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=f"{wname} k={k}")


def test_order_stat_at_k_identities():
  rng = np.random.default_rng(5)
  n = 8
  r = rng.normal(size=(4, n)).astype(np.float32)
  c = rng.random((4, n)) < 0.6
  for k in range(1, n + 1):
    # max weights are max@k.
    np.testing.assert_allclose(
      maxk.order_stat_at_k(r, maxk.rank_weights("max", k)),
      maxk.max_at_k(r, k),
      rtol=1e-6,
      atol=1e-6,
    )
    # min weights on {0, 1} are pass^k: the fraction of k-subsets that are all correct.
    want = [np.mean([row[list(s)].all() for s in enumeration.subsets(n, k)]) for row in c]
    np.testing.assert_allclose(
      maxk.order_stat_at_k(c.astype(np.float32), maxk.rank_weights("min", k)), want, atol=1e-6
    )
    # Mixtures add, and the mean is the sample mean.
    w1, w2 = rng.normal(size=k), rng.normal(size=k)
    np.testing.assert_allclose(
      maxk.order_stat_at_k(r, 2 * w1 - w2),
      2 * np.asarray(maxk.order_stat_at_k(r, w1)) - np.asarray(maxk.order_stat_at_k(r, w2)),
      atol=2e-5,
    )
    np.testing.assert_allclose(
      maxk.order_stat_at_k(r, maxk.rank_weights("mean", k)), r.mean(-1), atol=1e-6
    )


# ----------------------------------------------------------------------------
# maxk.order_stat_advantages
# ----------------------------------------------------------------------------


@pytest.mark.parametrize("n", range(1, 9))
def test_advantages_match_enumeration(n):
  rng = np.random.default_rng(10 + n)
  r = _rewards(n, rng)
  kinds = ["min", "median", "top_m", "upper_tail_mean", "bottom_m", "mean"]
  for k in range(1, n + 1):
    weights = _named_weights(k)
    # Signed random weights at every k, and one named kind (cycling with k).
    for wname in ("random", kinds[k % len(kinds)]):
      w = weights[wname]
      for baseline in BASELINES:
        got = np.asarray(maxk.order_stat_advantages(r.astype(np.float32), w, baseline=baseline))
        want = np.apply_along_axis(enumeration.order_stat_advantages, -1, r, w, baseline)
        assert got.shape == r.shape
        np.testing.assert_allclose(
          got, want, rtol=1e-4, atol=2e-5, err_msg=f"{wname} k={k} {baseline}"
        )


@pytest.mark.parametrize("baseline", BASELINES)
def test_max_weights_are_max_at_k_advantages(baseline):
  rng = np.random.default_rng(7)
  for n in (1, 33):
    r = np.round(rng.normal(size=(3, n)), 1).astype(np.float32)
    for k in sorted({1, max(1, n // 2), n}):
      np.testing.assert_allclose(
        maxk.order_stat_advantages(r, maxk.rank_weights("max", k), baseline=baseline),
        maxk.max_at_k_advantages(r, k, baseline=baseline),
        rtol=1e-5,
        atol=1e-6,
        err_msg=f"n={n} k={k}",
      )


def test_advantage_identities():
  rng = np.random.default_rng(3)
  n = 7
  r = rng.normal(size=(5, n)).astype(np.float32)
  for k in range(1, n + 1):
    w = rng.normal(size=k)
    none = np.asarray(maxk.order_stat_advantages(r, w, baseline="none"))
    # Σ_i S(i) = k · U.
    np.testing.assert_allclose(none.sum(-1), k * np.asarray(maxk.order_stat_at_k(r, w)), atol=2e-5)
    centred = maxk.order_stat_advantages(r, w)  # default "loo_centered"
    if k < n:
      np.testing.assert_allclose(np.sum(centred, -1), 0, atol=2e-5)
      np.testing.assert_allclose(maxk.order_stat_advantages(r + 5.0, w), centred, atol=3e-5)
    else:
      for b in ("loo", "loo_centered"):
        np.testing.assert_array_equal(maxk.order_stat_advantages(r, w, baseline=b), none)
    # Linear in the weights.
    np.testing.assert_allclose(
      maxk.order_stat_advantages(r, 3 * w, baseline="loo"),
      3 * np.asarray(maxk.order_stat_advantages(r, w, baseline="loo")),
      rtol=1e-5,
      atol=1e-5,
    )
  const = jnp.full((2, 5), 0.7)
  assert np.all(np.asarray(maxk.order_stat_advantages(const, [0.2, 0.5, 0.3])) == 0)


@pytest.mark.parametrize("values", [[0.0, 1.0, 1.0], [-1.0, 0.5, 2.0]])
@pytest.mark.parametrize("n", [2, 3, 4])
def test_unbiased_exactly_on_categorical_policy(values, n):
  """E over all L^n outcome tuples of Σ a_i ∇log π(y_i) equals ∇ J exactly, where
  ∇ J is both the finite-difference enumeration and jax.grad of maxk.order_stat_exact."""
  logits = np.array([0.3, -0.5, 0.1])
  rng = np.random.default_rng(n)
  for k in range(1, n + 1):
    w = rng.normal(size=k)
    exact = enumeration.exact_order_stat_grad(logits, values, w)
    autodiff = jax.grad(
      lambda z: maxk.order_stat_exact(jax.nn.softmax(z), jnp.asarray(values, jnp.float32), w)
    )(jnp.asarray(logits, jnp.float32))
    np.testing.assert_allclose(autodiff, exact, atol=2e-6)
    for baseline in BASELINES:
      est = enumeration.expected_score_estimate(
        lambda r, lr: maxk.order_stat_advantages(r, w, baseline=baseline), logits, logits, values, n
      )
      np.testing.assert_allclose(est, exact, atol=4e-6, err_msg=f"k={k} {baseline}")


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("baseline", BASELINES)
@pytest.mark.parametrize("k", [2, 6])
def test_advantages_jit_vmap(variant, baseline, k):
  rng = np.random.default_rng(0)
  r = rng.normal(size=(4, 6)).astype(np.float32)
  w = maxk.rank_weights("median", k)
  f = lambda x: maxk.order_stat_advantages(x, w, baseline=baseline)
  want = np.apply_along_axis(
    enumeration.order_stat_advantages, -1, r.astype(np.float64), w, baseline
  )
  np.testing.assert_allclose(variant(f)(r), want, rtol=1e-4, atol=2e-5)
  np.testing.assert_allclose(variant(jax.vmap(f))(r), want, rtol=1e-4, atol=2e-5)


@pytest.mark.parametrize("variant", VARIANTS)
def test_estimate_jit_vmap(variant):
  rng = np.random.default_rng(1)
  r = rng.normal(size=(2, 3, 5)).astype(np.float32)
  w = [0.5, -1.0, 2.0]
  want = np.apply_along_axis(enumeration.order_stat_at_k, -1, r.astype(np.float64), w)
  f = lambda x: maxk.order_stat_at_k(x, w)
  np.testing.assert_allclose(variant(f)(r), want, rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(variant(jax.vmap(jax.vmap(f)))(r), want, rtol=1e-5, atol=1e-6)


def test_grad_wrt_rewards():
  rng = np.random.default_rng(0)
  r = jnp.asarray(rng.normal(size=(4, 6)), jnp.float32)
  w = [0.2, -0.4, 1.0]
  v = jnp.asarray(rng.normal(size=r.shape), jnp.float32)
  d = jnp.asarray(rng.normal(size=r.shape), jnp.float32)
  h = 1e-3
  for baseline in BASELINES:
    obj = lambda x, b=baseline: jnp.sum(maxk.order_stat_advantages(x, w, baseline=b) * v)
    g = jax.grad(obj)(r)
    assert np.all(np.isfinite(g))
    fd = (obj(r + h * d) - obj(r - h * d)) / (2 * h)
    np.testing.assert_allclose(jnp.sum(g * d), fd, rtol=2e-2, atol=2e-3)
  est = lambda x: jnp.sum(maxk.order_stat_at_k(x, w))
  g = jax.grad(est)(r)
  np.testing.assert_allclose(jnp.sum(g * d), (est(r + h * d) - est(r - h * d)) / (2 * h), rtol=2e-2)


def test_nan_only_affects_its_group():
  rng = np.random.default_rng(3)
  r = rng.normal(size=(3, 5)).astype(np.float32)
  bad = r.copy()
  bad[1, 2] = np.nan
  for k in (1, 2, 5):
    w = rng.normal(size=k)
    # Every transform and the estimate in one jitted program per k: one compile where
    # four programs took about twice as long to compile.
    f = jax.jit(
      lambda x, w=w: (
        [maxk.order_stat_advantages(x, w, baseline=b) for b in BASELINES]
        + [maxk.order_stat_at_k(x, w)]
      )
    )
    for out, clean in zip(f(bad), f(r), strict=True):
      out, clean = np.asarray(out), np.asarray(clean)
      np.testing.assert_array_equal(out[[0, 2]], clean[[0, 2]])
      assert not np.all(np.isfinite(out[1]))


def test_bad_input():
  r = np.ones((2, 4), np.float32)
  for fn in (maxk.order_stat_at_k, maxk.order_stat_advantages):
    with pytest.raises(ValueError, match=r"k=5 \(len\(weights\)\) must satisfy 1 <= k <= n=4"):
      fn(r, np.ones(5))
    with pytest.raises(ValueError, match="weights must be 1-D"):
      fn(r, np.ones((2, 2)))
    with pytest.raises(ValueError, match="weights must be 1-D"):
      fn(r, 1.0)
    with pytest.raises(ValueError, match="weights must not be empty"):
      fn(r, [])
    with pytest.raises(ValueError, match="weights must be finite"):
      fn(r, [1.0, np.nan])
    with pytest.raises(ValueError, match="weights must be static"):
      jax.jit(lambda w: fn(r, w))(jnp.ones(2))
    with pytest.raises(ValueError, match="rewards must have at least 1 dimension"):
      fn(np.float32(1.0), [1.0])
    with pytest.raises(ValueError, match=r"rewards must hold at least one sample .* \(2, 0\)"):
      fn(np.zeros((2, 0)), [1.0])
  with pytest.raises(ValueError, match=r"Unknown baseline='loo_minus_one'"):
    maxk.order_stat_advantages(r, [0.0, 1.0], baseline="loo_minus_one")


# ----------------------------------------------------------------------------
# float32 accuracy at large n against float64 references.
# ----------------------------------------------------------------------------


def _float64_reference(r64, wname, w, baseline):
  """Independent float64 references: max (PKPO closed form), min (max of −r),
  mean (closed form), others (rank-count matrix)."""
  n, k = r64.shape[-1], len(w)
  if wname == "max":
    return enumeration.advantages_float64(r64, k, baseline)
  if wname == "min":
    # min_I r = −max_I(−r), and every baseline is linear in L.
    return -enumeration.advantages_float64(-r64, k, baseline)
  if wname == "mean":
    # L(I) = mean of I: S(i) = [C(n-1,k-1) r_i + C(n-2,k-2) Σ_{m≠i} r_m] / (k C(n,k)),
    # U(r_{-i}) = mean(r_{-i}).
    total = r64.sum(-1, keepdims=True)
    s = (r64 + (k - 1) / (n - 1) * (total - r64)) / n if n > 1 else r64
    if baseline == "none" or n == k:
      return s
    scale = k / (n - 1) if baseline == "loo" else k / n
    return s - scale * (total - r64) / (n - 1)
  return enumeration.order_stat_advantages_float64(r64, w, baseline)


@pytest.mark.parametrize("n", [64, 1024])
def test_float32_matches_float64_reference(n):
  """Every transform within 2e-6 · max|a| of a float64 reference (measured worst:
  1.9e-7 at n = 1024), for k in {1, 2, n/4, n-1, n}."""
  rng = np.random.default_rng(n + 1)
  r32 = rng.random((2, n)).astype(np.float32)
  r64 = r32.astype(np.float64)
  worst = 0.0
  for k in sorted({1, 2, n // 4, n - 1, n}):
    cases = {
      "max": maxk.rank_weights("max", k),
      "min": maxk.rank_weights("min", k),
      "mean": maxk.rank_weights("mean", k),
    }
    if n < 1024 or k in (n // 4, n - 1):  # the O(n^2) reference is slow
      cases["median"] = maxk.rank_weights("median", k)
      cases["top_m"] = maxk.rank_weights("top_m", k, m=min(k, 3))
    for wname, w in cases.items():
      for baseline in BASELINES:
        got = np.asarray(maxk.order_stat_advantages(r32, w, baseline=baseline), np.float64)
        want = _float64_reference(r64, wname, w, baseline)
        err = np.abs(got - want).max() / np.abs(want).max()
        worst = max(worst, err)
        assert err <= 2e-6, (k, wname, baseline, err)
        if baseline == "none":  # Σ_i S(i) = k · U
          np.testing.assert_allclose(maxk.order_stat_at_k(r32, w), want.sum(-1) / k, rtol=2e-6)
  print(f"n={n}: worst relative error {worst:.2e}")


def test_float32_at_n_8192_where_the_estimate_cancels():
  """n = 8192, k = 2048 with top-m weights near the mean, where U and S(i) of
  zero-mean normal or tied integer rewards are far smaller than the rewards (the
  float32 error was 1.5e-5 · max|a| for "none"): every transform within 1e-6 ·
  max|a| of closed-form float64 references (measured worst: 1.3e-7).  With m =
  k−1, top_m is (k · mean − min) / (k − 1), and every baseline is linear in L."""
  n, k = 8192, 2048
  rng = np.random.default_rng(0)
  r32 = np.stack([rng.normal(size=n), rng.integers(-2, 3, size=n)]).astype(np.float32)
  r64 = r32.astype(np.float64)
  worst = 0.0
  for baseline in BASELINES:
    ref_min = _float64_reference(r64, "min", maxk.rank_weights("min", k), baseline)
    ref_mean = _float64_reference(r64, "mean", maxk.rank_weights("mean", k), baseline)
    cases = {
      "min": (maxk.rank_weights("min", k), ref_min),
      "top_m": (maxk.rank_weights("top_m", k, m=k - 1), (k * ref_mean - ref_min) / (k - 1)),
    }
    for wname, (w, want) in cases.items():
      got = np.asarray(maxk.order_stat_advantages(r32, w, baseline=baseline), np.float64)
      err = np.abs(got - want).max() / np.abs(want).max()
      worst = max(worst, err)
      assert err <= 1e-6, (wname, baseline, err)
  print(f"worst relative error {worst:.2e}")


# ----------------------------------------------------------------------------
# NaN and infinite rewards.
# ----------------------------------------------------------------------------


def _edge_weights(k, rng):
  """Every named kind at k, signed random weights, weights with zeros and a lift."""
  out = _named_weights(k)
  out["bottom_m"] = maxk.rank_weights("bottom_m", k, m=max(1, k // 2))
  out["zeros"] = np.where(np.arange(k) % 2, rng.normal(size=k), 0.0)
  out["lifted"] = maxk.lift_rank_weights(maxk.rank_weights("max", max(1, k - 1)), k)
  return {name: w for name, w in out.items() if np.any(w)}


@pytest.mark.parametrize("x64", [False, True])
def test_nan_makes_its_whole_group_nan(x64):
  """A NaN makes its group NaN whatever its rank's weight (min and median weights
  put weight 0 on the top rank, where NaN sorts), and leaves other groups alone."""
  rng = np.random.default_rng(1)
  with jax.enable_x64(x64):
    dtype = np.float64 if x64 else np.float32
    # The reported case: min@2 of [0, 1, nan, 2] was 2/3, the NaN sample's advantage 1/3.
    r = np.array([0.0, 1.0, np.nan, 2.0], dtype)
    w = maxk.rank_weights("min", 2)
    assert np.isnan(jax.jit(lambda x: maxk.order_stat_at_k(x, w))(r))
    for baseline in BASELINES:
      f = jax.jit(lambda x, b=baseline: maxk.order_stat_advantages(x, w, baseline=b))
      assert np.all(np.isnan(f(r)))
    # n <= 512 is ranked by counting on CPU, n > 512 by lax.sort: both paths (the
    # ranking does not depend on the dtype).
    for n, ks in ((5, (1, 2, 5)), (600, (3,)))[: 1 if x64 else 2]:
      clean = rng.normal(size=(5, n)).astype(dtype)
      clean[4, :2] = [-np.inf, np.inf]  # infinite rewards next to the NaN
      bad = clean.copy()
      bad[np.arange(1, 5), [0, n // 2, n - 1, 2]] = np.nan  # first, middle, last position
      for k in ks:
        for name, w in _edge_weights(k, rng).items():
          out = np.asarray(maxk.order_stat_at_k(bad, w))
          assert np.all(np.isnan(out[1:])), (n, k, name)
          np.testing.assert_array_equal(out[0], maxk.order_stat_at_k(clean, w)[0])
          for baseline in BASELINES:
            out = np.asarray(maxk.order_stat_advantages(bad, w, baseline=baseline))
            assert np.all(np.isnan(out[1:])), (n, k, name, baseline)
            want = maxk.order_stat_advantages(clean, w, baseline=baseline)
            np.testing.assert_array_equal(out[0], want[0])


@pytest.mark.parametrize("x64", [False, True])
def test_infinite_rewards_match_subsets(x64):
  """±inf rewards give the mean over subsets in IEEE arithmetic (terms of weight 0
  left out): ±inf, NaN for inf − inf, and finite values where no infinity enters."""
  rng = np.random.default_rng(2)
  values = np.array([-np.inf, np.inf, -1.0, 0.0, 1.0, 2.5])
  with jax.enable_x64(x64):
    dtype = np.float64 if x64 else np.float32
    n = 5
    r = rng.choice(values, size=(8, n), p=[0.2, 0.2, 0.15, 0.15, 0.15, 0.15])
    r[0] = [-np.inf] * 2 + [1.0] * (n - 2)  # only -inf: max@2 is -inf, others finite
    for k in range(1, n + 1):
      for name, w in _edge_weights(k, rng).items():
        got = maxk.order_stat_at_k(r.astype(dtype), w)
        want = [enumeration.order_stat_at_k(row, w) for row in r]
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=f"{name} k={k}")
        for baseline in BASELINES:
          got = maxk.order_stat_advantages(r.astype(dtype), w, baseline=baseline)
          want = [enumeration.order_stat_advantages(row, w, baseline) for row in r]
          np.testing.assert_allclose(
            got, want, rtol=1e-4, atol=2e-5, err_msg=f"{name} k={k} {baseline}"
          )


@pytest.mark.parametrize("x64", [False, True])
@pytest.mark.parametrize("n", [200, 1200])
def test_underflowing_weight_keeps_an_infinite_reward(x64, n):
  """n/2 rewards -inf and n/2 rewards 1 at k = n/2: one k-subset holds only -inf,
  so max@k is -inf, although its weight 1/C(n, k) underflows (float32 at n = 200,
  float64 at n = 1200).  With one -inf fewer no such subset exists and max@k is 1."""
  k = n // 2
  dtype = np.float64 if x64 else np.float32
  assert np.float32(1 / math.comb(n, k)) == 0
  assert (1 / math.comb(n, k) == 0) == (n == 1200)  # Python's int division rounds correctly
  rng = np.random.default_rng(n)
  with jax.enable_x64(x64):
    for minus_inf, want in ((k, -np.inf), (k - 1, 1.0)):
      r = rng.permutation(np.where(np.arange(n) < minus_inf, -np.inf, 1.0)).astype(dtype)
      # Every k-subset has max 1 unless it holds k of the -inf rewards.
      assert (math.comb(minus_inf, k) > 0) == (want == -np.inf)
      for got in (
        maxk.max_at_k(r, k),
        maxk.order_stat_at_k(r, maxk.rank_weights("max", k)),
        -maxk.order_stat_at_k(-r, maxk.rank_weights("min", k)),  # min of -r, +inf
      ):
        assert got.dtype == dtype
        np.testing.assert_allclose(got, want, rtol=1e-6)
