"""Tests for the peer estimators: GRPO, RLOO, max-minus-second, Pass@k Training."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import maxk
from tests.maxk import enumeration
from tests.maxk.variants import VARIANTS


def test_grpo_matches_definition():
  rng = np.random.default_rng(0)
  r = rng.normal(size=(3, 4, 6))
  got = maxk.grpo_advantages(r.astype(np.float32))
  want = (r - r.mean(-1, keepdims=True)) / (r.std(-1, keepdims=True) + 1e-6)
  np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
  got = maxk.grpo_advantages(r.astype(np.float32), eps=0.5)
  want = (r - r.mean(-1, keepdims=True)) / (r.std(-1, keepdims=True) + 0.5)
  np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
  const = np.full((2, 4), 3.0, np.float32)
  np.testing.assert_array_equal(maxk.grpo_advantages(const), 0)
  # One compiled program for the gradient (not one per primitive, run eagerly).
  g = jax.jit(jax.grad(lambda x: jnp.sum(maxk.grpo_advantages(x) * jnp.arange(4.0))))(const)
  assert np.all(np.isfinite(g))


@pytest.mark.parametrize("n", [2, 3, 5, 8, 16, 33])
def test_grpo_and_rloo_constant_groups_are_exactly_zero(n):
  # A float32 mean of n equal values need not equal them (0.7 with n = 8 was off by
  # an ulp, which the (std + eps) division blew up to 0.056); a constant group has
  # r - mean = 0 and must give exactly 0, for any value and any shift.
  values = np.array([0.1, 0.7, 1.1, 3.3, -2.9, 1e6 + 0.3, 1e-6], np.float32)
  r = np.repeat(values[:, None], n, axis=1)
  np.testing.assert_array_equal(maxk.grpo_advantages(r), 0)
  np.testing.assert_array_equal(maxk.rloo_advantages(r), 0)
  np.testing.assert_array_equal(maxk.max_at_k_advantages(r, 1, baseline="mean_std"), 0)


def test_grpo_and_rloo_accurate_under_a_large_common_offset():
  rng = np.random.default_rng(11)
  r = (1e6 + rng.standard_normal((64, 8))).astype(np.float32)
  r64 = r.astype(np.float64)  # The float32 values, exactly.
  d = r64 - r64.mean(-1, keepdims=True)
  np.testing.assert_allclose(maxk.rloo_advantages(r), d * 8 / 7, rtol=0, atol=1e-6)
  np.testing.assert_allclose(
    maxk.grpo_advantages(r), d / (r64.std(-1, keepdims=True) + 1e-6), rtol=0, atol=1e-5
  )
  # Exactly representable answer: [-0.6875, 0.6875] (was [-0.625, 0.75]).
  np.testing.assert_array_equal(
    maxk.rloo_advantages(np.array([1000000.1875, 1000000.875], np.float32)), [-0.6875, 0.6875]
  )


@pytest.mark.parametrize("n", range(2, 9))
def test_rloo_and_max_minus_second_match_enumeration(n):
  rng = np.random.default_rng(n)
  # Continuous groups and groups with ties, as one batch of independent groups (one
  # program per function and n).
  r = np.concatenate([rng.normal(size=(3, n)), rng.integers(0, 3, size=(5, n)).astype(np.float64)])
  np.testing.assert_allclose(
    maxk.rloo_advantages(r.astype(np.float32)),
    np.apply_along_axis(enumeration.rloo, -1, r),
    atol=1e-5,
  )
  np.testing.assert_allclose(
    maxk.max_minus_second_advantages(r.astype(np.float32)),
    np.apply_along_axis(enumeration.max_minus_second, -1, r),
    atol=1e-6,
  )


def test_max_minus_second_ties():
  r = np.array([[0.7, 0.7, 0.1], [0.1, 0.9, 0.3], [1.0, 1.0, 1.0]], np.float32)
  np.testing.assert_allclose(
    maxk.max_minus_second_advantages(r), [[0, 0, 0], [0, 0.6, 0], [0, 0, 0]], atol=1e-7
  )


@pytest.mark.parametrize("n", range(1, 9))
def test_pass_at_k_training_matches_group_enumeration(n):
  rng = np.random.default_rng(n)
  correct = rng.random((6, n)) < 0.5
  correct[0] = True
  correct[1] = False
  for k in range(1, n + 1):
    got = np.asarray(maxk.pass_at_k_training_advantages(correct, k))
    want = np.apply_along_axis(enumeration.pass_at_k_training, -1, correct, k)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=f"k={k}")


def test_pass_at_k_training_values_and_eps():
  """N = 8, 3 correct, k = 4: R̄ = 1 − C(5,4)/C(8,4) = 13/14, σ = √13/14,
  Â_pos = (1/14)/σ = 1/√13, Â_neg = (1/14 − C(4,3)/C(7,3))/σ = −0.6/√13."""
  c = np.array([1, 1, 1, 0, 0, 0, 0, 0])
  got = maxk.pass_at_k_training_advantages(c, 4)
  np.testing.assert_allclose(got, [1 / 13**0.5] * 3 + [-0.6 / 13**0.5] * 5, rtol=1e-5)
  sigma = 13**0.5 / 14
  got = maxk.pass_at_k_training_advantages(c, 4, eps=0.1)
  np.testing.assert_allclose(np.asarray(got)[0], (1 / 14) / (sigma + 0.1), rtol=1e-5)
  # k = 1 is GRPO with binary rewards (population std, no eps).
  np.testing.assert_allclose(
    maxk.pass_at_k_training_advantages(c, 1),
    maxk.grpo_advantages(c.astype(np.float32), eps=0.0),
    rtol=1e-5,
  )


def test_unbiasedness_of_rloo_and_max_minus_second():
  """RLOO is unbiased for ∇E[r] (max@1); max-minus-second for ∇ max@n."""
  logits = np.array([0.2, -0.4, 0.5])
  values = [-1.0, 0.5, 2.0]
  for n in (2, 3, 4):
    est = enumeration.expected_score_estimate(
      lambda r, lr: np.asarray(maxk.rloo_advantages(r)) / n, logits, logits, values, n
    )
    np.testing.assert_allclose(est, enumeration.exact_max_at_k_grad(logits, values, 1), atol=2e-6)
    est = enumeration.expected_score_estimate(
      lambda r, lr: maxk.max_minus_second_advantages(r), logits, logits, values, n
    )
    np.testing.assert_allclose(est, enumeration.exact_max_at_k_grad(logits, values, n), atol=2e-6)


def _pass_at_2_training(x):
  # One function object for both tests below, so that its jitted program is shared.
  return maxk.pass_at_k_training_advantages(x, 2)


@pytest.mark.parametrize("variant", VARIANTS)
def test_against_references_jit_vmap(variant):
  rng = np.random.default_rng(1)
  r = rng.normal(size=(3, 5)).astype(np.float32)
  c = (rng.random((3, 5)) < 0.5).astype(np.float32)
  r64 = r.astype(np.float64)
  grpo = (r64 - r64.mean(-1, keepdims=True)) / (r64.std(-1, keepdims=True) + 1e-6)
  cases = [
    (maxk.grpo_advantages, r, grpo),
    (maxk.rloo_advantages, r, np.stack([enumeration.rloo(row) for row in r])),
    (
      maxk.max_minus_second_advantages,
      r,
      np.stack([enumeration.max_minus_second(row) for row in r]),
    ),
    (
      _pass_at_2_training,
      c,
      np.stack([enumeration.pass_at_k_training(row, 2) for row in c]),
    ),
  ]
  for f, x, want in cases:
    np.testing.assert_allclose(variant(f)(x), want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(variant(jax.vmap(f))(x), want, rtol=1e-5, atol=1e-5)


def test_nan_isolation():
  rng = np.random.default_rng(1)
  r = rng.normal(size=(3, 5)).astype(np.float32)
  c = (rng.random((3, 5)) < 0.5).astype(np.float32)
  fns = [maxk.grpo_advantages, maxk.rloo_advantages, maxk.max_minus_second_advantages]
  for f in fns:
    bad = r.copy()
    bad[1, 0] = np.nan
    jf = jax.jit(f)
    out = np.asarray(jf(bad))
    np.testing.assert_array_equal(out[[0, 2]], np.asarray(jf(r))[[0, 2]])
    assert np.all(np.isnan(out[1]))
  bad = c.copy()
  bad[1, 0] = np.nan
  out = np.asarray(jax.jit(_pass_at_2_training)(bad))
  assert np.all(np.isnan(out[1])) and np.all(np.isfinite(out[[0, 2]]))


def test_bad_input():
  with pytest.raises(ValueError, match=r"n \(rewards.shape\[-1\]\)=1 must satisfy"):
    maxk.rloo_advantages(np.ones((2, 1)))
  with pytest.raises(ValueError, match=r"n \(rewards.shape\[-1\]\)=1 must satisfy"):
    maxk.max_minus_second_advantages(np.ones((2, 1)))
  with pytest.raises(ValueError, match="eps"):
    maxk.grpo_advantages(np.ones((2, 3)), eps=-1.0)
  with pytest.raises(ValueError, match=r"k=4 must satisfy 1 <= k <= n=3"):
    maxk.pass_at_k_training_advantages(np.ones((2, 3)), 4)
  with pytest.raises(ValueError, match="correct must hold only 0/1"):
    maxk.pass_at_k_training_advantages(np.array([0.2, 1.0]), 1)
  with pytest.raises(ValueError, match="eps"):
    maxk.pass_at_k_training_advantages(np.ones(3), 1, eps=-0.1)


def test_no_samples_names_the_argument_and_its_shape():
  """An empty sample axis is the error, not a k = 1 that maxrl was never given."""
  for fn in (maxk.maxrl_advantages, lambda c: maxk.pass_at_k_training_advantages(c, 1)):
    with pytest.raises(ValueError, match=r"correct must hold at least one sample .* \(2, 0\)"):
      fn(np.zeros((2, 0)))
