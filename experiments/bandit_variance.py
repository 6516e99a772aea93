r"""Bias and variance of every max@k gradient estimator on toy bandits (PKPO Fig. 4).

For each policy, k, n and estimator: the Monte Carlo mean of the gradient estimate
over ``--num_replicates`` independent groups, its bias against the exact gradient of
max@k, its variance (summed over coordinates) and the standard error of the mean.

Usage:
  python -m experiments.bandit_variance --out_dir=/tmp/bandit_variance

Writes ``results.csv``, ``config.json``, ``variance_<policy>.png`` and
``bias_<policy>.png`` into ``--out_dir``.
"""

from __future__ import annotations

import os
import time

from absl import app
from absl import flags
from absl import logging
import tqdm

from experiments import outputs
from experiments.bandits import estimators as estimators_lib
from experiments.bandits import variance

_OUT_DIR = flags.DEFINE_string("out_dir", None, "Output directory.", required=True)
_SEED = flags.DEFINE_integer("seed", 0, "Random seed (same seed and flags: same results).")
_POLICIES = flags.DEFINE_list(
  "policies",
  ["gaussian", "categorical"],
  "Policies to study: 'gaussian' (PKPO's toy) and/or 'categorical' (softmax bandit).",
)
_ESTIMATORS = flags.DEFINE_list(
  "estimators",
  ["all"],
  f"Estimators to compare ('all' or a subset of {list(estimators_lib.ESTIMATOR_NAMES)}).",
)
_NS = flags.DEFINE_list("ns", ["4", "8", "16", "32"], "Group sizes n.")
_KS = flags.DEFINE_list("ks", ["1", "4", "8"], "Values of k (cells with k > n are skipped).")
_NUM_REPLICATES = flags.DEFINE_integer(
  "num_replicates", 20_000, "Independent groups per (policy, n, k) cell."
)
_THETA = flags.DEFINE_float("theta", 1.0, "Gaussian toy: mean theta of x ~ N(theta, sigma^2).")
_SIGMA = flags.DEFINE_float("sigma", 0.1, "Gaussian toy: standard deviation sigma.")
_GAUSSIAN_SHIFT = flags.DEFINE_float(
  "gaussian_shift",
  0.05,
  "Gaussian toy, off-policy estimators: samples come from N(theta - shift, sigma^2).",
)
_NUM_ARMS = flags.DEFINE_integer("num_arms", 10, "Categorical bandit: number of arms.")
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


def _settings() -> list[variance.Setting]:
  settings = []
  for name in _POLICIES.value:
    if name == "gaussian":
      settings.append(variance.gaussian_setting(_THETA.value, _SIGMA.value, _GAUSSIAN_SHIFT.value))
    elif name == "categorical":
      settings.append(
        variance.categorical_setting(
          _NUM_ARMS.value,
          seed=_SEED.value,
          logit_scale=_LOGIT_SCALE.value,
          shift=_CATEGORICAL_SHIFT.value,
        )
      )
    else:
      raise ValueError(f"Unknown policy={name!r}; valid options are ['gaussian', 'categorical'].")
  return settings


def main(argv):
  out_dir = outputs.start_run(argv, _OUT_DIR.value)
  start = time.time()
  rows = variance.run_study(
    _settings(),
    ns=[int(n) for n in _NS.value],
    ks=[int(k) for k in _KS.value],
    num_replicates=_NUM_REPLICATES.value,
    estimator_names=_ESTIMATORS.value,
    seed=_SEED.value,
    pass_threshold=_PASS_THRESHOLD.value,
    progress=lambda cells: tqdm.tqdm(cells, desc="cells (policy, k, n)"),
  )
  path = outputs.write_results_csv(out_dir, rows)
  for policy in dict.fromkeys(r["policy"] for r in rows):
    variance.plot_variance(rows, policy, os.path.join(out_dir, f"variance_{policy}.png"))
    variance.plot_bias(rows, policy, os.path.join(out_dir, f"bias_{policy}.png"))
  logging.info("Wrote %d rows to %s in %.1f s.", len(rows), path, time.time() - start)


if __name__ == "__main__":
  app.run(main)
