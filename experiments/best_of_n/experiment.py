"""The best-of-n study end to end: references, result rows, summary, files, figures."""

from __future__ import annotations

import json
import os
import time
from typing import Any

from absl import logging
import jax
import jax.numpy as jnp
import ml_collections
import numpy as np

from experiments import outputs
from experiments.best_of_n import frontier
from experiments.best_of_n import plotting
from experiments.best_of_n import proxy
from experiments.best_of_n import references
from experiments.best_of_n import study
from experiments.best_of_n import validation

FIGURES = (
  "kl_vs_n_uniform.png",
  "kl_vs_n_other.png",
  "kl_gap.png",
  "win_rate_vs_kl.png",
  "proxy_overoptimisation.png",
  "win_rate_frontier.png",
)


def run(config: ml_collections.ConfigDict, workdir: str) -> dict[str, Any]:
  """Validates ``config``, runs the study and writes its outputs into ``workdir``.

  Writes ``config.json`` (the config), ``results.csv`` (columns
  :data:`study.COLUMNS`), ``summary.json`` (:func:`study.summarize`), the
  proxy-selection study's ``proxy.csv`` (columns :data:`proxy.COLUMNS`) and
  ``proxy_peaks.csv`` (:data:`proxy.PEAK_COLUMNS`), the frontier study's
  ``frontier.csv`` (:data:`frontier.COLUMNS`) and ``frontier_best_n.json``, and the
  figures :data:`FIGURES`
  (``kl_vs_n_uniform.png`` only with uniform references). With ``config.float64``
  it turns on ``jax_enable_x64`` first, so that KL gaps below float32 resolution
  (~1e-7 nats) are resolved. The seed drives both the Dirichlet references (NumPy)
  and the Monte Carlo draws (JAX): same config, same numbers.

  Returns:
    The summary.

  Raises:
    experiments.config_checks.ConfigError: naming a bad field (or workdir), before
      anything is written.
  """
  settings = validation.validate(config)
  workdir = outputs.start(workdir, config)
  start = time.time()
  if settings.float64:
    jax.config.update("jax_enable_x64", True)
  refs = references.make_references(
    uniform_sizes=settings.uniform_sizes,
    cherry_eps=settings.cherry_eps,
    cherry_size=settings.cherry_size,
    cherry_step=settings.cherry_step,
    dirichlet_alphas=settings.dirichlet_alphas,
    dirichlet_size=settings.dirichlet_size,
    rng=np.random.default_rng(settings.seed),
  )
  rows, summary = _best_of_n_outputs(settings, refs, workdir)
  _proxy_outputs(settings, workdir)
  _frontier_outputs(settings, workdir)
  logging.info("Wrote %d rows to %s in %.1f s.", len(rows), workdir, time.time() - start)
  return summary


def _best_of_n_outputs(
  settings: ml_collections.FrozenConfigDict, refs: list[references.Reference], workdir: str
) -> tuple[list[study.Row], dict[str, Any]]:
  """Writes ``results.csv``, ``summary.json`` and the best-of-n figures; returns the
  rows and the summary."""
  probs, rewards = references.pad(refs, jnp.float64 if settings.float64 else jnp.float32)
  rows = study.best_of_n_rows(
    refs,
    probs,
    rewards,
    ns=study.n_grid(settings.n_max, settings.num_n),
    num_mc_draws=settings.num_mc_draws,
    key=jax.random.key(settings.seed),
  )
  rows += study.rewind_repeat_rows(
    refs,
    probs,
    rewards,
    thresholds=study.thresholds(refs, settings.num_thresholds),
    max_tries=[None, *settings.rr_max_tries],
  )
  outputs.write_results_csv(workdir, rows)
  summary = study.summarize(rows, refs)
  with open(os.path.join(workdir, "summary.json"), "w") as f:
    json.dump(summary, f, indent=2, sort_keys=True)
    f.write("\n")
  uniform = [r for r in refs if r.family == "uniform"]
  other = [r for r in refs if r.family != "uniform"]
  kl_uniform, kl_other, kl_gap, win_rate = (os.path.join(workdir, n) for n in FIGURES[:4])
  if uniform:
    title = "Uniform references: KL of best-of-n vs n"
    plotting.save(plotting.kl_vs_n_figure(rows, uniform, title), kl_uniform)
  title = "Cherry-picked and Dirichlet references: KL of best-of-n vs n"
  plotting.save(plotting.kl_vs_n_figure(rows, other, title), kl_other)
  plotting.save(plotting.kl_gap_figure(rows, refs), kl_gap)
  plotting.save(plotting.win_rate_figure(rows, refs, n_max=settings.n_max), win_rate)
  return rows, summary


def _proxy_outputs(settings: ml_collections.FrozenConfigDict, workdir: str) -> None:
  """Writes the proxy-selection study's ``proxy.csv``, ``proxy_peaks.csv`` and figure."""
  proxy_rows = proxy.rows(
    seed=settings.seed,
    num_arms=settings.proxy_arms,
    sigmas=settings.proxy_sigmas,
    t_df=settings.proxy_t_df,
    ns=study.n_grid(settings.proxy_n_max, settings.proxy_num_n),
    num_mc_draws=settings.proxy_mc_draws,
  )
  outputs.write_results_csv(workdir, proxy_rows, filename="proxy.csv")
  outputs.write_results_csv(workdir, proxy.peaks(proxy_rows), filename="proxy_peaks.csv")
  plotting.save(
    proxy.figure(proxy_rows, t_df=settings.proxy_t_df), os.path.join(workdir, FIGURES[-2])
  )


def _frontier_outputs(settings: ml_collections.FrozenConfigDict, workdir: str) -> None:
  """Writes the frontier study's ``frontier.csv``, ``frontier_best_n.json`` and figure."""
  frontier_rows, best = frontier.rows(
    seed=settings.seed,
    num_arms=settings.proxy_arms,
    sigma=settings.frontier_sigma,
    t_df=settings.proxy_t_df,
    n_max=settings.frontier_n_max,
    num_points=settings.frontier_num_points,
    lams=settings.frontier_lams,
  )
  outputs.write_results_csv(workdir, frontier_rows, filename="frontier.csv")
  with open(os.path.join(workdir, "frontier_best_n.json"), "w") as f:
    json.dump(best, f, indent=2, sort_keys=True)
    f.write("\n")
  fig = frontier.figure(frontier_rows, best, sigma=settings.frontier_sigma)
  plotting.save(fig, os.path.join(workdir, FIGURES[-1]))
