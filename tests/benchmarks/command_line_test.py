"""Every benchmark's --help exits 0, and a flag value that does not parse ends it with
one line on stderr and exit code 1 (experiments.command_line.run, as the experiments)."""

import os
import subprocess
import sys

import pytest

from tests import REPO_ROOT
from tests import WAIT_S

# Each benchmark and an integer flag of it.
_BENCHMARKS = {
  "benchmarks.compile_time": "--processes",
  "benchmarks.estimators": "--repeats",
  "benchmarks.best_of_n": "--repeats",
  "benchmarks.objectives": "--repeats",
  "benchmarks.lm": "--repeats",
}


@pytest.mark.slow  # Integration: a binary in a subprocess (README's second test step).
def test_help_exits_0_and_a_bad_value_is_one_line():
  env = {**os.environ, "PYTHONPATH": REPO_ROOT, "JAX_PLATFORMS": "cpu"}
  cases = {}
  for module, flag in _BENCHMARKS.items():
    cases[module, "--help"] = [sys.executable, "-m", module, "--help"]
    cases[module, "bad"] = [sys.executable, "-m", module, f"{flag}=abc"]
  procs = {
    key: subprocess.Popen(
      argv, cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    for key, argv in cases.items()
  }
  for (module, case), proc in procs.items():
    out, err = proc.communicate(timeout=WAIT_S)
    if case == "--help":
      assert proc.returncode == 0 and f"python -m {module}" in out, (module, out, err)
    else:
      assert proc.returncode == 1 and out == "", (module, out, err)
      assert err.splitlines() == [
        f"{module}: flag {_BENCHMARKS[module]}=abc: invalid literal for int() with base 10: 'abc'"
      ], (module, err)
