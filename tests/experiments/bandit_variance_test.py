"""Tests for experiments.bandits.{estimators,variance} and the bandit_variance binary."""

import csv
import json
import os
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from experiments.bandits import estimators as estimators_lib
from experiments.bandits import variance
import maxk
from tests import REPO_ROOT

REPO = REPO_ROOT
UNBIASED = ("none", "loo", "loo_centered", "loo_minus_one", "off_policy_exact")


def test_registry_names_are_the_results_csv_names():
  assert estimators_lib.ESTIMATOR_NAMES == (
    "none",
    "loo",
    "loo_centered",
    "loo_minus_one",
    "mean_std",
    "grpo",
    "rloo",
    "max_minus_second",
    "pass_at_k_training",
    "off_policy_exact",
    "off_policy_first_order",
  )
  assert estimators_lib.parse_names(["all"]) == estimators_lib.ESTIMATOR_NAMES
  with pytest.raises(ValueError, match="valid options"):
    estimators_lib.get("loo_minus_two")
  with pytest.raises(ValueError, match="repeat"):
    estimators_lib.parse_names(["loo", "loo"])


@pytest.mark.parametrize("name", estimators_lib.ESTIMATOR_NAMES)
def test_estimators_shapes_and_on_policy_limit(name):
  rewards = jnp.asarray(np.random.default_rng(0).random((3, 8)), jnp.float32)
  est = estimators_lib.get(name)
  out = jax.jit(lambda r, lr: est(r, 4, log_ratio=lr, pass_threshold=0.5))(
    rewards, jnp.zeros_like(rewards)
  )
  assert out.shape == (3, 8) and bool(jnp.all(jnp.isfinite(out)))
  if est.off_policy:  # At log_ratio = 0 both methods equal the plain estimator.
    np.testing.assert_allclose(
      out, maxk.max_at_k_advantages(rewards, 4, baseline="none"), rtol=1e-5, atol=1e-6
    )


def test_expected_unbiased_flags():
  get = estimators_lib.get
  assert all(get(name).expected_unbiased(8, 4, 0.5) for name in UNBIASED)
  assert not get("off_policy_first_order").expected_unbiased(8, 4, 0.5)
  assert get("off_policy_first_order").expected_unbiased(8, 4, 0.0)
  assert get("off_policy_first_order").expected_unbiased(8, 1, 0.5)
  assert get("max_minus_second").expected_unbiased(8, 8)
  assert not get("max_minus_second").expected_unbiased(8, 4)
  assert not any(
    get(n).expected_unbiased(8, 4) for n in ("mean_std", "grpo", "rloo", "pass_at_k_training")
  )


def test_gradient_estimates_matches_manual_formula():
  setting = variance.gaussian_setting(theta=1.0, sigma=0.1, shift=0.05)
  ests = [estimators_lib.get("loo_minus_one"), estimators_lib.get("off_policy_exact")]
  key = jax.random.key(3)
  got = variance.gradient_estimates(
    setting.policy, setting.target, setting.old, key, n=8, k=4, estimators=ests, pass_threshold=0.5
  )
  assert got.shape == (2, 1)
  key_on, key_off = jax.random.split(key)
  x = 1.0 + 0.1 * jax.random.normal(key_on, (8,))
  r = jnp.where((x >= 0) & (x <= 1), x**2, 0.0)
  want = jnp.sum(maxk.max_at_k_advantages(r, 4) * (x - 1.0) / 0.01)
  np.testing.assert_allclose(got[0, 0], want, rtol=1e-5)
  x_old = 0.95 + 0.1 * jax.random.normal(key_off, (8,))
  r_old = jnp.where((x_old >= 0) & (x_old <= 1), x_old**2, 0.0)
  log_ratio = (-0.5 * ((x_old - 1.0) / 0.1) ** 2) - (-0.5 * ((x_old - 0.95) / 0.1) ** 2)
  a = maxk.max_at_k_advantages_off_policy(r_old, log_ratio, 4, method="exact")
  np.testing.assert_allclose(got[1, 0], jnp.sum(a * (x_old - 1.0) / 0.01), rtol=1e-4)


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


def _run_binary(out_dir, *extra):
  env = {
    **os.environ,
    "PYTHONPATH": REPO + os.pathsep + os.environ.get("PYTHONPATH", ""),
    "JAX_PLATFORMS": "cpu",
  }
  subprocess.run(
    [
      sys.executable,
      "-m",
      "experiments.bandit_variance",
      f"--out_dir={out_dir}",
      "--num_replicates=256",
      "--num_arms=3",
      *extra,
    ],
    cwd=REPO,
    env=env,
    check=True,
    capture_output=True,
    timeout=300,
  )


def test_binary_end_to_end(tmp_path):
  out = tmp_path / "run"
  _run_binary(out, "--ns=2,4", "--ks=2")
  with open(out / "results.csv") as f:
    rows = list(csv.DictReader(f))
  for column in (
    "policy",
    "estimator",
    "n",
    "k",
    "mean",
    "bias",
    "variance",
    "stderr",
    "exact_gradient",
    "bias_z",
    "expected_unbiased",
  ):
    assert column in rows[0]
  assert {r["estimator"] for r in rows} == set(estimators_lib.ESTIMATOR_NAMES)
  assert {r["policy"] for r in rows} == {"gaussian", "categorical"}
  # 2 policies x 2 (n, k) cells x 11 estimators.
  assert len(rows) == 2 * 2 * 11
  for r in rows:
    float(r["mean"]), float(r["bias"]), float(r["stderr"])
    assert float(r["variance"]) >= 0
  config = json.loads((out / "config.json").read_text())
  assert config["num_replicates"] == 256 and config["theta"] == 1.0
  assert config["out_dir"] == str(out)
  for policy in ("gaussian", "categorical"):
    assert (out / f"variance_{policy}.png").stat().st_size > 0
    assert (out / f"bias_{policy}.png").stat().st_size > 0
  # Same seed and flags: identical results (a cell's draws do not depend on which
  # other estimators or cells run, so a sub-run reproduces its rows).
  again = tmp_path / "again"
  _run_binary(again, "--ns=2", "--ks=2", "--policies=gaussian", "--estimators=loo_minus_one")
  with open(again / "results.csv") as f:
    rows_again = list(csv.DictReader(f))
  assert rows_again == [
    r
    for r in rows
    if r["policy"] == "gaussian" and r["n"] == "2" and r["estimator"] == "loo_minus_one"
  ]
