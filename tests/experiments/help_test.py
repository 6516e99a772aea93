"""``python -m BINARY --help`` shows plain text: its usage and its own flags, no Sphinx
markup (absl prints the started module's docstring verbatim)."""

import os
import subprocess
import sys

import pytest

from tests import REPO_ROOT
from tests import WAIT_S

# Integration: every binary in subprocesses (README's second test step, `-m slow`).
pytestmark = pytest.mark.slow

# Each binary and an output flag its help must list (None: it writes no folder).
_BINARIES = {
  "experiments.lm": "--workdir",
  "experiments.lm.main": "--workdir",
  "experiments.bandit_variance": "--workdir",
  "experiments.bandit_training": "--workdir",
  "experiments.best_of_n": "--workdir",
  "experiments.reproduce": "--workdir",
  "experiments.lm_study.summary": "--workdir",
  "experiments.lm_study.readme": None,
  "experiments.lm_study.design": "--workdir",
  "experiments.demo": None,
  "notebooks": "--workdir",
  "maxk.evaluate": "--csv",  # the library's command (argparse)
}
_MARKUP = ("``", ":mod:", ":func:", ":class:", ":data:", ":meth:")


def test_every_binary_help_is_plain_text_with_its_flags():
  env = {**os.environ, "PYTHONPATH": REPO_ROOT, "JAX_PLATFORMS": "cpu"}
  procs = {
    module: subprocess.Popen(
      [sys.executable, "-m", module, "--help"],
      cwd=REPO_ROOT,
      env=env,
      stdout=subprocess.PIPE,
      stderr=subprocess.STDOUT,
      text=True,
    )
    for module in _BINARIES
  }
  for module, proc in procs.items():
    out, _ = proc.communicate(timeout=WAIT_S)
    assert proc.returncode == 0, (module, out)
    assert "python -m " in out, module  # Its usage.
    for markup in _MARKUP:
      assert markup not in out, (module, markup)
    flag = _BINARIES[module]
    if flag is not None:
      assert f"  {flag}" in out, (module, out)
