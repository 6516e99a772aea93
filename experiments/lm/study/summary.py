"""The study's summary: its tables computed from the run folders
(:func:`compute_tables`), then written with the figures and the README
(:func:`summarize`); or only ``contrasts.csv`` from a gathered ``paired.csv``
(:func:`contrasts_from_paired`)."""

from __future__ import annotations

import os
from typing import Any

from absl import logging

from experiments import outputs
from experiments.lm.configs import study_8seed as study_config
from experiments.lm.study import audit
from experiments.lm.study import commits
from experiments.lm.study import evaluation_tables
from experiments.lm.study import figures
from experiments.lm.study import files
from experiments.lm.study import loading
from experiments.lm.study import report
from experiments.lm.study import split_table
from experiments.lm.study import steps as steps_lib
from experiments.lm.study import training_tables

Tables = dict[str, list[dict[str, Any]]]


def compute_tables(study: loading.Study) -> tuple[Tables, dict[tuple[str, int], steps_lib.Steps]]:
  """(file name -> rows of every table of the summary, the runs' training curves).

  Raises:
    StudyError: a run's files disagree with its per-prompt file or are malformed.
  """
  runs = study.runs
  tables = evaluation_tables.per_seed_tables(runs)
  tables["reward_hist.csv"] = evaluation_tables.reward_hist_rows(tables.pop("reward_hist_seeds"))
  tables["summary.csv"] = evaluation_tables.summary_rows(tables)
  tables["contrasts.csv"] = evaluation_tables.contrast_rows(tables["paired.csv"])
  tables["paired_summary.csv"] = evaluation_tables.paired_summary_rows(
    tables["paired.csv"], tables["contrasts.csv"]
  )
  tables["unsolved_summary.csv"] = evaluation_tables.unsolved_summary_rows(tables["unsolved.csv"])
  tables["crossings.csv"] = training_tables.crossing_rows(
    tables["results.csv"], tables["summary.csv"]
  )
  steps = steps_lib.read_all_steps(runs)
  tables["dynamics.csv"] = training_tables.dynamics_rows(runs, steps)
  tables["solved_training.csv"] = training_tables.solved_training_rows(runs, steps)
  tables["splits.csv"] = split_table.split_rows(runs)
  tables["provenance.csv"] = commits.provenance_rows(study.provenance)
  return tables, steps


def summarize(study_dir: str, out_dir: str, *, allow_incomplete: bool = False) -> Tables:
  """Writes every output of the module docstring of :mod:`experiments.lm.study_summary`
  to ``out_dir``; returns the tables.

  Raises:
    StudyError: the study cannot be summarised (see
      :func:`experiments.lm.study.loading.load_study`; with ``allow_incomplete`` the
      README names the missing runs instead), before anything is written.
  """
  study = loading.load_study(study_dir, allow_incomplete=allow_incomplete)
  for line in study.missing:
    logging.warning("Incomplete study, summarised without: %s", line)
  tables, steps = compute_tables(study)
  out_dir = outputs.prepare_out_dir(out_dir)
  for name, rows in tables.items():
    if rows:
      outputs.write_results_csv(out_dir, rows, filename=name)
    elif os.path.exists(os.path.join(out_dir, name)):
      os.remove(os.path.join(out_dir, name))  # A previous summary's table, now empty.
  figures.write_figures(out_dir, tables, loading.tasks_of(study.runs), steps)
  audit_lines = (
    audit.audit_lines(study.runs, tables, steps, margin=study_config.AUDIT_MARGIN)
    if getattr(study_config, "AUDIT", False)
    else []
  )
  with open(os.path.join(out_dir, "README.md"), "w") as f:
    f.write(report.report_markdown(study.runs, tables, study.missing, audit_lines))
  return tables


PAIRED_COLUMNS = ("task", "seed", "a_run", "b_run", "metric", "k_eval", "diff", "diff_se")


def contrasts_from_paired(paired_csv: str, out_dir: str) -> list[dict[str, Any]]:
  """Writes ``out_dir/contrasts.csv``
  (:func:`experiments.lm.study.evaluation_tables.contrast_rows`) from a study's
  gathered ``paired.csv`` alone, e.g. a committed summary whose run folders are gone::

    python -m experiments.lm.study_summary --from_paired=docs/lm_study_8seed/paired.csv \\
      --workdir=docs/lm_study_8seed

  paired.csv's ``diff_se`` is each seed's standard error over problems, as the
  full summary uses it. Returns the rows.

  Raises:
    StudyError: if the file cannot be read, lacks a column or a declared contrast,
      or a value is not a number.
  """
  rows = files.read_csv(paired_csv, PAIRED_COLUMNS)
  try:
    for r in rows:
      int(r["seed"]), int(r["k_eval"]), float(r["diff"]), float(r["diff_se"])
  except ValueError:
    raise files.StudyError(
      f"{paired_csv}: a seed, k_eval, diff or diff_se is not a number."
    ) from None
  if not rows:
    raise files.StudyError(f"{paired_csv} holds no rows.")
  out = evaluation_tables.contrast_rows(rows)
  outputs.write_results_csv(outputs.prepare_out_dir(out_dir), out, filename="contrasts.csv")
  return out
