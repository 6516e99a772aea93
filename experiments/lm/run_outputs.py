"""The files a run writes besides its logs and checkpoints (process 0 only).

Before training, ``split.json`` (:func:`write_split`): the evaluation problems, the
distinct training problems drawn and ``overlap`` = 0, replayed without the model
(``splits``). Once every stage is done, from the metrics log (:func:`write`):

* the report's five CSV files (:data:`FILES`, :func:`write_reports`; rows computed
  in ``report_rows`` from the :class:`prompt_records.Evaluation` records of
  ``prompt_records``, with the 95% intervals over prompts of ``intervals``: normal,
  paired, and Wilson's for the solved fraction). Every row carries ``seed`` and
  names the RL run in ``rl_run``, ``base`` for the base model; a ``run`` column is
  left to launchers, which add one when they gather results:

  * ``results.csv``: per stage/method/k_opt and k_eval = 1..n, ``pass_at_k``,
    ``max_at_k``, their ``_lo``/``_hi`` bounds and standard errors ``_se``;
  * ``prompts.csv``: per method and evaluation problem, the problem key, the
    prompt, n, the number correct, the mean and max continuous reward, the base
    bin, the binning evaluation's count ``bin_correct`` of ``bin_n`` samples, and
    all n rewards (``rewards``, space-separated), enough to recompute every number
    here offline;
  * ``bins.csv``: pass@k and max@k with intervals per method, difficulty bin
    (``report_rows``) and k;
  * ``unsolved.csv``: per method, the fraction of the base-unsolved problems it
    solves (at least one correct of n at its final evaluation) with an interval,
    and the paired difference to the base model's own evaluation of the same
    problems (the base model, sampled again, solves some of them too) with its
    standard error;
  * ``paired.csv``: every RL run minus the base model and minus each earlier run,
    on the same problems, for pass@k and max@k at k = 1, 2, 4, ..., n;

* ``reward_hist.csv`` (each final evaluation's reward histogram);
* ``steps.csv`` (the training curves: SFT loss and the warm start's held-out pass@1
  every ``sft.eval_every`` steps; per RL step reward, entropy, KL to the warm start,
  clip fraction, ESS, gradient norm and clipping, distinct training problems solved
  so far; see ``dynamics``);
* ``pass_at_k.png`` and ``bins.png`` (``plotting``);
* with ``eval.kl``, ``checkpoints.csv``: per evaluation (the base model at step 0,
  each RL run at every evaluated step) and problem, the correct samples and the KL
  to the warm start (``prompt_records.checkpoint_rows``).

The inputs, from ``metrics.jsonl``: the final evaluation of the base model (after
SFT) and of each RL run, each with per-prompt data, and the base model's *binning*
evaluation, which draws ``eval.bin_n`` samples per problem (default ``eval.n``): a
problem is base-unsolved when none of them is correct.
"""

from __future__ import annotations

from collections.abc import Sequence
import os
from typing import Any

import numpy as np

from experiments import outputs
from experiments.lm import components as components_lib
from experiments.lm import dynamics
from experiments.lm import plotting
from experiments.lm import prompt_records
from experiments.lm import report_rows
from experiments.lm import splits

FILES = ("results.csv", "prompts.csv", "bins.csv", "unsolved.csv", "paired.csv")
STEPS_FILE = "steps.csv"  # The per-step training curves (see dynamics).
REWARD_HIST_FILE = "reward_hist.csv"  # Each final evaluation's reward histogram.
CHECKPOINTS_FILE = "checkpoints.csv"  # Every evaluation's per-prompt counts and KL.


def write_split(workdir: str, parts: components_lib.Components) -> None:
  """Writes ``split.json``: what the run trains on, replayed without the model
  (deterministic).

  Raises:
    RuntimeError: if a training problem is an evaluation problem.
  """
  split = splits.make_split(parts.task, parts.config, parts.eval_set.keys)
  splits.write_split(workdir, split)
  if split["overlap"]:
    raise RuntimeError(f"{split['overlap']} training problems are evaluation problems.")


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
  """Writes the five CSV files of :data:`FILES` into ``workdir``; returns their rows
  by file name (:func:`report_rows.report_tables`)."""
  tables = report_rows.report_tables(
    evals, bin_correct, seed=seed, prompts=prompts, keys=keys, bin_n=bin_n
  )
  for name, rows in tables.items():
    outputs.write_results_csv(workdir, rows, filename=name)
  return tables


def write(
  workdir: str, records: list[dict[str, Any]], parts: components_lib.Components
) -> list[dict[str, Any]]:
  """Writes every output of the finished run whose log holds ``records``; returns the
  rows of ``results.csv``.

  Raises:
    workdir.WorkdirError: if ``records`` lack the base evaluation, a run's last one,
      or their per-prompt data (``prompt_records.final_evaluations``; with
      ``eval.kl``, ``prompt_records.checkpoint_rows``).
  """
  c, task = parts.config, parts.task
  evals, bin_correct = prompt_records.final_evaluations(
    records, c.eval.n, {r.name: r.k_label for r in parts.runs}
  )
  tables = write_reports(
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
