"""Tests of experiments.lm.workdir: one config per workdir, one writer, no stale lock."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from experiments.lm import workdir
from tests import REPO_ROOT
from tests import binaries

_RECORD = {"seed": 0, "rl": {"learning_rate": 1e-3, "runs": "grpo"}, "workdir": "/a", "x": [1, 2]}


def _with(record, **changes):
  out = json.loads(json.dumps(record))
  for field, value in changes.items():
    node = out
    *parents, name = field.split(".")
    for parent in parents:
      node = node[parent]
    node[name] = value
  return out


def _snapshot(path):
  """Every file under ``path`` with its size and modification time."""
  return {
    os.path.join(root, name): (
      os.stat(os.path.join(root, name)).st_size,
      os.stat(os.path.join(root, name)).st_mtime_ns,
    )
    for root, _, names in os.walk(path)
    for name in names
  }


def test_config_differences_name_dotted_fields():
  assert workdir.config_differences(_RECORD, _with(_RECORD)) == []
  assert workdir.config_differences(_RECORD, _with(_RECORD, workdir="/moved")) == []
  changed = _with(_RECORD, seed=1, **{"rl.learning_rate": 3e-4})
  assert workdir.config_differences(_RECORD, changed) == [
    "rl.learning_rate: 0.001 -> 0.0003",
    "seed: 0 -> 1",
  ]
  added = _with(_RECORD, **{"rl.kl_coef": 0.1})
  assert workdir.config_differences(_RECORD, added) == ["rl.kl_coef (only in the new config)"]
  assert workdir.config_differences(added, _RECORD) == ["rl.kl_coef (only in the workdir's config)"]


def test_a_list_recorded_as_its_old_comma_separated_string_is_the_same_list():
  # config.json files written when list fields were strings ("runs": "grpo,max_at_k@8").
  old = _with(_RECORD, **{"rl.runs": "grpo,max_at_k@8,grpo[lr=3e-05]"})
  new = _with(_RECORD, **{"rl.runs": ["grpo", "max_at_k@8", "grpo[lr=3e-05]"]})
  assert workdir.config_differences(old, new) == []
  other = _with(_RECORD, **{"rl.runs": ["grpo", "max_at_k@8"]})
  assert workdir.config_differences(old, other) == [
    "rl.runs: 'grpo,max_at_k@8,grpo[lr=3e-05]' -> ['grpo', 'max_at_k@8']"
  ]


def test_claim_resumes_a_workdir_whose_config_json_has_the_old_string_form(tmp_path):
  path = tmp_path / "w"
  path.mkdir()
  old = _with(_RECORD, **{"rl.runs": "max_at_k@2:3:1,grpo"})
  (path / "config.json").write_text(json.dumps(old))
  with pytest.raises(workdir.WorkdirError, match=r"rl\.runs: 'max_at_k@2:3:1,grpo' -> \['grpo'\]"):
    with workdir.claim(str(path), _with(_RECORD, **{"rl.runs": ("grpo",)})):
      pytest.fail("claimed a workdir of another config")
  with workdir.claim(str(path), _with(_RECORD, **{"rl.runs": ("max_at_k@2:3:1", "grpo")})):
    pass
  # The resumed run rewrote its config.json, now with the list.
  assert json.loads((path / "config.json").read_text())["rl"]["runs"] == ["max_at_k@2:3:1", "grpo"]


def test_claim_writes_config_and_resumes_with_the_same_one(tmp_path):
  path = str(tmp_path / "w")
  with workdir.claim(path, _RECORD) as claimed:
    assert claimed == path
    with open(os.path.join(path, "config.json")) as f:
      assert json.load(f) == _RECORD
  with workdir.claim(path, _with(_RECORD, workdir="/moved")):  # Only the path may differ.
    pass


def test_claim_refuses_another_config_before_writing(tmp_path):
  path = str(tmp_path / "w")
  with workdir.claim(path, _RECORD):
    pass
  os.makedirs(os.path.join(path, "checkpoints"))
  before = _snapshot(path)
  with pytest.raises(
    workdir.WorkdirError, match=r"rl\.learning_rate: 0\.001 -> 0\.01; seed: 0 -> 1"
  ):
    with workdir.claim(path, _with(_RECORD, seed=1, **{"rl.learning_rate": 0.01})):
      pytest.fail("claimed a workdir of another config")
  assert _snapshot(path) == before


def test_claim_refuses_leftovers_without_config_and_a_damaged_config(tmp_path):
  path = tmp_path / "w"
  (path / "checkpoints").mkdir(parents=True)
  with pytest.raises(workdir.WorkdirError, match="checkpoints but no config.json"):
    with workdir.claim(str(path), _RECORD):
      pass
  (path / "config.json").write_text('{"seed": ')
  with pytest.raises(workdir.WorkdirError, match="config.json cannot be read"):
    with workdir.claim(str(path), _RECORD):
      pass


def test_claim_refuses_an_unusable_workdir_before_writing(tmp_path):
  (tmp_path / "file").write_text("")
  cases = {
    "": "must be a non-empty path",
    str(tmp_path / "file"): "exists and is not a folder",
    str(tmp_path / "file" / "w"): "is not a folder",
  }
  for path, problem in cases.items():
    with pytest.raises(workdir.WorkdirError, match=f"--workdir='{path}': .*{problem}"):
      with workdir.claim(path, _RECORD):
        pytest.fail("claimed an unusable workdir")
  assert os.listdir(tmp_path) == ["file"]


@pytest.mark.slow  # Integration: a binary in a subprocess (README's second test step).
def test_main_refuses_an_unusable_workdir_while_parsing_flags():
  # `--workdir=` was accepted once, and the run wrote config.json, metrics.jsonl,
  # checkpoints/, .lock and split.json into the current folder.
  argvs = [["--workdir="], ["--workdir=README.md"], ["--workdir=README.md/run"], ["--workdir=w"]]
  errors = binaries.flag_errors("experiments.lm.main", argvs)
  assert "flag --workdir=: must be a non-empty path" in errors[0]
  assert "flag --workdir=README.md: exists and is not a folder" in errors[1]
  assert "flag --workdir=README.md/run: cannot be created" in errors[2]
  assert errors[3] is None


def test_non_writers_neither_check_nor_write(tmp_path):
  path = str(tmp_path / "w")
  with workdir.claim(path, _RECORD, writer=False) as claimed:
    assert claimed == path
  assert not os.path.exists(path)


_HOLDER = """
import sys, time
from experiments.lm import workdir
with workdir.lock(sys.argv[1]):
  print("locked", flush=True)
  time.sleep(600)
"""


def test_lock_is_exclusive_and_dies_with_its_holder(tmp_path):
  path = str(tmp_path)
  holder = subprocess.Popen(
    [sys.executable, "-c", _HOLDER, path],
    cwd=REPO_ROOT,
    env=dict(os.environ, PYTHONPATH=REPO_ROOT),
    stdout=subprocess.PIPE,
    text=True,
  )
  try:
    assert holder.stdout.readline().strip() == "locked"
    start = time.monotonic()
    with pytest.raises(workdir.WorkdirError, match=rf"in use by another run \(pid {holder.pid}"):
      with workdir.lock(path):
        pytest.fail("two holders of one lock")
    assert time.monotonic() - start < 5  # Fails at once, does not wait.
  finally:
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait()
    holder.stdout.close()
  with workdir.lock(path):  # No stale lock after kill -9.
    with open(os.path.join(path, workdir.LOCK_FILE)) as f:
      assert f.read().strip() == str(os.getpid())
  with workdir.lock(path):  # Released on exit from the block.
    pass
