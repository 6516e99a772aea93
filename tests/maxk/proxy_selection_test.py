"""Tests for selection by a proxy reward (maxk._src.proxy_selection).

Against brute force over all outcome tuples (best-of-n and soft best-of-n, ties in
the proxy broken uniformly), the Poisson mixture of best-of-n values, direct sums
for the tilt and the χ² optimum, an exhaustive argmax over n, and finite
differences in float64.
"""

import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import maxk

# The proxy ranks outcome 4 first, but its true reward is the lowest: reward hacking.
_P = np.array([0.3, 0.2, 0.1, 0.25, 0.15], np.float32)
_PROXY = np.array([0.0, 1.0, 1.0, 2.0, 3.0], np.float32)  # a tie at 1.
_TRUE = np.array([0.0, 1.0, 2.0, 3.0, -1.0], np.float32)


def _brute_force(p, true, proxy, n, lam=None):
  """E[true reward of the selected draw] over all L^n draws (hard max, or kept ∝ e^{proxy/λ})."""
  p, true, proxy = (np.asarray(a, np.float64) for a in (p, true, proxy))
  total = 0.0
  for draw in itertools.product(range(len(p)), repeat=n):
    draw = list(draw)
    weight = np.prod(p[draw])
    if lam is None:
      keep = (proxy[draw] == proxy[draw].max()).astype(float)
    else:
      keep = np.exp((proxy[draw] - proxy[draw].max()) / lam)
    total += weight * np.sum(keep * true[draw]) / np.sum(keep)
  return total


def test_bon_and_soft_bon_match_brute_force_over_tuples():
  values = jax.jit(lambda: [maxk.proxy_bon_reward(_P, _TRUE, _PROXY, n) for n in (1, 2, 3, 4)])()
  values = np.asarray(values)  # compared in NumPy (eager comparisons compile)
  want = [_brute_force(_P, _TRUE, _PROXY, n) for n in (1, 2, 3, 4)]
  np.testing.assert_allclose(values, want, rtol=1e-5)
  assert values[1] > values[0] and values[3] < values[1]  # rises, then falls
  for n, lam in ((2, 0.5), (3, 2.0)):
    np.testing.assert_allclose(
      maxk.proxy_soft_bon_reward(_P, _TRUE, _PROXY, n, lam),
      _brute_force(_P, _TRUE, _PROXY, n, lam),
      rtol=1e-5,
    )


def test_limits_and_identities():
  # Proxy = true reward: best-of-n's true reward is max@n.
  np.testing.assert_allclose(
    maxk.proxy_bon_reward(_P, _TRUE, _TRUE, 5), maxk.max_at_k_exact(_P, _TRUE, 5), rtol=1e-6
  )
  # λ → 0: soft best-of-n is best-of-n.
  np.testing.assert_allclose(
    maxk.proxy_soft_bon_reward(_P, _TRUE, _PROXY, 3, 0.02),
    maxk.proxy_bon_reward(_P, _TRUE, _PROXY, 3),
    rtol=1e-5,
  )
  mean = float(np.sum(_P * _TRUE))
  np.testing.assert_allclose(maxk.proxy_bop_reward(_P, _TRUE, _PROXY, 0.0), mean, rtol=1e-6)
  np.testing.assert_allclose(maxk.proxy_tilt_reward(_P, _TRUE, _PROXY, 0.0), mean, rtol=1e-6)
  np.testing.assert_allclose(maxk.proxy_chi2_reward(_P, _TRUE, _PROXY, 1e5), mean, rtol=1e-4)


def test_bop_is_the_poisson_mixture_and_tilt_chi2_are_direct_sums():
  mu = 1.5
  mix = sum(
    math.exp(-mu + (n - 1) * math.log(mu) - math.lgamma(n))
    * _brute_force(_P, _TRUE, _PROXY, n)
    * (1.0 if n <= 4 else 0.0)
    for n in range(1, 5)
  )
  # The tail n >= 5 from the exact best-of-n values.
  mix += sum(
    math.exp(-mu + (n - 1) * math.log(mu) - math.lgamma(n))
    * float(maxk.proxy_bon_reward(_P, _TRUE, _PROXY, n))
    for n in range(5, 30)
  )
  np.testing.assert_allclose(maxk.proxy_bop_reward(_P, _TRUE, _PROXY, mu), mix, rtol=1e-5)
  for fn, pmf in ((maxk.proxy_tilt_reward, maxk.tilt_pmf), (maxk.proxy_chi2_reward, maxk.chi2_pmf)):
    np.testing.assert_allclose(
      fn(_P, _TRUE, _PROXY, 0.7), np.sum(pmf(_P, _PROXY, 0.7) * _TRUE), rtol=1e-6
    )


def test_best_n_is_the_exhaustive_argmax_under_vmap():
  rng = np.random.default_rng(0)
  probs = rng.dirichlet(np.ones(6), size=3).astype(np.float32)
  true = rng.normal(size=(3, 6)).astype(np.float32)
  proxy = (true + rng.normal(size=(3, 6))).round().astype(np.float32)  # noisy and tied
  best_n, best = jax.jit(lambda p, t, q: maxk.proxy_bon_best_n(p, t, q, max_n=40))(
    probs, true, proxy
  )
  curve = np.stack([maxk.proxy_bon_reward(probs, true, proxy, n) for n in range(1, 41)])
  np.testing.assert_array_equal(best_n, np.argmax(curve, axis=0) + 1)
  np.testing.assert_allclose(best, curve.max(axis=0), rtol=1e-6)
  n_star, value = maxk.proxy_bon_best_n(_P, _TRUE, _PROXY, max_n=64)
  assert int(n_star) == 2 and np.isclose(value, _brute_force(_P, _TRUE, _PROXY, 2))


def test_grad_matches_finite_differences():
  with jax.enable_x64(True):
    # Test-side arithmetic in NumPy float64 (no eager programs).
    z = np.log(_P.astype(np.float64))
    true = _TRUE.astype(np.float64)
    proxy = _PROXY.astype(np.float64)

    def f(z, mu):
      q = jax.nn.softmax(z)
      return jnp.stack(
        [maxk.proxy_bon_reward(q, true, proxy, 3), maxk.proxy_bop_reward(q, true, proxy, mu)]
      )

    h = 1e-6
    jz, jm = jax.jit(jax.jacrev(f, argnums=(0, 1)))(z, 1.5)
    batched = jax.jit(jax.vmap(f, in_axes=(0, None)))
    eye = h * np.eye(5)
    fd = (np.asarray(batched(z + eye, 1.5)) - np.asarray(batched(z - eye, 1.5))).T / (2 * h)
    np.testing.assert_allclose(jz, fd, atol=1e-8)
    f_jit = jax.jit(f)
    fd_mu = (np.asarray(f_jit(z, 1.5 + h)) - np.asarray(f_jit(z, 1.5 - h))) / (2 * h)
    np.testing.assert_allclose(jm, fd_mu, atol=1e-8)


def test_nan_row_is_nan_only_there():
  probs = np.stack([_P, _P])
  true = np.stack([_TRUE, _TRUE]).copy()
  proxy = np.stack([_PROXY, _PROXY]).copy()
  true[0, 1] = np.nan
  proxy[1, 2] = np.nan
  probs3 = np.concatenate([probs, _P[None]])
  true3 = np.concatenate([true, _TRUE[None]])
  proxy3 = np.concatenate([proxy, _PROXY[None]])
  out = jax.jit(
    lambda p, t, q: (
      maxk.proxy_bon_reward(p, t, q, 3),
      maxk.proxy_bop_reward(p, t, q, 1.0),
      maxk.proxy_bon_best_n(p, t, q, max_n=8),
    )
  )(probs3, true3, proxy3)
  bon, bop, (best_n, best) = out
  for v in (bon, bop, best):
    assert np.all(np.isnan(v[:2])) and np.isfinite(v[2])
  np.testing.assert_array_equal(best_n, [-1, -1, 2])


@pytest.mark.parametrize(
  "call, match",
  [
    (lambda: maxk.proxy_bon_reward(_P, _TRUE, _PROXY, 0), "^n=0 must"),
    (lambda: maxk.proxy_soft_bon_reward(_P, _TRUE, _PROXY, 2, 0.0), "^lam=0.0 must"),
    (lambda: maxk.proxy_bop_reward(_P, _TRUE, _PROXY, -1.0), "^mu=-1.0 must"),
    (lambda: maxk.proxy_chi2_reward(_P, _TRUE, _PROXY, 0.0), "^beta=0.0 must"),
    (lambda: maxk.proxy_bon_best_n(_P, _TRUE, _PROXY, max_n=0), "^max_n=0 must"),
    (lambda: maxk.proxy_tilt_reward(_P * 2, _TRUE, _PROXY, 1.0), "^probs must sum to 1"),
    (lambda: maxk.proxy_bon_reward(_P, _TRUE[:4], _PROXY, 2), "true_rewards"),
    (lambda: maxk.proxy_bon_reward(_P, _TRUE + np.inf, _PROXY, 2), "^rewards must be finite"),
  ],
)
def test_bad_inputs_raise_one_line_value_error(call, match):
  with pytest.raises(ValueError, match=match) as info:
    call()
  assert "\n" not in str(info.value)
