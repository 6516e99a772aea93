"""End-to-end tests of experiments.lm: outputs, kill -9 resume, determinism, sharding.

All runs use ``configs/tiny.py:micro`` in subprocesses (as a user runs the binary)
sharing one persistent compilation cache, so only the first run pays for XLA.
"""

import csv
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from tests import REPO_ROOT

_ROOT = REPO_ROOT
_CONFIG = os.path.join(_ROOT, "experiments", "lm", "configs", "tiny.py")


def _env(cache_dir, **extra):
  env = dict(os.environ)
  env.update(
    JAX_PLATFORMS="cpu",
    JAX_COMPILATION_CACHE_DIR=str(cache_dir),
    JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0",
    PYTHONPATH=_ROOT + os.pathsep + env.get("PYTHONPATH", ""),
    **extra,
  )
  return env


def _command(workdir, *overrides):
  return [
    sys.executable,
    "-m",
    "experiments.lm.main",
    f"--config={_CONFIG}:micro",
    f"--workdir={workdir}",
    *overrides,
  ]


def _records(workdir):
  with open(os.path.join(workdir, "metrics.jsonl")) as f:
    return [json.loads(line) for line in f]


def _committed_checkpoints(workdir):
  root = os.path.join(workdir, "checkpoints")
  if not os.path.isdir(root):
    return []
  return [
    (stage, step)
    for stage in sorted(os.listdir(root))
    for step in os.listdir(os.path.join(root, stage))
    if step.isdigit()
  ]


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
  return tmp_path_factory.mktemp("jax_cache")


@pytest.fixture(scope="module")
def reference_run(tmp_path_factory, cache_dir):
  workdir = tmp_path_factory.mktemp("reference")
  subprocess.run(
    _command(workdir), env=_env(cache_dir), cwd=_ROOT, check=True, capture_output=True, timeout=300
  )
  return workdir


def test_outputs(reference_run):
  workdir = reference_run
  for name in ("config.json", "metrics.jsonl", "results.csv", "pass_at_k.png"):
    assert os.path.getsize(os.path.join(workdir, name)) > 0, name
  with open(os.path.join(workdir, "config.json")) as f:
    config = json.load(f)
  assert config["rl"]["runs"] == "max_at_k@2:3:1,grpo"
  with open(os.path.join(workdir, "results.csv")) as f:
    rows = list(csv.DictReader(f))
  assert list(rows[0]) == ["stage", "method", "k_opt", "k_eval", "pass_at_k", "max_at_k"]
  n_eval = config["eval"]["n"]
  assert len(rows) == 3 * n_eval  # base and two RL runs, k = 1..n_eval.
  assert {(r["stage"], r["method"], r["k_opt"]) for r in rows} == {
    ("base", "base", ""),
    ("rl", "max_at_k/loo_minus_one", "2:3:1"),
    ("rl", "grpo", "n/a"),
  }
  for r in rows:
    assert 0.0 <= float(r["pass_at_k"]) <= float(r["max_at_k"]) + 1e-6 <= 1.0 + 1e-6
  records = _records(workdir)
  keys = [(r["stage"], r.get("run", ""), r["step"]) for r in records]
  assert len(keys) == len(set(keys))
  assert [r["step"] for r in records if r["stage"] == "sft"] == list(range(1, 7))
  rl = [r for r in records if r["stage"] == "rl"]
  assert [(r["run"], r["step"]) for r in rl] == [
    (run, s) for run in ("max_at_k_k2-3-1", "grpo") for s in range(1, 5)
  ]
  assert [r["k_opt"] for r in rl[:4]] == [2, 2, 1, 1]  # k annealing.
  assert all(0.0 <= r["eval_cumulative_solve_rate"] <= 1.0 for r in rl if "eval_pass_at_k" in r)


def test_kill_and_resume_matches_uninterrupted_run(reference_run, cache_dir, tmp_path):
  """kill -9 right after the first SFT checkpoint, then after the first RL one."""
  workdir = tmp_path / "resumed"
  env = _env(cache_dir)
  for wanted in ("sft", "rl_"):
    proc = subprocess.Popen(
      _command(workdir), env=env, cwd=_ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    deadline = time.time() + 240
    while not any(stage.startswith(wanted) for stage, _ in _committed_checkpoints(workdir)):
      assert proc.poll() is None, "run ended before it could be killed"
      assert time.time() < deadline
      time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
  subprocess.run(
    _command(workdir), env=env, cwd=_ROOT, check=True, capture_output=True, timeout=300
  )
  # Every step exactly once, and identical to the uninterrupted run (same seed).
  assert _records(workdir) == _records(reference_run)
  with (
    open(os.path.join(workdir, "results.csv")) as f,
    open(os.path.join(reference_run, "results.csv")) as g,
  ):
    assert f.read() == g.read()


_SHARDED_SCRIPT = """
import json, sys
import jax
from experiments.lm import train
from experiments.lm.configs import tiny
out = {}
for devices in (1, 4):
  config = tiny.get_config("micro")
  config.num_devices = devices
  config.rl.runs = "max_at_k@2"
  config.rl.steps = 2
  config.sft.steps = 4
  train.run(config, f"{sys.argv[1]}/d{devices}")
  with open(f"{sys.argv[1]}/d{devices}/metrics.jsonl") as f:
    out[devices] = [json.loads(line) for line in f]
print(json.dumps({"count": jax.device_count(), "runs": out}))
"""


def test_data_parallel_over_four_devices_matches_one(tmp_path, cache_dir):
  env = _env(cache_dir, XLA_FLAGS="--xla_force_host_platform_device_count=4")
  proc = subprocess.run(
    [sys.executable, "-c", _SHARDED_SCRIPT, str(tmp_path)],
    env=env,
    cwd=_ROOT,
    check=True,
    capture_output=True,
    text=True,
    timeout=300,
  )
  result = json.loads(proc.stdout.strip().splitlines()[-1])
  assert result["count"] == 4
  one, four = result["runs"]["1"], result["runs"]["4"]
  assert len(one) == len(four)
  for a, b in zip(one, four):
    assert a.keys() == b.keys()
    for name, value in a.items():
      if isinstance(value, (int, float)) and not isinstance(value, bool):
        assert b[name] == pytest.approx(value, rel=2e-3, abs=2e-4), (a["stage"], a["step"], name)
      elif isinstance(value, list):
        assert b[name] == pytest.approx(value, rel=2e-3, abs=2e-4), (a["stage"], a["step"], name)
      else:
        assert b[name] == value
