"""Tests for maxk._src.rewind_repeat (rewind-and-repeat, Beirami et al. Sec. 6)."""

import itertools

import jax
import numpy as np
import pytest

import maxk
from tests.maxk import enumeration
from tests.maxk.variants import VARIANTS

# One jitted program per (shape, max_tries), shared by the tests below.
_pmf = jax.jit(maxk.rewind_repeat_pmf, static_argnames="max_tries")


def _enumerate(p, r, threshold, m):
  """Enumerate m draws: stop at the first draw reaching the threshold, else keep the m-th."""
  expected = np.zeros(len(p))
  for draw in itertools.product(range(len(p)), repeat=m):
    w = np.prod(np.asarray(p, np.float64)[list(draw)])
    kept = next((y for y in draw if r[y] >= threshold), draw[-1])
    expected[kept] += w
  return expected


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("max_tries", [1, 2, 3])
def test_equals_enumeration(variant, max_tries):
  p = np.array([[0.5, 0.2, 0.2, 0.1], [0.1, 0.3, 0.0, 0.6]], np.float32)
  r = np.array([[0.0, 1.0, 2.0, 3.0], [2.0, 0.0, 1.0, 0.0]], np.float32)
  threshold = np.array([2.0, 1.0], np.float32)
  fn = lambda a, b, t: maxk.rewind_repeat_pmf(a, b, t, max_tries=max_tries)
  # NumPy copies: indexing rows below compiles nothing.
  batched = np.asarray(variant(fn)(p, r, threshold))
  vmapped = np.asarray(variant(jax.vmap(fn))(p, r, threshold))
  for i in range(2):
    want = _enumerate(p[i], r[i], threshold[i], max_tries)
    np.testing.assert_allclose(batched[i], want, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(vmapped[i], want, rtol=1e-5, atol=1e-7)


def test_unlimited_kl_is_log_inverse_acceptance():
  rng = np.random.default_rng(7)
  p = rng.dirichlet(np.ones(20), size=3).astype(np.float32)
  r = rng.standard_normal((3, 20)).astype(np.float32)
  threshold = np.array([0.5, 1.0, 1.5], np.float32)
  q, kl = jax.jit(lambda p, r, t: (q := _pmf(p, r, t), maxk.kl_divergence(q, p)))(p, r, threshold)
  accept = np.where(r >= threshold[:, None], p.astype(np.float64), 0).sum(-1)
  np.testing.assert_allclose(kl, np.log(1 / accept), rtol=1e-5)
  np.testing.assert_allclose(np.sum(q, -1), 1.0, rtol=1e-6)
  assert np.all(np.asarray(q)[r < threshold[:, None]] == 0)


def test_with_try_limit():
  p = np.array([0.5, 0.2, 0.2, 0.1], np.float32)
  r = np.array([0.0, 1.0, 2.0, 3.0], np.float32)
  m = 3
  q = np.asarray(maxk.rewind_repeat_pmf(p, r, 2.0, max_tries=m), np.float64)
  np.testing.assert_allclose(q, _enumerate(p, r, 2.0, m), rtol=1e-5)
  np.testing.assert_allclose(maxk.rewind_repeat_pmf(p, r, 2.0, max_tries=1), p, rtol=1e-6)
  many = maxk.rewind_repeat_pmf(p, r, 2.0, max_tries=2000)
  np.testing.assert_allclose(many, maxk.rewind_repeat_pmf(p, r, 2.0), atol=1e-6)
  # Nothing reaches the threshold: the reference is returned (eager and jit).
  np.testing.assert_allclose(maxk.rewind_repeat_pmf(p, r, 10.0), p, rtol=1e-6)
  np.testing.assert_allclose(
    jax.jit(lambda t: maxk.rewind_repeat_pmf(p, r, t, max_tries=5))(10.0), p, rtol=1e-6
  )
  # Tiny acceptance probability with many tries: factor ~ m, accurately.  Two
  # zero-probability outcomes below the threshold give p's shape (its programs).
  p2 = np.array([1 - 1e-7, 1e-7, 0.0, 0.0], np.float32)
  q2 = maxk.rewind_repeat_pmf(p2, np.array([0.0, 1.0, 0.0, 0.0]), 1.0, max_tries=1000)
  np.testing.assert_allclose(float(np.asarray(q2)[1]), 1e-4 * (1 - 0.5 * 999 * 1e-7), rtol=1e-4)


def test_nan_threshold_or_reward_only_affects_its_row_under_jit():
  rng = np.random.default_rng(2)
  p = rng.dirichlet(np.ones(5), size=4).astype(np.float32)
  r = rng.standard_normal((4, 5)).astype(np.float32)
  r_bad = r.copy()
  r_bad[3, 0] = np.nan
  rr = np.asarray(_pmf(p, r_bad, np.array([0.0, np.nan, 0.0, 0.0], np.float32)))
  assert np.all(np.isnan(rr[[1, 3]]))
  # The clean rows against the clean inputs through the same program.
  clean = np.asarray(_pmf(p, r, np.zeros(4, np.float32)))
  np.testing.assert_allclose(rr[[0, 2]], clean[[0, 2]], rtol=1e-6)


def test_bad_input():
  p, r = enumeration.BON_CASES[1][0], np.arange(4.0)
  with pytest.raises(ValueError, match="max_tries"):
    maxk.rewind_repeat_pmf(p, r, 1.0, max_tries=0)
  with pytest.raises(ValueError, match="threshold"):
    maxk.rewind_repeat_pmf(np.stack([p, p]), np.stack([r, r]), [1.0, 2.0, 3.0])
  with pytest.raises(ValueError, match="threshold must not contain NaN"):
    maxk.rewind_repeat_pmf(p, r, np.nan)
  with pytest.raises(ValueError, match="sum to 1"):
    maxk.rewind_repeat_pmf(2 * p, r, 1.0)
