"""Writing an experiment's outputs: ``config.json``, ``results.csv`` and figures.

Every binary writes its full configuration next to its results so that a
result folder is self-describing and the run can be repeated exactly. Every binary
checks its output folder (:func:`workdir_problem`) before it writes anything.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
import csv
import json
import os
import sys
from typing import Any

from absl import app
from absl import flags
import ml_collections

from experiments import config_checks


def workdir_problem(path: str | None) -> str | None:
  """Why ``path`` cannot be an output folder that a binary creates and writes; None if it can.

  Only reads the file system (nothing is created), so it runs before anything is
  written. A path is usable when it is a folder this process may write, or when its
  nearest existing ancestor is such a folder (the missing folders are created).
  Refused: an empty path, an existing file (or anything else that is not a folder),
  a path below a file, and a folder (or nearest ancestor) without write and search
  permission. Permissions are those of ``os.access``: a root process passes them
  wherever the file system is writable.
  """
  if not path:
    return "must be a non-empty path."
  full = os.path.abspath(path)
  if os.path.lexists(full) and not os.path.isdir(full):
    return "exists and is not a folder."
  ancestor = full
  while not os.path.lexists(ancestor):
    ancestor = os.path.dirname(ancestor)
  if not os.path.isdir(ancestor):
    return f"cannot be created: {ancestor} is not a folder."
  if not os.access(ancestor, os.W_OK | os.X_OK):
    return (
      "is not writable." if ancestor == full else f"cannot be created: {ancestor} is not writable."
    )
  return None


def register_workdir_validator(flag: str = "workdir") -> None:
  """Registers the absl validator of :func:`workdir_problem` on ``--flag``.

  A bad folder then stops the binary while its flags are parsed, before anything is
  written, with exit code 1 and one line: ``BINARY: flag --workdir=PATH: <problem>``
  under :func:`experiments.command_line.parse_flags`, absl's ``FATAL Flags parsing error:
  ...`` under its own parser. An unset flag (None) is left to ``required=True``.
  """

  def check(value: str | None) -> bool:
    problem = None if value is None else workdir_problem(value)
    if problem is not None:
      raise flags.ValidationError(problem)
    return True

  flags.register_validator(flag, check)


def prepare_workdir(workdir: str, *, flag: str = "workdir") -> str:
  """Creates ``workdir`` (and parents) and returns its absolute path.

  Raises:
    experiments.config_checks.ConfigError: naming ``--flag`` and the problem of
      :func:`workdir_problem`; nothing is created then.
  """
  problem = workdir_problem(workdir)
  if problem is not None:
    raise config_checks.ConfigError(f"--{flag}={workdir!r}: {problem}")
  workdir = os.path.abspath(workdir)
  try:
    os.makedirs(workdir, exist_ok=True)
  except OSError as e:  # E.g. permissions that os.access does not see (NFS), a full disk.
    raise config_checks.ConfigError(
      f"--{flag}={workdir!r}: cannot be created ({e.strerror})."
    ) from None
  return workdir


def flag_values(module_names: Sequence[str] | None = None) -> dict[str, Any]:
  """Returns every flag defined by the given modules (default: all non-absl flags)."""
  fv = flags.FLAGS
  out: dict[str, Any] = {}
  for module, module_flags in fv.flags_by_module_dict().items():
    if module_names is not None and module not in module_names:
      continue
    if module_names is None and (module.startswith("absl.") or "absl/" in module):
      continue
    for flag in module_flags:
      out[flag.name] = flag.value
  return dict(sorted(out.items()))


def write_json(path: str, value: Any) -> str:
  """Writes ``value`` as pretty JSON (sorted keys) to ``path``; returns the path.

  The file is written to a temporary name and renamed, so a killed run leaves either
  the previous file or the new one, never a torn file.
  """
  tmp = path + ".tmp"
  with open(tmp, "w") as f:
    json.dump(value, f, indent=2, sort_keys=True, default=str)
    f.write("\n")
    f.flush()
    os.fsync(f.fileno())
  os.replace(tmp, path)
  return path


def write_config(workdir: str, config: Mapping[str, Any]) -> str:
  """Writes ``config`` to ``workdir/config.json`` (atomically, :func:`write_json`);
  returns the path."""
  return write_json(os.path.join(workdir, "config.json"), dict(config))


def write_results_csv(
  workdir: str, rows: Sequence[Mapping[str, Any]], *, filename: str = "results.csv"
) -> str:
  """Writes ``rows`` (dicts sharing their keys) with a header row; returns the path."""
  if not rows:
    raise ValueError("rows must hold at least one result row.")
  columns = list(rows[0].keys())
  for row in rows:
    extra = set(row) - set(columns)
    columns.extend(sorted(extra))
  path = os.path.join(workdir, filename)
  with open(path, "w", newline="") as f:
    writer = csv.DictWriter(f, fieldnames=columns)
    writer.writeheader()
    for row in rows:
      writer.writerow(dict(row))
  return path


def binary_name() -> str:
  """The running binary as ``python -m`` names it (``experiments.best_of_n``), for
  error lines; the script's file name when it was not started with ``-m``."""
  spec = getattr(sys.modules["__main__"], "__spec__", None)
  if spec is None:
    return os.path.basename(sys.argv[0])
  return spec.name.removesuffix(".__main__")


def start(workdir: str, config: ml_collections.ConfigDict) -> str:
  """The start of a run: creates ``workdir`` and writes its ``config.json``.

  ``config.json`` holds every field of ``config`` (as ``config.to_dict()``) and the
  absolute ``workdir``. Call it after the config is validated: it is the first write.

  Returns:
    The absolute ``workdir``.

  Raises:
    experiments.config_checks.ConfigError: when ``workdir`` cannot be a folder
      (:func:`prepare_workdir`); nothing is created then.
  """
  workdir = prepare_workdir(workdir, flag="workdir")
  write_config(workdir, {**config.to_dict(), "workdir": workdir})
  return workdir


def start_run(argv: Sequence[str], workdir: str) -> str:
  """The start of a flags-only binary's ``main`` (``experiments.reproduce``): rejects
  stray positional arguments, creates ``workdir`` and writes every flag value to its
  config.json.

  An unusable ``--workdir`` (see :func:`workdir_problem`) ends the process with one
  line naming the flag and exit code 1, before anything is written.

  Returns the absolute ``workdir``.
  """
  if len(argv) > 1:
    raise app.UsageError(f"Too many command-line arguments: {list(argv[1:])}.")
  try:
    workdir = prepare_workdir(workdir, flag="workdir")
  except ValueError as e:
    raise SystemExit(f"{binary_name()}: {e}") from None
  write_config(workdir, flag_values())
  return workdir
