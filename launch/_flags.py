"""Flags shared by launch.local, launch.slurm and launch.tpu (defined once).

``--sweep`` (with ``--binary``) is expanded while the flags are parsed, so a bad
sweep (a missing or malformed file, an item such as ``seed=`` with an empty value)
stops the launcher with absl's one-line flag error before anything is written or
started.
"""

from typing import Any

from absl import app
from absl import flags

from launch import sweep as sweep_lib

BINARY = flags.DEFINE_string(
  "binary", None, 'Module of the binary, e.g. experiments.best_of_n (or "binary" in a JSON sweep).'
)
SWEEP = flags.DEFINE_multi_string(
  "sweep",
  [],
  "A JSON sweep file, or items 'flag=v1,v2' / 'flag:=v1;v2' (repeat --sweep; see launch/sweep.py).",
)
OUT_ROOT = flags.DEFINE_string(
  "out_root", None, "Parent folder of the runs' output folders (OUT_ROOT/<run name>)."
)
SCRIPT = flags.DEFINE_string("script", None, "Path of the generated script.")
SETUP = flags.DEFINE_string("setup", "", "Shell command run first (e.g. activate a venv).")
PYTHON = flags.DEFINE_string("python", "python", "Python on the cluster machines.")
REPO_DIR = flags.DEFINE_string(
  "repo_dir",
  None,
  "The repository on the cluster machines (slurm default: this checkout; tpu default: ~/maxk).",
)


def out_root() -> str:
  """The value of ``--out_root``, which every launcher marks required."""
  if OUT_ROOT.value is None:  # Reached only by a launcher that did not mark it required.
    raise app.UsageError("--out_root is required.")
  return OUT_ROOT.value


def _check_sweep(values: dict[str, Any]) -> bool:
  try:
    sweep_lib.expand_many(values["sweep"], out_root="/", binary=values["binary"])
  except ValueError as e:
    raise flags.ValidationError(str(e)) from None
  return True


flags.register_multi_flags_validator(["sweep", "binary"], _check_sweep)
