"""End-to-end tests of experiments.lm: outputs, kill -9 resume, determinism, sharding.

All runs use ``configs/tiny.py:micro`` in subprocesses (as a user runs the binary)
sharing one persistent compilation cache, so only the first run pays for XLA.
"""

import csv
import json
import math
import os
import shutil
import signal
import socket
import subprocess
import sys
import time

import pytest

from experiments.lm import log_schedule
from experiments.lm import prompt_records
from experiments.lm import workdir as workdir_lib
from experiments.lm.configs import tiny
from tests import REPO_ROOT
from tests import WAIT_S
from tests.experiments.lm import provenance_test
from tests.experiments.lm import run_outputs_test

# Integration: the LM binary in subprocesses (README's second test step, `-m slow`).
pytestmark = pytest.mark.slow

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


def _command(workdir, *overrides, module="experiments.lm.main"):
  return [
    sys.executable,
    "-m",
    module,
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
    _command(workdir),
    env=_env(cache_dir),
    cwd=_ROOT,
    check=True,
    capture_output=True,
    timeout=WAIT_S,
  )
  return workdir


def _sessions(workdir):
  with open(os.path.join(workdir, "run.json")) as f:
    return json.load(f)["sessions"]


def _csv(workdir, name):
  with open(os.path.join(workdir, name)) as f:
    return list(csv.DictReader(f))


_OUTPUTS = (
  "config.json",
  "run.json",
  "metrics.jsonl",
  "split.json",
  "results.csv",
  "prompts.csv",
  "bins.csv",
  "unsolved.csv",
  "paired.csv",
  "pass_at_k.png",
  "bins.png",
  "steps.csv",
  "reward_hist.csv",
  "checkpoints.csv",
)


def test_outputs(reference_run):
  workdir = reference_run
  for name in _OUTPUTS:
    assert os.path.getsize(os.path.join(workdir, name)) > 0, name
  with open(os.path.join(workdir, "config.json")) as f:
    config = json.load(f)
  assert config["rl"]["runs"] == ["max_at_k@2:3:1", "grpo"]  # A list, as JSON writes it.
  # run.json: one session, every field, this checkout's commit (not in config.json).
  (session,) = _sessions(workdir)
  assert set(session) == provenance_test.SESSION_FIELDS
  head = subprocess.run(
    ["git", "rev-parse", "HEAD"], cwd=_ROOT, capture_output=True, text=True, check=True
  )
  assert session["commit"] == head.stdout.strip() and isinstance(session["dirty"], bool)
  assert session["provenance_error"] is None and session["status"] == "finished"
  assert session["started_utc"] <= session["ended_utc"]
  assert (session["platform"], session["num_devices"]) == ("cpu", 1)
  assert f"--workdir={workdir}" in session["argv"]
  assert session["study_design"] == "" and session["design_commit"] is None
  assert not {"commit", "started_utc", "host"} & set(config)
  rows = _csv(workdir, "results.csv")
  assert list(rows[0])[:11] == run_outputs_test.CONTRACT_COLUMNS
  n_eval, num_prompts = config["eval"]["n"], config["eval"]["num_prompts"]
  assert len(rows) == 3 * n_eval  # base and two RL runs, k = 1..n_eval.
  assert {(r["stage"], r["method"], r["k_opt"]) for r in rows} == {
    ("base", "base", ""),
    ("rl", "max_at_k/loo_minus_one/anneal/exact", "2:3:1"),
    ("rl", "grpo/ppo_clip", "n/a"),
  }
  for r in rows:
    assert r["seed"] == "0"
    assert 0.0 <= float(r["pass_at_k"]) <= float(r["max_at_k"]) + 1e-6 <= 1.0 + 1e-6
    for metric in ("pass_at_k", "max_at_k"):
      lo, mean, hi = (float(r[f"{metric}{s}"]) for s in ("_lo", "", "_hi"))
      assert lo <= mean + 1e-6 and mean <= hi + 1e-6
  # The per-prompt file recomputes results.csv offline.
  prompts = _csv(workdir, "prompts.csv")
  assert len(prompts) == 3 * num_prompts
  for r in rows:
    mine = [p for p in prompts if (p["method"], p["k_opt"]) == (r["method"], r["k_opt"])]
    k = int(r["k_eval"])
    per_prompt = [1 - math.comb(n_eval - int(p["correct"]), k) / math.comb(n_eval, k) for p in mine]
    assert float(r["pass_at_k"]) == pytest.approx(sum(per_prompt) / num_prompts, abs=1e-6)
    if k == 1:
      rewards = [float(x) for p in mine for x in p["rewards"].split()]
      assert float(r["max_at_k"]) == pytest.approx(sum(rewards) / len(rewards), abs=1e-6)
  with open(os.path.join(workdir, "split.json")) as f:
    split = json.load(f)
  assert split["overlap"] == 0 and split["num_eval_problems"] == num_prompts
  assert len({p["problem_key"] for p in prompts}) == num_prompts
  assert {p["problem_key"] for p in prompts} == set(split["eval_problems"])
  bins = _csv(workdir, "bins.csv")
  assert {b["bin"] for b in bins} <= {"unsolved", "hard", "medium", "easy"}
  assert len(_csv(workdir, "unsolved.csv")) == 3
  paired = _csv(workdir, "paired.csv")
  assert {(p["a_run"], p["b_run"]) for p in paired} == {
    ("max_at_k_k2-3-1", "base"),
    ("grpo", "base"),
    ("grpo", "max_at_k_k2-3-1"),
  }
  records = _records(workdir)
  keys = [(r["stage"], r.get("run", ""), r["step"]) for r in records]
  assert len(keys) == len(set(keys))
  assert [r["step"] for r in records if r["stage"] == "sft"] == list(range(1, 7))
  rl = [r for r in records if r["stage"] == "rl"]
  assert [(r["run"], r["step"]) for r in rl] == [
    (run, s) for run in ("max_at_k_k2-3-1", "grpo") for s in range(1, 5)
  ]
  assert [r["k_opt"] for r in rl[:4]] == [2, 2, 2, 1]  # "2:3:1": k=2 for 3 steps, then 1.
  # Per-prompt rewards at the final evaluations only; no cumulative solve rate any more.
  assert [r["step"] for r in rl if "eval_rewards" in r] == [4, 4]
  # eval.kl: counts and the held-out KL at every evaluation (steps 2 and 4; step 0 is
  # the base model's, once), exactly 0 for the base model.
  assert [r["step"] for r in rl if "eval_correct" in r] == [2, 4, 2, 4]
  assert [r["step"] for r in rl if "eval_kl" in r] == [2, 4, 2, 4]
  base = next(r for r in records if r["stage"] == "base")
  assert base["eval_kl"] == [0.0] * num_prompts and base["eval_kl_to_warm_start"] == 0.0
  for r in rl:
    if "eval_kl" in r:
      assert len(r["eval_kl"]) == len(r["eval_correct"]) == num_prompts
      assert min(r["eval_kl"]) >= 0 and max(r["eval_kl"]) > 0
      assert r["eval_kl_to_warm_start"] == pytest.approx(sum(r["eval_kl"]) / num_prompts)
  _check_checkpoints_csv(workdir, records, prompts, num_prompts, n_eval)
  assert not any("cumulative" in name for r in records for name in r)
  # The binning evaluation draws eval.bin_n samples per problem.
  assert {p["bin_n"] for p in prompts} == {str(config["eval"]["bin_n"])} == {"8"}
  assert all(0 <= int(p["bin_correct"]) <= 8 for p in prompts)
  # steps.csv: the warm-start curve at SFT steps 3 and 6, every RL step, and the
  # distinct training problems solved so far, as the records' keys say.
  steps = _csv(workdir, "steps.csv")
  warm = [(int(r["step"]), r["warm_n"]) for r in steps if r["stage"] == "sft" and r["warm_n"]]
  assert warm == [(3, "4"), (6, "4")]
  assert all(0 <= float(r["warm_pass_at_1"]) <= 1 for r in steps if r["warm_n"])
  for run in ("max_at_k_k2-3-1", "grpo"):
    mine = [r for r in steps if r["run"] == run]
    assert [int(r["step"]) for r in mine] == [1, 2, 3, 4]
    seen = set()
    for row, record in zip(mine, [r for r in rl if r["run"] == run]):
      seen |= set(record["train_solved_keys"])
      assert int(row["solved_cumulative"]) == len(seen)
      assert float(row["grad_clipped"]) == float(record["grad_norm_max"] > 1.0)
      assert row["kl_to_warm_start"] and row["clip_frac"] and row["ess_frac"]
  # reward_hist.csv: every final evaluation's samples, each in one bin.
  histogram = _csv(workdir, "reward_hist.csv")
  for run in ("base", "max_at_k_k2-3-1", "grpo"):
    counts = [int(r["count"]) for r in histogram if r["rl_run"] == run]
    assert len(counts) == 12 and sum(counts) == num_prompts * n_eval


def _check_checkpoints_csv(workdir, records, prompts, num_prompts, n_eval):
  """checkpoints.csv: the base model once (step 0), then each run at steps 2 and 4."""
  rows = _csv(workdir, "checkpoints.csv")
  assert list(rows[0]) == list(prompt_records.CHECKPOINT_COLUMNS)  # No rewards column.
  evaluations = [("base", 0)] + [(run, s) for run in ("max_at_k_k2-3-1", "grpo") for s in (2, 4)]
  assert len(rows) == len(evaluations) * num_prompts
  keys = [(r["run"], int(r["step"]), int(r["prompt"])) for r in rows]
  assert keys == [(run, s, p) for run, s in evaluations for p in range(num_prompts)]
  assert {(r["run"], r["method"], r["k_opt"]) for r in rows} == {
    ("base", "base", ""),
    ("max_at_k_k2-3-1", "max_at_k/loo_minus_one/anneal/exact", "2:3:1"),
    ("grpo", "grpo/ppo_clip", "n/a"),
  }
  assert {(r["seed"], r["n"]) for r in rows} == {("0", str(n_eval))}
  logged = {("base", 0) if r["stage"] == "base" else (r.get("run"), r["step"]): r for r in records}
  for run, step in evaluations:
    record = logged[run, step]
    mine = [r for r in rows if (r["run"], int(r["step"])) == (run, step)]
    assert [int(r["correct"]) for r in mine] == record["eval_correct"]
    assert [float(r["kl"]) for r in mine] == record["eval_kl"]  # Exactly, as logged.
  # The final evaluations agree with prompts.csv.
  for run in ("base", "max_at_k_k2-3-1", "grpo"):
    final = [r["correct"] for r in rows if r["run"] == run and r["step"] in ("0", "4")]
    assert final == [p["correct"] for p in prompts if p["rl_run"] == run]


def test_kill_and_resume_matches_uninterrupted_run(reference_run, cache_dir, tmp_path):
  """kill -9 right after the first SFT checkpoint, then after the first RL one."""
  workdir = tmp_path / "resumed"
  env = _env(cache_dir)
  for wanted in ("sft", "rl_"):
    proc = subprocess.Popen(
      _command(workdir), env=env, cwd=_ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    deadline = time.time() + WAIT_S
    while not any(stage.startswith(wanted) for stage, _ in _committed_checkpoints(workdir)):
      assert proc.poll() is None, "run ended before it could be killed"
      assert time.time() < deadline
      time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
  subprocess.run(
    _command(workdir), env=env, cwd=_ROOT, check=True, capture_output=True, timeout=WAIT_S
  )
  # Every step exactly once, and identical to the uninterrupted run (same seed).
  assert _records(workdir) == _records(reference_run)
  # Each invocation is a session; the killed ones are marked by the next.
  sessions = _sessions(workdir)
  assert [s["status"] for s in sessions] == ["killed", "killed", "finished"]
  assert [s["ended_utc"] is None for s in sessions] == [True, True, False]
  for name in ("results.csv", "prompts.csv", "paired.csv", "split.json", "checkpoints.csv"):
    with open(os.path.join(workdir, name)) as f, open(os.path.join(reference_run, name)) as g:
      assert f.read() == g.read(), name


def test_logged_keys_enumerate_the_log_of_a_finished_run(reference_run):
  config = tiny.get_config("micro")
  runs = ["max_at_k_k2-3-1", "grpo"]
  keys = [(r["stage"], r.get("run", ""), r["step"]) for r in _records(reference_run)]
  assert log_schedule.logged_keys(config, runs, ("rl/grpo", config.rl.steps)) == keys
  assert log_schedule.logged_keys(config, runs, ("sft", 4)) == keys[:4]  # SFT steps 1..4.
  assert log_schedule.logged_keys(config, runs, None) == []


def _run(workdir, cache_dir, *overrides, module="experiments.lm.main"):
  return subprocess.run(
    _command(workdir, *overrides, module=module),
    env=_env(cache_dir),
    cwd=_ROOT,
    capture_output=True,
    text=True,
    timeout=WAIT_S,
  )


def _snapshot(path):
  out = {}
  for root, _, names in os.walk(path):
    for name in names:
      with open(os.path.join(root, name), "rb") as f:
        out[os.path.relpath(os.path.join(root, name), path)] = f.read()
  return out


def test_rerun_is_a_noop_and_a_lost_log_is_refused(reference_run, cache_dir, tmp_path):
  workdir = tmp_path / "copy"
  shutil.copytree(reference_run, workdir)
  before = _snapshot(workdir)
  assert _run(workdir, cache_dir).returncode == 0  # Same config: nothing to do.
  after = _snapshot(workdir)
  for name in ("metrics.jsonl", "results.csv", "prompts.csv", "split.json"):
    assert after[name] == before[name], name
  sessions = _sessions(workdir)  # The rerun appended its own session.
  assert sessions[0] == json.loads(before["run.json"])["sessions"][0]
  assert [s["status"] for s in sessions] == ["finished", "finished"]
  config_before, config_after = (json.loads(x["config.json"]) for x in (before, after))
  assert config_after.pop("workdir") == str(workdir)  # A moved workdir resumes.
  config_before.pop("workdir")
  assert config_after == config_before
  # Deleting metrics.jsonl once gave 16 of 48 rows and exit 0.
  os.remove(workdir / "metrics.jsonl")
  os.remove(workdir / "results.csv")
  proc = _run(workdir, cache_dir)
  assert proc.returncode != 0
  assert "metrics.jsonl is missing" in proc.stderr.strip().splitlines()[-1]
  assert not os.path.exists(workdir / "results.csv")
  assert not os.path.exists(workdir / "metrics.jsonl")


def test_another_config_on_a_finished_workdir_is_refused(reference_run, cache_dir):
  before = _snapshot(reference_run)
  proc = _run(reference_run, cache_dir, "--config.seed=1")
  assert proc.returncode != 0
  last = proc.stderr.strip().splitlines()[-1]
  assert "seed: 0 -> 1" in last and "use a new --workdir" in last
  assert _snapshot(reference_run) == before


# eval.n=0 runs under launch.distributed below; the unit tests cover every field.
# Both ways to start the binary: `-m experiments.lm.main` and `-m experiments.lm`.
@pytest.mark.parametrize(
  "override, module",
  [("rl.prompts_per_step=0", "experiments.lm.main"), ("rl.steps=-1", "experiments.lm")],
)
def test_bad_config_value_exits_naming_the_field(override, module, cache_dir, tmp_path):
  proc = _run(tmp_path / "w", cache_dir, f"--config.{override}", module=module)
  assert proc.returncode != 0
  field = override.split("=")[0]
  assert f"config.{field}=" in proc.stderr.strip().splitlines()[-1]
  assert not os.path.exists(tmp_path / "w")


def test_second_run_on_a_live_workdir_exits_at_once(cache_dir, tmp_path):
  path = str(tmp_path / "w")
  os.makedirs(path)
  with workdir_lib.lock(path):
    proc = _run(path, cache_dir)
  assert proc.returncode != 0
  assert f"in use by another run (pid {os.getpid()}" in proc.stderr.strip().splitlines()[-1]
  assert sorted(os.listdir(path)) == [workdir_lib.LOCK_FILE]


def test_distributed_flag_under_launch_distributed_initialises_once(cache_dir, tmp_path):
  """launch.distributed initialises JAX's runtime first; --distributed must not again."""
  with socket.socket() as sock:
    sock.bind(("localhost", 0))
    port = sock.getsockname()[1]
  env = _env(
    cache_dir,
    MAXK_COORDINATOR_ADDRESS=f"localhost:{port}",
    MAXK_NUM_PROCESSES="1",
    MAXK_PROCESS_ID="0",
  )
  # A bad value ends the run right after initialisation, with the config's message.
  command = _command(tmp_path / "w", "--distributed", "--config.eval.n=0")
  proc = subprocess.run(
    [sys.executable, "-m", "launch.distributed", *command[2:]],
    env=env,
    cwd=_ROOT,
    capture_output=True,
    text=True,
    timeout=WAIT_S,
  )
  assert proc.returncode != 0
  assert "config.eval.n=0" in proc.stderr.strip().splitlines()[-1], proc.stderr[-2000:]
  assert not os.path.exists(tmp_path / "w")


_SHARDED_SCRIPT = """
import json, sys
import jax
from experiments.lm import checkpointing, train
from experiments.lm.configs import tiny
out = {}
for devices in (1, 4):
  config = tiny.get_config("micro")
  config.num_devices = devices
  config.rl.runs = ("max_at_k@2",)
  config.rl.steps = 2
  config.sft.steps = 4
  train.run(config, f"{sys.argv[1]}/d{devices}")
  # Records without their checksums (those differ where a value does).
  out[devices] = checkpointing.MetricsLog(f"{sys.argv[1]}/d{devices}/metrics.jsonl").read()
print(json.dumps({"count": jax.device_count(), "runs": out}))
"""


# Importance-ratio diagnostics are differences of two float32 sequence log-probs of the
# same parameters (0 exactly on one device): the mesh's reduction order moves them by ~5e-4.
_RATIO_DIAGNOSTICS = ("abs_log_ratio", "last_abs_log_ratio", "last_max_weight", "last_ess_frac")


def test_data_parallel_over_four_devices_matches_one(tmp_path, cache_dir):
  env = _env(cache_dir, XLA_FLAGS="--xla_force_host_platform_device_count=4")
  proc = subprocess.run(
    [sys.executable, "-c", _SHARDED_SCRIPT, str(tmp_path)],
    env=env,
    cwd=_ROOT,
    check=True,
    capture_output=True,
    text=True,
    timeout=WAIT_S,
  )
  result = json.loads(proc.stdout.strip().splitlines()[-1])
  assert result["count"] == 4
  one, four = result["runs"]["1"], result["runs"]["4"]
  assert len(one) == len(four)
  for a, b in zip(one, four):
    assert a.keys() == b.keys()
    for name, value in a.items():
      if isinstance(value, (int, float)) and not isinstance(value, bool):
        tol = 2e-3 if name in _RATIO_DIAGNOSTICS else 2e-4
        assert b[name] == pytest.approx(value, rel=2e-3, abs=tol), (a["stage"], a["step"], name)
      elif isinstance(value, list) and all(isinstance(x, str) for x in value):
        assert b[name] == value, (a["stage"], a["step"], name)  # Per-prompt rewards.
      elif isinstance(value, list):
        assert b[name] == pytest.approx(value, rel=2e-3, abs=2e-4), (a["stage"], a["step"], name)
      else:
        assert b[name] == value
