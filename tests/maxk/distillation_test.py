"""Tests for the distillation targets (maxk._src.distillation).

Calibrated rewards against counting in NumPy (ties, ragged groups, NaN groups) and,
for unbiasedness, against the average over all reference tuples; the divergences to
best-of-n against the brute-force best-of-n law, their gradients against jax.grad
and float64 finite differences.
"""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import maxk
from tests.maxk import enumeration


def _mid_rank(r, ref, valid_ref):
  ref = ref[valid_ref]
  return np.array([np.sum(ref < x) + 0.5 * np.sum(ref == x) for x in r]), len(ref)


def test_calibrated_log_and_exp_rewards_match_counting_with_ties_and_ragged_groups():
  rng = np.random.default_rng(0)
  r = rng.integers(0, 5, size=(2, 3, 6)).astype(np.float32)
  ref = rng.integers(0, 5, size=(2, 3, 9)).astype(np.float32)
  where = rng.random((2, 3, 6)) < 0.8
  ref_where = rng.random((2, 3, 9)) < 0.7
  ref_where[..., 0] = True
  kw = dict(where=where, reference_where=ref_where)
  fns = jax.jit(
    lambda r, ref, where, reference_where: (
      maxk.calibrated_rewards(r, ref, where=where, reference_where=reference_where),
      maxk.log_calibrated_rewards(r, ref, where=where, reference_where=reference_where),
      maxk.exp_calibrated_rewards(r, ref, t=2.0, where=where, reference_where=reference_where),
      maxk.exp_calibrated_rewards(r, ref, t=-3.0, where=where, reference_where=reference_where),
    )
  )
  # NumPy copies: indexing them in the loop compiles nothing.
  cal, log, exp_best, exp_worst = (np.asarray(a) for a in fns(r, ref, **kw))
  for idx in np.ndindex(2, 3):
    rank, m = _mid_rank(r[idx], ref[idx], ref_where[idx])
    w = where[idx]
    np.testing.assert_allclose(cal[idx], np.where(w, rank / m, 0.0), rtol=1e-6)
    np.testing.assert_allclose(log[idx], np.where(w, np.log((rank + 0.5) / (m + 1)), 0), rtol=1e-6)
    np.testing.assert_allclose(exp_best[idx], np.where(w, np.exp(2 * rank / m), 0), rtol=1e-6)
    np.testing.assert_allclose(exp_worst[idx], np.where(w, -np.exp(-3 * rank / m), 0), rtol=1e-6)
  # Eager calls agree with jit.
  np.testing.assert_allclose(maxk.calibrated_rewards(r, ref, **kw), cal)


def test_calibrated_reward_is_unbiased_over_all_reference_tuples():
  # A categorical reference with ties: E over all m-tuples of F̂(x) is P(r < x) + ½ P(r = x).
  p = np.array([0.2, 0.5, 0.3])
  values = np.array([0.0, 1.0, 2.0], np.float32)
  m = 4
  x = np.array([-1.0, 0.0, 0.5, 1.0, 2.0, 3.0], np.float32)
  tuples = np.array(list(itertools.product(range(3), repeat=m)))
  weights = np.prod(p[tuples], axis=1)
  refs = values[tuples]  # [3^m, m]
  cal = jax.jit(maxk.calibrated_rewards)(np.broadcast_to(x, (len(refs), len(x))), refs)
  mean = weights @ np.asarray(cal, np.float64)
  want = [np.sum(p * (values < v)) + 0.5 * np.sum(p * (values == v)) for v in x]
  np.testing.assert_allclose(mean, want, atol=1e-6)


def test_nan_and_empty_groups_are_nan_only_there():
  r = np.array([[0.0, 1.0, 2.0], [0.0, np.nan, 2.0], [0.0, 1.0, 2.0], [0.0, 1.0, 2.0]], np.float32)
  ref = np.array([[1.0, 1.0], [1.0, 1.0], [np.nan, 1.0], [1.0, 3.0]], np.float32)
  ref_where = np.array([[True, True], [True, True], [True, True], [False, False]])
  for fn in (maxk.calibrated_rewards, maxk.log_calibrated_rewards):
    out = np.asarray(
      jax.jit(lambda r, ref, w, fn=fn: fn(r, ref, reference_where=w))(r, ref, ref_where)
    )
    assert np.all(np.isfinite(out[0])) and np.all(np.isnan(out[1:]))
    np.testing.assert_allclose(out[0], fn(r[0], ref[0]), rtol=1e-6)
  # A masked NaN is ignored; the masked output is 0.
  out = maxk.calibrated_rewards(r[1], ref[0], where=np.array([True, False, True]))
  np.testing.assert_allclose(out, [0.0, 0.0, 1.0])
  # A masked NaN reference is ignored.
  out = maxk.calibrated_rewards(r[0], ref[2], reference_where=np.array([False, True]))
  np.testing.assert_allclose(out, [0.0, 0.5, 1.0])


@pytest.mark.parametrize(
  "call, match",
  [
    (lambda: maxk.calibrated_rewards(np.zeros((2, 3)), np.zeros((3, 4))), "leading"),
    (lambda: maxk.calibrated_rewards(np.zeros(3), np.zeros(0)), "^reference_rewards must"),
    (lambda: maxk.log_calibrated_rewards(np.zeros(3), np.zeros(2), where=np.ones(3)), "^where"),
    (lambda: maxk.exp_calibrated_rewards(np.zeros(3), np.zeros(2), t=0.0), "^t=0.0 must"),
    (lambda: maxk.exp_calibrated_rewards(np.zeros(3), np.zeros(2), t=np.inf), "^t=inf must"),
  ],
)
def test_reward_transforms_reject_bad_inputs_with_one_line(call, match):
  with pytest.raises(ValueError, match=match) as info:
    call()
  assert "\n" not in str(info.value)


# ----------------------------------------------------------------------------
# Divergences to best-of-n.
# ----------------------------------------------------------------------------

_P = np.array([0.1, 0.2, 0.3, 0.15, 0.25], np.float32)
_R = np.array([1.0, 0.0, 1.0, 2.0, 3.0], np.float32)  # a tie at 1.
_Z = np.array([0.3, -0.2, 0.1, 0.5, -0.4], np.float32)


@pytest.mark.parametrize("n", [1, 3])
def test_losses_match_brute_force_best_of_n(n):
  bon = enumeration.bon_pmf(_P, _R, n)  # over all 5^n draws
  q = np.exp(_Z - _Z.max())
  q = q / q.sum()
  fwd = enumeration.kl_divergence(bon, q)
  bwd = enumeration.kl_divergence(q, bon)
  losses = jax.jit(
    lambda z: [
      maxk.bon_distillation_loss(z, _P, _R, n, divergence=d, weight=0.3)
      for d in ("forward", "backward", "jeffreys")
    ]
  )(_Z)
  np.testing.assert_allclose(losses, [fwd, bwd, 0.7 * fwd + 0.3 * bwd], rtol=2e-5, atol=1e-7)


def test_gradients_closed_form_autodiff_and_finite_differences_agree():
  with jax.enable_x64(True):
    # Test-side arithmetic in NumPy float64 (no eager programs).
    p = _P.astype(np.float64)
    p = p / p.sum()
    z = _Z.astype(np.float64)
    h = 1e-6
    eye = h * np.eye(5)

    def losses(z):
      return jnp.stack(
        [
          maxk.bon_distillation_loss(z, p, _R, 4, divergence=d, weight=0.3)
          for d in ("forward", "backward", "jeffreys")
        ]
      )

    def grads(z):
      return jnp.stack(
        [
          maxk.bon_distillation_grad(z, p, _R, 4, divergence=d, weight=0.3)
          for d in ("forward", "backward", "jeffreys")
        ]
      )

    auto = jax.jit(jax.jacrev(losses))(z)  # [3, 5]
    batched = jax.jit(jax.vmap(losses))
    fd = (np.asarray(batched(z + eye)) - np.asarray(batched(z - eye))).T / (2 * h)
    np.testing.assert_allclose(jax.jit(grads)(z), auto, atol=1e-12)
    np.testing.assert_allclose(auto, fd, atol=1e-8)
  # Every divergence is stationary at q = π_bon (one jitted program for the three).
  at_bon = jax.jit(
    lambda p, r: [
      maxk.bon_distillation_grad(jnp.log(maxk.bon_pmf(p, r, 4)), p, r, 4, divergence=d)
      for d in ("forward", "backward", "jeffreys")
    ]
  )(_P, _R)
  for g in at_bon:
    np.testing.assert_allclose(g, 0, atol=1e-6)


def test_zero_reference_probability_forward_finite_backward_infinite():
  p = np.array([0.5, 0.0, 0.5], np.float32)
  r = np.array([0.0, 1.0, 2.0], np.float32)
  z = np.zeros(3, np.float32)
  # The two losses and the gradient in one jitted program.
  fwd, bwd, grad = jax.jit(
    lambda z, p, r: (
      maxk.bon_distillation_loss(z, p, r, 2),
      maxk.bon_distillation_loss(z, p, r, 2, divergence="backward"),
      jax.grad(maxk.bon_distillation_loss)(z, p, r, 2),
    )
  )(z, p, r)
  assert np.isfinite(fwd)
  assert np.isinf(bwd)
  assert np.all(np.isfinite(grad))


@pytest.mark.parametrize(
  "call, match",
  [
    (lambda: maxk.bon_distillation_loss(_Z, _P, _R, 0), "^n=0 must"),
    (lambda: maxk.bon_distillation_loss(_Z, _P, _R, 2, divergence="js"), "divergence='js'"),
    (
      lambda: maxk.bon_distillation_grad(_Z, _P, _R, 2, divergence="jeffreys", weight=2.0),
      "^weight",
    ),
    (lambda: maxk.bon_distillation_loss(_Z, _P * 2, _R, 2), "^probs must sum to 1"),
    (lambda: maxk.bon_distillation_grad(_Z[:4], _P, _R, 2), "logits"),
  ],
)
def test_divergences_reject_bad_inputs_with_one_line(call, match):
  with pytest.raises(ValueError, match=match) as info:
    call()
  assert "\n" not in str(info.value)
