"""The command both READMEs give for executing a notebook works, and prints only its own
progress (no kernel warning about TCP, no JAX probe for a TPU)."""

import os
import re
import shlex
import subprocess
import sys

import pytest

from tests import REPO_ROOT
from tests import WAIT_S


def _command(readme: str) -> str:
  """The line of ``readme``'s shell blocks that runs ``python -m notebooks``."""
  with open(os.path.join(REPO_ROOT, readme)) as f:
    blocks = re.findall(r"```bash\n(.*?)```", f.read(), flags=re.S)
  lines = [line for b in blocks for line in b.splitlines() if "python -m notebooks " in line]
  assert len(lines) == 1, (readme, lines)
  return lines[0].split("#", 1)[0].strip()


@pytest.mark.slow  # Integration: a binary in a subprocess (README's second test step).
def test_readmes_command_executes_a_notebook(tmp_path):
  command = _command("README.md")
  assert _command("notebooks/README.md") == command
  words = shlex.split(command)
  start = words.index("python")  # The environment settings before it.
  assignments, args = words[:start], words[start + 1 :]
  env = {k: v for k, v in os.environ.items() if k != "JAX_PLATFORMS"}  # As a user has it.
  env.update(a.split("=", 1) for a in assignments)
  env["PYTHONPATH"] = REPO_ROOT
  workdir = tmp_path / "out"
  args = [f"--workdir={workdir}" if a.startswith("--workdir=") else a for a in args]
  proc = subprocess.run(
    [sys.executable, *args], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=WAIT_S
  )
  assert proc.returncode == 0, proc.stderr
  (name,) = [a.split("=", 1)[1] for a in args if a.startswith("--notebooks=")]
  assert (workdir / f"{name}.ipynb").is_file() and (workdir / "results.csv").is_file()
  output = proc.stdout + proc.stderr
  assert "TCP" not in output and "libtpu" not in output, output
  assert proc.stderr == "", proc.stderr
