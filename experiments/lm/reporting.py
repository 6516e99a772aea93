"""Results with uncertainty: per-prompt file, intervals, difficulty bins, paired differences.

The tables are computed in ``report_rows`` (from the :class:`prompt_records.Evaluation`
records of ``prompt_records``, with the intervals of ``intervals``) and written as CSV
files here by :func:`write_reports`.

Inputs, from ``metrics.jsonl``: the final evaluation of the base model (after SFT)
and of each RL run, each with per-prompt data, and the base model's *binning*
evaluation (see ``prompt_records``). Difficulty bins are defined in ``report_rows``;
95% intervals over prompts (normal, paired, and Wilson's for the solved fraction) in
``intervals``.

Outputs (CSV files in the workdir; every row carries ``seed`` and names the RL run
in ``rl_run``, ``base`` for the base model; a ``run`` column is left to launchers,
which add one when they gather results):

* ``results.csv``: per stage/method/k_opt and k_eval = 1..n, ``pass_at_k``,
  ``max_at_k``, their ``_lo``/``_hi`` bounds and standard errors ``_se``;
* ``prompts.csv``: per method and evaluation problem, the problem key, the prompt,
  n, the number correct, the mean and max continuous reward, the base bin, the
  binning evaluation's count ``bin_correct`` of ``bin_n`` samples, and all n rewards
  (``rewards``, space-separated), enough to recompute every number here offline;
* ``bins.csv``: pass@k and max@k with intervals per method, bin and k;
* ``unsolved.csv``: per method, the fraction of the base-unsolved problems it
  solves (at least one correct of n at its final evaluation) with an interval, and
  the paired difference to the base model's own evaluation of the same problems
  (the base model, sampled again, solves some of them too) with its standard error;
* ``paired.csv``: every RL run minus the base model and minus each earlier run, on
  the same problems, for pass@k and max@k at k = 1, 2, 4, ..., n.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from experiments import outputs
from experiments.lm import prompt_records
from experiments.lm import report_rows

FILES = ("results.csv", "prompts.csv", "bins.csv", "unsolved.csv", "paired.csv")


def write_reports(
  workdir: str,
  evals: Sequence[prompt_records.Evaluation],
  bin_correct: np.ndarray,
  *,
  seed: int,
  prompts: Sequence[str],
  keys: Sequence[str],
  bin_n: int | None = None,
) -> dict[str, list[dict[str, Any]]]:
  """Writes the five CSV files of the module docstring into ``workdir``; returns their
  rows by file name (:func:`report_rows.report_tables`)."""
  tables = report_rows.report_tables(
    evals, bin_correct, seed=seed, prompts=prompts, keys=keys, bin_n=bin_n
  )
  for name, rows in tables.items():
    outputs.write_results_csv(workdir, rows, filename=name)
  return tables
