"""Flags of the bandit variance binary; the study is :func:`experiments.bandit_variance.study.run`.

Usage:
  python -m experiments.bandit_variance --out_dir=/tmp/bandit_variance
"""

from __future__ import annotations

import math
import time

from absl import flags
from absl import logging

from experiments import estimators as estimators_lib
from experiments import flag_checks
from experiments import outputs
from experiments.bandit_variance import study

_OUT_DIR = flags.DEFINE_string("out_dir", None, "Output directory.", required=True)
_SEED = flags.DEFINE_integer("seed", 0, "Random seed (same seed and flags: same results).")
_POLICIES = flags.DEFINE_list(
  "policies",
  list(study.POLICIES),
  "Policies to study: 'gaussian' (PKPO's toy) and/or 'categorical' (softmax bandit).",
)
_OBJECTIVES = flags.DEFINE_list(
  "objectives",
  list(study.OBJECTIVES),
  "Objectives: 'max' (max@k, both policies, every --estimators) and the rank objectives "
  "'top_m' (mean of the top --top_m of k), 'min' (min@k) and 'maxrl' (sum_{j<=k} pass@j / j "
  "on reward >= --pass_threshold) on the categorical bandit with the baselines none, loo, "
  "loo_centered (and MaxRL's peers for maxrl).",
)
_TOP_M = flags.DEFINE_integer(
  "top_m", 2, "The m of the 'top_m' objective (>= 1; cells with k < m are skipped)."
)
_ESTIMATORS = flags.DEFINE_list(
  "estimators",
  ["all"],
  f"max@k estimators to compare ('all' or a subset of {list(estimators_lib.ESTIMATOR_NAMES)}).",
)
_NS = flags.DEFINE_list("ns", ["4", "8", "16", "32"], "Group sizes n (integers >= 2).")
_KS = flags.DEFINE_list(
  "ks", ["1", "4", "8"], "Values of k (integers >= 1; cells with k > n are skipped)."
)
_NUM_REPLICATES = flags.DEFINE_integer(
  "num_replicates", 20_000, "Independent groups per (policy, n, k) cell (>= 2)."
)
_THETA = flags.DEFINE_float("theta", 1.0, "Gaussian toy: mean theta of x ~ N(theta, sigma^2).")
_SIGMA = flags.DEFINE_float("sigma", 0.1, "Gaussian toy: standard deviation sigma (> 0).")
_GAUSSIAN_SHIFT = flags.DEFINE_float(
  "gaussian_shift",
  0.05,
  "Gaussian toy, off-policy estimators: samples come from N(theta - shift, sigma^2).",
)
_NUM_ARMS = flags.DEFINE_integer("num_arms", 10, "Categorical bandit: number of arms (>= 2).")
_LOGIT_SCALE = flags.DEFINE_float(
  "logit_scale", 1.0, "Categorical bandit: target logits ~ N(0, logit_scale^2) from --seed."
)
_CATEGORICAL_SHIFT = flags.DEFINE_float(
  "categorical_shift",
  0.5,
  "Categorical bandit, off-policy estimators: sampling logits = logits + shift * N(0, I).",
)
_PASS_THRESHOLD = flags.DEFINE_float(
  "pass_threshold",
  0.5,
  "pass_at_k_training is fed the binarised reward (reward >= pass_threshold).",
)


def _cells(values: dict[str, list[str]]) -> bool:
  ns, ks = flag_checks.ints(values["ns"]), flag_checks.ints(values["ks"])
  return ns is None or ks is None or any(k <= n for k in ks for n in ns)


def _check_rank_objectives(values: dict) -> None:
  """Every objective asked for gives rows: the rank objectives run on the categorical
  bandit only, and ``top_m`` needs a cell with ``top_m <= k <= n``."""
  rank = [o for o in values["objectives"] if o != "max"]
  if rank and "categorical" not in values["policies"]:
    raise ValueError(
      f"--objectives {rank} run on the categorical bandit only: add 'categorical' to "
      "--policies or drop them."
    )
  ns, ks, m = flag_checks.ints(values["ns"]), flag_checks.ints(values["ks"]), values["top_m"]
  if "top_m" in rank and ns and ks and not any(m <= k <= n for k in ks for n in ns):
    raise ValueError(
      f"--objectives=top_m needs a cell with --top_m <= k <= n; no k of --ks={ks} lies "
      f"in [{m}, n] for an n of --ns={ns}."
    )


outputs.register_out_dir_validator("out_dir")
flags.register_validator("seed", lambda v: v >= 0, "--seed must be >= 0.")
flags.register_validator(
  "policies",
  flag_checks.distinct_names(study.POLICIES),
  f"--policies must list distinct names from {list(study.POLICIES)}.",
)
flags.register_validator(
  "objectives",
  flag_checks.distinct_names(study.OBJECTIVES),
  f"--objectives must list distinct names from {list(study.OBJECTIVES)}.",
)
flags.register_validator("top_m", lambda v: v >= 1, "--top_m must be an integer >= 1.")
flags.register_multi_flags_validator(
  ["objectives", "policies", "top_m", "ns", "ks"], flag_checks.raising(_check_rank_objectives)
)
flags.register_validator("estimators", flag_checks.raising(estimators_lib.parse_names))
flags.register_validator("ns", flag_checks.int_list_at_least(2), "--ns must list integers n >= 2.")
flags.register_validator("ks", flag_checks.int_list_at_least(1), "--ks must list integers k >= 1.")
flags.register_multi_flags_validator(
  ["ns", "ks"], _cells, "--ks and --ns must give at least one cell with k <= n."
)
flags.register_validator(
  "num_replicates", lambda v: v >= 2, "--num_replicates must be an integer >= 2."
)
flags.register_validator("num_arms", lambda v: v >= 2, "--num_arms must be an integer >= 2.")
flags.register_validator("sigma", flag_checks.finite_positive, "--sigma must be finite and > 0.")
flags.register_validator(
  "logit_scale", lambda v: math.isfinite(v) and v >= 0, "--logit_scale must be finite and >= 0."
)
for _name in ("theta", "gaussian_shift", "categorical_shift", "pass_threshold"):
  flags.register_validator(_name, math.isfinite, f"--{_name} must be a finite number.")


def main(argv):
  out_dir = outputs.start_run(argv, _OUT_DIR.value)
  start = time.time()
  rows = study.run(
    out_dir,
    policies=_POLICIES.value,
    estimators=_ESTIMATORS.value,
    ns=[int(n) for n in _NS.value],
    ks=[int(k) for k in _KS.value],
    num_replicates=_NUM_REPLICATES.value,
    seed=_SEED.value,
    theta=_THETA.value,
    sigma=_SIGMA.value,
    gaussian_shift=_GAUSSIAN_SHIFT.value,
    num_arms=_NUM_ARMS.value,
    logit_scale=_LOGIT_SCALE.value,
    categorical_shift=_CATEGORICAL_SHIFT.value,
    pass_threshold=_PASS_THRESHOLD.value,
    objectives=_OBJECTIVES.value,
    top_m=_TOP_M.value,
  )
  logging.info("Wrote %d rows to %s in %.1f s.", len(rows), out_dir, time.time() - start)
