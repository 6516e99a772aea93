"""Both sorting paths (counted ranks and XLA's sort) agree exactly, with ties and NaN."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import maxk
from maxk._src import sorting
from tests.maxk import enumeration


@pytest.fixture(params=["pairwise", "xla"])
def sort_path(request, monkeypatch):
  use = request.param == "pairwise"
  monkeypatch.setattr(sorting, "_use_pairwise", lambda shape: use)
  jax.clear_caches()  # the jitted estimators must be retraced with the chosen path
  yield request.param
  jax.clear_caches()


@jax.jit
def _sort_and_unsort(x):
  """``sort_last`` and ``unsort_last`` of its result, in one program."""
  xs, order = sorting.sort_last(x)
  return xs, order, sorting.unsort_last(xs, order)


def test_stable_permutation_with_ties_and_nan(sort_path):
  x = np.array(
    [
      [0.5, 0.1, 0.5, np.nan, -1.0, 0.1, 0.5],
      [2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0],
      [np.inf, -np.inf, 0.0, -0.0, 3.0, np.nan, 1.0],
    ],
    np.float32,
  )
  xs, order, back = _sort_and_unsort(jnp.asarray(x))
  np.testing.assert_array_equal(order.perm, np.argsort(x, axis=-1, kind="stable"))
  assert (order.rank is None) == (sort_path == "xla")
  np.testing.assert_array_equal(xs, np.sort(x, axis=-1))
  np.testing.assert_array_equal(back, x)


_H = 1e-3  # the forward difference's step


@functools.partial(jax.jit, static_argnames="baseline")
def _advantages_at_r_and_r_plus_hd_and_gradient(r, v, d, baseline):
  """max@k advantages (k = 3) at r and r + h d, and the gradient of Σ a · v at r."""
  f = lambda x: maxk.max_at_k_advantages(x, 3, baseline=baseline)
  g = jax.grad(lambda x: jnp.sum(f(x) * v))(r)
  return f(r), f(r + _H * d), g


@jax.jit
def _off_policy_advantages_and_surrogate_gradient(r, lr):
  off = maxk.max_at_k_advantages_off_policy(r, lr, 3)
  grad = jax.grad(lambda lp: jnp.sum(maxk.max_at_k_surrogate(lp, 0 * lp, r, 3)))(lr)
  return off, grad


def test_estimators_and_gradients_identical_on_both_paths(sort_path):
  rng = np.random.default_rng(0)
  r = rng.integers(0, 4, size=(3, 2, 7)).astype(np.float32)
  lr = (0.2 * rng.normal(size=(3, 2, 7))).astype(np.float32)
  v = rng.normal(size=(3, 2, 7)).astype(np.float32)
  # Directional derivative along d, which breaks the ties in the same order as
  # the stable sort (later index = larger), so a forward difference stays on the
  # linear piece whose gradient jax.grad returns.
  d = np.broadcast_to(np.arange(7, dtype=np.float32) * np.float32(1e-2) + np.float32(1.0), r.shape)
  for baseline in ("loo", "mean_std"):
    a, a_plus, g = _advantages_at_r_and_r_plus_hd_and_gradient(r, v, d, baseline)
    np.testing.assert_allclose(
      a, np.apply_along_axis(_reference, -1, np.asarray(r), 3, baseline), atol=1e-5
    )
    fd = (np.sum(np.asarray(a_plus) * v) - np.sum(np.asarray(a) * v)) / _H
    np.testing.assert_allclose(np.sum(np.asarray(g) * d), fd, rtol=1e-2, atol=1e-3)
  off, grad = _off_policy_advantages_and_surrogate_gradient(r, lr)
  np.testing.assert_allclose(off, grad, rtol=1e-5, atol=1e-6)


def _reference(row, k, baseline):
  return enumeration.advantages(row, k, baseline)


@jax.jit
def _sort_unsort_and_lax_sort(x):
  """``_sort_and_unsort`` and, as the reference, XLA's stable sort with the indices."""
  iota = jax.lax.broadcasted_iota(jnp.int32, x.shape, x.ndim - 1)
  return *_sort_and_unsort(x), *jax.lax.sort((x, iota), num_keys=1, is_stable=True)


@pytest.mark.parametrize("shape", [(3, 111, 64), (5, 512), (2, 1)])
def test_counting_path_matches_numpy_with_ties_nan_inf_and_signed_zeros(shape):
  rng = np.random.default_rng(0)
  x = rng.integers(-3, 4, size=shape).astype(np.float32)
  special = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0], np.float32)
  mask = rng.random(shape) < 0.2
  x[mask] = rng.choice(special, size=int(mask.sum()))
  assert sorting._use_pairwise(x.shape) == (jax.default_backend() == "cpu")  # pylint: disable=protected-access
  xs, order, back, xs_lax, perm_lax = _sort_unsort_and_lax_sort(jnp.asarray(x))
  perm = order.perm
  np.testing.assert_array_equal(perm, np.argsort(x, axis=-1, kind="stable"))
  np.testing.assert_array_equal(order.rank, np.argsort(perm, axis=-1))
  np.testing.assert_array_equal(back, x)
  np.testing.assert_array_equal(perm, perm_lax)
  np.testing.assert_array_equal(xs, xs_lax)


@pytest.mark.parametrize("dtype", [jnp.float16, jnp.bfloat16, jnp.float32])
def test_counting_path_orders_every_float_width_like_numpy(dtype):
  """The integer sort key is built from the float's own bits, for each width."""
  rng = np.random.default_rng(2)
  x = rng.normal(size=(4, 40)).astype(np.float32)
  x[:, ::7] = x[:, 1::7]  # ties
  x[0, :6] = [np.nan, np.inf, -np.inf, -0.0, 0.0, -1e-3]
  xd = x.astype(dtype)  # NumPy (ml_dtypes) rounds to the narrow width, as XLA does
  exact = xd.astype(np.float32)  # the widening keeps the order
  xs, order = jax.jit(sorting.sort_last)(jnp.asarray(xd))
  assert xs.dtype == dtype
  np.testing.assert_array_equal(order.perm, np.argsort(exact, axis=-1, kind="stable"))
  np.testing.assert_array_equal(np.asarray(xs).astype(np.float32), np.sort(exact, axis=-1))


@jax.jit
def _sort_with_valid_and_unsort(x, valid):
  xs, order = sorting.sort_last(x, valid=valid)
  return xs, order, sorting.unsort_last(xs, order)


def test_counting_path_with_valid_puts_invalid_entries_last_in_index_order():
  x = jnp.asarray([[3.0, np.nan, -1.0, np.inf, 0.0, 2.0]], jnp.float32)
  valid = jnp.asarray([[True, False, True, True, False, True]])
  xs, order, back = _sort_with_valid_and_unsort(x, valid)
  np.testing.assert_array_equal(order.perm, [[2, 5, 0, 3, 1, 4]])
  np.testing.assert_array_equal(back, x)


def test_counting_path_under_vmap_matches_the_unbatched_call():
  rng = np.random.default_rng(1)
  x = jnp.asarray(rng.integers(0, 5, size=(4, 3, 9)), jnp.float32)
  (xs, order), (xs_direct, order_direct) = jax.jit(
    lambda x: (jax.vmap(sorting.sort_last)(x), sorting.sort_last(x))
  )(x)
  np.testing.assert_array_equal(order.perm, order_direct.perm)
  np.testing.assert_array_equal(order.rank, order_direct.rank)
  np.testing.assert_array_equal(xs, xs_direct)


def test_pairwise_path_is_used_exactly_up_to_its_documented_size():
  """Regression: the module docstring said 128 while the code stopped at 64."""
  limit = sorting._PAIRWISE_MAX_N  # pylint: disable=protected-access
  on_cpu = jax.default_backend() == "cpu"
  assert sorting._use_pairwise((3, limit)) == on_cpu  # pylint: disable=protected-access
  assert sorting._use_pairwise((limit,)) == on_cpu  # pylint: disable=protected-access
  assert not sorting._use_pairwise((3, limit + 1))  # pylint: disable=protected-access
  assert f"at most {limit} samples" in sorting.__doc__
