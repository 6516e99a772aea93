"""Running a binary (experiment or benchmark) as a user does, and checking flag validation.

Each binary defines its absl flags on the global ``FLAGS``, so binaries cannot share
one test process: both helpers run a fresh Python.
"""

from __future__ import annotations

from collections.abc import Sequence
import json
import os
import subprocess
import sys

from tests import REPO_ROOT
from tests import WAIT_S

_ENV = {
  **os.environ,
  "PYTHONPATH": REPO_ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
  "JAX_PLATFORMS": "cpu",
}

# Parses each argv with the binary's flags and reports the error text, or null.
_FLAG_ERRORS = """
import importlib, json, sys
from absl import flags
importlib.import_module(sys.argv[1])
errors = []
for argv in json.loads(sys.argv[2]):
  flags.FLAGS.unparse_flags()
  try:
    flags.FLAGS(["binary", *argv])
    errors.append(None)
  except flags.Error as e:
    errors.append(str(e))
print(json.dumps(errors))
"""


def run(module: str, *args: str, check: bool = True) -> subprocess.CompletedProcess:
  """``python -m module *args`` in the repository root (CPU); output captured as text."""
  return subprocess.run(
    [sys.executable, "-m", module, *args],
    cwd=REPO_ROOT,
    env=_ENV,
    check=check,
    capture_output=True,
    text=True,
    timeout=WAIT_S,
  )


def flag_errors(main_module: str, argvs: Sequence[Sequence[str]]) -> list[str | None]:
  """The flag-parsing error of each argv under ``main_module``'s flags (None: accepted)."""
  proc = subprocess.run(
    [sys.executable, "-c", _FLAG_ERRORS, main_module, json.dumps([list(a) for a in argvs])],
    cwd=REPO_ROOT,
    env=_ENV,
    check=True,
    capture_output=True,
    text=True,
    timeout=WAIT_S,
  )
  return json.loads(proc.stdout.strip().splitlines()[-1])
