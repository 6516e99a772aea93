"""The built-in estimators of :mod:`experiments.estimators`, in registration order."""

from __future__ import annotations

from collections.abc import Callable

import jax
import numpy as np

from experiments import objectives as objectives_lib
from experiments.estimators.record import ALWAYS
from experiments.estimators.record import AT_K_EQUALS_N
from experiments.estimators.record import AT_K_EQUALS_N_MINUS_ONE
from experiments.estimators.record import NEVER
from experiments.estimators.record import ON_POLICY_OR_K_ONE
from experiments.estimators.record import AdvantageFn
from experiments.estimators.record import Estimator
import maxk

_ENTRIES: list[Estimator] = []


def _max_at_k_baseline(baseline: str) -> AdvantageFn:
  def fn(rewards: jax.Array, k: int, log_ratio: jax.Array, weights: np.ndarray) -> jax.Array:
    del log_ratio, weights
    return maxk.max_at_k_advantages(rewards, k, baseline=baseline)

  return fn


def _k_free(advantages: Callable[[jax.Array], jax.Array]) -> AdvantageFn:
  def fn(rewards: jax.Array, k: int, log_ratio: jax.Array, weights: np.ndarray) -> jax.Array:
    del k, log_ratio, weights
    return advantages(rewards)

  return fn


def _pass_at_k_training(
  correct: jax.Array, k: int, log_ratio: jax.Array, weights: np.ndarray
) -> jax.Array:
  del log_ratio, weights
  return maxk.pass_at_k_training_advantages(correct, k)


def _off_policy(method: str) -> AdvantageFn:
  def fn(rewards: jax.Array, k: int, log_ratio: jax.Array, weights: np.ndarray) -> jax.Array:
    del weights
    return maxk.max_at_k_advantages_off_policy(rewards, log_ratio, k, method=method)

  return fn


def _order_stat_baseline(baseline: str) -> AdvantageFn:
  def fn(rewards: jax.Array, k: int, log_ratio: jax.Array, weights: np.ndarray) -> jax.Array:
    del k, log_ratio
    return maxk.order_stat_advantages(rewards, weights, baseline=baseline)

  return fn


def _maxrl(control_variate: bool) -> AdvantageFn:
  def fn(correct: jax.Array, k: int, log_ratio: jax.Array, weights: np.ndarray) -> jax.Array:
    del k, log_ratio, weights
    return maxk.maxrl_advantages(correct, control_variate=control_variate) / correct.shape[-1]

  return fn


# (colour, marker, label) of the max@k baselines, shared by their rank-objective namesakes.
_BASELINE_STYLES = {
  "none": ("#7f7f7f", "o", "no baseline"),
  "loo": ("#1f77b4", "s", "leave-one-out baseline"),
  "loo_centered": ("#17becf", "D", "leave-one-out baseline, centred"),
  "loo_minus_one": ("#d62728", "^", "leave-one-out baseline over n - 1"),
  "mean_std": ("#9467bd", "v", "group mean/std normalised (biased)"),
}
for _name in maxk.BASELINES:
  if _name == "leave_two_out":
    # Identically loo_centered (maxk.max_at_k_advantages): a second registry entry
    # would only duplicate loo_centered's column in every study ("all").
    continue
  _color, _marker, _label = _BASELINE_STYLES[_name]
  _ENTRIES.append(
    Estimator(
      name=_name,
      objective="max",
      kind="baseline",
      fn=_max_at_k_baseline(_name),
      uses_k=True,
      unbiased=NEVER if _name == "mean_std" else ALWAYS,
      label=f"max@k, {_label}",
      color=_color,
      marker=_marker,
    )
  )
_ENTRIES.append(
  Estimator(
    name="grpo",
    objective="max",
    kind="peer",
    fn=_k_free(maxk.grpo_advantages),
    uses_k=False,
    unbiased=NEVER,
    label="GRPO (group mean/std)",
    color="#ff7f0e",
    marker="<",
  )
)
_ENTRIES.append(
  Estimator(
    name="rloo",
    objective="max",
    kind="peer",
    fn=_k_free(maxk.rloo_advantages),
    uses_k=False,
    unbiased=NEVER,
    label="RLOO (leave-one-out mean)",
    color="#e377c2",
    marker=">",
  )
)
_ENTRIES.append(
  Estimator(
    name="max_minus_second",
    objective="max",
    kind="peer",
    fn=_k_free(maxk.max_minus_second_advantages),
    uses_k=False,
    # It equals loo_minus_one at k == n.
    unbiased=AT_K_EQUALS_N,
    label="max minus second (Tang et al.)",
    color="#393b79",
    marker="p",
  )
)
_ENTRIES.append(
  Estimator(
    name="pass_at_k_training",
    objective="max",
    kind="peer",
    fn=_pass_at_k_training,
    uses_k=True,
    binary=True,
    unbiased=NEVER,
    label="Pass@k Training (binarised rewards)",
    color="#8c564b",
    marker="d",
  )
)
_ENTRIES.append(
  Estimator(
    name="off_policy_exact",
    objective="max",
    kind="off_policy",
    fn=_off_policy("exact"),
    uses_k=True,
    unbiased=ALWAYS,
    method="exact",
    label="max@k off-policy, exact importance weights",
    color="#2ca02c",
    marker="P",
  )
)
_ENTRIES.append(
  Estimator(
    name="off_policy_first_order",
    objective="max",
    kind="off_policy",
    fn=_off_policy("first_order"),
    uses_k=True,
    unbiased=ON_POLICY_OR_K_ONE,
    method="first_order",
    label="max@k off-policy, first-order importance weights",
    color="#a6a216",
    marker="X",
  )
)
for _objective in ("top_m", "min", "maxrl"):
  for _name in ("none", "loo", "loo_centered"):
    _color, _marker, _label = _BASELINE_STYLES[_name]
    _ENTRIES.append(
      Estimator(
        name=_name,
        objective=_objective,
        kind="baseline",
        fn=_order_stat_baseline(_name),
        uses_k=True,
        binary=_objective in objectives_lib.BINARY_OBJECTIVES,
        unbiased=ALWAYS,
        label=f"{_objective}, {_label}",
        color=_color,
        marker=_marker,
      )
    )
_ENTRIES.append(
  Estimator(
    name="maxrl",
    objective="maxrl",
    kind="peer",
    fn=_maxrl(True),
    uses_k=False,
    binary=True,
    unbiased=AT_K_EQUALS_N_MINUS_ONE,
    label="MaxRL, with control variate",
    color="#637939",
    marker="H",
  )
)
_ENTRIES.append(
  Estimator(
    name="maxrl_no_cv",
    objective="maxrl",
    kind="peer",
    fn=_maxrl(False),
    uses_k=False,
    binary=True,
    unbiased=AT_K_EQUALS_N,
    label="MaxRL, without control variate",
    color="#9acd32",
    marker="8",
  )
)

BUILTIN = tuple(_ENTRIES)
