"""A NaN anywhere in a group makes every output of that group NaN, and only of it.

For every group-wise public function (samples, or prompts, on the trailing axes and
groups on the leading ones) and every option of it, one batch of groups is built in
which some groups hold a NaN in one input (one group per position of the NaN, one
with two NaNs, one all NaN) and the others hold none; each input of a function is
poisoned in turn.  Under ``jax.jit``, in float32 (two batch axes) and with x64 (one
batch axis), every output of a poisoned group must be NaN and every output of a
clean group finite and bit-for-bit that of the same batch without the NaNs (the
same compiled program, so nothing may leak across groups).

``test_every_public_name_is_classified`` forces each name of ``maxk.__all__`` into
the group-wise table (with cases here) or into ``NOT_GROUP_WISE`` with its reason.
"""

from __future__ import annotations

from collections.abc import Callable
import dataclasses
import functools
import zlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import maxk
from maxk._src import off_policy
from maxk._src import rank_objectives
from maxk._src import sorting
from maxk._src import uncertainty

# Groups larger than this are sorted by lax.sort instead of by counting ranks.
_LARGE_N = sorting._PAIRWISE_MAX_N + 9
# Groups up to this size get a NaN at every position; larger ones at the ends and
# at a few seeded random positions.
_ALL_POSITIONS_MAX = 16

NOT_GROUP_WISE = {
  "BASELINES": "a tuple of option names",
  "JSPO_VARIANTS": "a tuple of option names",
  "jspo_advantages": "cross-prompt: a NaN makes its whole [P, n] batch slice NaN (jspo_test.py)",
  "jspo_max_at_k_advantages": "cross-prompt: a NaN makes its [P, n] slice NaN (jspo_test.py)",
  "Interval": "a result type",
  "VarianceSplit": "a result type",
  "Evaluation": "a result type",
  "MetricRow": "a result type",
  "evaluate_records": "reads per-sample records, which must be finite (evaluate_test.py)",
  "fit_beta_binomial": "host-side fit across problems: a NaN makes its [P, n] slice NaN"
  " (beta_binomial_test.py)",
  "pass_at_k_beta_binomial": "host-side fit across problems: a NaN makes its [P, n] slice NaN"
  " (beta_binomial_test.py)",
  "rank_weights": "builds a static weight vector; no data",
  "lift_rank_weights": "maps a static weight vector to a larger size; no data",
  "bon_kl": "exact function of a categorical distribution (probs, rewards), not of samples",
  "bon_pmf": "exact function of a categorical distribution, not of samples",
  "bon_win_rate": "exact function of a categorical distribution, not of samples",
  "bon_kl_estimate_expectation": "exact function of a categorical distribution",
  "bon_kl_gap_bound": "exact function of a categorical distribution",
  "bon_kl_gap_lower_bound": "exact function of a categorical distribution",
  "bon_win_rate_gap_bound": "exact function of a categorical distribution",
  "max_at_k_exact": "exact function of a categorical distribution, not of samples",
  "order_stat_exact": "exact function of a categorical distribution, not of samples",
  "rewind_repeat_pmf": "exact function of a categorical distribution and thresholds",
  "bop_kl": "exact function of a categorical distribution and a scalar parameter",
  "bop_pmf": "exact function of a categorical distribution and a scalar parameter",
  "bop_win_rate": "exact function of a categorical distribution and a scalar parameter",
  "soft_bon_kl": "exact function of a categorical distribution and a scalar parameter",
  "soft_bon_pmf": "exact function of a categorical distribution and a scalar parameter",
  "soft_bon_win_rate": "exact function of a categorical distribution and a scalar parameter",
  "tilt_kl": "exact function of a categorical distribution and a scalar parameter",
  "tilt_log_partition": "exact function of a categorical distribution and a scalar parameter",
  "tilt_pmf": "exact function of a categorical distribution and a scalar parameter",
  "tilt_win_rate": "exact function of a categorical distribution and a scalar parameter",
  "reward_collision_probability": "exact function of a categorical distribution",
  "kl_divergence": "exact function of two categorical distributions",
  "win_rate": "exact function of two categorical distributions and rewards",
  "selected_at_k_exact": "exact function of a categorical distribution, not of samples",
  "selected_pmf": "exact function of a categorical distribution, not of samples",
  "maj_at_k_exact": "exact function of a categorical distribution over answers, not of samples",
  "implied_prompt_weight": "a function of a transform and success probabilities, elementwise in p",
  "bon_kl_bound": "a scalar function of n",
  "bon_win_rate_bound": "a scalar function of n",
  "bon_kl_estimate": "elementwise in eps (no group axis)",
  "bon_kl_gap_bound_delta": "elementwise in delta (no group axis)",
  "bon_win_rate_gap_bound_delta": "elementwise in delta (no group axis)",
  "chi2_kl": "exact function of a categorical distribution and a scalar parameter",
  "chi2_pmf": "exact function of a categorical distribution and a scalar parameter",
  "chi2_win_rate": "exact function of a categorical distribution and a scalar parameter",
  "bon_distillation_loss": "exact function of logits and a categorical distribution",
  "bon_distillation_grad": "exact function of logits and a categorical distribution",
  "proxy_bon_reward": "exact function of a categorical distribution with two rewards",
  "proxy_soft_bon_reward": "exact function of a categorical distribution with two rewards",
  "proxy_bop_reward": "exact function of a categorical distribution with two rewards",
  "proxy_tilt_reward": "exact function of a categorical distribution with two rewards",
  "proxy_chi2_reward": "exact function of a categorical distribution with two rewards",
  "proxy_bon_best_n": "exact function of a categorical distribution with two rewards",
  "calibrated_rewards": "two groups per prompt (n policy, m reference samples); NaN groups"
  " tested in distillation_test.py",
  "log_calibrated_rewards": "two groups per prompt (n policy, m reference samples); NaN groups"
  " tested in distillation_test.py",
  "exp_calibrated_rewards": "two groups per prompt (n policy, m reference samples); NaN groups"
  " tested in distillation_test.py",
}


@dataclasses.dataclass(frozen=True)
class Case:
  """Functions of ``names`` under every option, compiled as one program per size n.

  ``make(n)`` returns a function of the input arrays (``inputs`` names their kinds;
  each ``[*batch, *group]`` with group ``[n]``, or ``[prompts, n]``) returning a dict
  of labelled outputs (pytrees whose arrays have the batch axes first).  ``exact``:
  clean groups must be bit-for-bit those of the NaN-free batch; otherwise within a
  few ulp (``jax.scipy.special.betainc`` iterates until every element of the batch
  has converged, so other groups change the rounding).
  """

  label: str
  names: tuple[str, ...]
  make: Callable[[int], Callable[..., dict[str, object]]]
  inputs: tuple[str, ...] = ("rewards",)
  sizes: tuple[int, ...] = (7,)
  prompts: int = 0
  exact: bool = True


def _ks(n: int) -> tuple[int, ...]:
  """k = 1, a middle k and k = n (several functions reduce some options at the ends)."""
  return tuple(sorted({1, min(3, n), n}))


def _reward_estimates(n: int) -> Callable[..., dict[str, object]]:
  def fn(r):
    out = {f"max_at_k,k={k}": maxk.max_at_k(r, k) for k in _ks(n)}
    for k in sorted({1, min(3, n // 2), n // 2} - {0}):
      out[f"max_at_k_variance,k={k}"] = maxk.max_at_k_variance(r, k)
    return out

  return fn


def _max_at_k_advantages(n: int) -> Callable[..., dict[str, object]]:
  ks = _ks(n) if n <= _ALL_POSITIONS_MAX else (1, 3)
  return lambda r: {
    f"{b},k={k}": maxk.max_at_k_advantages(r, k, baseline=b) for b in maxk.BASELINES for k in ks
  }


def _off_policy(n: int) -> Callable[..., dict[str, object]]:
  # Large groups only check the lax.sort path, which both methods share; the
  # exact method's scan over them is slow to compile.
  if n > _ALL_POSITIONS_MAX:
    return lambda r, lr: {
      "first_order,k=3": maxk.max_at_k_advantages_off_policy(r, lr, 3, method="first_order")
    }
  return lambda r, lr: {
    f"{m},k={k}": maxk.max_at_k_advantages_off_policy(r, lr, k, method=m)
    for m in off_policy.METHODS
    for k in _ks(n)
  }


def _surrogate(n: int) -> Callable[..., dict[str, object]]:
  ks = _ks(n) if n <= _ALL_POSITIONS_MAX else (3,)
  return lambda lp, lpo, r: {f"k={k}": maxk.max_at_k_surrogate(lp, lpo, r, k) for k in ks}


def _reward_peers(n: int) -> Callable[..., dict[str, object]]:
  def fn(r):
    out = {
      f"grpo,std_ddof={d},eps={e}": maxk.grpo_advantages(r, eps=e, std_ddof=d)
      for d in (0, 1)
      for e in (0.0, 1e-6, 1e-4)
    }
    if n >= 2:
      out["rloo"] = maxk.rloo_advantages(r)
      out["max_minus_second"] = maxk.max_minus_second_advantages(r)
    return out

  return fn


def _optimal_baseline(n: int) -> Callable[..., dict[str, object]]:
  def fn(r, w):
    out = {}
    for loo in (False, True) if n >= 2 else (False,):
      for e in (0.0, 1e-8):
        out[f"optimal_baseline,leave_one_out={loo},eps={e}"] = maxk.optimal_baseline_advantages(
          r, w, leave_one_out=loo, eps=e
        )
    return out

  return fn


def _unlikeliness(n: int) -> Callable[..., dict[str, object]]:
  return lambda r, lp: {
    f"unlikeliness,{b},beta={beta}": maxk.unlikeliness_advantages(r, lp, beta=beta, baseline=b)
    for b in ("grpo", "none")
    for beta in (0.0, 0.25)
  }


def _binary(n: int) -> Callable[..., dict[str, object]]:
  def fn(c):
    out = {}
    for k in _ks(n):
      out[f"pass_at_k,k={k}"] = maxk.pass_at_k(c, k)
      if 2 * k <= n:
        out[f"pass_at_k_variance,k={k}"] = maxk.pass_at_k_variance(c, k)
      for e in (0.0, 1e-3):
        out[f"pass_at_k_training,k={k},eps={e}"] = maxk.pass_at_k_training_advantages(c, k, eps=e)
    for cv in (False, True):
      out[f"maxrl,control_variate={cv}"] = maxk.maxrl_advantages(c, control_variate=cv)
    return out

  return fn


def _reward_curves(n: int) -> Callable[..., dict[str, object]]:
  def fn(r):
    out = {"max_at_k_curve": maxk.max_at_k_curve(r)}
    if n >= 2:
      out["max_at_k_curve_variance"] = maxk.max_at_k_curve_variance(r)
    return out

  return fn


def _binary_curves(n: int) -> Callable[..., dict[str, object]]:
  def fn(c):
    out = {"pass_at_k_curve": maxk.pass_at_k_curve(c), "pass_hat_k_curve": maxk.pass_hat_k_curve(c)}
    if n >= 2:
      out["pass_at_k_curve_variance"] = maxk.pass_at_k_curve_variance(c)
    for k in _ks(n):
      out[f"pass_hat_k,k={k}"] = maxk.pass_hat_k(c, k)
      out[f"pass_hat_k,k={k},plug_in"] = maxk.pass_hat_k(c, k, estimator="plug_in")
      out[f"mg_pass_at_k,k={k}"] = maxk.mg_pass_at_k(c, k)
      for tau in (0.0, 0.5, 1.0):
        out[f"g_pass_at_k,k={k},tau={tau}"] = maxk.g_pass_at_k(c, k, tau=tau)
    return out

  return fn


def _selectors(n: int) -> Callable[..., dict[str, object]]:
  ks = _ks(n) if n <= _ALL_POSITIONS_MAX else (3,)

  def fn(scores, r):
    out = {f"selected_at_k,k={k}": maxk.selected_at_k(scores, r, k) for k in ks}
    for b in maxk.BASELINES:
      for k in ks:
        out[f"selected_at_k_advantages,{b},k={k}"] = maxk.selected_at_k_advantages(
          scores, r, k, baseline=b
        )
    return out

  return fn


def _success_objective(n: int) -> Callable[..., dict[str, object]]:
  # A mixture with both signs over j = 1..min(n, 3).
  coefficients = np.array([0.5, -0.25, 1.5])[: min(n, 3)]
  baselines = ("none", "loo", "loo_centered", "loo_minus_one")
  return lambda c: {
    b: maxk.success_objective_advantages(c, coefficients, baseline=b) for b in baselines
  }


def _majority(n: int) -> Callable[..., dict[str, object]]:
  # Answer ids follow the flags (correct samples share answer 0, the others spread over
  # three wrong answers), so a clean group is consistent and a NaN flag is the poison.
  def fn(c):
    ids = jnp.where(c > 0.5, 0, 1 + jnp.arange(n) % 3)
    out = {}
    for k in _ks(n):
      for tie in ("uniform", "wrong"):
        out[f"maj_at_k,k={k},{tie}"] = maxk.maj_at_k(ids, c, k, tie=tie)
    # The baselines share the group's NaN rule; each compiles its own counting, so
    # two of them (with and without a leave-one-out pass) at one k keep this fast.
    for b in ("none", "loo_minus_one"):
      k = min(3, n)
      out[f"maj_at_k_advantages,k={k},{b}"] = maxk.maj_at_k_advantages(ids, c, k, baseline=b)
    return out

  return fn


# Rank objectives: every named weight vector, custom, lifted and mixed-k weights.
def _mixed_k(k0: int, t: float) -> np.ndarray:
  """k0 draws with probability 1 − t, k0 + 1 with probability t (max@k)."""
  lifted = maxk.lift_rank_weights(maxk.rank_weights("max", k0), k0 + 1)
  return (1 - t) * lifted + t * maxk.rank_weights("max", k0 + 1)


def _maxrl_weights(big_k: int) -> np.ndarray:
  """MaxRL's Σ_{k<=K} pass@k / k as rank weights over K draws."""
  return sum(
    maxk.lift_rank_weights(maxk.rank_weights("max", k), big_k) / k for k in range(1, big_k + 1)
  )


RANK_WEIGHTS: dict[str, Callable[[int], np.ndarray]] = {
  "max,k=3": lambda n: maxk.rank_weights("max", 3),
  "max,k=n": lambda n: maxk.rank_weights("max", n),
  "mean,k=3": lambda n: maxk.rank_weights("mean", 3),
  "top_m,k=4,m=2": lambda n: maxk.rank_weights("top_m", 4, m=2),
  "upper_tail_mean,k=5,alpha=0.4": lambda n: maxk.rank_weights("upper_tail_mean", 5, alpha=0.4),
  "custom,k=3": lambda n: np.array([0.5, -1.0, 2.0]),
  "lifted,max,k=2->5": lambda n: maxk.lift_rank_weights(maxk.rank_weights("max", 2), 5),
  "mixed_k,max,k=3|4": lambda n: _mixed_k(3, 0.25),
  "maxrl,K=4": lambda n: _maxrl_weights(4),
  "min,k=1": lambda n: maxk.rank_weights("min", 1),
  "min,k=3": lambda n: maxk.rank_weights("min", 3),
  "min,k=n": lambda n: maxk.rank_weights("min", n),
  "median,k=3": lambda n: maxk.rank_weights("median", 3),
  "median,k=4": lambda n: maxk.rank_weights("median", 4),
  "bottom_m,k=4,m=2": lambda n: maxk.rank_weights("bottom_m", 4, m=2),
  "lifted,min,k=2->5": lambda n: maxk.lift_rank_weights(maxk.rank_weights("min", 2), 5),
}

# The weights also run on groups sorted by lax.sort (the NaN handling is in the
# coefficients, which the two sorting paths share).
_RANK_LARGE = {"max,k=n", "min,k=3", "custom,k=3", "mixed_k,max,k=3|4"}


def _rank(labels: tuple[str, ...]) -> Callable[[int], Callable[..., dict[str, object]]]:
  def make(n: int) -> Callable[..., dict[str, object]]:
    def fn(r):
      out = {}
      for label in (w for w in labels if n <= _ALL_POSITIONS_MAX or w in _RANK_LARGE):
        w = RANK_WEIGHTS[label](n)
        out[f"order_stat_at_k,{label}"] = maxk.order_stat_at_k(r, w)
        for b in rank_objectives.ORDER_STAT_BASELINES:
          out[f"order_stat_advantages,{label},{b}"] = maxk.order_stat_advantages(r, w, baseline=b)
      return out

    return fn

  return make


# Uncertainty: the prompts of a benchmark are the group (the last axis, or the one
# named by ``axis``); bayes_at_n's group is [P prompts, n samples].
def _mean_with_interval(n: int) -> Callable[..., dict[str, object]]:
  def fn(x):
    out = {d: maxk.mean_with_interval(x, distribution=d) for d in uncertainty.DISTRIBUTIONS}
    out["axis=0"] = maxk.mean_with_interval(jnp.moveaxis(x, -1, 0), confidence=0.9, axis=0)
    return out

  return fn


def _paired_difference(n: int) -> Callable[..., dict[str, object]]:
  def fn(a, b):
    out = {d: maxk.paired_difference(a, b, distribution=d) for d in uncertainty.DISTRIBUTIONS}
    out["axis=0"] = maxk.paired_difference(jnp.moveaxis(a, -1, 0), jnp.moveaxis(b, -1, 0), axis=0)
    return out

  return fn


def _variance_split(n: int) -> Callable[..., dict[str, object]]:
  return lambda x, v: {
    "": maxk.variance_split(x, v),
    "axis=0": maxk.variance_split(jnp.moveaxis(x, -1, 0), jnp.moveaxis(v, -1, 0), axis=0),
  }


# k = 4 is below n = 7 and beyond n = 1 (the posterior extrapolates); each k adds
# a bisection loop that is slow to compile.
def _posterior(n: int) -> Callable[..., dict[str, object]]:
  return lambda c: {"k=4": maxk.pass_at_k_posterior(c, 4)}


def _bayes(n: int) -> Callable[..., dict[str, object]]:
  return lambda c: {"k=4": maxk.bayes_at_n(c, 4, prior=(0.5, 2.0))}


CASES = [
  Case(
    "reward_estimates", ("max_at_k", "max_at_k_variance"), _reward_estimates, sizes=(2, 7, _LARGE_N)
  ),
  Case("max_at_k_advantages", ("max_at_k_advantages",), _max_at_k_advantages, sizes=(7, _LARGE_N)),
  Case(
    "off_policy",
    ("max_at_k_advantages_off_policy",),
    _off_policy,
    inputs=("rewards", "log_ratio"),
    sizes=(7, _LARGE_N),
  ),
  Case(
    "surrogate",
    ("max_at_k_surrogate",),
    _surrogate,
    inputs=("logp", "logp_old", "rewards"),
    sizes=(7, _LARGE_N),
  ),
  Case(
    "reward_peers",
    ("grpo_advantages", "rloo_advantages", "max_minus_second_advantages"),
    _reward_peers,
    sizes=(1, 2, 7),
  ),
  Case(
    "optimal_baseline",
    ("optimal_baseline_advantages",),
    _optimal_baseline,
    inputs=("rewards", "estimates"),
    sizes=(1, 2, 7),
  ),
  Case(
    "unlikeliness",
    ("unlikeliness_advantages",),
    _unlikeliness,
    inputs=("rewards", "logp"),
    sizes=(1, 2, 7),
  ),
  Case(
    "binary",
    ("pass_at_k", "pass_at_k_variance", "pass_at_k_training_advantages", "maxrl_advantages"),
    _binary,
    inputs=("correct",),
    sizes=(1, 2, 7),
  ),
  Case(
    "reward_curves",
    ("max_at_k_curve", "max_at_k_curve_variance"),
    _reward_curves,
    sizes=(1, 2, 7, _LARGE_N),
  ),
  Case(
    "binary_curves",
    (
      "pass_at_k_curve",
      "pass_at_k_curve_variance",
      "pass_hat_k",
      "pass_hat_k_curve",
      "g_pass_at_k",
      "mg_pass_at_k",
    ),
    _binary_curves,
    inputs=("correct",),
    sizes=(1, 2, 7),
  ),
  Case(
    "selectors",
    ("selected_at_k", "selected_at_k_advantages"),
    _selectors,
    inputs=("rewards", "rewards"),
    sizes=(1, 7, _LARGE_N),
  ),
  Case(
    "success_objective",
    ("success_objective_advantages",),
    _success_objective,
    inputs=("correct",),
    sizes=(1, 2, 7),
  ),
  Case(
    "majority",
    ("maj_at_k", "maj_at_k_advantages"),
    _majority,
    inputs=("correct",),
    sizes=(1, 2, 7),
  ),
  Case(
    "rank",
    ("order_stat_at_k", "order_stat_advantages"),
    _rank(tuple(RANK_WEIGHTS)),
    sizes=(7, _LARGE_N),
  ),
  Case(
    "mean_with_interval",
    ("mean_with_interval",),
    _mean_with_interval,
    inputs=("estimates",),
    sizes=(2, 7),
  ),
  Case(
    "paired_difference",
    ("paired_difference",),
    _paired_difference,
    inputs=("estimates", "estimates"),
    sizes=(2, 7),
  ),
  Case(
    "variance_split",
    ("variance_split",),
    _variance_split,
    inputs=("estimates", "variances"),
    sizes=(2, 7),
  ),
  Case(
    "pass_at_k_posterior",
    ("pass_at_k_posterior",),
    _posterior,
    inputs=("correct",),
    sizes=(1, 7),
    exact=False,
  ),
  Case(
    "bayes_at_n",
    ("bayes_at_n",),
    _bayes,
    inputs=("correct",),
    sizes=(1, 3),
    prompts=3,
    exact=False,
  ),
]

GROUP_WISE = frozenset(name for c in CASES for name in c.names)


# ----------------------------------------------------------------------------
# The property.
# ----------------------------------------------------------------------------


def _values(kind: str, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
  """Clean float64 inputs of one kind; rewards mix tied integers and continuous values."""
  if kind == "rewards":
    ties = rng.integers(0, 4, size=shape).astype(np.float64)
    smooth = rng.normal(3.0, 2.0, size=shape)
    return np.where(rng.random(shape[:1] + (1,) * (len(shape) - 1)) < 0.5, ties, smooth)
  if kind == "correct":
    return (rng.random(shape) < rng.random(shape[:1] + (1,) * (len(shape) - 1))).astype(float)
  if kind == "log_ratio":
    return 0.3 * rng.normal(size=shape)
  if kind in ("logp", "logp_old"):
    return -1.0 - np.abs(rng.normal(size=shape))
  if kind == "estimates":
    return rng.random(shape)
  if kind == "variances":
    return 0.01 * rng.random(shape)
  raise AssertionError(kind)


def _poison_plan(group_size: int, rng: np.random.Generator) -> tuple[list[tuple[int, ...]], int]:
  """(NaN positions of each poisoned group, total number of groups).

  One group per NaN position (every position of small groups; the ends and four
  seeded ones of large groups), one with two NaNs and one all NaN; at least three
  groups stay clean, and the total is even (so it also reshapes to two batch axes).
  """
  if group_size <= _ALL_POSITIONS_MAX:
    singles = list(range(group_size))
  else:
    singles = sorted({0, group_size - 1, *rng.choice(group_size, 4, replace=False).tolist()})
  plan = [(p,) for p in singles]
  if group_size >= 2:
    plan.append(tuple(rng.choice(group_size, 2, replace=False).tolist()))
  plan.append(tuple(range(group_size)))
  total = len(plan) + 3
  return plan, total + total % 2


_CASES_BY_LABEL = {c.label: c for c in CASES}
assert len(_CASES_BY_LABEL) == len(CASES), "duplicate case labels"


@functools.cache
def _jitted(label: str, n: int) -> Callable[..., dict[str, object]]:
  return jax.jit(_CASES_BY_LABEL[label].make(n))


def _assert_clean_equal(got: np.ndarray, want: np.ndarray, exact: bool, where: str) -> None:
  if exact:
    np.testing.assert_array_equal(got, want, where)
  else:
    eps = np.finfo(want.dtype).eps
    np.testing.assert_allclose(got, want, rtol=16 * eps, atol=16 * eps, err_msg=where)


def _check(case: Case, n: int, x64: bool) -> None:
  rng = np.random.default_rng(zlib.crc32(f"{case.label} {n}".encode()))
  group = (case.prompts, n) if case.prompts else (n,)
  group_size = int(np.prod(group))
  plan, num_groups = _poison_plan(group_size, rng)
  poisoned = rng.permutation(num_groups)[: len(plan)]
  is_poisoned = np.zeros(num_groups, bool)
  is_poisoned[poisoned] = True
  clean = [_values(kind, (num_groups, *group), rng) for kind in case.inputs]
  # Two batch axes in float32, one under x64: each layout meets every function.
  batch = (num_groups,) if x64 else (2, num_groups // 2)
  fn = _jitted(case.label, n)
  with jax.enable_x64(x64):
    want = jax.tree_util.tree_flatten_with_path(fn(*(x.reshape(*batch, *group) for x in clean)))[0]
    for which, kind in enumerate(case.inputs):
      bad = [x.copy() for x in clean]
      flat = bad[which].reshape(num_groups, group_size)
      for g, positions in zip(poisoned, plan):
        flat[g, list(positions)] = np.nan
      got = jax.tree_util.tree_leaves(fn(*(x.reshape(*batch, *group) for x in bad)))
      for leaf_got, (path, leaf_want) in zip(got, want, strict=True):
        where = (
          f"{jax.tree_util.keystr(path)} n={n} x64={x64} batch={batch}, NaN in {kind} #{which}"
        )
        leaf_got = np.asarray(leaf_got).reshape(num_groups, -1)
        leaf_want = np.asarray(leaf_want).reshape(num_groups, -1)
        assert leaf_got.dtype == (np.float64 if x64 else np.float32), where
        partly = ~np.all(np.isnan(leaf_got[poisoned]), axis=-1)
        assert not np.any(partly), (
          f"{where}: groups with NaN at {[plan[i] for i in np.flatnonzero(partly)]}"
          " have non-NaN outputs"
        )
        assert np.all(np.isfinite(leaf_want[~is_poisoned])), f"{where}: clean output not finite"
        _assert_clean_equal(leaf_got[~is_poisoned], leaf_want[~is_poisoned], case.exact, where)


def _params() -> list[object]:
  return [
    pytest.param(
      case.label,
      n,
      x64,
      id=f"{case.label}-n={n}-{'x64' if x64 else 'f32'}",
    )
    for case in CASES
    for n in case.sizes
    for x64 in (False, True)
  ]


@pytest.mark.parametrize(("label", "n", "x64"), _params())
def test_nan_fills_its_group_only(label, n, x64):
  _check(_CASES_BY_LABEL[label], n, x64)


# ----------------------------------------------------------------------------
# Coverage of the public API and of every option.
# ----------------------------------------------------------------------------


def test_every_public_name_is_classified():
  public = set(maxk.__all__)
  both = GROUP_WISE & set(NOT_GROUP_WISE)
  assert not both, f"classified as group-wise and not: {sorted(both)}"
  unclassified = public - GROUP_WISE - set(NOT_GROUP_WISE)
  assert not unclassified, (
    f"new public names {sorted(unclassified)}: add NaN cases for them to CASES in"
    " tests/maxk/nan_groups_test.py, or list them in NOT_GROUP_WISE with the reason"
  )
  stale = (GROUP_WISE | set(NOT_GROUP_WISE)) - public
  assert not stale, f"no longer public: {sorted(stale)}"


def _output_labels(case: Case, n: int) -> set[str]:
  """The labels of a case's outputs at size n (traced only, nothing is compiled)."""
  shapes = [
    jax.ShapeDtypeStruct((2, *((case.prompts,) if case.prompts else ()), n), jnp.float32)
    for _ in case.inputs
  ]
  return set(jax.eval_shape(case.make(n), *shapes))


def test_every_option_has_a_case():
  options = set()
  for case in CASES:
    for label in _output_labels(case, 7):
      options.update(f"{case.label}:{part}" for part in label.split(","))
  want = {
    *(f"max_at_k_advantages:{b}" for b in maxk.BASELINES),
    *(f"off_policy:{m}" for m in off_policy.METHODS),
    *(f"reward_peers:{p}" for p in ("grpo", "std_ddof=0", "std_ddof=1", "eps=0.0", "rloo")),
    "reward_peers:max_minus_second",
    *(f"optimal_baseline:leave_one_out={v}" for v in (False, True)),
    *(f"unlikeliness:{b}" for b in ("grpo", "none")),
    *(f"binary:{p}" for p in ("pass_at_k", "pass_at_k_variance", "pass_at_k_training", "maxrl")),
    *(f"binary:control_variate={v}" for v in (False, True)),
    *(f"rank:{b}" for b in rank_objectives.ORDER_STAT_BASELINES),
    *(
      f"{f}:{d}"
      for f in ("mean_with_interval", "paired_difference")
      for d in uncertainty.DISTRIBUTIONS
    ),
    *(f"{f}:axis=0" for f in ("mean_with_interval", "paired_difference", "variance_split")),
  }
  missing = want - options
  assert not missing, f"no NaN case for {sorted(missing)}"
  kinds = {label.split(",")[0] for label in RANK_WEIGHTS}
  missing_kinds = set(rank_objectives.RANK_WEIGHT_KINDS) - kinds
  assert not missing_kinds, f"rank weights without a NaN case: {sorted(missing_kinds)}"
