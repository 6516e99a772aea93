"""A study folder's runs: which belong to the design of its study config
(:class:`experiments.lm_study.config.StudyConfig`: ``TASKS`` x ``SEEDS``), which are
finished, and which are missing."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
import dataclasses
import os

from experiments.lm_study import commits
from experiments.lm_study import config as config_lib
from experiments.lm_study import files
from experiments.lm_study import runs as runs_lib

# Files of a run folder besides config.json (experiments.lm.main's and launch.local's):
# a folder holding one of them but no config.json is a damaged run, not another folder.
# None of them is a file this summary writes, so a summary inside the study folder
# (the default --workdir) is not taken for a run.
RUN_FILES = (
  "steps.csv",
  "split.json",
  "metrics.jsonl",
  "checkpoints",
  "launch_status.json",
  "log.txt",
)


# launch.local's list of the sweep's runs in its --out_root.
RUNS_FILE = "runs.json"


STUDY_BINARY = "experiments.lm.main"


@dataclasses.dataclass(frozen=True)
class Study:
  """The finished runs of a study folder, and the runs of its design it lacks."""

  runs: tuple[runs_lib.Run, ...]
  missing: tuple[str, ...]  # "<task> seed <s>: <why>" or "<folder>: <why>", one per run.
  provenance: tuple[commits.RunRecord, ...] = ()  # Each run's run.json, in the order of runs.

  @property
  def seeds(self) -> list[int]:
    return sorted({r.seed for r in self.runs})


def _identity(folder: str, config: config_lib.StudyConfig) -> tuple[str, int]:
  """(task, seed) of a run folder, from its config.json, checked against ``config``."""
  path = os.path.join(folder, "config.json")
  recorded = files.read_json(path)
  try:
    task, seed = recorded["task"]["name"], recorded["seed"]
  except (KeyError, TypeError):
    raise files.StudyError(f"{path} lacks task.name or seed.") from None
  if not isinstance(task, str) or isinstance(seed, bool) or not isinstance(seed, int):
    raise files.StudyError(f"{path}: task.name={task!r} or seed={seed!r} has the wrong type.")
  if task not in config.tasks:
    raise files.StudyError(
      f"{path}: task {task!r} is not a task of the study ({config.path}: {sorted(config.tasks)})."
    )
  if seed not in config.seeds:
    raise files.StudyError(
      f"{path}: seed {seed} is not a seed of the study ({config.path}: SEEDS = {config.seeds})."
    )
  return task, seed


def _launch_record(folder: str) -> tuple[str | None, float]:
  """(why the launcher's record says the run did not finish, or None; its seconds).

  A folder without ``launch_status.json`` (a run started by hand) has no record:
  (None, NaN).
  """
  path = os.path.join(folder, "launch_status.json")
  if not os.path.exists(path):
    return None, float("nan")
  status = files.read_json(path)
  if not isinstance(status, dict):
    raise files.StudyError(f"{path} does not hold a JSON object.")
  try:
    seconds = float(status.get("seconds", "nan"))
  except (TypeError, ValueError):
    raise files.StudyError(f"{path}: seconds={status.get('seconds')!r} is not a number.") from None
  if status.get("status") != "ok":
    return f"the launcher recorded status {status.get('status')!r} ({path})", seconds
  return None, seconds


def _listed_runs(study_dir: str) -> list[str]:
  """Folder names of the study binary's runs in ``study_dir/runs.json`` (none if absent)."""
  path = os.path.join(study_dir, RUNS_FILE)
  if not os.path.exists(path):
    return []
  listed = files.read_json(path)
  if not isinstance(listed, list) or not all(
    isinstance(r, dict) and isinstance(r.get("name"), str) for r in listed
  ):
    raise files.StudyError(f"{path} is not launch.local's list of runs (objects with a name).")
  return [r["name"] for r in listed if r.get("binary") == STUDY_BINARY]


def _scan(
  study_dir: str, config: config_lib.StudyConfig
) -> tuple[list[runs_lib.Run], list[str], set[tuple[str, int]], list[str]]:
  """(finished runs, missing runs, every (task, seed) with a folder, folder names) of
  the folders in ``study_dir`` (names starting with "." are skipped)."""
  runs: list[runs_lib.Run] = []
  missing: list[str] = []
  seen: dict[tuple[str, int], str] = {}
  names = sorted(
    n
    for n in os.listdir(study_dir)
    if not n.startswith(".") and os.path.isdir(os.path.join(study_dir, n))
  )
  for name in names:
    folder = os.path.join(study_dir, name)
    if not os.path.isfile(os.path.join(folder, "config.json")):
      found = [f for f in RUN_FILES if os.path.exists(os.path.join(folder, f))]
      if found:
        missing.append(f"{folder}: holds {found[0]} but no config.json")
      continue
    task, seed = _identity(folder, config)
    if (task, seed) in seen:
      raise files.StudyError(
        f"Two runs of task {task}, seed {seed}: {seen[task, seed]} and {folder}."
      )
    seen[task, seed] = folder
    failed, seconds = _launch_record(folder)
    absent = [
      f for f in ("results.csv", "prompts.csv") if not os.path.isfile(os.path.join(folder, f))
    ]
    if failed or absent:
      why = failed or f"unfinished or damaged: no {' and no '.join(absent)}"
      missing.append(f"{task} seed {seed}: {why} ({folder})")
      continue
    path = os.path.join(folder, "prompts.csv")
    rows = files.read_csv(path, runs_lib.PROMPT_COLUMNS)
    runs.append(
      runs_lib.run_from_prompt_rows(rows, task=task, seed=seed, folder=folder, seconds=seconds)
    )
  return runs, missing, set(seen), names


def _finished_and_missing(
  study_dir: str, config: config_lib.StudyConfig
) -> tuple[list[runs_lib.Run], list[str]]:
  """The finished runs of ``study_dir`` and why each missing run of the design (or of
  launch.local's runs.json) is missing (:func:`load_study`)."""
  runs, missing, seen, names = _scan(study_dir, config)
  for task in config.tasks:
    missing += [f"{task} seed {s}: no run folder" for s in config.seeds if (task, s) not in seen]
  missing += [
    f"{os.path.join(study_dir, n)}: listed in {RUNS_FILE} but absent"
    for n in _listed_runs(study_dir)
    if n not in names
  ]
  return runs, missing


def load_study(
  study_dir: str, config: config_lib.StudyConfig, *, allow_incomplete: bool = False
) -> Study:
  """The runs of ``study_dir``, sorted by task and seed, and the runs it lacks.

  ``study_dir`` is the sweep's ``--out_root`` or a folder of archived runs
  (``experiments.lm_study.archive_runs``); folders whose names start with "." (an
  interrupted archive's partial copies) are not read. The study's design is
  ``TASKS`` x ``SEEDS`` of its study ``config``; a run of it is
  missing when it has no folder, is unfinished (no ``prompts.csv`` or
  ``results.csv``), or the launcher recorded it as not finished (``failed``,
  ``running``, ``stopped``). Missing too: every run that launch.local's
  ``runs.json`` lists without a folder, and a folder with a run's files but no
  ``config.json``. Intervals over seeds need 2 or more.

  Args:
    study_dir: the study sweep's ``--out_root``, or the archive of its runs.
    config: the study config (``--study_config``), whose design the runs are.
    allow_incomplete: summarise the finished runs of an incomplete study (missing
      runs, or fewer than 2 seeds), which ``Study.missing`` then names; otherwise
      any of these stops.

  Raises:
    StudyError: if the folder holds no finished run, a run is missing (see above,
      unless ``allow_incomplete``), a run's task or seed is not one of the study's,
      two runs share a task and seed, the seeds of a task ran different methods, a
      file is unreadable or malformed (naming it), or the runs' code is not accounted
      for (``run.json``: :func:`experiments.lm_study.commits.check`, with the study
      config's ``REQUIRE_PROVENANCE`` and ``EQUIVALENT_COMMITS``).
  """
  if not os.path.isdir(study_dir):
    raise files.StudyError(f"--study_dir={study_dir!r} is not a folder.")
  runs, missing = _finished_and_missing(study_dir, config)
  if not runs:
    raise files.StudyError(
      f"No finished run folders (config.json, prompts.csv, results.csv) in {study_dir}"
      + (f"; missing: {'; '.join(missing)}." if missing else ".")
    )
  seeds = sorted({r.seed for r in runs})
  if len(seeds) < 2:
    missing.append(f"only seed {seeds[0]}: intervals over seeds need 2 or more")
  if missing and not allow_incomplete:
    raise files.StudyError(
      f"{study_dir} is incomplete: {'; '.join(missing)}. Finish those runs, or pass "
      "--allow_incomplete for a report that names them."
    )
  runs.sort(key=lambda r: (r.task, r.seed))
  for task in tasks_of(runs):
    methods = {tuple(e.run for e in r.evals) for r in runs if r.task == task}
    if len(methods) != 1:
      raise files.StudyError(f"The seeds of task {task} ran different methods: {sorted(methods)}.")
  records = commits.read_records(runs)
  commits.check(
    records,
    require=config.require_provenance,
    equivalent=config.equivalent_commits,
  )
  return Study(runs=tuple(runs), missing=tuple(missing), provenance=tuple(records))


def tasks_of(runs: Iterable[runs_lib.Run]) -> list[str]:
  """The tasks of ``runs``, in their order."""
  return list(dict.fromkeys(r.task for r in runs))


def every_or_no_run(runs: Sequence[runs_lib.Run], name: str) -> list[tuple[runs_lib.Run, str]]:
  """(run, path of its file ``name``) for every run, or none when no run has one.

  Raises:
    StudyError: naming the first missing file when only some runs have one (its
      numbers would cover other seeds than the rest of the summary).
  """
  paths = [(run, os.path.join(run.folder, name)) for run in runs]
  have = [os.path.exists(path) for _, path in paths]
  if any(have) and not all(have):
    absent = paths[have.index(False)][1]
    raise files.StudyError(f"{absent} is missing, while other runs of the study have their {name}.")
  return paths if any(have) else []
