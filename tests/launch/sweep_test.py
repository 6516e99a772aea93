"""The cluster scripts' folder guard: a folder is reused only by the same binary and flags."""

import os
import shlex
import subprocess

from launch import slurm
from launch import sweep
from launch import tpu


def _guarded(run: sweep.Run) -> subprocess.CompletedProcess:
  """Runs the guard for ``run``, then a stand-in for the binary that writes results.csv."""
  script = (
    sweep.shell_guard(shlex.quote(sweep.identity(run)), shlex.quote(run.workdir), f"run {run.name}")
    + f"; echo started; touch {shlex.quote(os.path.join(run.workdir, 'results.csv'))}"
  )
  return subprocess.run(["bash", "-c", script], capture_output=True, text=True)


def test_guard_runs_skips_and_refuses(tmp_path):
  (run,) = sweep.expand(
    {"fixed": {"scale": 1}, "grid": {"seed": [0]}}, out_root=str(tmp_path), binary="m.b"
  )
  first = _guarded(run)
  assert first.returncode == 0 and "started" in first.stdout
  with open(os.path.join(run.workdir, sweep.IDENTITY_FILE)) as f:
    assert f.read() == "m.b --scale=1 --seed=0"  # Fixed flags first, then the grid's.

  again = _guarded(run)  # Same flags, finished: skipped.
  assert again.returncode == 0
  assert "already finished" in again.stdout and "started" not in again.stdout

  (changed,) = sweep.expand(
    {"fixed": {"scale": 2}, "grid": {"seed": [0]}}, out_root=str(tmp_path), binary="m.b"
  )
  assert changed.workdir == run.workdir  # A fixed flag does not name the folder...
  refused = _guarded(changed)  # ...but it is part of the run's identity.
  assert refused.returncode == 1 and "started" not in refused.stdout
  assert "holds a run of other flags" in refused.stderr and "--scale=1" in refused.stderr


def test_guard_refuses_results_of_unknown_flags(tmp_path):
  (run,) = sweep.expand(["seed=0"], out_root=str(tmp_path), binary="m.b")
  os.makedirs(run.workdir)
  open(os.path.join(run.workdir, "results.csv"), "w").close()
  proc = _guarded(run)
  assert proc.returncode == 1 and "started" not in proc.stdout
  assert "unknown flags" in proc.stderr


def test_slurm_and_tpu_scripts_carry_each_runs_identity():
  runs = sweep.expand(["config.seed=0,1"], out_root="/o", binary="experiments.best_of_n")
  script = slurm.make_script(runs, out_root="/o", repo_dir="/r")
  for run in runs:
    assert shlex.quote(sweep.identity(run)) in script
    remote = tpu.remote_command(run, repo_dir="~/maxk")
    assert shlex.quote(sweep.identity(run)) in remote
    subprocess.run(["bash", "-n", "-c", remote], check=True)
  subprocess.run(["bash", "-n"], input=script, text=True, check=True)
