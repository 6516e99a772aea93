"""Tests for maxk's selectors: best-of-k chosen by a score, judged by a true reward.

References are brute force in float64: means over all k-subsets of the samples,
sums over all k-tuples of a categorical policy with uniform tie-breaking, and
central finite differences of those sums.
"""

import fractions
import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import maxk
from tests.maxk.variants import VARIANTS
from tests.maxk.variants import WITH_JIT

UNBIASED = ["none", "loo", "loo_centered", "loo_minus_one"]


# ----------------------------------------------------------------------------
# Brute-force references


def _h(s, r) -> float:
  """Reward of the top-score sample, ties broken uniformly: the mean over the top set."""
  s, r = np.asarray(s, np.float64), np.asarray(r, np.float64)
  return float(r[s == s.max()].mean())


def _sel(s, r, k: int) -> float:
  """(1/C(n,k)) Σ_{|I|=k} h(I)."""
  subsets = itertools.combinations(range(len(s)), k)
  return float(np.mean([_h(s[list(i)], r[list(i)]) for i in subsets]))


def _advantages(s, r, k: int, baseline: str) -> np.ndarray:
  """Every baseline from its definition, by subsets."""
  s, r = np.asarray(s, np.float64), np.asarray(r, np.float64)
  n = len(s)
  total = math.comb(n, k)
  big_s = np.zeros(n)
  minus_one = np.zeros(n)
  for subset in itertools.combinations(range(n), k):
    subset = list(subset)
    value = _h(s[subset], r[subset])
    for i in subset:
      big_s[i] += value
      if k > 1:
        rest = [j for j in subset if j != i]
        minus_one[i] += value - _h(s[rest], r[rest])
  big_s /= total
  if baseline == "none":
    return big_s
  if baseline == "mean_std":
    return (big_s - big_s.mean()) / (big_s.std() + 1e-6)
  if baseline == "loo_minus_one" and k > 1:
    return minus_one / total
  if baseline == "leave_two_out":  # MaxPO's pairwise comparison, times k/n.
    if n == k:
      return big_s
    pairwise = np.zeros(n)
    for i, j in itertools.permutations(range(n), 2):
      rest = [m for m in range(n) if m not in (i, j)]
      pairwise[i] += np.mean(
        [
          _h(s[[i, *c]], r[[i, *c]]) - _h(s[[j, *c]], r[[j, *c]])
          for c in itertools.combinations(rest, k - 1)
        ]
      )
    return pairwise / (n - 1) * k / n
  if baseline in ("loo", "loo_centered", "loo_minus_one"):
    if n == k:
      return big_s
    scale = k / (n - 1) if baseline == "loo" else k / n
    others = [np.delete(np.arange(n), i) for i in range(n)]
    return np.array([big_s[i] - scale * _sel(s[o], r[o], k) for i, o in enumerate(others)])
  raise ValueError(baseline)


def _exact_by_tuples(p, s, r, k: int) -> tuple[np.ndarray, float]:
  """(pmf of the selected arm, E[its reward]) over all A^k draws of k arms."""
  p, s, r = (np.asarray(x, np.float64) for x in (p, s, r))
  pmf = np.zeros(len(p))
  for draw in itertools.product(range(len(p)), repeat=k):
    prob = np.prod(p[list(draw)])
    top = [a for a in draw if s[a] == max(s[list(draw)])]
    for a in top:
      pmf[a] += prob / len(top)
  return pmf, float(pmf @ r)


def _exact_grad(logits, s, r, k: int) -> np.ndarray:
  """∇_logits of E[selected reward] by central differences of the tuple sum."""
  logits = np.asarray(logits, np.float64)
  softmax = lambda z: np.exp(z - z.max()) / np.exp(z - z.max()).sum()
  eps = 1e-6
  grad = np.zeros(len(logits))
  for a in range(len(logits)):
    e = np.eye(len(logits))[a] * eps
    up = _exact_by_tuples(softmax(logits + e), s, r, k)[1]
    down = _exact_by_tuples(softmax(logits - e), s, r, k)[1]
    grad[a] = (up - down) / (2 * eps)
  return grad


def _s_by_classes(s, r, k: int) -> list[fractions.Fraction]:
  """S(i) in exact rationals by the per-class sums (rewards must be rationals).

  Subsets topped by i's own class c (size s_c, L below) with m' other members:
  C(L, k−1−m') choices below, and the m'-subsets of the other members average
  r_i + m'·(mean of the others); subsets topped by a higher class c' count
  C(L'−1+s', k−1) − C(L'−1, k−1) and average r̄_c'.
  """
  n = len(s)
  values = sorted(set(s))
  members = {v: [j for j in range(n) if s[j] == v] for v in values}
  below = {v: sum(len(members[w]) for w in values if w < v) for v in values}
  mean = {v: sum(r[j] for j in members[v]) / len(members[v]) for v in values}
  out = []
  for i in range(n):
    c = s[i]
    size, low = len(members[c]), below[c]
    others = [r[j] for j in members[c] if j != i]
    other_mean = sum(others) / len(others) if others else 0
    total = fractions.Fraction(0)
    for m in range(size):
      count = math.comb(size - 1, m) * math.comb(low, k - 1 - m) if k - 1 - m >= 0 else 0
      total += count * (r[i] + m * other_mean) / (m + 1)
    for v in values:
      if v > c:
        top_low, top_size = below[v], len(members[v])
        count = math.comb(top_low - 1 + top_size, k - 1) - math.comb(top_low - 1, k - 1)
        total += count * mean[v]
    out.append(total / math.comb(n, k))
  return out


def _tied_pair(rng, shape, levels=3):
  scores = rng.integers(0, levels, size=shape).astype(np.float64)
  rewards = rng.normal(size=shape)
  return scores, rewards


# ----------------------------------------------------------------------------
# selected_at_k


@pytest.mark.parametrize("n", [1, 2, 4, 7])
def test_selected_at_k_matches_subsets(n):
  rng = np.random.default_rng(n)
  s, r = _tied_pair(rng, (4, n))
  s[0] = rng.normal(size=n)  # No ties.
  s[1] = 0.0  # One class.
  for k in range(1, n + 1):
    got = np.asarray(maxk.selected_at_k(s.astype(np.float32), r.astype(np.float32), k))
    want = [_sel(si, ri, k) for si, ri in zip(s, r)]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=f"k={k}")


@pytest.mark.parametrize(
  "scores, rewards",
  [
    # The +inf and -inf rewards share a score class that tops no 8-subset.
    ([1, 0.18, 2.74, 1, 1, 1, 3, 1, 3], [0, 2, -1.96, -0.43, np.inf, -np.inf, -1, -0.5, 0.33]),
    # One +inf in a class of finite rewards (its TwoSum error was inf − inf).
    ([1, 1, 0, 2, 0], [np.inf, 0, 1, -1, 3]),
    ([0, 1, 1, 2, 2, 2], [5, -np.inf, 1, np.inf, 0, 2]),
  ],
)
def test_selected_at_k_infinite_rewards_are_nan_only_where_the_subsets_give_inf_minus_inf(
  scores, rewards
):
  s, r = np.array(scores, np.float64), np.array(rewards, np.float64)
  n = len(s)
  for k in range(1, n + 1):
    with np.errstate(invalid="ignore"):
      want = _sel(s, r, k)  # float64 over all k-subsets, NaN where inf − inf arises
    for where in (None, np.ones(n, bool)):
      got = float(maxk.selected_at_k(s.astype(np.float32), r.astype(np.float32), k, where=where))
      if np.isnan(want) or np.isinf(want):
        assert got == want or (np.isnan(got) and np.isnan(want)), (k, got, want)
      else:
        assert got == pytest.approx(want, rel=1e-5, abs=1e-6), (k, got, want)


def test_selected_at_k_equals_max_at_k_when_scores_are_rewards():
  rng = np.random.default_rng(0)
  r = rng.integers(-2, 3, size=(50, 9)).astype(np.float32)  # Many ties.
  r[0, 0] = -np.inf
  for k in range(1, 10):
    np.testing.assert_allclose(maxk.selected_at_k(r, r, k), maxk.max_at_k(r, k), rtol=1e-6)


def test_selected_at_k_is_unbiased_on_a_categorical_policy():
  """E over all n-tuples of the estimate equals the exact selected reward."""
  p = np.array([0.3, 0.2, 0.4, 0.1])
  s = np.array([0.0, 1.0, 1.0, 0.0])  # Ties between arms of different rewards.
  r = np.array([1.0, -0.5, 2.0, 0.3])
  n = 4
  draws = np.array(list(itertools.product(range(4), repeat=n)))
  prob = np.prod(p[draws], axis=1)
  for k in range(1, n + 1):
    est = np.asarray(maxk.selected_at_k(s[draws], r[draws].astype(np.float32), k), np.float64)
    exact = _exact_by_tuples(p, s, r, k)[1]
    np.testing.assert_allclose(prob @ est, exact, atol=2e-6, err_msg=f"k={k}")
    np.testing.assert_allclose(maxk.selected_at_k_exact(p, s, r, k), exact, atol=2e-6)


def test_selected_at_k_where_is_the_estimate_of_the_valid_samples():
  rng = np.random.default_rng(1)
  s, r = _tied_pair(rng, (6, 7))
  valid = rng.random((6, 7)) < 0.7
  valid[0] = True
  valid[1, :2] = True
  valid[1, 2:] = False  # m = 2 < k: NaN.
  s[2, ~valid[2]] = np.nan  # Invalid samples do not enter, NaN included.
  k = 3
  got = np.asarray(maxk.selected_at_k(s, r, k, where=valid))
  for g in range(6):
    v = valid[g]
    want = _sel(s[g, v], r[g, v], k) if v.sum() >= k else np.nan
    np.testing.assert_allclose(got[g], want, rtol=1e-5, atol=1e-6, err_msg=f"group {g}")


@pytest.mark.parametrize("n,k", [(1024, 1), (1024, 7), (1024, 512), (1024, 1024)])
def test_selected_at_k_float32_large_n(n, k):
  rng = np.random.default_rng(k)
  s = rng.integers(0, 40, size=n).astype(np.float64)
  r = rng.normal(size=n)
  # Σ_c r̄_c [C(L+s, k) − C(L, k)] / C(n, k) in exact integers, then float64.
  total = fractions.Fraction(0)
  for v in np.unique(s):
    low, size = int(np.sum(s < v)), int(np.sum(s == v))
    weight = fractions.Fraction(math.comb(low + size, k) - math.comb(low, k), math.comb(n, k))
    total += weight * fractions.Fraction(float(r[s == v].mean()))
  got = maxk.selected_at_k(s.astype(np.float32), r.astype(np.float32), k)
  np.testing.assert_allclose(got, float(total), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("n", [1024, 16384, 65536])
def test_selected_at_k_float32_class_sums_are_compensated(n):
  # One tied class of n float32 rewards: the estimate is their mean for every k.  A
  # plain float32 class sum was off by up to ~50 eps (2.3e-6 relative); max_at_k's
  # bound, eps·Σ_j w_j |r_(j)| + eps·|estimate|, is 2 eps here.
  eps = np.finfo(np.float32).eps
  rng = np.random.default_rng(n)
  r = rng.uniform(0.5, 1.5, size=(3, n)).astype(np.float32)
  exact = r.astype(np.float64).mean(-1)
  # One group per call: every call here runs the one program of shape [n] (a compile at
  # large n costs seconds; test_selected_at_k_float32_large_n compiles it for n = 1024).
  for k in (1, 7, n // 2):
    got = np.array([maxk.selected_at_k(np.zeros_like(row), row, k) for row in r], np.float64)
    assert np.all(np.abs(got - exact) <= 2 * eps * np.abs(exact)), (k, (got - exact) / exact)
  # A few large classes (scores 0..3): the same bound over the class means.
  s = rng.integers(0, 4, size=n).astype(np.float32)
  r1 = r[0]
  k = 5
  bound_terms, want = [], 0.0
  for v in range(4):
    low, size = int(np.sum(s < v)), int(np.sum(s == v))
    w = (math.comb(low + size, k) - math.comb(low, k)) / math.comb(n, k)
    mean = r1[s == v].astype(np.float64).mean()
    want += w * mean
    bound_terms.append(w * abs(mean))
  got = float(maxk.selected_at_k(s, r1, k))
  assert abs(got - want) <= eps * (sum(bound_terms) + abs(want)), (got - want) / want


# ----------------------------------------------------------------------------
# selected_at_k_advantages


@pytest.mark.parametrize("n", [1, 2, 4, 7])
def test_advantages_match_subsets(n):
  rng = np.random.default_rng(10 + n)
  s, r = _tied_pair(rng, (3, n))
  s[0] = rng.normal(size=n)
  s[1, : n // 2 + 1] = 1.0  # A large class.
  for baseline, k in itertools.product(maxk.BASELINES, range(1, n + 1)):
    got = np.asarray(maxk.selected_at_k_advantages(s, r.astype(np.float32), k, baseline=baseline))
    want = np.stack([_advantages(si, ri, k, baseline) for si, ri in zip(s, r)])
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=3e-5, err_msg=f"k={k} {baseline}")


def test_s_matches_the_per_class_sums_exactly():
  """S(i) against the per-class closed form in exact rationals, at n = 40."""
  rng = np.random.default_rng(2)
  n = 40
  s = rng.integers(0, 6, size=n).astype(np.float32)
  r = (rng.integers(-64, 64, size=n) / 16).astype(np.float32)  # Exact in binary.
  rational = [fractions.Fraction(float(x)) for x in r]
  for k in (1, 2, 5, 17, 40):
    want = np.array([float(x) for x in _s_by_classes(list(s), rational, k)])
    got = maxk.selected_at_k_advantages(s, r, k, baseline="none")
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=f"k={k}")


@pytest.mark.parametrize("baseline", list(maxk.BASELINES))
def test_advantages_equal_max_at_k_advantages_when_scores_are_rewards(baseline):
  rng = np.random.default_rng(3)
  r = rng.integers(-2, 3, size=(40, 9)).astype(np.float32)
  r[:5] = rng.normal(size=(5, 9))
  for k in range(1, 10):
    got = maxk.selected_at_k_advantages(r, r, k, baseline=baseline)
    want = maxk.max_at_k_advantages(r, k, baseline=baseline)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=2e-6, err_msg=f"k={k}")


@pytest.mark.parametrize("n", [2, 4])
def test_advantages_unbiased_exactly_on_a_categorical_policy(n):
  """E over all A^n outcome tuples of Σ a_i ∇log π(y_i) = ∇ selected@k (score ties
  between arms of different rewards); also jax.grad of selected_at_k_exact."""
  logits = np.array([0.3, -0.5, 0.1, 0.2])
  p = np.exp(logits) / np.exp(logits).sum()
  s = np.array([0.0, 1.0, 1.0, 0.0])
  r = np.array([1.0, -0.5, 2.0, 0.3])
  arms = np.arange(4.0)  # The checker passes "rewards" through: give it arm indices.
  objective = lambda z, k: maxk.selected_at_k_exact(jax.nn.softmax(z), s, r, k)
  for k in range(1, n + 1):
    exact = _exact_grad(logits, s, r, k)
    grad = jax.grad(objective)(jnp.asarray(logits, jnp.float32), k)
    np.testing.assert_allclose(grad, exact, atol=2e-6, err_msg=f"grad k={k}")
    for baseline in UNBIASED:
      fn = lambda idx: maxk.selected_at_k_advantages(
        s[idx.astype(int)], r[idx.astype(int)], k, baseline=baseline
      )
      est = maxk.testing.expected_gradient(fn, p, arms, n)
      np.testing.assert_allclose(est, exact, atol=3e-6, err_msg=f"k={k} {baseline}")
  # "mean_std" is biased (it is kept for comparison only).
  fn = lambda idx: maxk.selected_at_k_advantages(
    s[idx.astype(int)], r[idx.astype(int)], 2, baseline="mean_std"
  )
  if n == 4:
    est = maxk.testing.expected_gradient(fn, p, arms, n)
    assert np.max(np.abs(est - _exact_grad(logits, s, r, 2))) > 1e-2


def test_advantages_constant_rewards_and_large_offsets():
  rng = np.random.default_rng(4)
  # [3, 7], the shape of test_advantages_match_subsets[7]: its programs are reused.
  s = rng.integers(0, 3, size=(3, 7)).astype(np.float32)
  const = np.full((3, 7), 0.7, np.float32)
  for b in ("loo_centered", "loo_minus_one", "mean_std"):
    assert np.all(np.asarray(maxk.selected_at_k_advantages(s, const, 3, baseline=b)) == 0)
  r = rng.normal(size=(3, 7))
  for b in maxk.BASELINES:
    got = maxk.selected_at_k_advantages(s, (r + 1000).astype(np.float32), 3, baseline=b)
    want = np.stack([_advantages(si, ri + 1000, 3, b) for si, ri in zip(s, r)])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=2e-4, err_msg=b)


# ----------------------------------------------------------------------------
# selected_pmf and selected_at_k_exact


@pytest.mark.parametrize("k", [1, 2, 3, 5])
def test_exact_matches_tuples(k):
  rng = np.random.default_rng(k)
  p = np.array([0.25, 0.15, 0.2, 0.3, 0.1])
  s = np.array([1.0, 2.0, 1.0, 0.0, 2.0])
  r = rng.normal(size=5)
  want_pmf, want = _exact_by_tuples(p, s, r, k)
  np.testing.assert_allclose(maxk.selected_pmf(p, s, k), want_pmf, atol=1e-6)
  np.testing.assert_allclose(maxk.selected_at_k_exact(p, s, r, k), want, atol=1e-6)
  # With scores == rewards: best-of-k and max@k.
  np.testing.assert_allclose(maxk.selected_pmf(p, r, k), maxk.bon_pmf(p, r, k), atol=1e-7)
  np.testing.assert_allclose(
    maxk.selected_at_k_exact(p, s, s, k), maxk.max_at_k_exact(p, s, k), atol=1e-6
  )


def test_exact_broadcasts_scores_and_rewards_over_a_batch():
  rng = np.random.default_rng(5)
  p = rng.dirichlet(np.ones(6), size=(2, 3))
  s = rng.integers(0, 3, size=6).astype(np.float64)
  r = rng.normal(size=(2, 3, 6))
  got = np.asarray(maxk.selected_at_k_exact(p, s, r, 4))
  pmf = np.asarray(maxk.selected_pmf(p, s, 4))
  assert got.shape == (2, 3) and pmf.shape == (2, 3, 6)
  for i, j in itertools.product(range(2), range(3)):
    want_pmf, want = _exact_by_tuples(p[i, j], s, r[i, j], 4)
    np.testing.assert_allclose(pmf[i, j], want_pmf, atol=1e-6)
    np.testing.assert_allclose(got[i, j], want, atol=1e-6)


# ----------------------------------------------------------------------------
# Transformations, NaN and bad input


@pytest.mark.parametrize("variant", WITH_JIT)
@pytest.mark.parametrize("baseline", ["loo_minus_one", "mean_std"])  # Each kind is jitted alike.
def test_against_subsets_jit_vmap(variant, baseline, k=3):
  rng = np.random.default_rng(0)
  s, r = _tied_pair(rng, (3, 6))
  s32, r32 = s.astype(np.float32), r.astype(np.float32)
  f = lambda a, b: maxk.selected_at_k_advantages(a, b, k, baseline=baseline)
  want = np.stack([_advantages(si, ri, k, baseline) for si, ri in zip(s, r)])
  np.testing.assert_allclose(variant(f)(s32, r32), want, rtol=1e-4, atol=3e-5)
  np.testing.assert_allclose(variant(jax.vmap(f))(s32, r32), want, rtol=1e-4, atol=3e-5)
  g = lambda a, b: maxk.selected_at_k(a, b, k)
  want_sel = [_sel(si, ri, k) for si, ri in zip(s, r)]
  np.testing.assert_allclose(variant(jax.vmap(g))(s32, r32), want_sel, rtol=1e-5)


@pytest.mark.parametrize("variant", VARIANTS)
def test_exact_jit_vmap(variant):
  p = jnp.asarray([[0.2, 0.3, 0.5], [0.6, 0.3, 0.1]])
  s = jnp.asarray([1.0, 0.0, 1.0])
  r = jnp.asarray([0.5, 2.0, -1.0])
  got = variant(jax.vmap(lambda q: maxk.selected_at_k_exact(q, s, r, 3)))(p)
  want = [_exact_by_tuples(np.asarray(q), s, r, 3)[1] for q in p]
  np.testing.assert_allclose(got, want, atol=1e-6)


def test_nan_only_affects_its_group():
  rng = np.random.default_rng(6)
  # [3, 7], the shape of test_advantages_match_subsets[7]: its programs are reused.
  s, r = _tied_pair(rng, (3, 7))
  s, r = s.astype(np.float32), r.astype(np.float32)
  for where, value in (("scores", np.nan), ("rewards", np.nan), ("rewards", np.inf)):
    bad_s, bad_r = s.copy(), r.copy()
    (bad_s if where == "scores" else bad_r)[1, 2] = value
    for k in (1, 7) if where == "scores" else (2,):
      for b in maxk.BASELINES:
        # The kernel is jitted: this is the NaN handling of the compiled program.
        f = lambda a, c: maxk.selected_at_k_advantages(a, c, k, baseline=b)
        out, clean = np.asarray(f(bad_s, bad_r)), np.asarray(f(s, r))
        np.testing.assert_array_equal(out[[0, 2]], clean[[0, 2]])
        assert np.all(np.isnan(out[1])), (where, value, k, b)
      if np.isnan(value):
        est = np.asarray(maxk.selected_at_k(bad_s, bad_r, k))
        clean_est = np.asarray(maxk.selected_at_k(s, r, k))
        np.testing.assert_array_equal(est[[0, 2]], clean_est[[0, 2]])
        assert np.isnan(est[1])
  p = np.array([[0.5, 0.5], [0.5, 0.5]], np.float32)
  exact = jax.jit(lambda q, a, c: maxk.selected_at_k_exact(q, a, c, 2))
  out = np.asarray(exact(p, np.array([[0.0, 1.0], [np.nan, 1.0]]), np.ones((2, 2))))
  assert np.isfinite(out[0]) and np.isnan(out[1])
  out = np.asarray(exact(p, np.zeros((2, 2)), np.array([[0.0, 1.0], [np.nan, 1.0]])))
  assert np.isfinite(out[0]) and np.isnan(out[1])


def test_bad_input():
  x = np.ones((2, 4), np.float32)
  with pytest.raises(ValueError, match=r"k=5 must satisfy 1 <= k <= n=4"):
    maxk.selected_at_k(x, x, 5)
  with pytest.raises(ValueError, match=r"k=0 must satisfy 1 <= k <= n=4"):
    maxk.selected_at_k_advantages(x, x, 0)
  with pytest.raises(ValueError, match=r"Unknown baseline='loo2'"):
    maxk.selected_at_k_advantages(x, x, 2, baseline="loo2")
  with pytest.raises(ValueError, match=r"rewards shape \(2, 3\) must equal scores shape"):
    maxk.selected_at_k(x, x[:, :3], 2)
  with pytest.raises(ValueError, match=r"scores must have at least 1 dimension"):
    maxk.selected_at_k_advantages(1.0, x, 1)
  p = np.full(4, 0.25)
  with pytest.raises(ValueError, match=r"scores shape \(3,\) must broadcast to probs shape"):
    maxk.selected_pmf(p, np.ones(3), 2)
  with pytest.raises(ValueError, match=r"rewards shape \(5,\) must broadcast"):
    maxk.selected_at_k_exact(p, np.ones(4), np.ones(5), 2)
  with pytest.raises(ValueError, match=r"scores must not contain NaN"):
    maxk.selected_pmf(p, np.array([0.0, np.nan, 1.0, 2.0]), 2)
  with pytest.raises(ValueError, match=r"rewards must not contain NaN"):
    maxk.selected_at_k_exact(p, np.ones(4), np.array([0.0, np.nan, 1.0, 2.0]), 2)
  with pytest.raises(ValueError, match=r"k=0 must satisfy 1 <= k"):
    maxk.selected_at_k_exact(p, np.ones(4), np.ones(4), 0)
  with pytest.raises(ValueError, match=r"probs must sum to 1"):
    maxk.selected_pmf(np.full(4, 0.3), np.ones(4), 2)
