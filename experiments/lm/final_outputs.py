"""The outputs a finished run writes from its metrics log (process 0 only).

``results.csv``, ``prompts.csv``, ``bins.csv``, ``unsolved.csv`` and ``paired.csv``
(``reporting.write_reports``), ``reward_hist.csv`` (each final evaluation's reward
histogram), ``steps.csv`` (the training curves, ``dynamics``), ``pass_at_k.png`` and
``bins.png``.
"""

from __future__ import annotations

import os
from typing import Any

from experiments import outputs
from experiments.lm import components as components_lib
from experiments.lm import dynamics
from experiments.lm import plotting
from experiments.lm import reporting

STEPS_FILE = "steps.csv"  # The per-step training curves (see dynamics).
REWARD_HIST_FILE = "reward_hist.csv"  # Each final evaluation's reward histogram.


def write(
  workdir: str, records: list[dict[str, Any]], parts: components_lib.Components
) -> list[dict[str, Any]]:
  """Writes every output of the run whose log holds ``records``; returns the rows of
  ``results.csv``.

  Raises:
    workdir.WorkdirError: if ``records`` lack the base evaluation, a run's last one,
      or their per-prompt data (``reporting.final_evaluations``).
  """
  c, task = parts.config, parts.task
  evals, bin_correct = reporting.final_evaluations(
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
  histogram = reporting.reward_histogram_rows(evals, c.seed)
  outputs.write_results_csv(workdir, histogram, filename=REWARD_HIST_FILE)
  outputs.write_results_csv(workdir, dynamics.step_rows(records), filename=STEPS_FILE)
  rows: list[dict[str, Any]] = tables["results.csv"]
  plotting.plot_pass_at_k(rows, os.path.join(workdir, "pass_at_k.png"))
  plotting.plot_bins(tables["bins.csv"], tables["unsolved.csv"], os.path.join(workdir, "bins.png"))
  return rows
