"""Multi-process for real: 2 processes x 2 CPU devices joined by jax.distributed.

The tiny config (``tiny.py:micro``, truncated) runs as two processes that
``launch.distributed`` joins on localhost (``jax.distributed.initialize``), each
with 2 forced CPU devices, and as one process with 4 devices. Both use a 4-device
data-parallel mesh over the same global batches, so every metric and result agrees
to float rounding (not bit for bit: the all-reduce across processes may add in
another order than the one inside a process). The workdir holds process 0's
outputs only (one lock, config.json, log), with the checkpoints that both
processes wrote collectively, and a rerun on it resumes to a no-op on both.
"""

import csv
import json
import os
import socket
import subprocess
import sys

import pytest

from experiments.lm import checkpointing
from tests import REPO_ROOT
from tests import WAIT_S

# Integration: multi-process runs joined by jax.distributed (README's second test step, `-m slow`).
pytestmark = pytest.mark.slow

_CONFIG = os.path.join(REPO_ROOT, "experiments", "lm", "configs", "tiny.py")
# One RL run of two steps (non-zero rewards, the KL penalty, two inner epochs), a
# checkpoint every two steps.
_OVERRIDES = ["--config.rl.runs=max_at_k@2", "--config.rl.steps=2"]
_TIMEOUT = WAIT_S


def _env(cache_dir, devices, **extra):
  env = dict(os.environ)
  env.update(
    JAX_PLATFORMS="cpu",
    XLA_FLAGS=f"--xla_force_host_platform_device_count={devices}",
    JAX_COMPILATION_CACHE_DIR=str(cache_dir),
    JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0",
    PYTHONPATH=REPO_ROOT + os.pathsep + env.get("PYTHONPATH", ""),
    **extra,
  )
  return env


def _args(workdir):
  return ["experiments.lm.main", f"--config={_CONFIG}:micro", f"--workdir={workdir}", *_OVERRIDES]


def _free_port():
  with socket.socket() as sock:
    sock.bind(("localhost", 0))
    return sock.getsockname()[1]


def _two_processes(workdir, cache_dir):
  """Runs the binary as 2 processes x 2 devices; returns their (returncode, stderr)."""
  port = _free_port()
  procs = [
    subprocess.Popen(
      [sys.executable, "-m", "launch.distributed", *_args(workdir)],
      env=_env(
        cache_dir,
        2,
        MAXK_COORDINATOR_ADDRESS=f"localhost:{port}",
        MAXK_NUM_PROCESSES="2",
        MAXK_PROCESS_ID=str(index),
      ),
      cwd=REPO_ROOT,
      stdout=subprocess.DEVNULL,
      stderr=subprocess.PIPE,
      text=True,
    )
    for index in range(2)
  ]
  try:
    errors = [p.communicate(timeout=_TIMEOUT)[1] for p in procs]
    return [(p.returncode, e) for p, e in zip(procs, errors)]
  finally:
    for p in procs:
      if p.poll() is None:
        p.kill()
        p.wait()


def _read(workdir, name):
  with open(os.path.join(workdir, name)) as f:
    return f.read()


def _close(x, y):
  """Equal, floats (also inside lists) to float rounding."""
  if isinstance(x, list) and isinstance(y, list):
    return len(x) == len(y) and all(_close(u, v) for u, v in zip(x, y))
  if isinstance(x, float) and isinstance(y, float):
    return x == pytest.approx(y, rel=2e-3, abs=1e-5)
  return x == y


def _key(record):
  return record["stage"], record.get("run", ""), record["step"]


def _records(workdir):
  """The log's records without their checksums (those differ where a value does)."""
  path = os.path.join(workdir, "metrics.jsonl")
  return checkpointing.MetricsLog(path, writer=False).read()


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
  return tmp_path_factory.mktemp("jax_cache")


def test_two_processes_match_one_process_with_as_many_devices(tmp_path, cache_dir):
  single = tmp_path / "single"
  subprocess.run(
    [sys.executable, "-m", *_args(single)],
    env=_env(cache_dir, 4),
    cwd=REPO_ROOT,
    check=True,
    capture_output=True,
    timeout=_TIMEOUT,
  )
  multi = tmp_path / "multi"
  results = _two_processes(multi, cache_dir)
  for index, (code, stderr) in enumerate(results):
    assert code == 0, f"process {index}: {stderr[-3000:]}"

  config = json.loads(_read(multi, "config.json"))
  assert config["num_devices_used"] == 4
  assert json.loads(_read(single, "config.json"))["num_devices_used"] == 4
  # Process 0 alone writes the workdir (launch.distributed leaves --workdir as is).
  assert sorted(n for n in os.listdir(multi) if not n.startswith("process_")) == sorted(
    os.listdir(single)
  )
  assert not any(n.startswith("process_") for n in os.listdir(multi))
  (session,) = json.loads(_read(multi, "run.json"))["sessions"]  # Process 0's session alone.
  assert (session["status"], session["num_devices"]) == ("finished", 4)
  for stage in ("sft", "rl_max_at_k_k2"):
    steps = sorted(os.listdir(multi / "checkpoints" / stage))
    assert steps == sorted(os.listdir(single / "checkpoints" / stage)), stage
  one, two = _records(single), _records(multi)
  assert [_key(r) for r in one] == [_key(r) for r in two]
  # The all-reduce across processes may add in another order than the one inside a
  # process: equal to float rounding, which compounds over steps and inner epochs.
  for a, b in zip(one, two):
    assert b.keys() == a.keys()
    for name, value in a.items():
      assert _close(b[name], value), (_key(a), name, b[name], value)

  rows_one, rows_two = (list(csv.DictReader(open(w / "results.csv"))) for w in (single, multi))
  assert len(rows_one) == len(rows_two) > 0
  for a, b in zip(rows_one, rows_two):
    assert a.keys() == b.keys()
    for name, value in a.items():
      try:
        assert float(b[name]) == pytest.approx(float(value), rel=2e-3, abs=1e-5), name
      except ValueError:  # Not a number: stage, method, k_opt.
        assert b[name] == value, name

  # Rerun: both processes find the finished checkpoints and do nothing more.
  before = _read(multi, "metrics.jsonl")
  for index, (code, stderr) in enumerate(_two_processes(multi, cache_dir)):
    assert code == 0, f"process {index} (rerun): {stderr[-3000:]}"
  assert _read(multi, "metrics.jsonl") == before
  assert len(json.loads(_read(multi, "run.json"))["sessions"]) == 2
