"""Tests for the across-prompt uncertainty summaries (maxk._src.uncertainty)."""

from absl.testing import parameterized
import chex
import jax
import numpy as np
import pytest
from scipy import integrate
from scipy import stats

import maxk
from maxk._src.uncertainty import beta_ppf


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


class JitVmapTest(chex.TestCase):
  @chex.variants(with_jit=True, without_jit=True)
  @parameterized.parameters("normal", "t")
  def test_mean_and_paired(self, distribution):
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(4, 9)), rng.normal(size=(4, 9))
    crit = (stats.norm.ppf(0.975) if distribution == "normal" else stats.t.ppf(0.975, 8),)
    f = lambda u: maxk.mean_with_interval(u, distribution=distribution)
    g = lambda u, w: maxk.paired_difference(u, w, distribution=distribution)
    for fn, args, ref in ((f, (x,), x), (g, (x, y), x - y)):
      want = _numpy_interval(ref, 0.95, crit[0])
      for out in (self.variant(fn)(*args), self.variant(jax.vmap(fn))(*args)):
        for got_i, want_i in zip(out, want):
          np.testing.assert_allclose(got_i, want_i, rtol=1e-5, atol=1e-6)

  @chex.variants(with_jit=True, without_jit=True)
  def test_posterior(self):
    correct = np.random.default_rng(1).random((3, 5, 6)) < 0.5
    want = maxk.pass_at_k_posterior(correct, 2)
    f = lambda c: maxk.pass_at_k_posterior(c, 2)
    for g, w in zip(self.variant(jax.vmap(f))(correct), want):
      np.testing.assert_allclose(g, w, rtol=1e-6)
    np.testing.assert_allclose(
      self.variant(lambda c: maxk.bayes_at_n(c, 2).mean)(correct), want.mean.mean(-1), rtol=1e-6
    )


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
