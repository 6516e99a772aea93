"""JSPO (James-Stein shrinkage across prompts): formula, unbiasedness, NaN, where=.

The reference below is written from the definition (the authors' verl fork, read, not
copied): per prompt, loops over the other prompts, NumPy float64.
"""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import maxk
from tests.maxk import enumeration


def _reference(r, valid=None, k=None, variant="jspo", eps=1e-6):
  """JSPO on one [P, n] batch from the definition; k=None: the mean form."""
  r = np.asarray(r, np.float64)
  valid = np.ones(r.shape, bool) if valid is None else np.asarray(valid)
  groups = [r[p][valid[p]] for p in range(r.shape[0])]
  need = 2 if k is None else 2 * k

  def estimate(g):
    if k is None:
      return g.mean(), g.var(ddof=1) / len(g)
    m = len(g)
    est = enumeration.max_at_k(g, k)
    # Unbiased Var(M̂): M̂² minus the mean over ordered disjoint pairs of k-subsets.
    pairs = [
      (max(g[list(a)]), max(g[list(b)]))
      for a in itertools.combinations(range(m), k)
      for b in itertools.combinations(range(m), k)
      if not set(a) & set(b)
    ]
    return est, est**2 - np.mean([x * y for x, y in pairs])

  stats = [estimate(g) if len(g) >= need else None for g in groups]
  out = np.zeros(r.shape)
  for p, g in enumerate(groups):
    if stats[p] is None:
      continue
    used = [q for q in range(len(groups)) if q != p or variant == "jspo++"]
    others = [stats[q] for q in used if stats[q] is not None]
    lam, target = 0.0, 0.0
    if others:
      mus = np.array([o[0] for o in others])
      target = mus.mean()
      v = np.mean([o[1] for o in others])
      s2 = np.mean((mus - target) ** 2)
      lam = v / (v + s2 + eps) if v > 0 else 0.0
    m = len(g)
    a = np.empty(m)
    for i in range(m):
      rest = np.delete(g, i)
      if k is None:
        a[i] = g[i] - ((1 - lam) * rest.mean() + lam * target)
      else:
        s_i = enumeration.s_values(g, k)[i]
        a[i] = s_i - k / m * ((1 - lam) * enumeration.max_at_k(rest, k) + lam * target)
    out[p, valid[p]] = a
  return out


def _batches(rng):
  yield rng.random((3, 4))
  yield rng.integers(0, 2, (4, 6)).astype(float)  # Binary, ties, possibly constant groups.
  yield rng.standard_normal((2, 5)) * 3 + 10
  yield np.array([[0.0, 0.0, 0.0, 0.0], [1.0, 1.0, 1.0, 1.0], [0.0, 1.0, 1.0, 0.0]])


@pytest.mark.parametrize("variant", maxk.JSPO_VARIANTS)
def test_matches_the_definition(variant):
  rng = np.random.default_rng(0)
  with jax.enable_x64(True):
    for r in _batches(rng):
      got = np.asarray(maxk.jspo_advantages(r, variant=variant))
      np.testing.assert_allclose(got, _reference(r, variant=variant), atol=1e-10)
      for k in range(1, r.shape[-1] // 2 + 1):
        got = np.asarray(maxk.jspo_max_at_k_advantages(r, k, variant=variant))
        np.testing.assert_allclose(got, _reference(r, k=k, variant=variant), atol=1e-10)


def test_reductions():
  rng = np.random.default_rng(1)
  r = rng.random((2, 3, 6))
  n = r.shape[-1]
  with jax.enable_x64(True):
    # k = 1 is the mean form over n; a single prompt has no target: RLOO / loo_centered.
    full = np.asarray(maxk.jspo_advantages(r))  # NumPy from here: no eager jnp programs.
    np.testing.assert_allclose(maxk.jspo_max_at_k_advantages(r, 1), full / n, atol=1e-12)
    one = r[:, :1]
    np.testing.assert_allclose(maxk.jspo_advantages(one), maxk.rloo_advantages(one), atol=1e-12)
    np.testing.assert_allclose(
      maxk.jspo_max_at_k_advantages(one, 2),
      maxk.max_at_k_advantages(one, 2, baseline="loo_centered"),
      atol=1e-12,
    )
    # Leading axes are independent batches.
    np.testing.assert_allclose(full[1], maxk.jspo_advantages(r[1]), atol=1e-12)


def _exact_moments(fn, probs, values, n, weights):
  """Exact moments, fn called on [4096, P, n] padded rewards: one compile per fn and P."""

  def padded(x):
    rows = x.shape[0]
    pad = np.zeros((4096 - rows, *x.shape[1:]))
    return np.asarray(fn(np.concatenate([x, pad])))[:rows]

  with jax.enable_x64(True):
    return maxk.testing.gradient_moments(padded, probs, values, n, weights=weights)


_POLICIES = [  # (probs [P, A], rewards [P, A]) of a batch of prompts.
  ([[0.7, 0.3], [0.4, 0.6]], [[0.0, 1.0], [0.0, 1.0]]),
  (
    [[0.5, 0.3, 0.2], [0.2, 0.2, 0.6], [0.1, 0.6, 0.3]],
    [[0.0, 0.5, 1.0], [1.0, 0.0, 0.2], [0.3, 0.9, 0.0]],
  ),
]


@pytest.mark.parametrize("policy", range(len(_POLICIES)))
def test_jspo_is_unbiased_and_jspo_plus_plus_is_not(policy):
  probs, values = _POLICIES[policy]
  n = 4
  mean = _exact_moments(maxk.jspo_advantages, probs, values, n, [n])
  assert mean.method == "exact"
  np.testing.assert_allclose(mean.mean, mean.exact, atol=1e-12)
  plus = _exact_moments(lambda x: maxk.jspo_advantages(x, variant="jspo++"), probs, values, n, [n])
  assert np.abs(plus.bias).max() > 1e-3
  for k in (1, 2):
    w = maxk.rank_weights("max", k)
    got = _exact_moments(lambda x, k=k: maxk.jspo_max_at_k_advantages(x, k), probs, values, n, w)
    np.testing.assert_allclose(got.mean, got.exact, atol=1e-12)
  plus = _exact_moments(
    lambda x: maxk.jspo_max_at_k_advantages(x, 2, variant="jspo++"),
    probs,
    values,
    n,
    maxk.rank_weights("max", 2),
  )
  assert np.abs(plus.bias).max() > 1e-3


def test_nan_poisons_its_batch_slice_only():
  r = np.random.default_rng(2).random((2, 3, 4)).astype(np.float32)
  r[0, 1, 2] = np.nan
  for a in (maxk.jspo_advantages(r), maxk.jspo_max_at_k_advantages(r, 2)):
    a = np.asarray(a)
    assert np.isnan(a[0]).all()
    assert np.isfinite(a[1]).all()
  where = np.ones(r.shape, bool)
  where[0, 1, 2] = False  # A masked NaN is ignored.
  for a in (
    maxk.jspo_advantages(r, where=where),
    maxk.jspo_max_at_k_advantages(r, 2, where=where),
  ):
    a = np.asarray(a)
    assert np.isfinite(a).all() and a[0, 1, 2] == 0


def test_where_drops_samples_and_small_groups():
  rng = np.random.default_rng(3)
  r = rng.random((4, 6))
  valid = np.ones(r.shape, bool)
  valid[0, :2] = False  # m = 4
  valid[1, 1:] = False  # m = 1: no estimate, excluded from the targets
  valid[3, 3:] = False  # m = 3: enough for the mean form, not for max@k at k = 2
  with jax.enable_x64(True):
    for variant in maxk.JSPO_VARIANTS:
      got = np.asarray(maxk.jspo_advantages(r, variant=variant, where=valid))
      np.testing.assert_allclose(got, _reference(r, valid, variant=variant), atol=1e-10)
      assert (got[1] == 0).all() and (got[~valid] == 0).all()
      got = np.asarray(maxk.jspo_max_at_k_advantages(r, 2, variant=variant, where=valid))
      np.testing.assert_allclose(got, _reference(r, valid, k=2, variant=variant), atol=1e-10)
      assert (got[3] == 0).all()


def test_jit_vmap_grad():
  # [2, 3, 4] float32: the eager calls reuse test_nan_poisons_its_batch_slice_only's programs.
  r = jnp.asarray(np.random.default_rng(4).random((2, 3, 4)), jnp.float32)
  for fn in (maxk.jspo_advantages, lambda x: maxk.jspo_max_at_k_advantages(x, 2)):
    want = np.asarray(fn(r))
    # One program checks both: traced under jit, and mapped over the leading axis by vmap.
    np.testing.assert_allclose(jax.jit(jax.vmap(fn))(r), want, rtol=1e-5, atol=1e-6)
    g = jax.jit(jax.grad(lambda x: jnp.sum(fn(x) ** 2)))(r)
    assert np.isfinite(np.asarray(g)).all()


def test_bad_arguments_name_the_argument():
  r = np.zeros((2, 4))
  with pytest.raises(ValueError, match="rewards"):
    maxk.jspo_advantages(np.zeros(4))
  with pytest.raises(ValueError, match="n"):
    maxk.jspo_advantages(np.zeros((2, 1)))
  with pytest.raises(ValueError, match="variant"):
    maxk.jspo_advantages(r, variant="js")
  with pytest.raises(ValueError, match="eps"):
    maxk.jspo_advantages(r, eps=-1.0)
  with pytest.raises(ValueError, match="where"):
    maxk.jspo_advantages(r, where=np.ones((3, 4), bool))
  with pytest.raises(ValueError, match="k"):
    maxk.jspo_max_at_k_advantages(r, 3)
  with pytest.raises(ValueError, match="rewards"):
    maxk.jspo_max_at_k_advantages(np.zeros(4), 1)
