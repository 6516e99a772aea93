"""Precision, new options and numeric edge cases of the peers and the shared kernels.

References are written independently of the code under test: exact fractions
(``fractions.Fraction`` / ``math.comb``) or NumPy transcriptions of the papers.
"""

from fractions import Fraction
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import maxk
from maxk._src import peers
from tests.maxk import enumeration
from tests.maxk.variants import VARIANTS


def _pass_at_k_training_exact(n, k):
  """[n + 1, 2]: (Â_pos, Â_neg) for c = 0..n correct, from exact fractions (Eqs. 11-15)."""
  out = np.zeros((n + 1, 2))
  for c in range(n + 1):
    n_neg = n - c
    fail = Fraction(math.comb(n_neg, k), math.comb(n, k))
    var = fail * (1 - fail)
    if var == 0:
      continue
    sigma = math.sqrt(var)
    ratio = Fraction(math.comb(n_neg - 1, k - 1) if n_neg >= 1 else 0, math.comb(n - 1, k - 1))
    out[c] = float(fail) / sigma, float(fail - ratio) / sigma
  return out


@pytest.mark.parametrize("n", [16, 32, 64, 256])
def test_pass_at_k_training_float32_precision_every_k_and_c(n):
  # Row c has c correct samples.  Before: 2e-4 of max|a| at n = 16, and whole
  # groups (n = 64, k = 8, c = 54..56) came back all zero.
  correct = (np.arange(n)[None, :] < np.arange(n + 1)[:, None]).astype(np.float32)
  worst = 0.0
  # The compiled kernel, as users run it: its tables are arguments, so every k reuses
  # the one program of this n (op by op, each op of each call compiled a program).
  for k in range(1, n + 1):
    got = np.asarray(peers.pass_at_k_training_advantages(correct, k), np.float64)
    ref = _pass_at_k_training_exact(n, k)
    want = np.where(correct == 1, ref[:, :1], ref[:, 1:])
    scale = np.max(np.abs(want), axis=1, keepdims=True)
    assert np.all(got[scale[:, 0] == 0] == 0)
    worst = max(worst, np.max(np.abs(got - want) / np.where(scale > 0, scale, 1)))
  assert worst < 1e-6, worst


def test_pass_at_k_training_eps_matches_formula():
  n, k, eps = 64, 8, 0.05
  correct = (np.arange(n)[None, :] < np.arange(n + 1)[:, None]).astype(np.float32)
  got = np.asarray(peers.pass_at_k_training_advantages(correct, k, eps=eps), np.float64)
  for c in range(n + 1):
    fail = Fraction(math.comb(n - c, k), math.comb(n, k))
    sigma = math.sqrt(fail * (1 - fail))
    ratio = Fraction(math.comb(n - c - 1, k - 1) if c < n else 0, math.comb(n - 1, k - 1))
    want_pos = float(fail) / (sigma + eps) if sigma > 0 else 0.0
    want_neg = float(fail - ratio) / (sigma + eps) if sigma > 0 else 0.0
    want = np.where(correct[c] == 1, want_pos, want_neg)
    np.testing.assert_allclose(got[c], want, rtol=1e-5, atol=1e-7 * max(abs(want_neg), 1e-30))


@pytest.mark.parametrize("eps", [1e-6, 1e-4])
def test_grpo_sample_std_reproduces_verl_and_trl(eps):
  # verl: (r − mean) / (torch.std(r) + 1e-6); TRL: (r − mean) / (torch.std(r) + 1e-4);
  # torch.std is the sample std (ddof = 1).
  rng = np.random.default_rng(3)
  r = rng.normal(size=(2, 3, 7))
  r[0, 0] = [0, 1, 1, 0, 1, 0, 0]
  want = (r - r.mean(-1, keepdims=True)) / (np.std(r, axis=-1, ddof=1, keepdims=True) + eps)
  got = peers.grpo_advantages(r.astype(np.float32), eps=eps, std_ddof=1)
  np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-6)
  want0 = (r - r.mean(-1, keepdims=True)) / (np.std(r, axis=-1, keepdims=True) + eps)
  np.testing.assert_allclose(
    peers.grpo_advantages(r.astype(np.float32), eps=eps), want0, 2e-5, 2e-6
  )


def test_grpo_group_of_one_and_bad_ddof():
  np.testing.assert_array_equal(peers.grpo_advantages(np.ones((3, 1)) * 5, std_ddof=1), 0)
  np.testing.assert_array_equal(peers.grpo_advantages(np.ones((3, 1)), std_ddof=1, eps=0.0), 0)
  with pytest.raises(ValueError, match="std_ddof=2 must satisfy 0 <= std_ddof <= 1"):
    peers.grpo_advantages(np.ones(3), std_ddof=2)


def test_zscore_does_not_overflow():
  for dtype, big in ((np.float32, 1e20), (np.float16, 600.0)):
    x = np.array([0, big, 0, big], dtype)
    np.testing.assert_array_equal(maxk.grpo_advantages(x), [-1, 1, -1, 1])
    got = np.asarray(peers.grpo_advantages(x, std_ddof=1), np.float64)
    np.testing.assert_allclose(got, np.array([-1, 1, -1, 1]) * math.sqrt(0.75), rtol=1e-3)
  a = maxk.max_at_k_advantages(np.array([0, 1e20, 0, 1e20], np.float32), 2, baseline="mean_std")
  np.testing.assert_allclose(a, [-1, 1, -1, 1], rtol=1e-6)


def _maxrl_numpy(c, control_variate):
  """MaxRL (arXiv 2602.02710): mean-normalised advantage (r − r̄)/r̄, or n·r/K."""
  c = np.asarray(c, np.float64)
  mean = c.mean(-1, keepdims=True)
  with np.errstate(divide="ignore", invalid="ignore"):
    a = (c - mean) / mean if control_variate else c / mean
  return np.where(mean > 0, a, 0.0)


def test_maxrl_matches_numpy_transcription():
  rng = np.random.default_rng(0)
  c = (rng.random((2, 3, 6)) < 0.4).astype(np.float32)
  c[0, 0] = 0
  c[0, 1] = 1
  for cv in (True, False):
    np.testing.assert_allclose(
      peers.maxrl_advantages(c, control_variate=cv), _maxrl_numpy(c, cv), rtol=1e-6
    )
  assert peers.maxrl_advantages(c.astype(bool)).dtype == jnp.float32
  with pytest.raises(ValueError, match="control_variate"):
    peers.maxrl_advantages(c, control_variate="yes")
  with pytest.raises(ValueError, match="correct must hold only 0/1"):
    peers.maxrl_advantages(np.array([0.5, 1.0]))


@pytest.mark.parametrize("n", [2, 3, 4])
def test_maxrl_unbiasedness_by_enumeration(n):
  """Σ_i a_i ∇log π / n: unbiased for ∇ Σ_{k<=n} pass@k/k (plain), Σ_{k<=n−1} (control variate)."""
  logits = np.array([0.3, -0.5, 0.1])
  values = [1.0, 0.0, 0.0]
  grads = [enumeration.exact_max_at_k_grad(logits, values, k) / k for k in range(1, n + 1)]
  for cv, want in ((False, sum(grads)), (True, sum(grads[:-1]))):
    est = enumeration.expected_score_estimate(
      lambda r, lr: peers.maxrl_advantages(r, control_variate=cv) / n, logits, logits, values, n
    )
    np.testing.assert_allclose(est, want, atol=1e-6)


@pytest.mark.parametrize("variant", VARIANTS)
def test_maxrl_jit_vmap(variant):
  c = np.array([[1, 0, 0, 1], [0, 0, 0, 0], [1, 1, 1, 1]], np.float32)
  want = _maxrl_numpy(c, True)
  np.testing.assert_allclose(variant(peers.maxrl_advantages)(c), want, rtol=1e-6)
  np.testing.assert_allclose(variant(jax.vmap(peers.maxrl_advantages))(c), want, rtol=1e-6)
  r = np.array([[0.1, 0.7, 0.7, -1.0], [3.0, -np.inf, 2.0, 1.0]], np.float32)
  got = variant(peers.max_minus_second_advantages)(r)
  np.testing.assert_array_equal(got, [[0, 0, 0, 0], [1, 0, 0, 0]])


def test_max_minus_second_infinities():
  r = np.array([[-np.inf, -np.inf], [np.inf, 1.0], [1.0, -np.inf]], np.float32)
  np.testing.assert_array_equal(
    maxk.max_minus_second_advantages(r), [[0, 0], [np.inf, 0], [np.inf, 0]]
  )


def _estimators():
  k = 2
  fns = [lambda x, b=b: maxk.max_at_k_advantages(x, k, baseline=b) for b in maxk.BASELINES]
  fns += [
    lambda x: maxk.max_at_k_advantages(x, 1),
    lambda x: maxk.max_at_k_advantages(x, 4),
    maxk.grpo_advantages,
    maxk.rloo_advantages,
    maxk.max_minus_second_advantages,
    lambda x: maxk.max_at_k_advantages_off_policy(x, 0.1 * x, 2),
    lambda x: maxk.max_at_k_advantages_off_policy(x, 0.1 * x, 2, method="first_order"),
  ]
  return fns


@pytest.mark.parametrize("index", range(12))
def test_nan_makes_whole_group_nan(index):
  r = np.array([[0.1, 0.9, 0.5, 0.3], [0.1, np.nan, 0.5, 0.3], [0.2, 0.4, 0.1, 0.9]], np.float32)
  f = jax.jit(_estimators()[index])
  out = np.asarray(f(r))
  assert np.all(np.isnan(out[1]))
  np.testing.assert_array_equal(out[[0, 2]], np.asarray(f(r[[0, 2]])))


def test_binary_estimators_nan_groups():
  c = np.array([[1, 0, 1, 0], [1, np.nan, 0, 0]], np.float32)
  for f in (
    lambda x: peers.pass_at_k_training_advantages(x, 2),
    peers.maxrl_advantages,
  ):
    out = np.asarray(jax.jit(f)(c))
    assert np.all(np.isnan(out[1])) and np.all(np.isfinite(out[0]))


def test_best_of_n_nan_under_jit():
  p = np.array([[0.2, 0.3, 0.5], [0.2, 0.3, 0.5]])
  r = np.array([[0.0, np.nan, 1.0], [0.0, 0.5, 1.0]])
  for f in (maxk.bon_kl_estimate_expectation, maxk.bon_kl_gap_lower_bound):
    out = np.asarray(jax.jit(lambda p, r, f=f: f(p, r, 3))(p, r))
    assert np.isnan(out[0]) and np.isfinite(out[1])
  q = np.array([[0.5, np.nan, 0.5], [0.3, 0.3, 0.4]])
  out = np.asarray(jax.jit(maxk.kl_divergence)(q, p))
  assert np.isnan(out[0]) and np.isfinite(out[1])


def test_max_at_k_exact_zero_probability_minus_inf():
  got = maxk.max_at_k_exact(np.array([0, 1 / 3, 1 / 3, 1 / 3]), np.array([-np.inf, 0, 1, 2]), 2)
  np.testing.assert_allclose(got, 13 / 9, rtol=1e-6)
  g = jax.jit(jax.grad(lambda p: maxk.max_at_k_exact(p, jnp.array([-jnp.inf, 0.0, 1.0, 2.0]), 2)))(
    jnp.array([0.0, 1 / 3, 1 / 3, 1 / 3])
  )
  assert np.all(np.isfinite(g[1:]))


def test_error_messages_name_the_argument():
  with pytest.raises(ValueError, match="eps=None"):
    maxk.grpo_advantages(np.ones(3), eps=None)
  with pytest.raises(ValueError, match=r"k=1000000000000 must satisfy 1 <= k"):
    maxk.max_at_k_exact(np.ones(3) / 3, np.ones(3), 10**12)
  with pytest.raises(ValueError, match=r"n=1000000000000 must satisfy 1 <= n"):
    maxk.bon_kl(np.ones(3) / 3, np.ones(3), 10**12)
  with pytest.raises(ValueError, match="correct"):
    maxk.pass_at_k("abc", 1)
  with pytest.raises(ValueError, match="correct must be real"):
    maxk.pass_at_k(np.array([1 + 1j, 0]), 1)
  with pytest.raises(ValueError, match="rewards must be real"):
    maxk.max_at_k(np.array([1 + 1j, 0]), 1)
  with pytest.raises(ValueError, match="rewards must be real"):
    maxk.max_at_k_advantages(np.array([1 + 1j, 0]), 1)


def _exact_max_at_k(r_sorted_int, k):
  n = len(r_sorted_int)
  total = sum(Fraction(math.comb(j, k - 1)) * r for j, r in enumerate(r_sorted_int))
  return total / math.comb(n, k)


@pytest.mark.parametrize("n", [64, 1024])
def test_x64_accuracy_against_exact_fractions(n):
  rng = np.random.default_rng(n)
  ints = np.sort(rng.integers(-50, 50, size=n))
  with jax.enable_x64(True):
    for c, k in ((16, 1), (16, 7), (n // 2, n // 4), (n - 3, n - 5)):
      correct = np.arange(n) < c
      want = 1 - Fraction(math.comb(n - c, k), math.comb(n, k))
      got = float(maxk.pass_at_k(correct, k))
      assert abs(got - float(want)) <= 1e-14 * float(want), (c, k)
    for k in (1, 2, 7, n // 2, n):
      want = float(_exact_max_at_k(ints, k))
      got = float(maxk.max_at_k(ints.astype(np.float64), k))
      assert abs(got - want) <= 1e-13 * max(abs(want), 1), k
    # loo_minus_one: a_(j) = [C(j−1,k−1) r_(j) − Σ_{m<j} C(m−1,k−2) r_(m)] / C(n,k).
    k = 7
    idx = [0, 1, n // 2, n - 2, n - 1]
    want = [
      Fraction(
        math.comb(j, k - 1) * int(ints[j])
        - sum(math.comb(m, k - 2) * int(ints[m]) for m in range(j)),
        math.comb(n, k),
      )
      for j in idx
    ]
    x = ints.astype(np.float64) + 0.0  # sorted, unique order irrelevant for distinct ranks
    got = np.asarray(maxk.max_at_k_advantages(x, k))
    assert got.dtype == np.float64
    scale = max(abs(float(w)) for w in want)
    for j, w in zip(idx, want):
      if ints[j] != ints[j - 1] if j else True:
        assert abs(got[j] - float(w)) <= 1e-13 * scale, j
