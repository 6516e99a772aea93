"""Tests of experiments.lm_study.archive_runs on a small synthetic study folder."""

import json
import os

import pytest

from experiments.lm_study import archive_runs
from tests import binaries

# What experiments.lm.main and launch.local leave in a run folder, beyond the archive.
NOT_ARCHIVED = ("metrics.jsonl", "throughput.jsonl", "log.txt", "pass_at_k.png")


def _write_run(root, name, *, status="ok", skip=()):
  folder = os.path.join(root, name)
  os.makedirs(os.path.join(folder, "checkpoints"))
  for f in (*archive_runs.ARCHIVED, *NOT_ARCHIVED, "checkpoints/ckpt_20"):
    if f in skip:
      continue
    with open(os.path.join(folder, f), "w") as out:
      if f == "launch_status.json":
        json.dump({"status": status, "seconds": 12.0}, out)
      else:
        out.write(f"{name} {f}\n")
  return folder


@pytest.fixture(name="study")
def _study(tmp_path):
  root = str(tmp_path / "study")
  _write_run(root, "a_seed0")
  # Started by hand with older code: no launch status, run.json or checkpoints.csv.
  _write_run(root, "a_seed1", skip=("launch_status.json", "run.json", "checkpoints.csv"))
  _write_run(root, "a_seed2", status="running")
  _write_run(root, "a_seed3", skip=("results.csv",))
  os.makedirs(os.path.join(root, "summary"))  # Not a run: no config.json, no status.
  with open(os.path.join(root, "summary", "results.csv"), "w") as f:
    f.write("x\n")
  return root


def test_copies_only_the_committed_files_of_finished_runs(study, tmp_path):
  dest = str(tmp_path / "dest")
  done = archive_runs.archive(study, dest)
  assert done.copied == ("a_seed0", "a_seed1")
  assert done.unchanged == ()
  assert [u.split(":")[0] for u in done.unfinished] == ["a_seed2", "a_seed3"]
  assert sorted(os.listdir(dest)) == ["a_seed0", "a_seed1"]
  assert sorted(os.listdir(os.path.join(dest, "a_seed0"))) == sorted(archive_runs.ARCHIVED)
  assert "run.json" in archive_runs.ARCHIVED  # The run's commit travels with it.
  assert sorted(os.listdir(os.path.join(dest, "a_seed1"))) == sorted(
    set(archive_runs.ARCHIVED) - {"launch_status.json", "run.json", "checkpoints.csv"}
  )
  for f in archive_runs.ARCHIVED:
    with open(os.path.join(dest, "a_seed0", f)) as a, open(os.path.join(study, "a_seed0", f)) as b:
      assert a.read() == b.read()

  # Idempotent; a finished run added later is copied alone.
  os.remove(os.path.join(study, "a_seed2", "launch_status.json"))
  done = archive_runs.archive(study, dest)
  assert done.copied == ("a_seed2",) and done.unchanged == ("a_seed0", "a_seed1")

  # A run resumed once more (another session in run.json): refused like other results.
  with open(os.path.join(study, "a_seed1", "run.json"), "w") as f:
    f.write("a_seed1 sessions\n")
  with pytest.raises(archive_runs.ArchiveError, match="a_seed1 already holds run a_seed1"):
    archive_runs.archive(study, dest)
  os.remove(os.path.join(study, "a_seed1", "run.json"))

  # A run rerun with other results: refused (nothing copied) unless --overwrite.
  with open(os.path.join(study, "a_seed0", "steps.csv"), "a") as f:
    f.write("more\n")
  with pytest.raises(archive_runs.ArchiveError, match="a_seed0 already holds run a_seed0"):
    archive_runs.archive(study, dest)
  done = archive_runs.archive(study, dest, overwrite=True)
  assert done.copied == ("a_seed0",)
  with open(os.path.join(dest, "a_seed0", "steps.csv")) as f:
    assert f.read().endswith("more\n")
  assert archive_runs.archive(study, dest).copied == ()


def test_a_finished_run_without_its_files_is_refused_by_the_binary(study, tmp_path):
  os.remove(os.path.join(study, "a_seed1", "steps.csv"))
  os.remove(os.path.join(study, "a_seed1", "reward_hist.csv"))
  dest = tmp_path / "dest"
  proc = binaries.run(
    "experiments.lm_study.archive_runs", f"--study_dir={study}", f"--dest={dest}", check=False
  )
  assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
  last = proc.stderr.strip().splitlines()[-1]
  assert last.startswith("experiments.lm_study.archive_runs: ") and "a_seed1" in last, last
  assert "lacks steps.csv, reward_hist.csv" in last
  assert not dest.exists()  # All or nothing: a_seed0 was not copied either.
