"""The study's summary: its tables computed from the run folders
(:func:`compute_tables`), then written with the figures and the README
(:func:`summarize`); or only ``contrasts.csv`` from a gathered ``paired.csv``
(:func:`contrasts_from_paired`). Each takes the study config
(:class:`experiments.lm_study.config.StudyConfig`, ``--study_config``)."""

from __future__ import annotations

import os
from typing import Any

from absl import logging

from experiments import outputs
from experiments.lm_study import audit
from experiments.lm_study import checkpoints
from experiments.lm_study import commits
from experiments.lm_study import config as config_lib
from experiments.lm_study import contrast_table
from experiments.lm_study import evaluation_tables
from experiments.lm_study import figures
from experiments.lm_study import files
from experiments.lm_study import frontier
from experiments.lm_study import loading
from experiments.lm_study import split_table
from experiments.lm_study import steps as steps_lib
from experiments.lm_study import summary_readme
from experiments.lm_study import training_tables

Tables = dict[str, list[dict[str, Any]]]


def frontier_ks(n: int) -> list[int]:
  """The k of frontier.csv and its figure for an evaluation of n samples: 1, 8 and n
  (those up to n, each once)."""
  return sorted({k for k in (1, 8, n) if k <= n})


def _checkpoint_arms(
  study: loading.Study, config: config_lib.StudyConfig
) -> dict[str, dict[int, dict[str, checkpoints.Arm]]]:
  """task -> seed -> run -> Arm of the runs' checkpoints.csv (none when no run has
  one and no declared contrast needs them).

  Raises:
    StudyError: naming the first run without checkpoints.csv when a declared
      contrast has ``at_kl`` or another run has the file, or a malformed file.
  """
  if config.matched_kl and study.runs:
    run = next(
      (r for r in study.runs if not os.path.isfile(os.path.join(r.folder, checkpoints.FILE))),
      None,
    )
    if run is not None:
      raise files.StudyError(
        f"{os.path.join(run.folder, checkpoints.FILE)} is missing (task {run.task}, seed "
        f"{run.seed}), and the declared contrast {config.matched_kl[0].question!r} compares "
        f"at KL {config.matched_kl[0].at_kl:g} along every run's checkpoints ({config.path})."
      )
  return checkpoints.task_checkpoints(study.runs)


def _frontier_rows(arms: dict[str, dict[int, dict[str, checkpoints.Arm]]]) -> list[dict[str, Any]]:
  """frontier.csv's rows of every task (:func:`frontier_ks`)."""
  rows: list[dict[str, Any]] = []
  for task, by_seed in arms.items():
    n = max(arm.n for seed_arms in by_seed.values() for arm in seed_arms.values())
    try:
      rows += frontier.frontier_rows(task, by_seed, frontier_ks(n))
    except ValueError as e:
      raise files.StudyError(f"Task {task}'s checkpoints.csv: {e}") from None
  return rows


def compute_tables(
  study: loading.Study, config: config_lib.StudyConfig
) -> tuple[Tables, dict[tuple[str, int], steps_lib.Steps]]:
  """(file name -> rows of every table of the summary, the runs' training curves).
  Where the runs hold checkpoints.csv: the declared contrasts at matched KL in
  contrasts.csv and the frontiers (frontier.csv).

  Raises:
    StudyError: a run's files disagree with its per-prompt file or are malformed, or
      a run lacks the checkpoints.csv a contrast at matched KL needs.
  """
  runs = study.runs
  arms = _checkpoint_arms(study, config)
  tables = evaluation_tables.per_seed_tables(runs)
  tables["reward_hist.csv"] = evaluation_tables.reward_hist_rows(tables.pop("reward_hist_seeds"))
  tables["summary.csv"] = evaluation_tables.summary_rows(tables)
  tables["contrasts.csv"] = contrast_table.contrast_rows(
    tables["paired.csv"], config, matched=contrast_table.matched_kl_contrasts(arms, config)
  )
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
  tables[frontier.FILE] = _frontier_rows(arms)
  return tables, steps


def summarize(
  study_dir: str, workdir: str, config: config_lib.StudyConfig, *, allow_incomplete: bool = False
) -> Tables:
  """Writes every output of the module docstring of :mod:`experiments.lm_study.summary`
  to ``workdir`` for the study of ``config``; returns the tables.

  Raises:
    StudyError: the study cannot be summarised (see
      :func:`experiments.lm_study.loading.load_study`; with ``allow_incomplete`` the
      README names the missing runs instead), before anything is written.
  """
  study = loading.load_study(study_dir, config, allow_incomplete=allow_incomplete)
  for line in study.missing:
    logging.warning("Incomplete study, summarised without: %s", line)
  tables, steps = compute_tables(study, config)
  workdir = outputs.prepare_workdir(workdir)
  for name, rows in tables.items():
    if rows:
      outputs.write_results_csv(workdir, rows, filename=name)
    elif os.path.exists(os.path.join(workdir, name)):
      os.remove(os.path.join(workdir, name))  # A previous summary's table, now empty.
  figures.write_figures(workdir, tables, loading.tasks_of(study.runs), steps)
  audit_lines = (
    audit.audit_lines(study.runs, tables, steps, margin=config.audit_margin)
    if config.audit and config.audit_margin is not None
    else []
  )
  with open(os.path.join(workdir, "README.md"), "w") as f:
    f.write(summary_readme.report_markdown(study.runs, tables, config, study.missing, audit_lines))
  return tables


PAIRED_COLUMNS = ("task", "seed", "a_run", "b_run", "metric", "k_eval", "diff", "diff_se")


def contrasts_from_paired(
  paired_csv: str, workdir: str, config: config_lib.StudyConfig
) -> list[dict[str, Any]]:
  """Writes ``workdir/contrasts.csv``
  (:func:`experiments.lm_study.contrast_table.contrast_rows`) of the study of
  ``config`` from its gathered ``paired.csv`` alone, e.g. a committed summary whose
  run folders are gone::

    python -m experiments.lm_study.summary --study_config=experiments.lm.configs.study_8seed \\
      --from_paired=docs/lm_study_8seed/paired.csv --workdir=docs/lm_study_8seed

  paired.csv's ``diff_se`` is each seed's standard error over problems, as the
  full summary uses it. Returns the rows.

  Raises:
    StudyError: if the file cannot be read, lacks a column or a declared contrast,
      or a value is not a number; or ``config`` declares a contrast at matched KL,
      which needs the runs' checkpoints.csv (and counts in its Holm family).
  """
  if config.matched_kl:
    raise files.StudyError(
      f"--from_paired cannot compute {config.matched_kl[0].question!r} (at_kl) of "
      f"{config.path}: contrasts at matched KL need the run folders' checkpoints.csv."
    )
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
  out = contrast_table.contrast_rows(rows, config)
  outputs.write_results_csv(outputs.prepare_workdir(workdir), out, filename="contrasts.csv")
  return out
