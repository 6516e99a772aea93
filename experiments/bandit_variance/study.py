"""The bandit variance study: build the policies, run every cell, write the outputs.

Pure functions of explicit arguments; ``main.py`` maps its flags onto :func:`run`.

Outputs (in ``out_dir``):

* ``results.csv``: one row per (policy, objective, k, n, estimator) with the columns
  of :func:`experiments.bandits.variance.summarize` and ``objective`` (second
  column). ``objective=max`` rows are the max@k study of every estimator of
  :mod:`experiments.estimators` on both policies (same numbers as before the column
  existed). The rank objectives ``top_m``, ``min`` and ``maxrl``
  (:mod:`experiments.bandits.rank_objectives`) run on the categorical bandit only
  (the Gaussian toy keeps max@k only: its exact gradients are quadratures of max@k),
  with the baselines ``none``, ``loo``, ``loo_centered`` of
  ``maxk.order_stat_advantages`` and, for ``maxrl``, MaxRL's peers.
* ``variance_check.csv``: the check of ``maxk.max_at_k_variance`` and
  ``maxk.pass_at_k_variance`` (:mod:`experiments.bandits.variance_check`), every
  (policy, k, n) with ``n >= 2k``; absent when no cell has ``n >= 2k``.
* Figures: ``variance_<policy>.png`` and ``bias_<policy>.png`` (max@k),
  ``objective_<objective>.png`` (variance and bias of each rank objective's
  estimators on the categorical bandit) and ``variance_check.png``.

References: PKPO, arXiv 2505.15201, Sec. 5.1 and Fig. 4.
"""

from __future__ import annotations

from collections.abc import Sequence
import os
from typing import Any

import tqdm

from experiments import outputs
from experiments.bandit_variance import plotting
from experiments.bandits import rank_objectives
from experiments.bandits import variance
from experiments.bandits import variance_check

POLICIES = ("gaussian", "categorical")
OBJECTIVES = rank_objectives.OBJECTIVES


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
  objectives: Sequence[str] = OBJECTIVES,
  top_m: int = 2,
  show_progress: bool = True,
) -> list[dict[str, Any]]:
  """Runs the study and writes the outputs of the module docstring into ``out_dir``.

  Every (policy, k, n) cell with ``k <= n`` gives one max@k row per estimator (see
  :func:`experiments.bandits.variance.run_study` for the columns) when ``max`` is
  among ``objectives``, and one row per estimator of every other objective on the
  categorical bandit (``top_m``: the mean of the top ``top_m`` of k, cells with
  ``k >= top_m``).

  Returns:
    The ``results.csv`` rows.

  Raises:
    ValueError: on an unknown objective, or when no cell yields a row.
  """
  unknown = [o for o in objectives if o not in OBJECTIVES]
  if unknown or not objectives:
    raise ValueError(f"objectives={list(objectives)} must name some of {list(OBJECTIVES)}.")
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
  bar = lambda desc: lambda cells: tqdm.tqdm(cells, desc=desc, disable=not show_progress)
  rows = []
  if "max" in objectives:
    max_rows = variance.run_study(
      settings,
      ns=ns,
      ks=ks,
      num_replicates=num_replicates,
      estimator_names=estimators,
      seed=seed,
      pass_threshold=pass_threshold,
      progress=bar("max@k cells (policy, k, n)"),
    )
    rows += [{"policy": r.pop("policy"), "objective": "max", **r} for r in max_rows]
  rank_rows = rank_objectives.run_objectives(
    settings,
    objectives=objectives,
    ns=ns,
    ks=ks,
    num_replicates=num_replicates,
    seed=seed,
    pass_threshold=pass_threshold,
    top_m=top_m,
    progress=bar("rank-objective policies"),
  )
  rows += rank_rows
  if not rows:
    raise ValueError(f"objectives={list(objectives)} give no row for policies={list(policies)}.")
  outputs.write_results_csv(out_dir, rows)
  check_rows = variance_check.run_check(
    settings,
    ns=ns,
    ks=ks,
    num_replicates=num_replicates,
    seed=seed,
    pass_threshold=pass_threshold,
    progress=bar("variance-check policies"),
  )
  if check_rows:
    outputs.write_results_csv(out_dir, check_rows, filename="variance_check.csv")
    plotting.plot_variance_check(check_rows, os.path.join(out_dir, "variance_check.png"))
  max_rows = [r for r in rows if r["objective"] == "max"]
  for policy in dict.fromkeys(r["policy"] for r in max_rows):
    plotting.plot_variance(max_rows, policy, os.path.join(out_dir, f"variance_{policy}.png"))
    plotting.plot_bias(max_rows, policy, os.path.join(out_dir, f"bias_{policy}.png"))
  for objective in dict.fromkeys(r["objective"] for r in rank_rows):
    path = os.path.join(out_dir, f"objective_{objective}.png")
    plotting.plot_objective(rank_rows, objective, path)
  return rows
