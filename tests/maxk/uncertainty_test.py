"""Tests for the across-prompt uncertainty summaries (maxk._src.uncertainty)."""

from fractions import Fraction
import functools
import math

import jax
import numpy as np
import pytest
from scipy import integrate
from scipy import stats

import maxk
from maxk._src.uncertainty import _critical_value
from maxk._src.uncertainty import beta_ppf
from tests.maxk.variants import VARIANTS


def _numpy_interval(x, confidence, crit=None):
  p = x.shape[-1]
  mean = x.mean(-1)
  se = x.std(-1, ddof=1) / np.sqrt(p)
  z = stats.norm.ppf(0.5 + confidence / 2) if crit is None else crit
  return mean, se, mean - z * se, mean + z * se


@pytest.mark.parametrize("confidence", [0.5, 0.9, 0.95, 0.99])
def test_mean_with_interval_matches_numpy(confidence):
  x = np.random.default_rng(0).normal(size=(2, 3, 17))
  got = maxk.mean_with_interval(x, confidence=confidence)
  for g, w in zip(got, _numpy_interval(x, confidence)):
    assert g.shape == (2, 3)
    np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
  t_crit = stats.t.ppf(0.5 + confidence / 2, 16)
  got_t = maxk.mean_with_interval(x, confidence=confidence, distribution="t")
  for g, w in zip(got_t, _numpy_interval(x, confidence, t_crit)):
    np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
  # The prompt axis can be anywhere.
  moved = maxk.mean_with_interval(np.moveaxis(x, -1, 0), confidence=confidence, axis=0)
  for g, w in zip(moved, got):
    np.testing.assert_allclose(g, w, rtol=1e-6)


def _simulate_benchmarks(rng, num, prompts, n, a=2.0, b=3.0):
  theta = rng.beta(a, b, size=(num, prompts, 1))
  return rng.random((num, prompts, n)) < theta


@pytest.mark.parametrize("distribution", ["normal", "t"])
def test_interval_covers_population_pass_at_k(distribution):
  """2000 simulated benchmarks of 40 prompts (p_i ~ Beta(2,3), 8 samples each)."""
  rng = np.random.default_rng(7)
  k, a, b = 2, 2.0, 3.0
  truth = 1 - stats.beta(a, b).expect(lambda p: (1 - p) ** k)
  est = maxk.pass_at_k(_simulate_benchmarks(rng, 2000, 40, 8, a, b), k)
  iv = maxk.mean_with_interval(est, distribution=distribution)
  coverage = np.mean((np.asarray(iv.lo) <= truth) & (truth <= np.asarray(iv.hi)))
  assert 0.925 <= coverage <= 0.97, coverage


def test_variance_split_matches_numpy_and_within_is_exact_in_expectation():
  rng = np.random.default_rng(3)
  x, v = rng.random((4, 12)), rng.random((4, 12)) * 0.01
  got = maxk.variance_split(x, v)
  total = x.var(-1, ddof=1) / 12
  np.testing.assert_allclose(got.mean, x.mean(-1), rtol=1e-6)
  np.testing.assert_allclose(got.total, total, rtol=1e-5)
  np.testing.assert_allclose(got.within, v.mean(-1) / 12, rtol=1e-5)
  np.testing.assert_allclose(got.between, total - v.mean(-1) / 12, rtol=1e-4, atol=1e-8)
  # For fixed prompts with success rates theta_i and n samples, E[within] equals the exact
  # variance of the benchmark mean (1/P²) Σ Var(pass@k estimate), by binomial sums.
  n, k, theta = 8, 3, np.array([0.05, 0.3, 0.5, 0.9])
  rows = np.array([[1] * c + [0] * (n - c) for c in range(n + 1)], bool)
  est = np.asarray(maxk.pass_at_k(rows, k), np.float64)
  var_hat = np.asarray(maxk.pass_at_k_variance(rows, k), np.float64)
  pmf = stats.binom.pmf(np.arange(n + 1)[None], n, theta[:, None])  # [P, n+1]
  exact = np.sum(pmf @ est**2 - (pmf @ est) ** 2) / len(theta) ** 2
  expected_within = np.sum(pmf @ var_hat) / len(theta) ** 2
  np.testing.assert_allclose(expected_within, exact, rtol=1e-5)


def test_between_prompt_part_estimates_the_spread_of_the_prompts():
  """Average of `between` over simulated benchmarks ≈ Var(θ-level pass@k)/P."""
  rng = np.random.default_rng(11)
  k, a, b, prompts = 2, 2.0, 3.0, 30
  correct = _simulate_benchmarks(rng, 3000, prompts, 8, a, b)
  split = maxk.variance_split(maxk.pass_at_k(correct, k), maxk.pass_at_k_variance(correct, k))
  dist = stats.beta(a, b)
  m1 = dist.expect(lambda p: 1 - (1 - p) ** k)
  var_theta = dist.expect(lambda p: (1 - (1 - p) ** k) ** 2) - m1**2
  np.testing.assert_allclose(np.mean(split.between), var_theta / prompts, rtol=0.05)
  np.testing.assert_allclose(split.total, np.asarray(split.between) + split.within, rtol=1e-5)


def test_paired_difference_matches_numpy_and_beats_unpaired():
  rng = np.random.default_rng(5)
  difficulty = rng.random((3, 50))
  a = difficulty + 0.05 * rng.normal(size=(3, 50))
  b = difficulty + 0.02 + 0.05 * rng.normal(size=(3, 50))
  got = maxk.paired_difference(a, b, confidence=0.9)
  for g, w in zip(got, _numpy_interval(a - b, 0.9)):
    np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-6)
  unpaired = np.sqrt(a.var(-1, ddof=1) / 50 + b.var(-1, ddof=1) / 50)
  assert np.all(np.asarray(got.stderr) < 0.5 * unpaired)


@pytest.mark.parametrize("a,b", [(0.5, 0.5), (1.0, 1.0), (3.0, 9.0), (40.0, 2.0), (1.0, 300.0)])
def test_beta_ppf_matches_scipy(a, b):
  q = np.array([0.0, 0.001, 0.025, 0.3, 0.5, 0.9, 0.975, 0.999, 1.0])
  got = np.asarray(beta_ppf(q, a, b))
  np.testing.assert_allclose(got, stats.beta.ppf(q, a, b), rtol=2e-4, atol=1e-6)


@pytest.mark.parametrize("n", [1, 4, 10])
@pytest.mark.parametrize("k", [1, 3, 16])
def test_pass_at_k_posterior_against_scipy(n, k):
  prior = (0.5, 2.0)
  rows = np.array([[1] * c + [0] * (n - c) for c in range(n + 1)], bool)
  got = maxk.pass_at_k_posterior(rows, k, confidence=0.9, prior=prior)
  for c in range(n + 1):
    post = stats.beta(prior[0] + c, prior[1] + n - c)
    mean = integrate.quad(lambda p: (1 - (1 - p) ** k) * post.pdf(p), 0, 1)[0]
    second = integrate.quad(lambda p: (1 - (1 - p) ** k) ** 2 * post.pdf(p), 0, 1)[0]
    lo, hi = 1 - (1 - post.ppf([0.05, 0.95])) ** k
    np.testing.assert_allclose(got.mean[c], mean, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(got.stderr[c], np.sqrt(second - mean**2), rtol=1e-4, atol=1e-7)
    np.testing.assert_allclose([got.lo[c], got.hi[c]], [lo, hi], rtol=5e-4, atol=1e-6)


def test_bayes_at_n_k1_uniform_is_laplace_average():
  rng = np.random.default_rng(2)
  correct = rng.random((3, 20, 6)) < 0.4
  c = correct.sum(-1)
  a, b = c + 1.0, 6 - c + 1.0
  mean = (a / (a + b)).mean(-1)
  sd = np.sqrt((a * b / ((a + b) ** 2 * (a + b + 1))).sum(-1)) / 20
  got = maxk.bayes_at_n(correct, confidence=0.95)
  np.testing.assert_allclose(got.mean, mean, rtol=1e-5)
  np.testing.assert_allclose(got.stderr, sd, rtol=1e-5)
  np.testing.assert_allclose(got.hi, mean + stats.norm.ppf(0.975) * sd, rtol=1e-5)
  want = np.mean(1 - np.exp(np.log(b) - np.log(a + b)) * (b + 1) / (a + b + 1), -1)  # k=2
  np.testing.assert_allclose(maxk.bayes_at_n(correct, 2).mean, want, rtol=1e-5)


_DISTRIBUTIONS = ["normal", "t"]


@functools.cache
def _intervals(variant, vmapped):
  """``variant`` of (mean_with_interval(x), paired_difference(x, y)) for every
  distribution, keyed by distribution.

  Shared by the cases of test_mean_and_paired_jit_vmap: under jit each ``vmapped``
  compiles one program for both functions and both distributions, not one for each.
  """

  def both(u, w):
    return {
      d: (
        maxk.mean_with_interval(u, distribution=d),
        maxk.paired_difference(u, w, distribution=d),
      )
      for d in _DISTRIBUTIONS
    }

  return variant(jax.vmap(both) if vmapped else both)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("distribution", _DISTRIBUTIONS)
def test_mean_and_paired_jit_vmap(variant, distribution):
  rng = np.random.default_rng(0)
  x, y = rng.normal(size=(4, 9)), rng.normal(size=(4, 9))
  crit = (stats.norm.ppf(0.975) if distribution == "normal" else stats.t.ppf(0.975, 8),)
  for vmapped in (False, True):
    outs = _intervals(variant, vmapped)(x, y)[distribution]
    for out, ref in zip(outs, (x, x - y), strict=True):
      want = _numpy_interval(ref, 0.95, crit[0])
      for got_i, want_i in zip(out, want, strict=True):
        np.testing.assert_allclose(got_i, want_i, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("variant", VARIANTS)
def test_posterior_jit_vmap(variant):
  correct = np.random.default_rng(1).random((3, 5, 6)) < 0.5
  want = maxk.pass_at_k_posterior(correct, 2)
  # The vmapped posterior and bayes_at_n in one program (one compilation under jit).
  posterior, bayes_mean = variant(
    lambda c: (jax.vmap(lambda d: maxk.pass_at_k_posterior(d, 2))(c), maxk.bayes_at_n(c, 2).mean)
  )(correct)
  for g, w in zip(posterior, want, strict=True):
    np.testing.assert_allclose(g, w, rtol=1e-6)
  np.testing.assert_allclose(bayes_mean, want.mean.mean(-1), rtol=1e-6)


def test_nan_only_affects_its_row():
  x = np.random.default_rng(0).normal(size=(3, 10)).astype(np.float32)
  x[1, 4] = np.nan
  out = maxk.mean_with_interval(x)
  clean = maxk.mean_with_interval(x[[0, 2]])
  for o, c in zip(out, clean):
    assert np.isnan(o[1])
    np.testing.assert_array_equal(np.asarray(o)[[0, 2]], c)
  c = np.ones((2, 4), np.float32)
  c[0, 0] = np.nan
  post = maxk.pass_at_k_posterior(c, 2)
  assert all(np.isnan(p[0]) and np.isfinite(p[1]) for p in post)


def test_bad_input():
  x = np.zeros((3, 5))
  for conf in (0.0, 1.0, 1.5, -0.1, True, "0.9"):
    with pytest.raises(ValueError, match="confidence"):
      maxk.mean_with_interval(x, confidence=conf)
    with pytest.raises(ValueError, match="confidence"):
      maxk.pass_at_k_posterior(x, 1, confidence=conf)
  with pytest.raises(ValueError, match="P >= 2"):
    maxk.mean_with_interval(np.zeros((3, 1)))
  with pytest.raises(ValueError, match="P >= 2"):
    maxk.paired_difference(np.zeros(1), np.zeros(1))
  with pytest.raises(ValueError, match="must equal"):
    maxk.paired_difference(np.zeros((2, 5)), np.zeros((2, 4)))
  with pytest.raises(ValueError, match="must equal"):
    maxk.variance_split(np.zeros((2, 5)), np.zeros((3, 5)))
  with pytest.raises(ValueError, match="axis"):
    maxk.mean_with_interval(x, axis=2)
  with pytest.raises(ValueError, match="Unknown distribution"):
    maxk.mean_with_interval(x, distribution="bootstrap")
  for prior in ((0.0, 1.0), (1.0,), (1.0, np.inf), "uniform"):
    with pytest.raises(ValueError, match="prior"):
      maxk.pass_at_k_posterior(x, 1, prior=prior)
  with pytest.raises(ValueError, match="k=0 must satisfy k >= 1"):
    maxk.bayes_at_n(x, 0)
  with pytest.raises(ValueError, match=r"shape \[..., P, n\]"):
    maxk.bayes_at_n(np.zeros(5), 1)
  with pytest.raises(ValueError, match="correct must hold only 0/1"):
    maxk.pass_at_k_posterior(np.array([0.0, 0.5]), 1)


_T_DOFS = [1, 2, 3, 4, 7, 10, 30, 100, 1000, 10**4, 10**5, 10**6, 10**7]


@pytest.mark.parametrize("confidence", [0.5, 0.8, 0.9, 0.95, 0.99, 0.999])
def test_t_critical_value_is_float64_accurate(confidence):
  """Two-sided t quantile on the host in float64, whatever the data dtype."""
  for dof in _T_DOFS:
    want = stats.t.isf((1 - confidence) / 2, dof)  # 1 − confidence is exact here
    got = _critical_value(confidence, "t", dof)
    assert abs(got - want) <= 1e-11 * want, (dof, got, want)
  # Closed forms: t(1) is Cauchy, t = tan(π c/2) = cot(π (1 − c)/2); t(2) has
  # t = c √(2/((1 − c)(1 + c))).  Each is evaluated where it is well conditioned.
  for c in (1e-9, 1e-3, confidence, 1 - 1e-9):
    cauchy = math.tan(math.pi * c / 2) if c < 0.5 else 1 / math.tan(math.pi * (1 - c) / 2)
    np.testing.assert_allclose(_critical_value(c, "t", 1), cauchy, rtol=1e-13)
    t2 = c * math.sqrt(2 / ((1 - c) * (1 + c)))
    np.testing.assert_allclose(_critical_value(c, "t", 2), t2, rtol=1e-13)


@pytest.mark.parametrize("x64", [False, True])
def test_t_interval_at_a_million_prompts(x64):
  """The issue's case: dof = 1e6, confidence 0.9 gave 1.726 (float32 betainc) for 1.645."""
  p = 10**6 + 1
  x = np.zeros(p)
  x[: p - 1] = np.tile([1.0, -1.0], (p - 1) // 2)  # mean exactly 0, s² exactly 1
  want = stats.t.ppf(0.95, p - 1)
  with jax.enable_x64(x64):
    dtype = np.float64 if x64 else np.float32
    for iv in (
      maxk.mean_with_interval(x.astype(dtype), confidence=0.9, distribution="t"),
      maxk.paired_difference(x.astype(dtype), np.zeros(p, dtype), confidence=0.9, distribution="t"),
    ):
      assert iv.hi.dtype == dtype and float(iv.mean) == 0.0
      np.testing.assert_allclose(float(iv.stderr), 1 / math.sqrt(p), rtol=1e-14 if x64 else 1e-6)
      crit = float(iv.hi) / float(iv.stderr)
      np.testing.assert_allclose(crit, want, rtol=1e-14 if x64 else 3e-7)
      assert float(iv.lo) == -float(iv.hi)


def test_mean_and_stderr_do_not_overflow():
  """Scaled by a power of two near max |x|: float32 [0, 1e20, 0, 1e20] used to give inf."""
  cases = [
    (np.float32([0, 1e20, 0, 1e20]), 5e19, 1e20 / math.sqrt(12), 1e-6),
    (np.float16([0, 300, 0, 300]), 150.0, 300 / math.sqrt(12), 1e-3),
    (np.float32([3e38] * 3), float(np.float32(3e38)), 0.0, 0.0),
    (np.float32([3e38, -3e38]), 0.0, float(np.float32(3e38)), 1e-6),  # s² = 1.8e77
  ]
  for x, mean, stderr, rtol in cases:
    for iv in (maxk.mean_with_interval(x), maxk.paired_difference(x, np.zeros_like(x))):
      assert iv.mean.dtype == x.dtype
      np.testing.assert_allclose(float(iv.mean), mean, rtol=rtol)
      np.testing.assert_allclose(float(iv.stderr), stderr, rtol=rtol)
      z = stats.norm.ppf(0.975)
      if stderr * z + abs(mean) < np.finfo(x.dtype).max:
        np.testing.assert_allclose(float(iv.hi), mean + z * stderr, rtol=max(rtol, 1e-6))
        np.testing.assert_allclose(float(iv.lo), mean - z * stderr, rtol=max(rtol, 1e-6))
  iv = maxk.mean_with_interval(np.float32([3e38] * 3))
  assert float(iv.lo) == float(iv.hi) == float(np.float32(3e38))
  split = maxk.variance_split(np.float32([0, 1e19, 0, 1e19]), np.zeros(4, np.float32))
  np.testing.assert_allclose(split.total, 1e38 / 12, rtol=1e-6)
  np.testing.assert_allclose(split.mean, 5e18, rtol=1e-6)
  with jax.enable_x64(True):
    iv = maxk.mean_with_interval(np.array([1e308] * 3 + [0.0]))
    np.testing.assert_allclose(float(iv.mean), 0.75e308, rtol=1e-15)
    np.testing.assert_allclose(float(iv.stderr), 0.25e308, rtol=1e-15)  # s = 1e308/2
  # The scale carries no gradient: d stderr/dx_i = (x_i − mean)/(P (P − 1) stderr).
  x = np.float32([1.0, 4.0, -2.0, 0.5]) * 1e18
  g = jax.grad(lambda u: maxk.mean_with_interval(u).stderr)(x)
  x64 = x.astype(np.float64)
  se = x64.std(ddof=1) / 2
  np.testing.assert_allclose(g, (x64 - x64.mean()) / (4 * 3 * se), rtol=1e-5)


def _exact_posterior(n, k, c, prior=(1, 1)):
  """(mean, variance) of 1 − (1 − p)^k, p ~ Beta(α0 + c, β0 + n − c), as exact rationals."""
  a, b = Fraction(prior[0]) + c, Fraction(prior[1]) + n - c
  m1 = math.prod((b + i) / (a + b + i) for i in range(k))
  m2 = m1 * math.prod((b + i) / (a + b + i) for i in range(k, 2 * k))
  return 1 - m1, m2 - m1 * m1


@pytest.mark.parametrize("n", [1024, 4096, 16384])
def test_posterior_tables_against_exact_rationals(n):
  """lgamma differences gave std errors of 7.4e-7 / 9.2e-5 / 1.2e-2 (k = 1, c = 0)."""
  for k, prior in ((1, (1, 1)), (7, (0.5, 2))):
    cs = [0, 1, n // 3, n - 1, n]
    rows = np.arange(n)[None] < np.array(cs)[:, None]
    for x64 in (False, True):
      with jax.enable_x64(x64):
        got = maxk.pass_at_k_posterior(rows, k, prior=prior)
        tol = 1e-13 if x64 else 6e-8  # float32: correctly rounded
        for i, c in enumerate(cs):
          mean, var = _exact_posterior(n, k, c, prior)
          std = math.sqrt(float(var))
          assert abs(float(got.mean[i]) - float(mean)) <= tol * float(mean), (k, c, x64)
          assert abs(float(got.stderr[i]) - std) <= tol * std, (k, c, x64)


@pytest.mark.parametrize("n,k,c", [(1024, 1000, 978), (512, 2000, 500), (256, 5000, 250)])
def test_posterior_std_is_finite_for_k_much_larger_than_its_spread(n, k, c):
  """exp(2 l1)·expm1(l2 − 2 l1) was 0·inf = NaN; the exact std here is below 1e-150."""
  _, var = _exact_posterior(n, k, c)
  assert var < Fraction(1, 10**300)
  row = (np.arange(n) < c).astype(np.float32)
  post = maxk.pass_at_k_posterior(row, k)
  assert float(post.stderr) == 0.0 and float(post.mean) == 1.0
  assert float(post.lo) <= 1.0 and float(post.hi) == 1.0
  bayes = maxk.bayes_at_n(np.stack([row, row]), k)
  assert float(bayes.stderr) == 0.0 and float(bayes.lo) == float(bayes.hi) == 1.0


def test_bayes_at_n_interval_is_clipped_to_the_unit_interval():
  # c = 1 of n = 2, k = 5: a = b = 2, m_5 = 3/28, m_10 = 1/26 exactly.
  mean = 1 - Fraction(3, 28)
  var = Fraction(1, 26) - Fraction(9, 784)
  sd = math.sqrt(2 * float(var)) / 2  # two identical prompts
  z = stats.norm.ppf(0.975)
  got = maxk.bayes_at_n([[1, 0], [1, 0]], 5)
  np.testing.assert_allclose([got.mean, got.stderr], [float(mean), sd], rtol=1e-6)
  np.testing.assert_allclose(got.lo, float(mean) - z * sd, rtol=1e-6)
  assert float(mean) + z * sd > 1.1 and float(got.hi) == 1.0  # was 1.12
  # All wrong: μ = 1/4 with σ = √(2·3/80)/2, so μ − zσ < 0 is clipped to 0.
  got = maxk.bayes_at_n(np.zeros((2, 2)), 1)
  assert 0.25 - z * math.sqrt(2 * 3 / 80) / 2 < 0 and float(got.lo) == 0.0
  np.testing.assert_allclose(got.hi, 0.25 + z * math.sqrt(2 * 3 / 80) / 2, rtol=1e-6)


def test_posterior_needs_prompts_and_samples():
  with pytest.raises(ValueError, match=r"correct needs P >= 1 prompts .* shape \(0, 3\)"):
    maxk.bayes_at_n(np.zeros((0, 3)), 2)
  for fn in (maxk.bayes_at_n, maxk.pass_at_k_posterior):
    with pytest.raises(ValueError, match=r"correct needs n >= 1 samples .* shape \(3, 0\)"):
      fn(np.zeros((3, 0)), 2)
    with pytest.raises(ValueError, match="correct must be a bool or 0/1 numeric array"):
      fn([[1, 0], [1]], 1)
