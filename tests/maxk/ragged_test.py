"""Ragged groups (``where=``): each group equals the dense call on its valid samples alone."""

import functools
import inspect

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import maxk
from tests.maxk import enumeration
from tests.maxk import nan_groups_test

_P = functools.partial


def _spec(name, fn, need, kind, binary=False):
  return pytest.param(fn, need, kind, binary, id=name)


_TOP = maxk.rank_weights("top_m", 3, m=2)
_MIXED = (1.0, -2.0, 0.5)  # weights of both signs

# (function of (x, where=...), the fewest valid samples it needs, "estimate" or
# "advantage", binary input).
_SPECS = [
  _spec("max_at_k_k1", _P(maxk.max_at_k, k=1), 1, "estimate"),
  _spec("max_at_k_k3", _P(maxk.max_at_k, k=3), 3, "estimate"),
  _spec("pass_at_k_k2", _P(maxk.pass_at_k, k=2), 2, "estimate", True),
  *[
    _spec(
      f"max_at_k_advantages_k{k}_{b}", _P(maxk.max_at_k_advantages, k=k, baseline=b), k, "advantage"
    )
    for k in (1, 3)
    for b in maxk.BASELINES
  ],
  _spec("max_at_k_variance_k1", _P(maxk.max_at_k_variance, k=1), 2, "estimate"),
  _spec("max_at_k_variance_k2", _P(maxk.max_at_k_variance, k=2), 4, "estimate"),
  _spec("pass_at_k_variance_k2", _P(maxk.pass_at_k_variance, k=2), 4, "estimate", True),
  *[
    _spec(
      f"pass_at_k_posterior_k{k}_{part}",
      lambda x, k=k, part=part, where=None: getattr(
        maxk.pass_at_k_posterior(x, k, where=where), part
      ),
      1,
      "estimate",
      True,
    )
    for k, part in [(1, "mean"), (3, "stderr"), (12, "lo"), (3, "hi")]
  ],
  _spec("order_stat_at_k_top2of3", _P(maxk.order_stat_at_k, weights=_TOP), 3, "estimate"),
  *[
    _spec(
      f"order_stat_advantages_{b}",
      _P(maxk.order_stat_advantages, weights=_MIXED, baseline=b),
      3,
      "advantage",
    )
    for b in ("none", "loo", "loo_centered")
  ],
  *[
    _spec(
      f"selected_at_k_advantages_k{k}_{b}",
      # Scores with ties across different rewards; masked scores are junk too.
      lambda x, k=k, b=b, where=None: maxk.selected_at_k_advantages(
        jnp.floor(x), x, k, baseline=b, where=where
      ),
      k,
      "advantage",
    )
    for k, b in [(3, b) for b in maxk.BASELINES] + [(1, "loo"), (1, "loo_minus_one")]
  ],
  *[
    _spec(
      f"success_objective_advantages_{b}",
      _P(maxk.success_objective_advantages, coefficients=(1.0, -2.0, 0.5), baseline=b),
      3,
      "advantage",
      True,
    )
    for b in ("none", "loo", "loo_centered", "loo_minus_one")
  ],
  _spec(
    "success_objective_advantages_pass1",
    _P(maxk.success_objective_advantages, coefficients=(2.0,), baseline="loo"),
    1,
    "advantage",
    True,
  ),
  _spec("grpo", maxk.grpo_advantages, 1, "advantage"),
  _spec("grpo_ddof1", _P(maxk.grpo_advantages, std_ddof=1, eps=0.0), 1, "advantage"),
  _spec("rloo", maxk.rloo_advantages, 2, "advantage"),
  _spec("max_minus_second", maxk.max_minus_second_advantages, 2, "advantage"),
  _spec("maxrl", maxk.maxrl_advantages, 1, "advantage", True),
  _spec("maxrl_plain", _P(maxk.maxrl_advantages, control_variate=False), 1, "advantage", True),
  _spec("pass_at_k_training_k2", _P(maxk.pass_at_k_training_advantages, k=2), 2, "advantage", True),
  _spec(
    "pass_at_k_training_k3_eps",
    _P(maxk.pass_at_k_training_advantages, k=3, eps=0.1),
    3,
    "advantage",
    True,
  ),
]


def _inputs(binary, seed, shape=(12, 5)):
  """Rewards with ties, and masks holding every group size 0..n (one row each)."""
  rng = np.random.default_rng(seed)
  if binary:
    x = (rng.random(shape) < 0.45).astype(np.float32)
  else:
    x = np.round(rng.normal(size=shape) * 2).astype(np.float32) / 2  # ties
  valid = rng.random(shape) < 0.6
  n = shape[-1]
  for m in range(n + 1):  # every m at least once, in random positions
    valid[m] = False
    valid[m, rng.permutation(n)[:m]] = True
  return x, valid


def _compacted(fn, x, valid, need, kind):
  """The definition: the dense function on each group's valid samples alone."""
  out = np.zeros(x.shape[:-1] if kind == "estimate" else x.shape, np.float64)
  for b in range(x.shape[0]):
    m = valid[b].sum()
    if m < need:
      out[b] = np.nan if kind == "estimate" else 0.0
    elif kind == "estimate":
      out[b] = float(fn(x[b][valid[b]]))
    else:
      out[b, valid[b]] = np.asarray(fn(x[b][valid[b]]))
  return out


@pytest.mark.parametrize("fn, need, kind, binary", _SPECS)
def test_each_group_equals_the_dense_call_on_its_valid_samples(fn, need, kind, binary):
  x, valid = _inputs(binary, seed=need)
  want = _compacted(fn, x, valid, need, kind)
  got = np.asarray(fn(x, where=valid), np.float64)
  np.testing.assert_allclose(got, want, rtol=2e-6, atol=2e-6)
  if kind == "advantage":
    assert np.all(got[~valid] == 0)  # exactly 0, not merely small
  # Jitted with a traced mask and vmapped over a leading axis: the same values. One
  # compiled program checks both (each separately would compile the function twice more).
  x3, valid3 = x.reshape(3, 4, -1), valid.reshape(3, 4, -1)
  mapped = jax.jit(jax.vmap(lambda v, w: fn(v, where=w)))(x3, valid3)
  np.testing.assert_allclose(
    np.asarray(mapped, np.float64).reshape(got.shape), got, rtol=1e-6, atol=1e-7
  )


@pytest.mark.parametrize("fn, need, kind, binary", [p for p in _SPECS if not p.values[3]])
def test_infinite_rewards_give_what_the_dense_call_gives(fn, need, kind, binary):
  x, valid = _inputs(binary, seed=20 + need)
  rng = np.random.default_rng(need)
  x[rng.random(x.shape) < 0.15] = np.inf
  x[rng.random(x.shape) < 0.15] = -np.inf
  with np.errstate(invalid="ignore"):
    want = _compacted(fn, x, valid, need, kind)
  np.testing.assert_allclose(np.asarray(fn(x, where=valid), np.float64), want, rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize("fn, need, kind, binary", _SPECS)
def test_masked_values_do_not_matter_and_nan_stays_in_its_group(request, fn, need, kind, binary):
  x, valid = _inputs(binary, seed=10 + need)
  base = np.asarray(fn(x, where=valid))
  junk = np.where(valid, x, np.float32(np.nan))  # NaN where masked: ignored
  np.testing.assert_array_equal(np.asarray(fn(junk, where=valid)), base)
  if not binary:
    huge = np.where(valid, x, np.float32(-1e30))
    np.testing.assert_array_equal(np.asarray(fn(huge, where=valid)), base)
  # A NaN among the valid samples of one group makes that group NaN, no other.
  row = next(b for b in range(x.shape[0]) if valid[b].sum() >= max(need, 1))
  col = np.flatnonzero(valid[row])[0]
  poisoned = x.copy()
  poisoned[row, col] = np.nan
  out = np.asarray(fn(poisoned, where=valid))
  others = np.arange(x.shape[0]) != row
  case = request.node.callspec.id
  if case.startswith("pass_at_k_posterior") and case.endswith(("_lo", "_hi")):
    # The credible bounds go through jax.scipy.special.betainc, whose continued fraction
    # iterates until every element of the batch converges: another group's parameters can
    # add iterations, which can move a quantile p by an ulp where XLA does not fuse the
    # updates, and 1 − (1 − p)^k by up to about k ulp (float32: k · 1.2e-7 relative).
    np.testing.assert_allclose(out[others], base[others], rtol=12 * 2.4e-7, atol=0)
  else:
    np.testing.assert_array_equal(out[others], base[others])
  if kind == "estimate":
    assert np.isnan(out[row])
  else:
    assert np.all(np.isnan(out[row][valid[row]])) and np.all(out[row][~valid[row]] == 0)


@pytest.mark.parametrize(
  "fn, need",
  [
    (_P(maxk.max_at_k_advantages, k=3, baseline="loo"), 3),
    (_P(maxk.max_at_k_advantages, k=2, baseline="mean_std"), 2),
    (maxk.grpo_advantages, 1),
    (maxk.rloo_advantages, 2),
    (_P(maxk.max_at_k, k=2), 2),
    (lambda x, where=None: maxk.max_at_k_curve(x, where=where)[..., 1], 2),
    (lambda x, where=None: maxk.max_at_k_curve_variance(x, where=where)[..., 0], 2),
    (
      lambda x, where=None: maxk.selected_at_k_advantages(jnp.floor(x), x, 2, where=where),
      2,
    ),
  ],
)
def test_gradients_equal_those_of_the_compacted_call(fn, need):
  x, valid = _inputs(False, seed=3)
  x = x + np.linspace(0, 0.01, x.size, dtype=np.float32).reshape(x.shape)  # no ties
  cot = np.random.default_rng(0).normal(size=x.shape).astype(np.float32)
  per_sample = fn(x[:1]).ndim == 2

  # Each gradient is one jitted program (eagerly, the forward and the transpose compile
  # apart), with the mask a constant as in the eager call.
  weights = cot if per_sample else cot[:, 0]
  got = np.asarray(jax.jit(jax.grad(lambda v: jnp.sum(fn(v, where=valid) * weights)))(x))
  assert np.all(got[~valid] == 0)
  # The cotangent is an argument, so groups of one size share one compiled program.
  dense_grad = jax.jit(jax.grad(lambda v, c: jnp.sum(fn(v) * c)))
  for b in range(x.shape[0]):
    if valid[b].sum() < need:
      assert np.all(got[b] == 0)
      continue
    c = cot[b][valid[b]] if per_sample else cot[b, 0]
    want = dense_grad(x[b][valid[b]], c)
    # Float32 rounding of the mean and std differs between the two computations,
    # relative to the gradients' overall size.
    atol = 1e-5 * float(np.abs(got).max())
    np.testing.assert_allclose(got[b][valid[b]], want, rtol=1e-4, atol=atol)


def test_where_broadcasts_and_bad_where_is_named():
  x, _ = _inputs(False, seed=4)
  row = np.array([True, False, True, True, False])
  np.testing.assert_array_equal(
    np.asarray(maxk.max_at_k(x, 2, where=row)),
    np.asarray(maxk.max_at_k(x[:, row], 2)),
  )
  with pytest.raises(ValueError, match="where must be a bool array"):
    maxk.max_at_k(x, 2, where=row.astype(np.int32))
  with pytest.raises(ValueError, match="where of shape"):
    maxk.max_at_k_advantages(x, 2, where=np.ones((3, 5), bool))
  with pytest.raises(ValueError, match="correct must hold only 0/1"):
    maxk.pass_at_k(np.array([[1.0, 0.5]]), 1, where=np.array([[True, True]]))
  # Masked entries are not validated: a sentinel there is fine.
  assert float(maxk.pass_at_k(np.array([1.0, -1.0]), 1, where=np.array([True, False]))) == 1.0


@pytest.mark.parametrize("k", [1, 3])
def test_off_policy_weights_and_surrogate_equal_the_compacted_calls(k):
  x, valid = _inputs(False, seed=30 + k)
  lr = (0.3 * np.random.default_rng(k).normal(size=x.shape)).astype(np.float32)
  lr_junk = np.where(valid, lr, np.float32(np.nan))  # masked log-ratios are ignored too
  for method in ("exact", "first_order"):
    got = np.asarray(maxk.max_at_k_advantages_off_policy(x, lr_junk, k, method=method, where=valid))
    want = np.zeros(x.shape)
    for b in range(x.shape[0]):
      if valid[b].sum() >= k:
        v = valid[b]
        want[b, v] = maxk.max_at_k_advantages_off_policy(x[b][v], lr[b][v], k, method=method)
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=2e-6)
  # The surrogate: J of the valid samples (0 below k), and its gradient the exact weights.
  zeros = np.zeros_like(lr)
  value, grad = jax.value_and_grad(
    lambda lp: jnp.sum(maxk.max_at_k_surrogate(lp, zeros, x, k, where=valid)), argnums=0
  )(lr)
  want_value = sum(
    float(maxk.max_at_k_surrogate(lr[b][valid[b]], zeros[b][valid[b]], x[b][valid[b]], k))
    for b in range(x.shape[0])
    if valid[b].sum() >= k
  )
  assert float(value) == pytest.approx(want_value, rel=1e-5, abs=1e-5)
  exact = maxk.max_at_k_advantages_off_policy(x, lr, k, where=valid)
  np.testing.assert_allclose(grad, exact, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("distribution", ["normal", "t"])
def test_across_prompts_where_selects_the_prompts_of_each_row(distribution):
  rng = np.random.default_rng(8)
  a, b = rng.normal(size=(2, 5, 9)).astype(np.float32)
  v = rng.random((5, 9)).astype(np.float32)
  valid = rng.random((5, 9)) < 0.6
  valid[0] = True
  valid[1] = False
  valid[1, 3] = True  # one prompt: no standard error, NaN
  junk_a = np.where(valid, a, np.float32(np.nan))  # masked prompts are ignored
  got = {
    "mean": maxk.mean_with_interval(junk_a, where=valid, distribution=distribution),
    "paired": maxk.paired_difference(junk_a, b, where=valid, distribution=distribution),
    "split": maxk.variance_split(junk_a, v, where=valid),
  }
  # Prompts on axis 0 instead: the same.
  by_axis0 = maxk.mean_with_interval(junk_a.T, axis=0, where=valid.T, distribution=distribution)
  np.testing.assert_array_equal(np.asarray(by_axis0.mean), np.asarray(got["mean"].mean))
  for row in range(5):
    keep = valid[row]
    want = {
      "mean": maxk.mean_with_interval(a[row][keep], distribution=distribution)
      if keep.sum() >= 2
      else None,
      "paired": maxk.paired_difference(a[row][keep], b[row][keep], distribution=distribution)
      if keep.sum() >= 2
      else None,
      "split": maxk.variance_split(a[row][keep], v[row][keep]) if keep.sum() >= 2 else None,
    }
    for name, result in got.items():
      values = np.array([float(part[row]) for part in result])
      if want[name] is None:
        assert np.all(np.isnan(values)), (name, row)
      else:
        np.testing.assert_allclose(values, [float(x) for x in want[name]], rtol=1e-5, atol=1e-7)


def test_bayes_at_n_averages_the_ragged_posteriors():
  x, valid = _inputs(True, seed=40)
  valid[0, 0] = True  # every prompt has a valid sample
  got = maxk.bayes_at_n(x, 2, where=valid)
  posts = [maxk.pass_at_k_posterior(x[b][valid[b]], 2) for b in range(x.shape[0])]
  assert float(got.mean) == pytest.approx(np.mean([float(p.mean) for p in posts]), rel=1e-6)
  want_se = np.sqrt(np.sum([float(p.stderr) ** 2 for p in posts])) / x.shape[0]
  assert float(got.stderr) == pytest.approx(want_se, rel=1e-6)


@pytest.mark.parametrize("k_frac", [0.0, 0.5])
def test_float32_precision_at_n_4096_matches_dense_tolerance(k_frac):
  """Masked groups of m ≈ 3000 of n = 4096: within the dense test's 2e-6 · max|a|
  (mean_std 5e-5) of float64 NumPy on the valid samples."""
  n = 4096
  rng = np.random.default_rng(7)
  r32 = rng.random((2, n)).astype(np.float32)
  valid = np.zeros((2, n), bool)
  valid[0, rng.permutation(n)[:3001]] = True
  valid[1, rng.permutation(n)[:3500]] = True
  k = max(1, int(k_frac * 3001))
  for baseline in maxk.BASELINES:
    got = np.asarray(maxk.max_at_k_advantages(r32, k, baseline=baseline, where=valid), np.float64)
    for b in range(2):
      want = enumeration.advantages_float64(r32[b][valid[b]].astype(np.float64)[None], k, baseline)[
        0
      ]
      rtol = 5e-5 if baseline == "mean_std" else 2e-6
      err = np.abs(got[b][valid[b]] - want).max()
      assert err <= rtol * np.abs(want).max(), (k, baseline, b, err)
  estimate = np.asarray(maxk.max_at_k(r32, k, where=valid), np.float64)
  for b in range(2):
    want = enumeration.max_at_k_float64(r32[b][valid[b]].astype(np.float64), k)
    assert abs(estimate[b] - want) <= 1e-5 * abs(want)


def test_rank_objectives_use_the_tables_of_each_group_size():
  """n = 512 with m = 301 and 400 valid samples: each group's values are the dense
  call's on its valid samples (the same tables, so the dense accuracy carries over)."""
  n, weights = 512, maxk.rank_weights("upper_tail_mean", 64, alpha=0.25)
  rng = np.random.default_rng(11)
  r = rng.normal(size=(2, n)).astype(np.float32)
  valid = np.zeros((2, n), bool)
  valid[0, rng.permutation(n)[:301]] = True
  valid[1, rng.permutation(n)[:400]] = True
  got = np.asarray(maxk.order_stat_advantages(r, weights, where=valid))
  estimate = np.asarray(maxk.order_stat_at_k(r, weights, where=valid))
  for b in range(2):
    want = np.asarray(maxk.order_stat_advantages(r[b][valid[b]], weights))
    np.testing.assert_allclose(got[b][valid[b]], want, rtol=0, atol=1e-6 * np.abs(want).max())
    want_u = float(maxk.order_stat_at_k(r[b][valid[b]], weights))
    assert abs(estimate[b] - want_u) <= 1e-6 * abs(want_u)


# (curve over k, needs two samples per k (the variances), binary input).
_CURVES = [
  pytest.param(maxk.pass_at_k_curve, False, True, id="pass_at_k_curve"),
  pytest.param(maxk.pass_hat_k_curve, False, True, id="pass_hat_k_curve"),
  pytest.param(maxk.max_at_k_curve, False, False, id="max_at_k_curve"),
  pytest.param(maxk.pass_at_k_curve_variance, True, True, id="pass_at_k_curve_variance"),
  pytest.param(maxk.max_at_k_curve_variance, True, False, id="max_at_k_curve_variance"),
]


def _compacted_curve(fn, x, valid, pairs):
  """The dense curve of each group's m valid samples, NaN at every k it lacks."""
  n = x.shape[-1]
  out = np.full((x.shape[0], n // 2 if pairs else n), np.nan)
  for b in range(x.shape[0]):
    if valid[b].sum() >= (2 if pairs else 1):
      dense = np.asarray(fn(x[b][valid[b]]), np.float64)
      out[b, : dense.shape[-1]] = dense
  return out


@pytest.mark.parametrize("fn, pairs, binary", _CURVES)
def test_each_group_curve_equals_the_dense_curve_of_its_valid_samples(fn, pairs, binary):
  x, valid = _inputs(binary, seed=50, shape=(14, 7))
  if not binary:  # infinite rewards follow the dense call too
    x[0, :2] = -np.inf
    x[1, 3] = np.inf
    x[2, :3] = -np.inf
  with np.errstate(invalid="ignore"):
    want = _compacted_curve(fn, x, valid, pairs)
  got = np.asarray(fn(x, where=valid), np.float64)
  np.testing.assert_allclose(got, want, rtol=2e-6, atol=2e-6)
  # Jitted with a traced mask and vmapped over a leading axis, in one compiled program.
  x2, valid2 = x.reshape(2, 7, -1), valid.reshape(2, 7, -1)
  mapped = jax.jit(jax.vmap(lambda v, w: fn(v, where=w)))(x2, valid2)
  np.testing.assert_allclose(
    np.asarray(mapped, np.float64).reshape(got.shape), got, rtol=1e-6, atol=1e-7
  )
  # All valid is the dense call (where=None is the dense path, unchanged).
  np.testing.assert_allclose(
    np.asarray(fn(x, where=np.ones(7, bool))), np.asarray(fn(x)), rtol=2e-6, atol=2e-6
  )
  # Masked values do not matter; a NaN among the valid samples makes its group NaN only.
  junk = np.where(valid, x, np.float32(np.nan))
  np.testing.assert_array_equal(np.asarray(fn(junk, where=valid)), got.astype(np.float32))
  row = 13
  poisoned = x.copy()
  poisoned[row, np.flatnonzero(valid[row])[0]] = np.nan
  out = np.asarray(fn(poisoned, where=valid))
  assert np.all(np.isnan(out[row]))
  np.testing.assert_array_equal(out[:row], got[:row].astype(np.float32))
  with pytest.raises(ValueError, match="where of shape"):
    fn(x, where=np.ones((3, 7), bool))
  with pytest.raises(ValueError, match="where must be a bool array"):
    fn(x, where=valid.astype(np.int32))


def test_success_objective_advantages_with_traced_coefficients():
  x, valid = _inputs(True, seed=60)
  coefficients = np.array([1.0, -2.0, 0.5], np.float32)
  host = maxk.success_objective_advantages(x, coefficients, where=valid)
  traced = jax.jit(lambda c: maxk.success_objective_advantages(x, c, where=valid))(coefficients)
  np.testing.assert_allclose(np.asarray(traced), np.asarray(host), rtol=1e-5, atol=1e-6)


def _majority_inputs(seed, shape=(9, 6)):
  rng = np.random.default_rng(seed)
  ids = rng.integers(-1, 3, size=shape)  # -1: abstentions
  correct = ids == 1
  valid = rng.random(shape) < 0.6
  for m in range(shape[-1] + 1):
    valid[m] = False
    valid[m, rng.permutation(shape[-1])[:m]] = True
  return ids, correct, valid


@pytest.mark.parametrize("k, tie", [(1, "uniform"), (3, "uniform"), (2, "wrong")])
def test_majority_vote_equals_the_dense_call_on_the_valid_samples(k, tie):
  ids, correct, valid = _majority_inputs(70 + k)
  got = np.asarray(maxk.maj_at_k(ids, correct, k, tie=tie, where=valid), np.float64)
  for g in range(ids.shape[0]):
    v = valid[g]
    want = float(maxk.maj_at_k(ids[g][v], correct[g][v], k, tie=tie)) if v.sum() >= k else np.nan
    np.testing.assert_allclose(got[g], want, rtol=2e-6, atol=2e-6, err_msg=f"group {g}")
  # Jitted with a traced mask and vmapped over a leading axis, in one compiled program.
  mapped = jax.jit(jax.vmap(lambda i, c, w: maxk.maj_at_k(i, c, k, tie=tie, where=w)))(
    ids.reshape(3, 3, -1), correct.reshape(3, 3, -1), valid.reshape(3, 3, -1)
  )
  np.testing.assert_allclose(np.asarray(mapped).reshape(got.shape), got, rtol=1e-6, atol=1e-7)
  for baseline in ("none", "loo", "loo_centered", "loo_minus_one"):
    fn = functools.partial(maxk.maj_at_k_advantages, k=k, tie=tie, baseline=baseline)
    got_a = np.asarray(fn(ids, correct, where=valid), np.float64)
    want_a = np.zeros(ids.shape)
    for g in range(ids.shape[0]):
      v = valid[g]
      if v.sum() >= k:
        want_a[g, v] = np.asarray(fn(ids[g][v], correct[g][v]))
    np.testing.assert_allclose(got_a, want_a, rtol=2e-6, atol=2e-6, err_msg=baseline)
    assert np.all(got_a[~valid] == 0)


def test_majority_vote_masked_values_do_not_matter_and_nan_stays_in_its_group():
  ids, correct, valid = _majority_inputs(80)
  values = correct.astype(np.float32)
  base = np.asarray(maxk.maj_at_k_advantages(ids, values, 2, where=valid))
  junk_ids = np.where(valid, ids, 7)  # a masked sample joins no answer
  junk = np.where(valid, values, np.float32(np.nan))
  np.testing.assert_array_equal(
    np.asarray(maxk.maj_at_k_advantages(junk_ids, junk, 2, where=valid)), base
  )
  row = 8
  poisoned = values.copy()
  poisoned[row, np.flatnonzero(valid[row])[0]] = np.nan
  out = np.asarray(maxk.maj_at_k_advantages(ids, poisoned, 2, where=valid))
  assert np.all(np.isnan(out[row][valid[row]])) and np.all(out[row][~valid[row]] == 0)
  np.testing.assert_array_equal(out[:row], base[:row])
  assert np.isnan(float(maxk.maj_at_k(ids, poisoned, 2, where=valid)[row]))
  with pytest.raises(ValueError, match="where of shape"):
    maxk.maj_at_k(ids, values, 2, where=np.ones((2, 6), bool))


def test_every_group_wise_function_takes_where_keyword_only():
  for name in sorted(nan_groups_test.GROUP_WISE):
    param = inspect.signature(getattr(maxk, name)).parameters.get("where")
    assert param is not None, f"{name} takes no where="
    assert param.kind is inspect.Parameter.KEYWORD_ONLY and param.default is None, name
