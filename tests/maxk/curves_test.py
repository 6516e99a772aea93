"""Tests for the all-k curves, pass^k and G-Pass@k (maxk/_src/curves.py).

References are brute force over k-subsets (itertools), exact rationals, scipy's
hypergeometric distribution, or exact expectations over all outcome tuples.
"""

from fractions import Fraction
import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

import maxk
from tests.maxk import enumeration
from tests.maxk import enumeration_variance as ev


def _subset_counts(correct, k: int) -> np.ndarray:
  """Number of correct samples in each k-subset of one group."""
  c = np.asarray(correct, np.int64)
  return np.array([c[list(s)].sum() for s in itertools.combinations(range(len(c)), k)])


def _rows(n: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
  kinds = enumeration.reward_kinds(n, rng)
  kinds["negative"] = -np.abs(rng.normal(5.0, 2.0, size=(2, 3, n)))
  return kinds


@pytest.mark.parametrize("n", [1, 5, 7])
def test_curves_match_subsets_and_single_k(n):
  rng = np.random.default_rng(n)
  for kind, r in _rows(n, rng).items():
    got = np.asarray(maxk.max_at_k_curve(r.astype(np.float32)))
    assert got.shape == r.shape
    for k in range(1, n + 1):
      want = np.apply_along_axis(enumeration.max_at_k, -1, r, k)
      np.testing.assert_allclose(got[..., k - 1], want, rtol=1e-5, atol=1e-5, err_msg=kind)
      single = maxk.max_at_k(r.astype(np.float32), k)
      np.testing.assert_allclose(got[..., k - 1], single, rtol=1e-6, atol=1e-6, err_msg=kind)
  correct = rng.random((4, 5, n)) < 0.5
  curve = np.asarray(maxk.pass_at_k_curve(correct))
  hat = np.asarray(maxk.pass_hat_k_curve(correct))
  assert curve.shape == hat.shape == correct.shape
  for k in range(1, n + 1):
    counts = [_subset_counts(row, k) for row in correct.reshape(-1, n)]
    want_pass = np.array([np.mean(x >= 1) for x in counts]).reshape(4, 5)
    want_hat = np.array([np.mean(x == k) for x in counts]).reshape(4, 5)
    np.testing.assert_allclose(curve[..., k - 1], want_pass, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(curve[..., k - 1], maxk.pass_at_k(correct, k), rtol=2e-7, atol=0)
    np.testing.assert_allclose(hat[..., k - 1], want_hat, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(maxk.pass_hat_k(correct, k), want_hat, rtol=1e-6, atol=1e-7)


def test_max_at_k_curve_infinite_rewards_follow_max_at_k():
  inf = np.inf
  r = np.array(
    [
      [-inf, -inf, 1.0, 2.0, 2.0],
      [-inf, 1.0, inf, 2.0, -3.0],
      [inf, 0.0, 0.0, -1.0, 5.0],
      [-inf, -inf, -inf, -inf, -inf],
      [-inf, -inf, -inf, inf, 0.0],
      [3.0, 3.0, 3.0, 3.0, 3.0],
    ],
    np.float32,
  )
  got = np.asarray(maxk.max_at_k_curve(r))
  want = np.stack([np.asarray(maxk.max_at_k(r, k)) for k in range(1, 6)], axis=-1)
  np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
  np.testing.assert_array_equal(np.isposinf(got), np.isposinf(want))
  np.testing.assert_array_equal(np.isneginf(got), np.isneginf(want))
  finite = np.isfinite(want)
  np.testing.assert_allclose(got[finite], want[finite], rtol=1e-6)
  assert np.all(got[-1] == 3.0)  # a constant group is exactly its value
  assert np.isneginf(got[0, :2]).all() and np.isfinite(got[0, 2:]).all()
  assert np.isnan(got[4, :3]).all() and np.isposinf(got[4, 3:]).all()


def test_nan_stays_in_its_group():
  rng = np.random.default_rng(3)
  r = rng.normal(size=(4, 6)).astype(np.float32)
  c = (rng.random((4, 6)) < 0.5).astype(np.float32)
  fns = {
    "max_at_k_curve": (maxk.max_at_k_curve, r),
    "max_at_k_curve_variance": (maxk.max_at_k_curve_variance, r),
    "pass_at_k_curve": (maxk.pass_at_k_curve, c),
    "pass_at_k_curve_variance": (maxk.pass_at_k_curve_variance, c),
    "pass_hat_k_curve": (maxk.pass_hat_k_curve, c),
    "pass_hat_k": (lambda x: maxk.pass_hat_k(x, 2), c),
    "g_pass_at_k": (lambda x: maxk.g_pass_at_k(x, 4, tau=0.5), c),
    "mg_pass_at_k": (lambda x: maxk.mg_pass_at_k(x, 4), c),
  }
  for name, (f, x) in fns.items():
    clean = np.asarray(f(x))
    bad = x.copy()
    bad[1, 2] = np.nan
    got = np.asarray(f(bad))
    assert np.all(np.isnan(got[1])), name
    np.testing.assert_array_equal(np.delete(got, 1, 0), np.delete(clean, 1, 0), name)


@pytest.mark.parametrize("n", [2, 7])
def test_variance_curves_match_disjoint_pairs_and_single_k(n):
  rng = np.random.default_rng(20 + n)
  for kind, r in _rows(n, rng).items():
    got = np.asarray(maxk.max_at_k_curve_variance(r.astype(np.float32)))
    assert got.shape == r.shape[:-1] + (n // 2,)
    for k in range(1, n // 2 + 1):
      want = np.apply_along_axis(ev.max_at_k_variance, -1, r, k)
      np.testing.assert_allclose(got[..., k - 1], want, rtol=2e-5, atol=1e-6, err_msg=kind)
      single = maxk.max_at_k_variance(r.astype(np.float32), k)
      np.testing.assert_allclose(got[..., k - 1], single, rtol=1e-6, atol=0, err_msg=kind)
  correct = rng.random((3, 4, n)) < 0.4
  got = np.asarray(maxk.pass_at_k_curve_variance(correct))
  assert got.shape == correct.shape[:-1] + (n // 2,)
  for k in range(1, n // 2 + 1):
    want = np.apply_along_axis(ev.max_at_k_variance, -1, correct.astype(np.float64), k)
    np.testing.assert_allclose(got[..., k - 1], want, rtol=1e-6, atol=1e-7)
    # The same float64 table column: bit-identical.
    np.testing.assert_array_equal(got[..., k - 1], maxk.pass_at_k_variance(correct, k))


def _bernoulli_tuples(n: int, p: float) -> tuple[np.ndarray, np.ndarray]:
  return ev.outcome_tuples([0.0, 1.0], [1 - p, p], n)


def test_pass_family_is_unbiased_over_all_outcome_tuples():
  n, p = 6, 0.35
  correct, weights = _bernoulli_tuples(n, p)  # all 2^6 tuples and their probabilities
  ks = np.arange(1, n + 1)
  mean = lambda x: weights @ np.asarray(x, np.float64)
  np.testing.assert_allclose(mean(maxk.pass_at_k_curve(correct)), 1 - (1 - p) ** ks, atol=1e-6)
  np.testing.assert_allclose(mean(maxk.pass_hat_k_curve(correct)), p**ks, atol=1e-6)
  for k in ks:
    np.testing.assert_allclose(mean(maxk.pass_hat_k(correct, int(k))), p**k, atol=1e-6)
    binom = stats.binom(k, p)
    for i in range(1, k + 1):  # tau = i/k asks for at least i correct
      got = mean(maxk.g_pass_at_k(correct, int(k), i / k))
      np.testing.assert_allclose(got, binom.sf(i - 1), atol=1e-6, err_msg=f"k={k} i={i}")
    m = math.ceil(k / 2)
    want = 2 / k * sum(binom.sf(i - 1) for i in range(m + 1, k + 1))
    np.testing.assert_allclose(mean(maxk.mg_pass_at_k(correct, int(k))), want, atol=1e-6)
  # The variance curve is unbiased for the sampling variance of the pass@k curve.
  est = np.asarray(maxk.pass_at_k_curve(correct), np.float64)
  true_var = weights @ est**2 - (weights @ est) ** 2
  got = mean(maxk.pass_at_k_curve_variance(correct))
  assert np.all(true_var[: n // 2] > 1e-3)
  np.testing.assert_allclose(got, true_var[: n // 2], atol=1e-6)


def test_max_curves_are_unbiased_over_all_outcome_tuples():
  values, probs, n = [-1.0, 0.5, 2.0], [0.2, 0.5, 0.3], 5
  rewards, weights = ev.outcome_tuples(values, probs, n)
  curve = np.asarray(maxk.max_at_k_curve(rewards.astype(np.float32)), np.float64)
  want = [enumeration.exact_max_at_k(probs, values, k) for k in range(1, n + 1)]
  np.testing.assert_allclose(weights @ curve, want, atol=1e-5)
  true_var = weights @ curve**2 - (weights @ curve) ** 2
  got = weights @ np.asarray(maxk.max_at_k_curve_variance(rewards.astype(np.float32)), np.float64)
  assert np.all(true_var[: n // 2] > 1e-3)
  np.testing.assert_allclose(got, true_var[: n // 2], rtol=1e-5)


@pytest.mark.parametrize("n", [1, 4, 7])
def test_g_pass_and_mg_pass_match_subsets_and_the_hypergeometric(n):
  rng = np.random.default_rng(40 + n)
  correct = rng.random((6, n)) < rng.random((6, 1))
  correct[0], correct[1] = True, False
  c = correct.sum(-1)
  taus = [Fraction(0), Fraction(1, 10), Fraction(1, 4), Fraction(1, 2), Fraction(3, 4), Fraction(1)]
  for k in range(1, n + 1):
    counts = [_subset_counts(row, k) for row in correct]
    for tau in taus + [Fraction(i, k) for i in range(1, k + 1)]:
      threshold = max(1, math.ceil(tau * k))  # exact rational ceil
      want = [np.mean(x >= threshold) for x in counts]
      got = maxk.g_pass_at_k(correct, k, tau=float(tau))
      np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7, err_msg=f"k={k} tau={tau}")
      np.testing.assert_allclose(got, stats.hypergeom.sf(threshold - 1, n, c, k), atol=1e-6)
    # tau -> 0 is pass@k (any tau <= 1/k), tau = 1 is pass^k.
    for tau in (0.0, 1e-6, 1 / k):
      np.testing.assert_allclose(maxk.g_pass_at_k(correct, k, tau=tau), maxk.pass_at_k(correct, k))
    np.testing.assert_allclose(maxk.g_pass_at_k(correct, k, tau=1.0), maxk.pass_hat_k(correct, k))
    # mG-Pass@k from its definition over subsets.
    m = math.ceil(k / 2)
    want = [2 / k * sum(np.mean(x >= i) for i in range(m + 1, k + 1)) for x in counts]
    got = np.asarray(maxk.mg_pass_at_k(correct, k))
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7, err_msg=f"k={k}")
    assert got[0] == pytest.approx(2 * (k // 2) / k)  # all correct: 1 for even k only
    assert got[1] == 0.0


def test_tau_written_in_floating_point_asks_for_the_intended_threshold():
  correct = np.array([1] * 7 + [0] * 13)
  for k in range(1, 21):
    counts = _subset_counts(correct, k) if k <= 3 else None
    for i in range(1, k + 1):
      tau = i / k
      got = float(maxk.g_pass_at_k(correct, k, tau=tau))
      assert got == pytest.approx(stats.hypergeom.sf(i - 1, 20, 7, k), rel=1e-6, abs=1e-7)
      if counts is not None:
        assert got == pytest.approx(np.mean(counts >= i), rel=1e-6)
  assert float(maxk.g_pass_at_k(correct, 20, tau=0.35)) == pytest.approx(
    stats.hypergeom.sf(6, 20, 7, 20)
  )


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_tau_of_any_float_dtype_asks_for_the_threshold_the_caller_meant(dtype):
  # The case: 3 of n = 10 correct, tau = 0.3 as a float32 scalar asks for 3.
  c10 = np.array([1] * 3 + [0] * 7, bool)
  assert float(maxk.g_pass_at_k(c10, 10, dtype(0.3))) == 1.0
  correct = np.array([1] * 9 + [0] * 31)
  n, c = correct.size, int(correct.sum())
  sf = lambda threshold, k: stats.hypergeom.sf(threshold - 1, n, c, k)  # P(X >= threshold)
  for k in range(1, 41):
    for i in range(1, k + 1):  # tau = i/k rounded to the dtype: exactly i
      got = float(maxk.g_pass_at_k(correct, k, dtype(i / k)))
      assert got == pytest.approx(sf(i, k), rel=1e-5, abs=1e-7), (k, i)
  for k in range(1, 21):
    for m in range(0, 101, 5):  # decimal taus: the exact rational ceil of the decimal
      threshold = max(1, math.ceil(Fraction(m, 100) * k))
      got = float(maxk.g_pass_at_k(correct, k, dtype(m / 100)))
      assert got == pytest.approx(sf(threshold, k), rel=1e-5, abs=1e-7), (k, m)
  # A tau strictly between two i/k keeps the ceiling: 0.3 + 1/40 at k = 20 asks for 7.
  assert float(maxk.g_pass_at_k(correct, 20, dtype(0.325))) == pytest.approx(sf(7, 20), rel=1e-5)


def test_float32_accuracy_at_n_1024():
  n = 1024
  # pass@k and pass^k curves: within 1 ulp of the exact rationals at every k.
  cs = [0, 1, 2, 17, 512, 1000, 1023, 1024]
  rows = np.zeros((len(cs), n), np.float32)
  for i, c in enumerate(cs):
    rows[i, :c] = 1
  curve = np.asarray(maxk.pass_at_k_curve(rows))
  hat = np.asarray(maxk.pass_hat_k_curve(rows))
  worst = 0.0
  totals = [math.comb(n, k) for k in range(n + 1)]
  for i, c in enumerate(cs):
    for k in range(1, n + 1):
      total = totals[k]
      for got, exact in (
        (curve[i, k - 1], Fraction(total - math.comb(n - c, k), total)),
        (hat[i, k - 1], Fraction(math.comb(c, k), total)),
      ):
        want = np.float32(float(exact))
        if want == 0:
          assert got == 0 or abs(Fraction(float(got)) - exact) <= Fraction(1e-45)
          continue
        worst = max(worst, abs(float(Fraction(float(got)) - exact)) / float(np.spacing(want)))
  assert worst <= 1.0, worst
  # max@k: against exact rational sums at a spread of k, rewards with an offset.
  rng = np.random.default_rng(7)
  r = np.stack([100 + rng.random(n), rng.normal(size=n)])
  r = r.astype(np.float32)
  got = np.asarray(maxk.max_at_k_curve(r))
  for row, g in zip(r, got):
    ordered = sorted(Fraction(float(x)) for x in row)
    for k in (1, 2, 10, 100, 512, 1000, 1024):
      coef = [math.comb(j - 1, k - 1) for j in range(1, n + 1)]
      exact = sum(w * x for w, x in zip(coef, ordered)) / math.comb(n, k)
      mass = float(sum(w * abs(x) for w, x in zip(coef, ordered)) / math.comb(n, k))
      err = abs(float(Fraction(float(g[k - 1])) - exact))
      assert err <= 2 * np.finfo(np.float32).eps * (mass + abs(float(exact))), (k, err)
      single = Fraction(float(maxk.max_at_k(row, k)))
      assert err <= abs(float(single - exact)) + abs(float(np.spacing(np.float32(exact))))
  # The variance curves reproduce the single-k functions.
  ks = [1, 2, 31, 256, 512]
  var_pass = np.asarray(maxk.pass_at_k_curve_variance(rows[1:-1]))
  var_max = np.asarray(maxk.max_at_k_curve_variance(r))
  for k in ks:
    np.testing.assert_array_equal(var_pass[:, k - 1], maxk.pass_at_k_variance(rows[1:-1], k))
    np.testing.assert_allclose(var_max[:, k - 1], maxk.max_at_k_variance(r, k), rtol=2e-6)


def test_jit_and_vmap():
  rng = np.random.default_rng(5)
  r = rng.normal(size=(3, 2, 6)).astype(np.float32)
  c = rng.random((3, 2, 6)) < 0.5
  fns = [
    (maxk.max_at_k_curve, r),
    (maxk.max_at_k_curve_variance, r),
    (maxk.pass_at_k_curve, c),
    (maxk.pass_at_k_curve_variance, c),
    (maxk.pass_hat_k_curve, c),
    (lambda x: maxk.pass_hat_k(x, 3), c),
    (lambda x: maxk.g_pass_at_k(x, 5, tau=0.6), c),
    (lambda x: maxk.mg_pass_at_k(x, 6), c),
  ]
  for i, (f, x) in enumerate(fns):
    eager = np.asarray(f(x))
    # The other table lookups share these kernels; for these, jit and vmap in one program.
    traced = jax.jit(jax.vmap(f) if i in (0, 1, 2, 6) else f)
    np.testing.assert_allclose(traced(x), eager, rtol=1e-6, atol=1e-7)


def _stirling2(k: int, j: int) -> int:
  """Stirling number of the second kind, by its explicit sum."""
  return sum((-1) ** i * math.comb(j, i) * (j - i) ** k for i in range(j + 1)) // math.factorial(j)


@pytest.mark.parametrize("n", [3, 8])
def test_pass_hat_plug_in_is_the_power_of_the_rate_with_its_documented_bias(n):
  rng = np.random.default_rng(n)
  correct = rng.random((5, n)) < 0.6
  # The groups are independent: the random groups and all outcome tuples (below) in one
  # call per k, so that the plug-in's program (static k) is compiled once per k.
  p = Fraction(3, 10)
  tuples, weights = _bernoulli_tuples(n, float(p))
  both = np.concatenate([correct.astype(tuples.dtype), tuples])
  plug_in_of_both = {k: maxk.pass_hat_k(both, k, estimator="plug_in") for k in range(1, n + 1)}
  for k in range(1, n + 1):
    got = plug_in_of_both[k][: len(correct)]
    np.testing.assert_allclose(got, correct.mean(-1) ** k, rtol=1e-6, atol=1e-7)
  assert np.array_equal(
    maxk.pass_hat_k(correct, 2), maxk.pass_hat_k(correct, 2, estimator="unbiased")
  )
  # E[(c/n)^k] over c ~ Binomial(n, p), exactly in rationals, against the docstring's
  # Stirling-number sum, its k = 2 case p^2 + p(1 - p)/n, and the unbiased p^k.
  for k in range(1, n + 1):
    pmf = [math.comb(n, c) * p**c * (1 - p) ** (n - c) for c in range(n + 1)]
    plug_in = sum(w * Fraction(c, n) ** k for c, w in enumerate(pmf))
    unbiased = sum(w * Fraction(math.comb(c, k), math.comb(n, k)) for c, w in enumerate(pmf))
    falling = lambda j: math.perm(n, j)
    stirling = sum(_stirling2(k, j) * Fraction(falling(j), n**k) * p**j for j in range(1, k + 1))
    assert plug_in == stirling and unbiased == p**k
    assert (plug_in > p**k) == (k >= 2)
    if k == 2:
      assert plug_in == p**2 + p * (1 - p) / n
    # The estimators' means over all outcome tuples, as computed.
    mean_plug_in = weights @ np.asarray(plug_in_of_both[k][len(correct) :], np.float64)
    np.testing.assert_allclose(mean_plug_in, float(plug_in), atol=1e-6)


def test_grad_of_max_at_k_curve_is_the_subset_maximum_frequency():
  r = np.array([0.3, -1.2, 2.5, 0.9, 1.7, -0.4], np.float32)
  n = len(r)
  jac = np.asarray(jax.jit(jax.jacrev(maxk.max_at_k_curve))(jnp.asarray(r)))  # [k, i]
  for k in range(1, n + 1):
    subsets = list(itertools.combinations(range(n), k))
    want = np.zeros(n)
    for s in subsets:
      want[max(s, key=lambda i: r[i])] += 1 / len(subsets)
    np.testing.assert_allclose(jac[k - 1], want, rtol=1e-6, atol=1e-7)
  # Also finite under jit with ties (the shift carries no gradient).
  g = jax.jit(jax.grad(lambda x: maxk.max_at_k_curve(x).sum()))(jnp.array([1.0, 1.0, 0.0]))
  np.testing.assert_allclose(np.asarray(g).sum(), 3.0, rtol=1e-6)


@pytest.mark.parametrize(
  "call, match",
  [
    (lambda: maxk.pass_hat_k([1, 0, 1], 0), "k=0"),
    (lambda: maxk.pass_hat_k([1, 0, 1], 4), "k=4"),
    (lambda: maxk.pass_hat_k([1, 0, 1], 2, estimator="plugin"), "estimator"),
    (lambda: maxk.pass_hat_k([1, 0, 1], 4, estimator="plug_in"), "k=4"),
    (lambda: maxk.mg_pass_at_k([1, 0, 1], 2.0), "k=2.0"),
    (lambda: maxk.g_pass_at_k([1, 0, 1], 4, tau=0.5), "k=4"),
    (lambda: maxk.g_pass_at_k([1, 0, 1], 2, tau=-0.1), "tau"),
    (lambda: maxk.g_pass_at_k([1, 0, 1], 2, tau=1.5), "tau"),
    (lambda: maxk.g_pass_at_k([1, 0, 1], 2, tau=float("nan")), "tau"),
    (lambda: maxk.g_pass_at_k([1, 0, 1], 2, tau=True), "tau"),
    (lambda: maxk.g_pass_at_k([1, 0, 1], 2, tau="0.5"), "tau"),
    (lambda: maxk.g_pass_at_k([1, 2, 1], 2, tau=0.5), "correct"),
    (lambda: maxk.pass_at_k_curve([1, 2, 1]), "correct"),
    (lambda: maxk.pass_at_k_curve(1), "correct"),
    (lambda: maxk.pass_hat_k_curve(np.zeros((2, 0))), "correct"),
    (lambda: maxk.pass_at_k_curve_variance([1]), "correct"),
    (lambda: maxk.max_at_k_curve(2.0), "rewards"),
    (lambda: maxk.max_at_k_curve(np.zeros((3, 0))), "rewards"),
    (lambda: maxk.max_at_k_curve(np.ones(3, np.complex64)), "rewards"),
    (lambda: maxk.max_at_k_curve_variance(np.ones((4, 1))), "rewards"),
  ],
)
def test_bad_arguments_raise_value_errors_naming_them(call, match):
  with pytest.raises(ValueError, match=match):
    call()


@pytest.mark.parametrize("k", [1, 3, 5])
def test_ragged_groups_equal_the_dense_call_on_their_valid_samples(k):
  rng = np.random.default_rng(k)
  n, groups = 9, 40
  correct = (rng.random((groups, n)) < rng.random((groups, 1))).astype(np.float32)
  valid = rng.random((groups, n)) < rng.uniform(0.2, 1.0, (groups, 1))
  valid[0] = True  # a full group
  valid[1] = False  # an empty one
  bad = np.where(valid, correct, np.nan)  # masked samples may hold anything
  calls = {
    "pass_hat_k": lambda c, kk, **w: maxk.pass_hat_k(c, kk, **w),
    "pass_hat_k_plug_in": lambda c, kk, **w: maxk.pass_hat_k(c, kk, estimator="plug_in", **w),
    "g_pass_at_k": lambda c, kk, **w: maxk.g_pass_at_k(c, kk, 0.6, **w),
    "mg_pass_at_k": lambda c, kk, **w: maxk.mg_pass_at_k(c, kk, **w),
  }
  for name, call in calls.items():
    got = np.asarray(jax.jit(lambda c, v, call=call: call(c, k, where=v))(bad, valid))
    for g in range(groups):
      m = int(valid[g].sum())
      if m < k:
        assert np.isnan(got[g]), (name, g)
      else:
        want = float(call(correct[g][valid[g]], k))
        assert got[g] == pytest.approx(want, abs=1e-6), (name, g)
