"""The best-of-n study end to end: references, result rows, summary, files, figures."""

from __future__ import annotations

import json
import os
import time
from typing import Any

from absl import logging
import jax
import jax.numpy as jnp
import numpy as np

from experiments import outputs
from experiments.best_of_n import config as config_lib
from experiments.best_of_n import plotting
from experiments.best_of_n import proxy
from experiments.best_of_n import references
from experiments.best_of_n import study

FIGURES = (
  "kl_vs_n_uniform.png",
  "kl_vs_n_other.png",
  "kl_gap.png",
  "win_rate_vs_kl.png",
  "proxy_overoptimisation.png",
)


def run(config: config_lib.Config, out_dir: str) -> dict[str, Any]:
  """Runs the study of ``config`` and writes its outputs into ``out_dir``.

  Writes ``results.csv`` (columns :data:`study.COLUMNS`), ``summary.json``
  (:func:`study.summarize`), the proxy-selection study's ``proxy.csv`` (columns
  :data:`proxy.COLUMNS`) and ``proxy_peaks.csv`` (:data:`proxy.PEAK_COLUMNS`), and
  the figures :data:`FIGURES` (``kl_vs_n_uniform.png`` only with uniform
  references). With ``config.float64`` it turns on
  ``jax_enable_x64`` first, so that KL gaps below float32 resolution (~1e-7 nats)
  are resolved. The seed drives both the Dirichlet references (NumPy) and the
  Monte Carlo draws (JAX): same config, same numbers.

  Returns:
    The summary.
  """
  start = time.time()
  if config.float64:
    jax.config.update("jax_enable_x64", True)
  refs = references.make_references(
    uniform_sizes=config.uniform_sizes,
    cherry_eps=config.cherry_eps,
    cherry_size=config.cherry_size,
    cherry_step=config.cherry_step,
    dirichlet_alphas=config.dirichlet_alphas,
    dirichlet_size=config.dirichlet_size,
    rng=np.random.default_rng(config.seed),
  )
  probs, rewards = references.pad(refs, jnp.float64 if config.float64 else jnp.float32)
  rows = study.best_of_n_rows(
    refs,
    probs,
    rewards,
    ns=study.n_grid(config.n_max, config.num_n),
    num_mc_draws=config.num_mc_draws,
    key=jax.random.key(config.seed),
  )
  rows += study.rewind_repeat_rows(
    refs,
    probs,
    rewards,
    thresholds=study.thresholds(refs, config.num_thresholds),
    max_tries=[None, *config.rr_max_tries],
  )
  outputs.write_results_csv(out_dir, rows)
  summary = study.summarize(rows, refs)
  with open(os.path.join(out_dir, "summary.json"), "w") as f:
    json.dump(summary, f, indent=2, sort_keys=True)
    f.write("\n")
  uniform = [r for r in refs if r.family == "uniform"]
  other = [r for r in refs if r.family != "uniform"]
  kl_uniform, kl_other, kl_gap, win_rate, proxy_png = (os.path.join(out_dir, n) for n in FIGURES)
  if uniform:
    title = "Uniform references: KL of best-of-n vs n"
    plotting.save(plotting.kl_vs_n_figure(rows, uniform, title), kl_uniform)
  title = "Cherry-picked and Dirichlet references: KL of best-of-n vs n"
  plotting.save(plotting.kl_vs_n_figure(rows, other, title), kl_other)
  plotting.save(plotting.kl_gap_figure(rows, refs), kl_gap)
  plotting.save(plotting.win_rate_figure(rows, refs, n_max=config.n_max), win_rate)
  proxy_rows = proxy.rows(
    seed=config.seed,
    num_arms=config.proxy_arms,
    sigmas=config.proxy_sigmas,
    t_df=config.proxy_t_df,
    ns=study.n_grid(config.proxy_n_max, config.proxy_num_n),
    num_mc_draws=config.proxy_mc_draws,
  )
  outputs.write_results_csv(out_dir, proxy_rows, filename="proxy.csv")
  outputs.write_results_csv(out_dir, proxy.peaks(proxy_rows), filename="proxy_peaks.csv")
  plotting.save(proxy.figure(proxy_rows, t_df=config.proxy_t_df), proxy_png)
  logging.info("Wrote %d rows to %s in %.1f s.", len(rows), out_dir, time.time() - start)
  return summary
