"""NumPy in, NumPy out: every estimator takes NumPy arrays outside jit (as a PyTorch
trainer passes ``tensor.numpy()``), and ``np.asarray`` of the result is its value."""

import numpy as np
import pytest

import maxk

_RNG = np.random.default_rng(0)
_R = _RNG.random((3, 8))  # float64, as NumPy makes it
_C = _RNG.random((3, 8)) < 0.5  # bool
_LR = 0.1 * _RNG.normal(size=(3, 8))
_W = maxk.rank_weights("top_m", 3, m=2)

_CALLS = {
  "pass_at_k": lambda r, c, lr: maxk.pass_at_k(c, 3),
  "pass_at_k (0/1 ints)": lambda r, c, lr: maxk.pass_at_k(c.astype(np.int64), 3),
  "max_at_k": lambda r, c, lr: maxk.max_at_k(r, 3),
  "max_at_k_variance": lambda r, c, lr: maxk.max_at_k_variance(r, 2),
  "pass_at_k_variance": lambda r, c, lr: maxk.pass_at_k_variance(c, 2),
  "max_at_k_advantages": lambda r, c, lr: maxk.max_at_k_advantages(r, 3, baseline="loo"),
  "max_at_k_advantages (where)": lambda r, c, lr: maxk.max_at_k_advantages(r, 2, where=c),
  "max_at_k_advantages_off_policy": lambda r, c, lr: maxk.max_at_k_advantages_off_policy(r, lr, 3),
  "max_at_k_surrogate": lambda r, c, lr: maxk.max_at_k_surrogate(lr, np.zeros_like(lr), r, 3),
  "grpo_advantages": lambda r, c, lr: maxk.grpo_advantages(r),
  "rloo_advantages": lambda r, c, lr: maxk.rloo_advantages(r),
  "max_minus_second_advantages": lambda r, c, lr: maxk.max_minus_second_advantages(r),
  "pass_at_k_training_advantages": lambda r, c, lr: maxk.pass_at_k_training_advantages(c, 3),
  "maxrl_advantages": lambda r, c, lr: maxk.maxrl_advantages(c),
  "order_stat_at_k": lambda r, c, lr: maxk.order_stat_at_k(r, _W),
  "order_stat_advantages": lambda r, c, lr: maxk.order_stat_advantages(r, _W),
  "bayes_at_n": lambda r, c, lr: maxk.bayes_at_n(c, 2).mean,
  "mean_with_interval": lambda r, c, lr: maxk.mean_with_interval(r[0]).mean,
}


@pytest.mark.parametrize("name", sorted(_CALLS))
def test_numpy_inputs_give_the_same_values_as_jax_inputs(name):
  import jax.numpy as jnp

  call = _CALLS[name]
  from_numpy = np.asarray(call(_R, _C, _LR))
  assert isinstance(from_numpy, np.ndarray) and from_numpy.dtype == np.float32
  from_jax = np.asarray(
    call(jnp.asarray(_R, jnp.float32), jnp.asarray(_C), jnp.asarray(_LR, jnp.float32))
  )
  np.testing.assert_array_equal(from_numpy, from_jax)
  assert np.all(np.isfinite(from_numpy))
