"""Tests for maxk._src.divergences: KL divergence and win rate of any two policies."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import maxk
from tests.maxk import enumeration
from tests.maxk.variants import VARIANTS


@pytest.mark.parametrize("variant", VARIANTS)
def test_against_enumeration(variant):
  rng = np.random.default_rng(4)
  p = rng.dirichlet(np.ones(6), size=3).astype(np.float32)
  q = rng.dirichlet(np.ones(6), size=3).astype(np.float32)
  r = np.array([[1, 0, 1, 2, 2, 3]] * 3, np.float32)
  kl = variant(maxk.kl_divergence)
  wr = variant(maxk.win_rate)
  kl_v = variant(jax.vmap(maxk.kl_divergence))(q, p)
  wr_v = variant(jax.vmap(maxk.win_rate))(q, p, r)
  for i in range(3):
    want_kl = enumeration.kl_divergence(q[i], p[i])
    want_wr = enumeration.win_rate(q[i], p[i], r[i])
    np.testing.assert_allclose(kl(q[i], p[i]), want_kl, rtol=1e-5)
    np.testing.assert_allclose(kl_v[i], want_kl, rtol=1e-5)
    np.testing.assert_allclose(wr(q[i], p[i], r[i]), want_wr, rtol=1e-5)
    np.testing.assert_allclose(wr_v[i], want_wr, rtol=1e-5)


def test_win_rate_and_kl_divergence_generic():
  rng = np.random.default_rng(4)
  p = rng.dirichlet(np.ones(6)).astype(np.float32)
  q = rng.dirichlet(np.ones(6)).astype(np.float32)
  r = np.array([1, 0, 1, 2, 2, 3], np.float32)
  np.testing.assert_allclose(
    float(maxk.win_rate(q, p, r)), enumeration.win_rate(q, p, r), rtol=1e-5
  )
  np.testing.assert_allclose(
    float(maxk.win_rate(q, p, r)) + float(maxk.win_rate(p, q, r)), 1.0, rtol=1e-6
  )
  np.testing.assert_allclose(float(maxk.bon_win_rate(p, r, 1)), 0.5, rtol=1e-6)
  np.testing.assert_allclose(
    float(maxk.kl_divergence(q, p)), enumeration.kl_divergence(q, p), rtol=1e-5
  )
  assert float(maxk.kl_divergence(p, p)) == pytest.approx(0.0, abs=1e-7)
  assert np.isinf(float(maxk.kl_divergence([0.5, 0.5], [1.0, 0.0])))
  assert float(maxk.kl_divergence([1.0, 0.0], [0.5, 0.5])) == pytest.approx(math.log(2))
  pmf = maxk.bon_pmf(p, r, 6)
  np.testing.assert_allclose(
    float(maxk.kl_divergence(pmf, p)), float(maxk.bon_kl(p, r, 6)), rtol=1e-5
  )
  np.testing.assert_allclose(
    float(maxk.win_rate(pmf, p, r)), float(maxk.bon_win_rate(p, r, 6)), rtol=1e-6
  )
  # Gradient of the generic KL is finite with zeros in q.
  g = jax.grad(
    lambda a: maxk.kl_divergence(
      jax.nn.softmax(a) * jnp.array([1, 1, 0.0]) / jnp.sum(jax.nn.softmax(a)[:2]),
      jnp.array([0.2, 0.3, 0.5]),
    )
  )(jnp.zeros(3))
  assert np.all(np.isfinite(g))


def test_bad_input():
  p, r = enumeration.BON_CASES[1][0], np.arange(4.0)
  with pytest.raises(ValueError, match="rewards must not contain NaN"):
    maxk.win_rate(p, p, np.array([0.0, np.nan, 1.0, 2.0]))
  with pytest.raises(ValueError, match="shape"):
    maxk.kl_divergence(p, p[:3])
  with pytest.raises(ValueError, match="sum to 1"):
    maxk.kl_divergence(p, 2 * p)
  with pytest.raises(ValueError, match="non-negative"):
    maxk.win_rate(np.array([1.2, -0.2, 0, 0]), p, r)
  with pytest.raises(ValueError, match="shape"):
    maxk.win_rate(p, p, r[:3])
