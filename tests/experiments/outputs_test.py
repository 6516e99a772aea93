"""Tests of experiments.outputs: the output-folder check shared by every writing binary.

Each binary's own flag tests check that it registers the check on its output flag.
"""

import os

import pytest

from experiments import outputs
from tests import binaries


@pytest.fixture(name="a_file")
def _a_file(tmp_path):
  path = tmp_path / "a_file"
  path.write_text("not a folder")
  return path


def test_usable_folders(tmp_path):
  assert outputs.workdir_problem(str(tmp_path)) is None  # Exists.
  assert outputs.workdir_problem(str(tmp_path / "new" / "deeper")) is None  # Created.
  out = outputs.prepare_workdir(str(tmp_path / "new" / "deeper"))
  assert out == str(tmp_path / "new" / "deeper") and os.path.isdir(out)


def test_unusable_folders_are_refused_before_anything_is_created(tmp_path, a_file):
  cases = {
    "": "must be a non-empty path",
    str(a_file): "exists and is not a folder",
    str(a_file / "sub" / "deeper"): f"cannot be created: {a_file} is not a folder",
  }
  os.symlink(tmp_path / "nowhere", tmp_path / "dangling")
  cases[str(tmp_path / "dangling")] = "exists and is not a folder"
  for path, problem in cases.items():
    assert problem in outputs.workdir_problem(path), path
    with pytest.raises(ValueError, match=f"--workdir='{path}': {problem}"):
      outputs.prepare_workdir(path)
  assert sorted(os.listdir(tmp_path)) == ["a_file", "dangling"]


def test_a_folder_without_write_permission_is_refused(tmp_path, monkeypatch):
  locked = tmp_path / "locked"
  locked.mkdir()
  if os.geteuid() != 0:  # Root writes whatever the permission bits say.
    locked.chmod(0o500)
  else:  # What os.access answers for a folder without write permission.
    real = os.access
    monkeypatch.setattr(os, "access", lambda p, mode: str(p) != str(locked) and real(p, mode))
  try:
    assert outputs.workdir_problem(str(locked)) == "is not writable."
    problem = outputs.workdir_problem(str(locked / "run"))
    assert problem == f"cannot be created: {locked} is not writable."
  finally:
    locked.chmod(0o700)


def test_start_run_refuses_with_one_line(tmp_path, a_file):
  # experiments.reproduce checks its --workdir through outputs.start_run only.
  proc = binaries.run("experiments.reproduce", f"--workdir={a_file / 'sub'}", check=False)
  assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
  lines = proc.stderr.strip().splitlines()
  assert lines[-1] == (
    f"experiments.reproduce: --workdir='{a_file / 'sub'}': cannot be created: {a_file} is not "
    "a folder."
  ), proc.stderr
  assert sorted(os.listdir(tmp_path)) == ["a_file"]
