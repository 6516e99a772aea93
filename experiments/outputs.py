"""Writing an experiment's outputs: ``config.json``, ``results.csv`` and figures.

Every binary writes its full flag configuration next to its results so that a
result folder is self-describing and the run can be repeated exactly.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
import csv
import json
import os
from typing import Any

from absl import app
from absl import flags


def prepare_out_dir(out_dir: str) -> str:
  """Creates ``out_dir`` (and parents) and returns its absolute path."""
  if not out_dir:
    raise ValueError("--out_dir must be a non-empty path.")
  out_dir = os.path.abspath(out_dir)
  os.makedirs(out_dir, exist_ok=True)
  return out_dir


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


def write_config(out_dir: str, config: Mapping[str, Any]) -> str:
  """Writes ``config`` as pretty JSON to ``out_dir/config.json``; returns the path.

  The file is written to a temporary name and renamed, so a killed run leaves either
  the previous ``config.json`` or the new one, never a torn file.
  """
  path = os.path.join(out_dir, "config.json")
  tmp = path + ".tmp"
  with open(tmp, "w") as f:
    json.dump(dict(config), f, indent=2, sort_keys=True, default=str)
    f.write("\n")
    f.flush()
    os.fsync(f.fileno())
  os.replace(tmp, path)
  return path


def write_results_csv(
  out_dir: str, rows: Sequence[Mapping[str, Any]], *, filename: str = "results.csv"
) -> str:
  """Writes ``rows`` (dicts sharing their keys) with a header row; returns the path."""
  if not rows:
    raise ValueError("rows must hold at least one result row.")
  columns = list(rows[0].keys())
  for row in rows:
    extra = set(row) - set(columns)
    columns.extend(sorted(extra))
  path = os.path.join(out_dir, filename)
  with open(path, "w", newline="") as f:
    writer = csv.DictWriter(f, fieldnames=columns)
    writer.writeheader()
    for row in rows:
      writer.writerow(dict(row))
  return path


def start_run(argv: Sequence[str], out_dir: str) -> str:
  """The common start of every binary's ``main``: rejects stray positional
  arguments, creates ``out_dir`` and writes every flag value to its config.json.

  Returns the absolute ``out_dir``.
  """
  if len(argv) > 1:
    raise app.UsageError(f"Too many command-line arguments: {list(argv[1:])}.")
  out_dir = prepare_out_dir(out_dir)
  write_config(out_dir, flag_values())
  return out_dir
