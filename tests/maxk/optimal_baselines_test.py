"""maxk.optimal_baseline_advantages: against loops over the formulas, and its bias on
softmax bandits (exactly 0 leave-one-out, exactly the enumerated value plug-in)."""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import maxk
from maxk import testing


def _reference(r, w, leave_one_out, eps=0.0):
  """b_i from explicit sums over the other (or all) samples, float64."""
  r, w = np.asarray(r, np.float64), np.asarray(w, np.float64)
  out = np.zeros_like(r)
  for idx in np.ndindex(r.shape[:-1]):
    ri, wi = r[idx], w[idx]
    for i in range(ri.size):
      keep = np.arange(ri.size) != i if leave_one_out else np.ones(ri.size, bool)
      den = wi[keep].sum() + eps
      b = (wi[keep] * ri[keep]).sum() / den if den > 0 else 0.0
      out[idx + (i,)] = ri[i] - b
  return out


def _x64(fn, *args, **kwargs):
  with jax.enable_x64(True):
    return np.asarray(fn(*(jnp.asarray(a) for a in args), **kwargs))


@pytest.mark.parametrize("leave_one_out", [True, False])
@pytest.mark.parametrize("eps", [0.0, 1e-3])
def test_matches_the_formula(leave_one_out, eps):
  rng = np.random.default_rng(0)
  r = rng.normal(size=(5, 6)) + 3.0
  w = rng.uniform(0.0, 2.0, size=(5, 6))
  w[0] = 0.0  # All weights 0: b = 0 (eps = 0) or 0 · r / eps.
  w[1, :5] = 0.0  # One weight left: its leave-one-out baseline has no other sample.
  got = _x64(maxk.optimal_baseline_advantages, r, w, leave_one_out=leave_one_out, eps=eps)
  np.testing.assert_allclose(got, _reference(r, w, leave_one_out, eps), rtol=1e-12, atol=1e-12)
  got32 = maxk.optimal_baseline_advantages(r, w, leave_one_out=leave_one_out, eps=eps)
  np.testing.assert_allclose(got32, _reference(r, w, leave_one_out, eps), rtol=0, atol=2e-6)


def test_equal_weights_give_rloo_and_mean_centring():
  r = np.random.default_rng(1).normal(size=(4, 7))
  ones = np.ones_like(r)
  np.testing.assert_allclose(
    _x64(maxk.optimal_baseline_advantages, r, ones), _x64(maxk.rloo_advantages, r), atol=1e-12
  )
  centred = r - r.mean(axis=-1, keepdims=True)
  np.testing.assert_allclose(
    _x64(maxk.optimal_baseline_advantages, r, ones, leave_one_out=False), centred, atol=1e-12
  )


@pytest.mark.parametrize("leave_one_out", [True, False])
def test_where_is_the_group_of_valid_samples(leave_one_out):
  rng = np.random.default_rng(2)
  r, w = rng.normal(size=(6, 5)), rng.uniform(0.1, 1.0, size=(6, 5))
  valid = rng.random((6, 5)) < 0.7
  valid[0] = [True, False, False, False, False]  # m = 1.
  valid[1] = False  # m = 0.
  r[valid == 0] = np.nan  # Invalid samples may hold anything.
  got = _x64(maxk.optimal_baseline_advantages, r, w, leave_one_out=leave_one_out, where=valid)
  for g in range(6):
    want = np.zeros(5)
    m = int(valid[g].sum())
    if m >= (2 if leave_one_out else 1):
      want[valid[g]] = _reference(r[g, valid[g]], w[g, valid[g]], leave_one_out)
    np.testing.assert_allclose(got[g], want, atol=1e-12)


def test_jit_and_broadcast_weights():
  r = np.random.default_rng(3).normal(size=(3, 4))
  w = np.array([0.5, 1.0, 2.0, 0.25])  # One weight per position, for every group.
  fn = jax.jit(lambda r, w: maxk.optimal_baseline_advantages(r, w))
  np.testing.assert_allclose(fn(r, w), _reference(r, np.broadcast_to(w, r.shape), True), atol=2e-6)


def test_bad_input():
  with pytest.raises(ValueError, match="score_sq_norms"):
    maxk.optimal_baseline_advantages([1.0, 2.0], [1.0, -1.0])
  with pytest.raises(ValueError, match="n"):
    maxk.optimal_baseline_advantages([1.0], [1.0])
  with pytest.raises(ValueError, match="leave_one_out"):
    maxk.optimal_baseline_advantages([1.0, 2.0], [1.0, 1.0], leave_one_out=1)
  with pytest.raises(ValueError, match="eps"):
    maxk.optimal_baseline_advantages([1.0, 2.0], [1.0, 1.0], eps=-1.0)
  with pytest.raises(ValueError, match="broadcast"):
    maxk.optimal_baseline_advantages([1.0, 2.0], [1.0, 1.0, 1.0])


# Softmax bandits with a distinct reward per arm, so the advantage function (which sees
# rewards only) can recover each sample's arm and its squared score norm.
_BANDITS = [
  ([0.5, 0.3, 0.2], [0.0, 0.4, 1.0], 3),
  ([0.6, 0.25, 0.1, 0.05], [0.2, 1.0, 0.0, 0.7], 4),
  ([0.7, 0.3], [1.0, 0.0], 5),
]


def _score_sq_norms(probs):
  p = np.asarray(probs)
  return 1 - 2 * p + np.sum(p**2)  # ‖e_a − π‖² for each arm a.


def _with_score_norms(probs, rewards, leave_one_out):
  norms, values = _score_sq_norms(probs), np.asarray(rewards)

  def fn(r):
    arm = np.argmin(np.abs(np.asarray(r)[..., None] - values), axis=-1)
    return _x64(maxk.optimal_baseline_advantages, r, norms[arm], leave_one_out=leave_one_out)

  return fn


def _brute_force_mean(probs, rewards, n, leave_one_out):
  """E[Σ_i a_i (e_{y_i} − π)] over all A^n tuples, with the formula's loop."""
  p, r = np.asarray(probs), np.asarray(rewards)
  norms = _score_sq_norms(p)
  mean = np.zeros(p.size)
  for y in itertools.product(range(p.size), repeat=n):
    y = np.array(y)
    a = _reference(r[y], norms[y], leave_one_out)
    mean += np.prod(p[y]) * sum(a[i] * (np.eye(p.size)[y[i]] - p) for i in range(n))
  return mean


@pytest.mark.parametrize("probs,rewards,n", _BANDITS)
def test_leave_one_out_is_unbiased_and_plug_in_is_not(probs, rewards, n):
  # RLOO's scale: Σ_i a_i ∇log π(y_i) estimates n ∇E[r] (rank weights [n]).
  weights = [float(n)]
  loo = testing.gradient_moments(
    _with_score_norms(probs, rewards, True), probs, rewards, n, weights=weights
  )
  assert loo.method == "exact"
  np.testing.assert_allclose(loo.bias, 0.0, atol=1e-12)
  plug_in = testing.gradient_moments(
    _with_score_norms(probs, rewards, False), probs, rewards, n, weights=weights
  )
  want = _brute_force_mean(probs, rewards, n, False)
  np.testing.assert_allclose(plug_in.mean, want, atol=1e-12)
  assert np.max(np.abs(plug_in.bias)) > 1e-3
  np.testing.assert_allclose(loo.mean, _brute_force_mean(probs, rewards, n, True), atol=1e-12)
