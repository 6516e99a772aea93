"""The bandit variance study: build the policies, run every cell, write the outputs.

:func:`run` takes the config of ``configs/default.py`` (checked by
:func:`experiments.bandit_variance.validation.validate`) and a workdir.

Outputs (in the workdir):

* ``config.json``: the config and the workdir.
* ``results.csv``: one row per (policy, objective, k, n, estimator) with the columns
  of :func:`experiments.bandits.variance.summarize` and ``objective`` (second
  column). ``objective=max`` rows are the max@k study of the chosen estimators of
  :mod:`experiments.estimators` on every policy. The rank objectives ``top_m``,
  ``min`` and ``maxrl`` (:mod:`experiments.bandits.rank_objectives`) run on the
  categorical bandit only (the Gaussian toy keeps max@k only: its exact gradients
  are quadratures of max@k), with the baselines ``none``, ``loo``, ``loo_centered``
  of ``maxk.order_stat_advantages`` and, for ``maxrl``, MaxRL's peers.
* ``variance_check.csv``: the check of ``maxk.max_at_k_variance`` and
  ``maxk.pass_at_k_variance`` (:mod:`experiments.bandits.variance_check`), every
  (policy, k, n) with ``n >= 2k``; absent when no cell has ``n >= 2k``.
* ``atlas.csv``, ``atlas.png``, ``atlas.md``: the variance atlas
  (:mod:`experiments.bandits.atlas`, :mod:`experiments.bandit_variance.atlas_figure`):
  every on-policy max@k estimator's exact variance over the floor of any baseline of
  the other samples' rewards, on the 4-arm bandits ``config.atlas_bandits`` at
  ``config.atlas_ns`` x ``config.atlas_ks``; absent when ``atlas_bandits`` is empty.
* Figures: ``variance_<policy>.png`` and ``bias_<policy>.png`` (max@k),
  ``objective_<objective>.png`` (variance and bias of each rank objective's
  estimators on the categorical bandit) and ``variance_check.png``.

References: PKPO, arXiv 2505.15201, Sec. 5.1 and Fig. 4.
"""

from __future__ import annotations

from collections.abc import Sequence
import os
import time
from typing import Any

from absl import logging
import ml_collections
import tqdm

from experiments import outputs
from experiments.bandit_variance import atlas_figure
from experiments.bandit_variance import atlas_table
from experiments.bandit_variance import plotting
from experiments.bandit_variance import validation
from experiments.bandits import atlas
from experiments.bandits import rank_objectives
from experiments.bandits import variance
from experiments.bandits import variance_check


def make_settings(
  config: ml_collections.ConfigDict, policies: Sequence[str]
) -> list[variance.Setting]:
  """One :class:`experiments.bandits.variance.Setting` per name of ``policies`` (e.g.
  ``config.policies`` of the validated config).

  ``gaussian``: ``x ~ N(config.theta, config.sigma^2)``, off-policy samples from
  ``N(theta - config.gaussian_shift, sigma^2)``. ``categorical``: ``config.num_arms``
  arms, target logits ``~ N(0, config.logit_scale^2)`` and sampling logits = logits +
  ``config.categorical_shift * N(0, I)``, both drawn from ``config.seed``.

  Raises:
    ValueError: on an unknown policy name.
  """
  settings = []
  for name in policies:
    if name == "gaussian":
      settings.append(variance.gaussian_setting(config.theta, config.sigma, config.gaussian_shift))
    elif name == "categorical":
      settings.append(
        variance.categorical_setting(
          config.num_arms,
          seed=config.seed,
          logit_scale=config.logit_scale,
          shift=config.categorical_shift,
        )
      )
    else:
      raise ValueError(f"Unknown policy={name!r}; valid options are {list(validation.POLICIES)}.")
  return settings


def run(
  config: ml_collections.ConfigDict, workdir: str, *, show_progress: bool = True
) -> list[dict[str, Any]]:
  """Validates ``config``, runs the study and writes the outputs of the module docstring.

  Every (policy, k, n) cell with ``k <= n`` gives one max@k row per estimator (see
  :func:`experiments.bandits.variance.run_study` for the columns) when ``max`` is
  among the objectives, and one row per estimator of every other objective on the
  categorical bandit (``top_m``: the mean of the top ``top_m`` of k, cells with
  ``k >= top_m``).

  Returns:
    The ``results.csv`` rows.

  Raises:
    experiments.config_checks.ConfigError: naming a bad field (or workdir), before
      anything is written.
  """
  valid = validation.validate(config)
  workdir = outputs.start(workdir, config)
  start = time.time()
  settings = make_settings(valid, valid.policies)
  bar = lambda desc: lambda cells: tqdm.tqdm(cells, desc=desc, disable=not show_progress)
  cells = dict(
    ns=valid.ns,
    ks=valid.ks,
    num_replicates=valid.num_replicates,
    seed=valid.seed,
    pass_threshold=valid.pass_threshold,
  )
  objectives = valid.objectives
  rows = []
  if "max" in objectives:
    max_rows = variance.run_study(
      settings,
      estimator_names=valid.estimators,
      progress=bar("max@k cells (policy, k, n)"),
      **cells,
    )
    rows += [{"policy": r.pop("policy"), "objective": "max", **r} for r in max_rows]
  rank_rows = rank_objectives.run_objectives(
    settings,
    objectives=objectives,
    top_m=valid.top_m,
    progress=bar("rank-objective policies"),
    **cells,
  )
  rows += rank_rows
  outputs.write_results_csv(workdir, rows)
  check_rows = variance_check.run_check(settings, progress=bar("variance-check policies"), **cells)
  _write_figures(workdir, rows, check_rows)
  if valid.atlas_bandits:
    _write_atlas(valid, workdir, bar("atlas cells (bandit, k, n)"))
  logging.info("Wrote %d rows to %s in %.1f s.", len(rows), workdir, time.time() - start)
  return rows


def _write_atlas(config: ml_collections.ConfigDict, workdir: str, progress: Any) -> None:
  """``atlas.csv``, ``atlas.png`` and ``atlas.md`` (the module docstring) of the
  validated ``config``."""
  rows = atlas.run(
    config.atlas_bandits,
    ns=config.atlas_ns,
    ks=config.atlas_ks,
    pass_threshold=config.pass_threshold,
    num_samples=config.atlas_num_samples,
    jspo_prompts=config.atlas_jspo_prompts,
    seed=config.seed,
    progress=progress,
  )
  outputs.write_results_csv(workdir, rows, filename="atlas.csv")
  atlas_figure.plot_atlas(rows, os.path.join(workdir, "atlas.png"))
  with open(os.path.join(workdir, "atlas.md"), "w") as f:
    f.write(atlas_table.markdown(rows))


def _write_figures(
  workdir: str, rows: list[dict[str, Any]], check_rows: list[dict[str, Any]]
) -> None:
  """``variance_check.csv`` and every figure of the module docstring."""
  if check_rows:
    outputs.write_results_csv(workdir, check_rows, filename="variance_check.csv")
    plotting.plot_variance_check(check_rows, os.path.join(workdir, "variance_check.png"))
  max_rows = [r for r in rows if r["objective"] == "max"]
  for policy in dict.fromkeys(r["policy"] for r in max_rows):
    plotting.plot_variance(max_rows, policy, os.path.join(workdir, f"variance_{policy}.png"))
    plotting.plot_bias(max_rows, policy, os.path.join(workdir, f"bias_{policy}.png"))
  rank_rows = [r for r in rows if r["objective"] != "max"]
  for objective in dict.fromkeys(r["objective"] for r in rank_rows):
    path = os.path.join(workdir, f"objective_{objective}.png")
    plotting.plot_objective(rank_rows, objective, path)
