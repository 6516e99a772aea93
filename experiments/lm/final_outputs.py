"""The outputs a finished run writes from its metrics log (process 0 only).

``results.csv`` (stage, method, k_opt, k_eval, seed, pass_at_k and max_at_k with
95% intervals over prompts), ``prompts.csv`` (per-prompt counts and rewards),
``bins.csv`` and ``unsolved.csv`` (by base difficulty), ``paired.csv`` (paired
differences between methods), ``reward_hist.csv`` (each final evaluation's reward
histogram), ``steps.csv`` (the training curves: SFT loss and the warm start's
held-out pass@1 every ``sft.eval_every`` steps; per RL step reward, entropy, KL to
the warm start, clip fraction, ESS, gradient norm and clipping, distinct training
problems solved so far; see ``dynamics``), ``pass_at_k.png`` and ``bins.png``; see
``reporting`` for the columns. With ``eval.kl``, ``checkpoints.csv``: per evaluation
(the base model at step 0, each RL run at every evaluated step) and problem, the
correct samples and the KL to the warm start (``prompt_records.checkpoint_rows``).
The base model's binning evaluation draws ``eval.bin_n`` samples per problem
(default ``eval.n``): a problem is base-unsolved when none of them is correct.
"""

from __future__ import annotations

import os
from typing import Any

from experiments import outputs
from experiments.lm import components as components_lib
from experiments.lm import dynamics
from experiments.lm import plotting
from experiments.lm import prompt_records
from experiments.lm import report_rows
from experiments.lm import reporting

STEPS_FILE = "steps.csv"  # The per-step training curves (see dynamics).
REWARD_HIST_FILE = "reward_hist.csv"  # Each final evaluation's reward histogram.
CHECKPOINTS_FILE = "checkpoints.csv"  # Every evaluation's per-prompt counts and KL.


def write(
  workdir: str, records: list[dict[str, Any]], parts: components_lib.Components
) -> list[dict[str, Any]]:
  """Writes every output of the run whose log holds ``records``; returns the rows of
  ``results.csv``.

  Raises:
    workdir.WorkdirError: if ``records`` lack the base evaluation, a run's last one,
      or their per-prompt data (``prompt_records.final_evaluations``; with
      ``eval.kl``, ``prompt_records.checkpoint_rows``).
  """
  c, task = parts.config, parts.task
  evals, bin_correct = prompt_records.final_evaluations(
    records, c.eval.n, {r.name: r.k_label for r in parts.runs}
  )
  tables = reporting.write_reports(
    workdir,
    evals,
    bin_correct,
    seed=c.seed,
    prompts=parts.eval_set.prompts,
    keys=[task.key_text(int(k)) for k in parts.eval_set.keys],
    bin_n=c.eval.bin_n or c.eval.n,
  )
  histogram = report_rows.reward_histogram_rows(evals, c.seed)
  outputs.write_results_csv(workdir, histogram, filename=REWARD_HIST_FILE)
  outputs.write_results_csv(workdir, dynamics.step_rows(records), filename=STEPS_FILE)
  if c.eval.kl:
    checkpoints = prompt_records.checkpoint_rows(
      records,
      k_labels={r.name: r.k_label for r in parts.runs},
      seed=c.seed,
      n_eval=c.eval.n,
      rewards=c.eval.checkpoint_rewards,
    )
    outputs.write_results_csv(workdir, checkpoints, filename=CHECKPOINTS_FILE)
  rows: list[dict[str, Any]] = tables["results.csv"]
  plotting.plot_pass_at_k(rows, os.path.join(workdir, "pass_at_k.png"))
  plotting.plot_bins(tables["bins.csv"], tables["unsolved.csv"], os.path.join(workdir, "bins.png"))
  return rows
