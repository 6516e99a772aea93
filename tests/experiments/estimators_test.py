"""Tests of experiments.estimators, the registry shared by the bandit and LM experiments."""

import dataclasses
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from experiments import estimators as estimators_lib
from experiments import objectives
import maxk

UNBIASED = ("none", "loo", "loo_centered", "loo_minus_one", "off_policy_exact")
ALL = list(estimators_lib.ESTIMATORS.values())


# The built-in estimators' names, as results.csv files name them (registration order).
# README's "Adding an estimator" appends records: the tests below read the registry and
# check these names among them, so a new record needs no edit here.
BUILTIN_MAX = (
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


def _in_order(names, within):
  """Whether ``names`` appear in ``within`` in this order (others may lie between)."""
  position = {name: i for i, name in enumerate(within)}
  return all(n in position for n in names) and [position[n] for n in names] == sorted(
    position[n] for n in names
  )


def test_registry_names_are_the_results_csv_names():
  names = estimators_lib.ESTIMATOR_NAMES
  assert len(set(names)) == len(names)
  assert _in_order(BUILTIN_MAX, names)
  assert estimators_lib.names("max") == names
  rank = ("none", "loo", "loo_centered")
  assert estimators_lib.names("top_m")[:3] == estimators_lib.names("min")[:3] == rank
  assert _in_order((*rank, "maxrl", "maxrl_no_cv"), estimators_lib.names("maxrl"))
  for (objective, name), e in estimators_lib.ESTIMATORS.items():
    assert (e.objective, e.name) == (objective, name)
    assert estimators_lib.get(name, objective) is e


def test_every_record_is_complete():
  for e in ALL:
    assert e.objective in objectives.OBJECTIVES
    assert re.fullmatch(r"#[0-9a-f]{6}", e.color) and e.marker and e.label, e.name
    assert e.off_policy == (e.kind == "off_policy") == (e.method is not None), e.name
    assert e.unbiased.rule, e.name
  assert [e.method for e in estimators_lib.entries(kind="off_policy")] == ["exact", "first_order"]
  assert estimators_lib.by_method("first_order").name == "off_policy_first_order"
  with pytest.raises(ValueError, match="surrogate"):
    estimators_lib.by_method("surrogate")


def test_parse_names():
  assert estimators_lib.parse_names(["all"]) == estimators_lib.ESTIMATOR_NAMES
  assert estimators_lib.parse_names(["grpo", "loo"]) == ("grpo", "loo")
  with pytest.raises(ValueError, match="valid options"):
    estimators_lib.get("loo_minus_two")
  with pytest.raises(ValueError, match="valid options"):
    estimators_lib.get("maxrl")  # A MaxRL peer, not a max@k estimator.
  with pytest.raises(ValueError, match="repeat"):
    estimators_lib.parse_names(["loo", "loo"])
  with pytest.raises(ValueError, match="at least one"):
    estimators_lib.parse_names([])


@pytest.mark.parametrize("est", ALL, ids=lambda e: f"{e.objective}-{e.name}")
def test_estimators_shapes_and_on_policy_limit(est):
  rewards = jnp.asarray(np.random.default_rng(0).random((3, 8)), jnp.float32)
  out = jax.jit(lambda r, lr: est(r, 4, log_ratio=lr, pass_threshold=0.5))(
    rewards, jnp.zeros_like(rewards)
  )
  assert out.shape == (3, 8) and bool(jnp.all(jnp.isfinite(out)))
  if est.off_policy:  # At log_ratio = 0 both methods equal the plain estimator.
    np.testing.assert_allclose(
      out, maxk.max_at_k_advantages(rewards, 4, baseline="none"), rtol=1e-5, atol=1e-6
    )


def test_estimators_are_the_maxk_functions():
  rewards = jnp.asarray(np.random.default_rng(1).random((2, 6)), jnp.float32)
  get = estimators_lib.get
  np.testing.assert_array_equal(
    get("loo")(rewards, 3), maxk.max_at_k_advantages(rewards, 3, baseline="loo")
  )
  np.testing.assert_array_equal(get("grpo")(rewards, 3), maxk.grpo_advantages(rewards))
  np.testing.assert_array_equal(get("rloo")(rewards, 5), maxk.rloo_advantages(rewards))
  correct = (rewards >= 0.7).astype(jnp.float32)
  np.testing.assert_array_equal(
    get("pass_at_k_training")(rewards, 2, pass_threshold=0.7),
    maxk.pass_at_k_training_advantages(correct, 2),
  )
  log_ratio = jnp.broadcast_to(0.1 * jnp.arange(6.0) - 0.2, (2, 6))
  np.testing.assert_array_equal(
    get("off_policy_first_order")(rewards, 2, log_ratio=log_ratio),
    maxk.max_at_k_advantages_off_policy(rewards, log_ratio, 2, method="first_order"),
  )
  # Rank objectives: order_stat_advantages with the objective's weights (top 2 of 3:
  # weights [0, 1/2, 1/2]), MaxRL on the binarised rewards over n.
  np.testing.assert_array_equal(
    get("loo", "top_m")(rewards, 3, top_m=2),
    maxk.order_stat_advantages(rewards, np.array([0.0, 0.5, 0.5]), baseline="loo"),
  )
  with pytest.raises(ValueError, match="top_m=4"):
    get("loo", "top_m")(rewards, 3, top_m=4)
  np.testing.assert_allclose(
    get("maxrl_no_cv", "maxrl")(rewards, 3, pass_threshold=0.7),
    maxk.maxrl_advantages(correct, control_variate=False) / 6,
  )


def test_expected_unbiased_and_uses_k():
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
  assert [get("maxrl", "maxrl").expected_unbiased(4, k) for k in (2, 3, 4)] == [0, 1, 0]
  assert [get("maxrl_no_cv", "maxrl").expected_unbiased(4, k) for k in (2, 3, 4)] == [0, 0, 1]
  k_free = {n for n in BUILTIN_MAX if not get(n).uses_k}
  assert k_free == {"grpo", "rloo", "max_minus_second"}


def test_register_refuses_clashes_and_registered_is_temporary():
  toy = dataclasses.replace(estimators_lib.get("loo"), name="toy_loo", label="toy")
  with estimators_lib.registered(toy):
    assert estimators_lib.get("toy_loo") is toy
    assert estimators_lib.names()[-1] == "toy_loo"
    assert estimators_lib.parse_names(["all"])[-1] == "toy_loo"
    with pytest.raises(ValueError, match="already registered"):
      estimators_lib.register(toy)
  assert "toy_loo" not in estimators_lib.names()
  with pytest.raises(ValueError, match="objective"):
    estimators_lib.register(dataclasses.replace(toy, objective="median"))
  with pytest.raises(ValueError, match="method"):
    estimators_lib.register(dataclasses.replace(toy, kind="off_policy"))
