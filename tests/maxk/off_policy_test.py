"""Tests for the off-policy max@k weights and the importance-weighted surrogate.

Every (shape, k, method) compiles the library's program anew (k is static), and a
compile costs far more than the call: tests that need no shape of their own use the
[2, 3, n] groups of ``test_matches_enumeration``, whose programs they then reuse.
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import maxk
from tests.maxk import enumeration
from tests.maxk.variants import VARIANTS


@functools.cache
def _weights_fn(k, method):
  """One function object per (k, method): ``jax.jit`` of the same object reuses its
  compiled program, where a fresh lambda per test would compile it again."""
  return lambda a, b: maxk.max_at_k_advantages_off_policy(a, b, k, method=method)


@functools.cache
def _surrogate_fn(k):
  """J of rewards ``a`` at log-ratio ``b``, one object per k (as ``_weights_fn``)."""
  return lambda a, b: maxk.max_at_k_surrogate(b, jnp.zeros_like(b), a, k)


# jax.vmap builds a new function object on every call; cached, jit of jax.vmap(fn) for
# the same fn is one object too.
_vmap = functools.cache(jax.vmap)


@pytest.mark.parametrize("n", range(1, 9))
@pytest.mark.parametrize("method", ["exact", "first_order"])
def test_matches_enumeration(n, method):
  rng = np.random.default_rng(n)
  for kind, r in enumeration.reward_kinds(n, rng).items():
    log_ratio = 0.4 * rng.normal(size=r.shape)
    for k in range(1, n + 1):
      got = np.asarray(
        maxk.max_at_k_advantages_off_policy(
          r.astype(np.float32), log_ratio.astype(np.float32), k, method=method
        )
      )
      want = np.stack(
        [
          enumeration.off_policy(a, b, k, method)
          for a, b in zip(r.reshape(-1, n), log_ratio.reshape(-1, n))
        ]
      )
      np.testing.assert_allclose(
        got.reshape(-1, n), want, rtol=1e-4, atol=1e-5, err_msg=f"{kind} k={k}"
      )


@pytest.mark.parametrize("n", [1, 3, 6])
def test_surrogate_value_and_grad_equal_exact_weights(n):
  rng = np.random.default_rng(n)
  # [2, 3, n] groups: the exact weights reuse test_matches_enumeration's programs.
  r = rng.normal(size=(2, 3, n)).astype(np.float32)
  logp_old = rng.normal(size=(2, 3, n)).astype(np.float32)
  logp = logp_old + 0.3 * rng.normal(size=(2, 3, n)).astype(np.float32)
  rows = [x.reshape(-1, n) for x in (r, logp, logp_old)]
  for k in sorted({1, min(2, n), n}):
    j = maxk.max_at_k_surrogate(logp, logp_old, r, k)
    want = [enumeration.surrogate(a, b - c, k) for a, b, c in zip(*rows)]
    np.testing.assert_allclose(np.reshape(j, -1), want, rtol=1e-5, atol=1e-6)
    grad = jax.grad(lambda lp: jnp.sum(maxk.max_at_k_surrogate(lp, logp_old, r, k)))(logp)
    np.testing.assert_allclose(
      grad, maxk.max_at_k_advantages_off_policy(r, logp - logp_old, k), rtol=1e-5, atol=1e-6
    )
    # On-policy, the surrogate is max@k and its gradient the "none" transform.
    np.testing.assert_allclose(
      maxk.max_at_k_surrogate(logp, logp, r, k), maxk.max_at_k(r, k), rtol=1e-5, atol=1e-6
    )


def test_zero_log_ratio_reduces_to_on_policy():
  rng = np.random.default_rng(0)
  # [2, 3, n] groups: the off-policy weights reuse test_matches_enumeration's programs.
  r = rng.normal(size=(2, 3, 8)).astype(np.float32)
  for k in (1, 2, 5, 8):
    on = maxk.max_at_k_advantages(r, k, baseline="none")
    for method in ("exact", "first_order"):
      off = maxk.max_at_k_advantages_off_policy(r, np.zeros_like(r), k, method=method)
      np.testing.assert_allclose(off, on, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("values", [[0.0, 1.0, 1.0], [-1.0, 0.5, 2.0]])
@pytest.mark.parametrize("n", [2, 3, 4])
def test_exact_weights_unbiased_off_policy(values, n):
  """Samples from π_old; E[Σ a_i ∇log π_θ(y_i)] = ∇ max@k(π_θ), enumerated exactly."""
  logits_old = np.array([0.3, -0.5, 0.1])
  logits = logits_old + np.array([-0.4, 0.6, 0.2])
  for k in range(1, n + 1):
    exact = enumeration.exact_max_at_k_grad(logits, values, k)
    est = enumeration.expected_score_estimate(
      lambda r, lr: maxk.max_at_k_advantages_off_policy(r, lr, k, method="exact"),
      logits_old,
      logits,
      values,
      n,
    )
    np.testing.assert_allclose(est, exact, atol=5e-6, err_msg=f"k={k}")


def test_first_order_bias_shrinks_quadratically():
  logits_old = np.array([0.3, -0.5, 0.1])
  direction = np.array([-1.0, 1.5, 0.5])
  values = [-1.0, 0.5, 2.0]
  n, k = 4, 2
  biases = []
  for t in (0.4, 0.2, 0.1, 0.05):
    logits = logits_old + t * direction
    exact = enumeration.exact_max_at_k_grad(logits, values, k)
    est = enumeration.expected_score_estimate(
      lambda r, lr: maxk.max_at_k_advantages_off_policy(r, lr, k, method="first_order"),
      logits_old,
      logits,
      values,
      n,
    )
    biases.append(np.linalg.norm(est - exact))
  biases = np.array(biases)
  assert biases[0] > 1e-3  # really biased away from π_old
  assert np.all(np.diff(biases) < 0)
  # Second order: halving the step divides the bias by about 4 (at least 3).
  assert np.all(biases[:-1] / biases[1:] > 3.0), biases


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("method", ["exact", "first_order"])
@pytest.mark.parametrize("k", [1, 4])
def test_against_enumeration_jit_vmap(variant, method, k):
  rng = np.random.default_rng(2)
  r = rng.normal(size=(3, 6)).astype(np.float32)
  lr = 0.2 * rng.normal(size=(3, 6)).astype(np.float32)
  f = _weights_fn(k, method)
  want = np.stack([enumeration.off_policy(r[i], lr[i], k, method) for i in range(3)])
  np.testing.assert_allclose(variant(f)(r, lr), want, rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(variant(_vmap(f))(r, lr), want, rtol=1e-5, atol=1e-6)
  surrogate = _surrogate_fn(k)
  want_j = [enumeration.surrogate(r[i], lr[i], k) for i in range(3)]
  np.testing.assert_allclose(variant(surrogate)(r, lr), want_j, rtol=1e-5, atol=1e-6)
  # The surrogate does not depend on the method: the second method's case reuses its jit.
  np.testing.assert_allclose(variant(_vmap(surrogate))(r, lr), want_j, rtol=1e-5, atol=1e-6)


def test_grad_and_nan_isolation():
  rng = np.random.default_rng(2)
  r = rng.normal(size=(3, 6)).astype(np.float32)
  lr = 0.2 * rng.normal(size=(3, 6)).astype(np.float32)
  for method in ("exact", "first_order"):
    for k in (1, 4):
      f = _weights_fn(k, method)  # Its jit is compiled by test_against_enumeration_jit_vmap.
      g = jax.grad(lambda b: jnp.sum(f(r, b) ** 2))(lr)
      assert np.all(np.isfinite(g))
      bad = r.copy()
      bad[1, 4] = np.nan
      jf = jax.jit(f)
      out = np.asarray(jf(bad, lr))
      np.testing.assert_array_equal(out[[0, 2]], np.asarray(jf(r, lr))[[0, 2]])
      assert not np.all(np.isfinite(out[1]))


def test_bad_input():
  r = np.ones((2, 4), np.float32)
  with pytest.raises(ValueError, match=r"log_ratio shape \(2, 3\) must equal rewards shape"):
    maxk.max_at_k_advantages_off_policy(r, np.zeros((2, 3)), 2)
  with pytest.raises(ValueError, match=r"Unknown method='second_order'.*'exact'"):
    maxk.max_at_k_advantages_off_policy(r, np.zeros_like(r), 2, method="second_order")
  with pytest.raises(ValueError, match=r"k=0 must satisfy 1 <= k <= n=4"):
    maxk.max_at_k_advantages_off_policy(r, np.zeros_like(r), 0)
  with pytest.raises(ValueError, match=r"k=3.0 must be a Python int"):
    maxk.max_at_k_surrogate(r, r, r, 3.0)
  with pytest.raises(ValueError, match=r"logp_old shape \(4,\) must equal logp shape"):
    maxk.max_at_k_surrogate(r, np.zeros(4), r, 2)
  with pytest.raises(ValueError, match=r"shape .* must equal rewards shape"):
    maxk.max_at_k_surrogate(r, r, np.ones((2, 5)), 2)


@pytest.mark.parametrize("n", [64, 1024, 4096])
def test_float32_large_n_stays_finite(n):
  rng = np.random.default_rng(n)
  r = rng.random((1, n)).astype(np.float32)
  lr = (0.05 * rng.normal(size=(1, n))).astype(np.float32)
  for k in sorted({1, 2, n // 4, n // 2, n - 1, n}):
    weights = {}
    for method in ("exact", "first_order"):
      weights[method] = np.asarray(maxk.max_at_k_advantages_off_policy(r, lr, k, method=method))
      assert np.all(np.isfinite(weights[method])), (k, method)
    # Σ_i a_i = k·J for the exact weights (each subset counted k times).
    j = float(maxk.max_at_k_surrogate(lr, 0 * lr, r, k)[0])
    np.testing.assert_allclose(weights["exact"].sum(), k * j, rtol=1e-4)


@pytest.mark.parametrize("k", [1, 2, 4])
def test_surrogate_gradient_is_nan_for_a_group_with_a_nan_only(k):
  rng = np.random.default_rng(k)
  r = rng.random((3, 5)).astype(np.float32)
  logp_old = np.log(rng.uniform(0.2, 1.0, (3, 5))).astype(np.float32)
  logp = logp_old + rng.normal(0, 0.1, (3, 5)).astype(np.float32)
  grad_fn = jax.jit(jax.grad(lambda lp, rr: jnp.sum(maxk.max_at_k_surrogate(lp, logp_old, rr, k))))
  clean = np.asarray(grad_fn(logp, r))
  r_nan = r.copy()
  r_nan[1, 2] = np.nan
  poisoned = np.asarray(grad_fn(logp, r_nan))
  assert np.all(np.isnan(poisoned[1]))
  np.testing.assert_array_equal(poisoned[[0, 2]], clean[[0, 2]])
  assert np.all(np.isfinite(clean))
  logp_nan = logp.copy()
  logp_nan[0, 4] = np.nan
  poisoned = np.asarray(grad_fn(logp_nan, r))
  assert np.all(np.isnan(poisoned[0]))
  np.testing.assert_array_equal(poisoned[1:], clean[1:])
