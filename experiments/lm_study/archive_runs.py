r"""Copies the finished runs of an LM study into a folder to commit, small files only.

Usage (after or while ``launch.local`` runs the study sweep into ``out/lm_study``)::

  python -m experiments.lm_study.archive_runs --study_dir=out/lm_study --dest=docs/lm_study/runs

A run folder of ``--study_dir`` is a subfolder holding ``config.json`` or
``launch_status.json`` (other folders, e.g. a summary written into the study folder,
are not runs). A run is finished when it holds ``results.csv`` and, where
``launch.local`` recorded one, its ``launch_status.json`` says ``ok``; unfinished
runs are listed and left alone. Each finished run is copied to
``--dest/<run folder name>/`` with only the files of :data:`ARCHIVED` (the run's
per-problem, per-step and split files: everything ``experiments.lm_study.summary``
reads), not ``metrics.jsonl``, ``throughput.jsonl``, ``log.txt`` or
``checkpoints/``, which are too big to commit. ``checkpoints.csv`` (written only
with ``eval.kl``), ``launch_status.json`` (a run started by hand has none) and
``run.json`` (the run's commit and sessions; runs older than it have none) are copied
when present; every other file of :data:`ARCHIVED` must be there.

The copy is all or nothing and idempotent:

* a finished run that lacks a file stops the archive before anything is copied
  (one error line naming the run and the files, exit code 1);
* a run already archived with the same files is left as it is;
* a run already archived with other contents (a rerun, or another study) stops the
  archive before anything is copied, unless ``--overwrite``, which replaces the
  archived folder.

Each run is copied into a temporary folder beside its destination and renamed into
place, so an interrupted archive leaves no half-copied run.
"""

from __future__ import annotations

from collections.abc import Sequence
import dataclasses
import filecmp
import json
import os
import shutil
import sys
from typing import Any

from absl import flags

from experiments import command_line

# The files of a run that are committed (see the module docstring).
ARCHIVED = (
  "config.json",
  "split.json",
  "results.csv",
  "prompts.csv",
  "bins.csv",
  "unsolved.csv",
  "paired.csv",
  "steps.csv",
  "reward_hist.csv",
  "checkpoints.csv",
  "launch_status.json",
  "run.json",
)
# Archived when present: the checkpoint frontier (runs with eval.kl write it),
# launch.local's record (a run started by hand has none) and the run's provenance (runs
# before experiments/lm/provenance.py have none; a study that requires it is refused by
# experiments.lm_study.summary, not here).
OPTIONAL = ("checkpoints.csv", "launch_status.json", "run.json")
# The files that mark a folder as a run (experiments.lm.main's and launch.local's).
RUN_MARKERS = ("config.json", "launch_status.json")


class ArchiveError(ValueError):
  """A study folder whose runs cannot be archived (missing files, conflicting copies)."""


@dataclasses.dataclass(frozen=True)
class Plan:
  """What :func:`archive` does (or did): run folder names by outcome."""

  copied: tuple[str, ...]  # New in dest, or replaced (--overwrite).
  unchanged: tuple[str, ...]  # Already archived with the same files.
  unfinished: tuple[str, ...]  # "<name>: <why>", not copied.


def _unfinished(folder: str) -> str | None:
  """Why the run in ``folder`` is not finished, or None."""
  if not os.path.isfile(os.path.join(folder, "results.csv")):
    return "no results.csv"
  path = os.path.join(folder, "launch_status.json")
  if not os.path.exists(path):
    return None
  try:
    with open(path) as f:
      status: Any = json.load(f)
  except (OSError, ValueError) as e:
    raise ArchiveError(f"{path} cannot be read as JSON ({e}).") from None
  if not isinstance(status, dict) or status.get("status") != "ok":
    value = status.get("status") if isinstance(status, dict) else status
    return f"the launcher recorded status {value!r}"
  return None


def _files(folder: str) -> list[str]:
  """The files of :data:`ARCHIVED` that ``folder`` holds."""
  return [f for f in ARCHIVED if os.path.isfile(os.path.join(folder, f))]


def _same(source: str, target: str, files: Sequence[str]) -> bool:
  """Whether ``target`` holds exactly ``files`` of :data:`ARCHIVED`, byte for byte as
  in ``source``."""
  if sorted(_files(target)) != sorted(files):
    return False
  return all(
    filecmp.cmp(os.path.join(source, f), os.path.join(target, f), shallow=False) for f in files
  )


def plan(study_dir: str, dest: str, *, overwrite: bool = False) -> Plan:
  """What :func:`archive` would do, checking every run first.

  Raises:
    ArchiveError: if ``study_dir`` is not a folder, a finished run lacks a file of
      :data:`ARCHIVED` (besides those of :data:`OPTIONAL`), a launch status is not
      readable, or (without ``overwrite``) a run is archived in ``dest`` with other
      contents.
  """
  if not os.path.isdir(study_dir):
    raise ArchiveError(f"--study_dir={study_dir!r} is not a folder.")
  copied, unchanged, unfinished = [], [], []
  for name in sorted(os.listdir(study_dir)):
    folder = os.path.join(study_dir, name)
    if not os.path.isdir(folder) or not any(
      os.path.isfile(os.path.join(folder, m)) for m in RUN_MARKERS
    ):
      continue
    why = _unfinished(folder)
    if why is not None:
      unfinished.append(f"{name}: {why}")
      continue
    files = _files(folder)
    absent = [f for f in ARCHIVED if f not in files and f not in OPTIONAL]
    if absent:
      raise ArchiveError(
        f"{folder} is finished but lacks {', '.join(absent)}: it was written by older "
        "code or damaged; rerun it or remove it from --study_dir."
      )
    target = os.path.join(dest, name)
    if not os.path.exists(target):
      copied.append(name)
    elif _same(folder, target, files):
      unchanged.append(name)
    elif overwrite:
      copied.append(name)
    else:
      raise ArchiveError(
        f"{target} already holds run {name} with other contents; pass --overwrite to replace it."
      )
  return Plan(tuple(copied), tuple(unchanged), tuple(unfinished))


def archive(study_dir: str, dest: str, *, overwrite: bool = False) -> Plan:
  """Copies the finished runs of ``study_dir`` into ``dest`` (module docstring);
  returns what it did. Nothing is copied when :func:`plan` raises.

  Raises:
    ArchiveError: see :func:`plan`; also if ``dest`` cannot be written.
  """
  todo = plan(study_dir, dest, overwrite=overwrite)
  try:
    os.makedirs(dest, exist_ok=True)
    for name in todo.copied:
      source, target = os.path.join(study_dir, name), os.path.join(dest, name)
      partial = os.path.join(dest, f".{name}.partial")
      shutil.rmtree(partial, ignore_errors=True)
      os.makedirs(partial)
      for f in _files(source):
        shutil.copyfile(os.path.join(source, f), os.path.join(partial, f))
      if os.path.exists(target):
        shutil.rmtree(target)
      os.rename(partial, target)
  except OSError as e:
    raise ArchiveError(f"--dest={dest!r} cannot be written ({e}).") from None
  return todo


def _define_flags() -> dict[str, flags.FlagHolder]:
  """The binary's flags, defined only when it runs: ``study_dir`` and ``dest`` share
  their names with other binaries' flags (experiments.lm_study.summary's), which a
  test process imports beside this module."""
  return {
    "study_dir": flags.DEFINE_string("study_dir", "out/lm_study", "The study sweep's --out_root."),
    "dest": flags.DEFINE_string("dest", "docs/lm_study/runs", "Where finished runs are copied."),
    "overwrite": flags.DEFINE_bool(
      "overwrite",
      False,
      "Replace an archived run whose files differ from the run's. Default: such a run "
      "stops the archive.",
    ),
  }


def main(argv: Sequence[str], flag_values: dict[str, flags.FlagHolder]) -> None:
  """The binary: :func:`archive`, one line per outcome; an error ends the process with
  one line and exit code 1."""
  dest = flag_values["dest"].value
  with command_line.one_line_errors(argv, ArchiveError):
    done = archive(flag_values["study_dir"].value, dest, overwrite=flag_values["overwrite"].value)
  for name in done.copied:
    print(f"archived {name}")
  for name in done.unchanged:
    print(f"unchanged {name}")
  for line in done.unfinished:
    print(f"not finished, skipped: {line}", file=sys.stderr)
  print(
    f"{len(done.copied)} run(s) archived, {len(done.unchanged)} unchanged, "
    f"{len(done.unfinished)} not finished, in {dest}"
  )


if __name__ == "__main__":
  _FLAG_VALUES = _define_flags()
  command_line.run(lambda argv: main(argv, _FLAG_VALUES))
