"""Tests of experiments.bandits.variance: the bias/variance Monte Carlo harness."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from experiments import estimators as estimators_lib
from experiments.bandits import variance
import maxk

UNBIASED = ("none", "loo", "loo_centered", "loo_minus_one", "off_policy_exact")


@jax.jit
def _manual_gaussian_gradients(key):
  """The manual on- and off-policy gradient estimates, one compilation (not one per op)."""
  key_on, key_off = jax.random.split(key)
  x = 1.0 + 0.1 * jax.random.normal(key_on, (8,))
  r = jnp.where((x >= 0) & (x <= 1), x**2, 0.0)
  want_on = jnp.sum(maxk.max_at_k_advantages(r, 4) * (x - 1.0) / 0.01)
  x_old = 0.95 + 0.1 * jax.random.normal(key_off, (8,))
  r_old = jnp.where((x_old >= 0) & (x_old <= 1), x_old**2, 0.0)
  log_ratio = (-0.5 * ((x_old - 1.0) / 0.1) ** 2) - (-0.5 * ((x_old - 0.95) / 0.1) ** 2)
  a = maxk.max_at_k_advantages_off_policy(r_old, log_ratio, 4, method="exact")
  return want_on, jnp.sum(a * (x_old - 1.0) / 0.01)


def test_gradient_estimates_matches_manual_formula():
  setting = variance.gaussian_setting(theta=1.0, sigma=0.1, shift=0.05)
  ests = [estimators_lib.get("loo_minus_one"), estimators_lib.get("off_policy_exact")]
  key = jax.random.key(3)
  # Jitted (as monte_carlo runs it): one compilation instead of one per eager op.
  estimates = functools.partial(
    variance.gradient_estimates, setting.policy, n=8, k=4, estimators=ests, pass_threshold=0.5
  )
  got = jax.jit(estimates)(setting.target, setting.old, key)
  assert got.shape == (2, 1)
  got = np.asarray(got)
  want_on, want_off = _manual_gaussian_gradients(key)
  np.testing.assert_allclose(got[0, 0], want_on, rtol=1e-5)
  np.testing.assert_allclose(got[1, 0], want_off, rtol=1e-4)


def test_unbiased_estimators_are_unbiased_on_the_gaussian_toy():
  """PKPO's setting: |bias| within a few standard errors for every unbiased estimator."""
  setting = variance.gaussian_setting(theta=1.0, sigma=0.1, shift=0.05)
  rows = variance.run_study(
    [setting],
    ns=[8],
    ks=[4],
    num_replicates=40_000,
    estimator_names=list(estimators_lib.ESTIMATOR_NAMES),
    seed=0,
    pass_threshold=0.5,
  )
  by_name = {r["estimator"]: r for r in rows}
  exact = setting.policy.exact_gradient(setting.target, 4)[0]
  for name in UNBIASED:
    row = by_name[name]
    assert row["exact_gradient"] == exact
    # 5 two-sided tests at |z| < 4: a false alarm has probability < 4e-4.
    assert abs(row["bias_z"]) < 4.0, row
    assert row["expected_unbiased"]
  # The harness has power: the biased estimators' bias is many standard errors.
  for name in ("mean_std", "grpo", "rloo", "max_minus_second", "off_policy_first_order"):
    assert abs(by_name[name]["bias_z"]) > 10.0, by_name[name]
  # PKPO Fig. 4: the loo-minus-one baseline has the lowest variance of the unbiased ones.
  assert by_name["loo_minus_one"]["variance"] == min(by_name[n]["variance"] for n in UNBIASED)
  assert by_name["none"]["variance"] > 10 * by_name["loo_minus_one"]["variance"]


def test_unbiased_estimators_are_unbiased_on_the_categorical_bandit():
  """Per-coordinate z-scores of the Monte Carlo mean against jax.grad of the exact max@k."""
  setting = variance.categorical_setting(6, seed=1, shift=0.3)
  ests = [estimators_lib.get(name) for name in UNBIASED]
  exact = setting.policy.exact_gradient(setting.target, 3)
  mean, var = variance.monte_carlo(
    setting,
    jax.random.key(0),
    n=6,
    k=3,
    num_replicates=40_000,
    estimators=ests,
    pass_threshold=0.5,
    center=exact,
  )
  z = (mean - exact) / np.sqrt(var / 40_000)
  # 5 estimators x 6 coordinates; |z| < 4.5 for all has false-alarm probability < 2e-4.
  assert np.all(np.abs(z) < 4.5), z
  # And the vector summary is of order 1 (its square has expectation 1).
  for e, est in enumerate(ests):
    row = variance.summarize(
      policy="categorical",
      estimator=est,
      n=6,
      k=3,
      shift=0.3,
      mean=mean[e],
      variance=var[e],
      exact=exact,
      num_replicates=40_000,
    )
    assert 0 <= row["bias_z"] < 4.0, row
    assert row["cosine"] > 0.9


def test_run_study_cells_skip_k_above_n():
  kwargs = dict(
    ns=[2, 3],
    ks=[1, 3],
    num_replicates=64,
    estimator_names=["loo", "grpo"],
    seed=7,
    pass_threshold=0.5,
  )
  rows = variance.run_study([variance.categorical_setting(4, seed=0)], **kwargs)
  assert [(r["n"], r["k"], r["estimator"]) for r in rows] == [
    (2, 1, "loo"),
    (2, 1, "grpo"),
    (3, 1, "loo"),
    (3, 1, "grpo"),
    (3, 3, "loo"),
    (3, 3, "grpo"),
  ]
  with pytest.raises(ValueError, match="k <= n"):
    variance.run_study([variance.gaussian_setting()], **{**kwargs, "ns": [2], "ks": [3]})
