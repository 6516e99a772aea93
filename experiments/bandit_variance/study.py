"""The bandit variance study: build the policies, run every cell, write the outputs.

Pure functions of explicit arguments; ``main.py`` maps its flags onto :func:`run`.

References: PKPO, arXiv 2505.15201, Sec. 5.1 and Fig. 4.
"""

from __future__ import annotations

from collections.abc import Sequence
import os
from typing import Any

import tqdm

from experiments import outputs
from experiments.bandit_variance import plotting
from experiments.bandits import variance

POLICIES = ("gaussian", "categorical")


def make_settings(
  policies: Sequence[str],
  *,
  seed: int,
  theta: float,
  sigma: float,
  gaussian_shift: float,
  num_arms: int,
  logit_scale: float,
  categorical_shift: float,
) -> list[variance.Setting]:
  """One :class:`experiments.bandits.variance.Setting` per policy name, in order.

  Args:
    policies: names from :data:`POLICIES`.
    seed: draws the categorical bandit's target and sampling logits.
    theta: Gaussian toy, mean of ``x ~ N(theta, sigma^2)``.
    sigma: Gaussian toy, standard deviation.
    gaussian_shift: Gaussian toy, off-policy samples come from ``N(theta - shift, sigma^2)``.
    num_arms: categorical bandit, number of arms.
    logit_scale: categorical bandit, target logits ``~ N(0, logit_scale^2)``.
    categorical_shift: categorical bandit, sampling logits = logits + shift * N(0, I).

  Raises:
    ValueError: on an unknown policy name.
  """
  settings = []
  for name in policies:
    if name == "gaussian":
      settings.append(variance.gaussian_setting(theta, sigma, gaussian_shift))
    elif name == "categorical":
      settings.append(
        variance.categorical_setting(
          num_arms, seed=seed, logit_scale=logit_scale, shift=categorical_shift
        )
      )
    else:
      raise ValueError(f"Unknown policy={name!r}; valid options are {list(POLICIES)}.")
  return settings


def run(
  out_dir: str,
  *,
  policies: Sequence[str],
  estimators: Sequence[str],
  ns: Sequence[int],
  ks: Sequence[int],
  num_replicates: int,
  seed: int,
  theta: float,
  sigma: float,
  gaussian_shift: float,
  num_arms: int,
  logit_scale: float,
  categorical_shift: float,
  pass_threshold: float,
  show_progress: bool = True,
) -> list[dict[str, Any]]:
  """Runs the study and writes ``results.csv`` and the figures into ``out_dir``.

  Every (policy, k, n) cell with ``k <= n`` gives one row per estimator (see
  :func:`experiments.bandits.variance.run_study` for the columns); the figures are
  ``variance_<policy>.png`` and ``bias_<policy>.png``.

  Returns:
    The result rows.
  """
  settings = make_settings(
    policies,
    seed=seed,
    theta=theta,
    sigma=sigma,
    gaussian_shift=gaussian_shift,
    num_arms=num_arms,
    logit_scale=logit_scale,
    categorical_shift=categorical_shift,
  )
  rows = variance.run_study(
    settings,
    ns=ns,
    ks=ks,
    num_replicates=num_replicates,
    estimator_names=estimators,
    seed=seed,
    pass_threshold=pass_threshold,
    progress=lambda cells: tqdm.tqdm(cells, desc="cells (policy, k, n)", disable=not show_progress),
  )
  outputs.write_results_csv(out_dir, rows)
  for policy in dict.fromkeys(r["policy"] for r in rows):
    plotting.plot_variance(rows, policy, os.path.join(out_dir, f"variance_{policy}.png"))
    plotting.plot_bias(rows, policy, os.path.join(out_dir, f"bias_{policy}.png"))
  return rows
