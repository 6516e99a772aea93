"""launch/: sweep expansion, the local runner end to end, the SLURM and TPU scripts."""

import csv
import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from launch import cpus
from launch import distributed
from launch import local
from launch import processes
from launch import slurm
from launch import sweep
from launch import tpu
from tests import REPO_ROOT
from tests import WAIT_S

_ROOT = REPO_ROOT

# A stand-in binary (no JAX: starts in milliseconds) with the binaries' contract:
# --workdir, results.csv with a header row, config.json; fails when asked to. It writes
# its pid first and sleeps when asked to, and reports the cores it may run on.
_FAKE_BINARY = textwrap.dedent("""\
    import json, os, sys, time
    args = dict(a[2:].split("=", 1) for a in sys.argv[1:])
    os.makedirs(args["workdir"], exist_ok=True)
    with open(os.path.join(args["workdir"], "pid.txt"), "w") as f:
        f.write(str(os.getpid()))
    with open(os.path.join(args["workdir"], "calls.txt"), "a") as f:
        f.write("called\\n")
    time.sleep(float(args.get("sleep", 0)))
    if args.get("fail") == "1":
        sys.exit(3)
    with open(os.path.join(args["workdir"], "config.json"), "w") as f:
        json.dump(args, f)
    with open(os.path.join(args["workdir"], "results.csv"), "w") as f:
        f.write("seed,value,cores\\n")
        for i in range(2):
            scale = float(args.get("scale", 1))
            f.write(f"{args.get('seed', '')},{scale * i},{len(os.sched_getaffinity(0))}\\n")
    """)


@pytest.fixture
def fake_binary(tmp_path, monkeypatch):
  pkg = tmp_path / "fakepkg"
  pkg.mkdir()
  (pkg / "__init__.py").write_text("")
  (pkg / "fake_binary.py").write_text(_FAKE_BINARY)
  monkeypatch.setenv("PYTHONPATH", f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
  return "fakepkg.fake_binary"


# ------------------------------------------------------------------------------
# Sweep expansion.
# ------------------------------------------------------------------------------


def test_expand_items_is_a_deterministic_product():
  items = ["config.seed=0,1", "config.num_mc_draws=10,20,30", "config.n_max=7"]
  runs = sweep.expand(items, out_root="/o", binary="experiments.best_of_n")
  assert len(runs) == 6
  assert [r.name for r in runs[:3]] == [
    "config.seed-0_config.num_mc_draws-10_config.n_max-7",
    "config.seed-0_config.num_mc_draws-20_config.n_max-7",
    "config.seed-0_config.num_mc_draws-30_config.n_max-7",
  ]
  assert runs[3].params == (
    ("config.seed", "1"),
    ("config.num_mc_draws", "10"),
    ("config.n_max", "7"),
  )
  assert runs[0].workdir == os.path.join("/o", runs[0].name)
  assert runs[0].args() == [
    f"--workdir=/o/{runs[0].name}",
    "--config.seed=0",
    "--config.num_mc_draws=10",
    "--config.n_max=7",
  ]
  assert runs[0].command("py")[:3] == ["py", "-m", "experiments.best_of_n"]
  assert runs[0].command("py", distributed=True)[:4] == [
    "py",
    "-m",
    "launch.distributed",
    "experiments.best_of_n",
  ]
  assert sweep.expand(items, out_root="/o", binary="experiments.best_of_n") == runs


def test_expand_json_spec_fixed_flags_lists_and_grids(tmp_path):
  spec = {
    "binary": "experiments.best_of_n",
    "fixed": {"config.uniform_sizes": [10, 100], "config.float64": True},
    "grids": [{"config.rr_max_tries": ["1,4", "8"]}, {"config.seed": [3]}],
  }
  path = tmp_path / "s.json"
  path.write_text(json.dumps(spec))
  for source in (spec, str(path), json.dumps(spec)):
    runs = sweep.expand(source, out_root="/o")
    assert [r.name for r in runs] == [
      "config.rr_max_tries-1-4",
      "config.rr_max_tries-8",
      "config.seed-3",
    ]
    assert dict(runs[0].flags) == {
      "config.uniform_sizes": "10,100",
      "config.float64": "true",
      "config.rr_max_tries": "1,4",
    }
  # ':=' splits on ';' so that list-valued fields can be swept from the command line.
  runs = sweep.expand(["config.ks:=1,4;8"], out_root="/o", binary="b")
  assert [dict(r.params)["config.ks"] for r in runs] == ["1,4", "8"]


@pytest.mark.parametrize("binary", ["experiments.lm.main", "experiments.best_of_n", "my.binary"])
def test_every_binary_gets_its_folder_as_workdir(binary):
  (run,) = sweep.expand(["config.seed=1"], out_root="/o", binary=binary)
  assert run.args()[0] == "--workdir=/o/config.seed-1"


def test_expand_errors():
  with pytest.raises(ValueError, match="binary"):
    sweep.expand(["seed=0"], out_root="/o")
  with pytest.raises(ValueError, match="flag=v1,v2"):
    sweep.expand(["seed"], out_root="/o", binary="b")
  # Both spellings of the output folder flag are the launcher's.
  for flag in ("workdir", "out_dir"):
    with pytest.raises(ValueError, match=f"--{flag} is set by the launcher"):
      sweep.expand([f"{flag}=a,b"], out_root="/o", binary="b")
    with pytest.raises(ValueError, match=f"--{flag} is set by the launcher"):
      sweep.expand({"binary": "b", "fixed": {flag: "a"}, "grid": {"seed": [0]}}, out_root="/o")
  with pytest.raises(ValueError, match="same name"):
    sweep.expand({"binary": "b", "grids": [{"seed": [0]}, {"seed": [0]}]}, out_root="/o")
  long = sweep.expand([f"flag{i}=" + "x" * 30 for i in range(6)], out_root="/o", binary="b")
  assert len(long[0].name) <= 120


def test_malformed_sweeps_are_refused(tmp_path):
  def written(name, text):
    (tmp_path / name).write_text(text)
    return str(tmp_path / name)

  cases = {
    # Once a run with --seed= (an empty value) that could only fail.
    "seed=": "'seed=' has an empty value",
    "seed=0,,1": "has an empty value",
    "=0,1": "names no flag",
    # Once "must look like 'flag=v1,v2'" for a file that does not exist.
    str(tmp_path / "missing.json"): "cannot be read",
    # Once an AttributeError traceback.
    written("list.json", "[1, 2]"): "must hold a JSON object, not list",
    written("bad.json", '{"grid": '): "is not valid JSON",
    # Once a single run with no grid value, silently.
    written("typo.json", '{"binary": "b", "grdi": {"seed": [0, 1]}}'): "unknown key(s) ['grdi']",
    written("both.json", '{"binary": "b", "grid": {}, "grids": [{}]}'): "both 'grid' and 'grids'",
    written("none.json", '{"binary": "b", "grids": []}'): "non-empty list of objects",
    written("fixed.json", '{"binary": "b", "fixed": [1]}'): "'fixed' must be an object",
  }
  for spec, problem in cases.items():
    with pytest.raises(ValueError) as error:
      sweep.expand_many([spec], out_root="/o", binary="b")
    assert problem in str(error.value), (spec, error.value)


def test_example_sweep_files_expand():
  folder = os.path.join(_ROOT, "launch", "sweeps")
  files = sorted(f for f in os.listdir(folder) if f.endswith(".json"))
  assert files
  for name in files:
    runs = sweep.expand(os.path.join(folder, name), out_root="/o")
    assert runs and all(r.binary.startswith("experiments.") for r in runs)


# ------------------------------------------------------------------------------
# The local runner.
# ------------------------------------------------------------------------------


def _launch(*args):
  return subprocess.run(
    [sys.executable, "-m", "launch.local", *args],
    cwd=_ROOT,
    capture_output=True,
    text=True,
    timeout=WAIT_S,
    env=dict(os.environ),
  )


def test_local_runner_runs_skips_and_gathers(fake_binary, tmp_path):
  out_root = tmp_path / "sweep"
  args = [
    f"--binary={fake_binary}",
    "--sweep=seed=0,1",
    "--sweep=scale=1,10",
    f"--out_root={out_root}",
    "--parallel=2",
  ]
  proc = _launch(*args)
  assert proc.returncode == 0, proc.stderr
  with open(out_root / "all_results.csv") as f:
    rows = list(csv.DictReader(f))
  assert len(rows) == 8
  # The results' own 'seed' column is kept; the sweep's becomes 'sweep_seed'.
  assert list(rows[0]) == ["run", "sweep_seed", "scale", "seed", "value", "cores"]
  by_run = {(r["run"], r["value"]) for r in rows}
  assert ("seed-1_scale-10", "10.0") in by_run
  assert all(r["sweep_seed"] == r["seed"] for r in rows)
  manifest = json.loads((out_root / "runs.json").read_text())
  assert {m["status"] for m in manifest} == {"ok"}
  # Rerunning skips every finished run.
  proc = _launch(*args)
  assert proc.returncode == 0, proc.stderr
  assert all((out_root / r["name"] / "calls.txt").read_text() == "called\n" for r in manifest)
  assert {m["status"] for m in json.loads((out_root / "runs.json").read_text())} == {"skipped"}
  # A failed run is reported, not gathered, and rerun next time.
  proc = _launch(f"--binary={fake_binary}", "--sweep=fail=1", f"--out_root={tmp_path / 'f'}")
  assert proc.returncode == 1
  assert "Failed runs" in proc.stderr
  assert not local.is_done(str(tmp_path / "f" / "fail-1"))


def _is_locked(workdir):
  """Whether a live run holds ``workdir``'s lock."""
  fd = processes.try_lock(workdir)
  if fd is None:
    return True
  os.close(fd)
  return False


def _alive(pid):
  """Whether process ``pid`` exists and is not a zombie."""
  try:
    with open(f"/proc/{pid}/stat") as f:
      return f.read().rsplit(")", 1)[1].split()[0] != "Z"
  except FileNotFoundError:
    return False


def _wait_for(path, timeout=WAIT_S):
  deadline = time.time() + timeout
  while not (path.exists() and path.read_text()):
    assert time.time() < deadline, f"{path} never appeared"
    time.sleep(0.05)
  return path.read_text()


def _start_launcher(*args):
  return subprocess.Popen(
    [sys.executable, "-m", "launch.local", *args],
    cwd=_ROOT,
    stdout=subprocess.PIPE,
    stderr=subprocess.PIPE,
    text=True,
    env=dict(os.environ),
  )


@pytest.mark.parametrize(
  "flag",
  [
    "--parallel=-1",
    "--parallel=0",
    "--timeout=-1",
    "--threads_per_run=-1",
    "--threads_per_run=100000",
  ],
)
def test_bad_flag_value_is_one_error_naming_the_flag(flag, fake_binary, tmp_path):
  proc = _launch(f"--binary={fake_binary}", "--sweep=seed=0", f"--out_root={tmp_path / 'o'}", flag)
  assert proc.returncode != 0
  errors = [line for line in proc.stderr.splitlines() if flag.split("=")[0] in line]
  assert len(errors) == 1, proc.stderr
  assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("case", ["empty value", "missing file", "list file", "file as out_root"])
def test_a_bad_sweep_or_out_root_is_one_error_and_starts_nothing(case, fake_binary, tmp_path):
  (tmp_path / "list.json").write_text("[1, 2]")
  (tmp_path / "a_file").write_text("")
  args = {
    "empty value": ["--sweep=seed=", f"--out_root={tmp_path / 'o'}"],
    "missing file": [f"--sweep={tmp_path / 'missing.json'}", f"--out_root={tmp_path / 'o'}"],
    "list file": [f"--sweep={tmp_path / 'list.json'}", f"--out_root={tmp_path / 'o'}"],
    "file as out_root": ["--sweep=seed=0", f"--out_root={tmp_path / 'a_file' / 'o'}"],
  }[case]
  proc = _launch(f"--binary={fake_binary}", *args)
  assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
  errors = [line for line in proc.stderr.splitlines() if "Flags parsing error" in line]
  assert len(errors) == 1, proc.stderr
  flag = "--out_root" if case == "file as out_root" else "sweep="
  assert flag in errors[0], errors[0]
  assert sorted(os.listdir(tmp_path)) == ["a_file", "fakepkg", "list.json"]  # Nothing written.


def test_changed_fixed_flag_is_an_error_not_a_skip(fake_binary, tmp_path):
  spec = tmp_path / "sweep.json"
  out_root = tmp_path / "o"
  spec.write_text(json.dumps({"binary": fake_binary, "fixed": {"scale": 1}, "grid": {"seed": [0]}}))
  assert _launch(f"--sweep={spec}", f"--out_root={out_root}").returncode == 0
  # The run name comes from the grid only: same folder, other flags.
  spec.write_text(json.dumps({"binary": fake_binary, "fixed": {"scale": 2}, "grid": {"seed": [0]}}))
  proc = _launch(f"--sweep={spec}", f"--out_root={out_root}")
  assert proc.returncode == 2
  assert "seed-0" in proc.stderr and "--scale: 1 -> 2" in proc.stderr
  assert (out_root / "seed-0" / "calls.txt").read_text() == "called\n"  # Not run again.
  # A flag added to the sweep is a difference too; the unchanged sweep is still skipped.
  spec.write_text(
    json.dumps({"binary": fake_binary, "fixed": {"scale": 1, "x": 5}, "grid": {"seed": [0]}})
  )
  proc = _launch(f"--sweep={spec}", f"--out_root={out_root}")
  assert proc.returncode == 2 and "--x: (unset) -> 5" in proc.stderr
  spec.write_text(json.dumps({"binary": fake_binary, "fixed": {"scale": 1}, "grid": {"seed": [0]}}))
  assert _launch(f"--sweep={spec}", f"--out_root={out_root}").returncode == 0
  assert (out_root / "seed-0" / "calls.txt").read_text() == "called\n"


def test_unrecorded_results_are_an_error_but_can_be_gathered(fake_binary, tmp_path):
  run_dir = tmp_path / "o" / "seed-0"
  run_dir.mkdir(parents=True)
  (run_dir / "results.csv").write_text("value\n1\n")  # E.g. written by a SLURM sweep.
  args = [f"--binary={fake_binary}", "--sweep=seed=0", f"--out_root={tmp_path / 'o'}"]
  proc = _launch(*args)
  assert proc.returncode == 2 and "seed-0" in proc.stderr and "flags are unknown" in proc.stderr
  proc = _launch(*args, "--gather_only")
  assert proc.returncode == 0, proc.stderr
  assert "Gathered 1 rows from 1/1 runs" in proc.stdout


def test_threads_per_run_pins_each_run_to_that_many_cores(fake_binary, tmp_path):
  for threads, expected in ((1, "1"), (0, str(len(os.sched_getaffinity(0))))):
    out_root = tmp_path / str(threads)
    proc = _launch(
      f"--binary={fake_binary}",
      "--sweep=seed=0,1",
      f"--out_root={out_root}",
      "--parallel=2",
      f"--threads_per_run={threads}",
    )
    assert proc.returncode == 0, proc.stderr
    with open(out_root / "all_results.csv") as f:
      assert {row["cores"] for row in csv.DictReader(f)} == {expected}


def test_core_sets_are_disjoint_while_cores_last():
  assert cpus.core_sets(2, 3, cores=[0, 1, 2, 3, 4]) == [[0, 1], [2, 3], [4, 0]]
  with pytest.raises(ValueError, match="threads_per_run"):
    cpus.core_sets(3, 1, cores=[0, 1])


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_stopping_the_launcher_stops_its_runs(sig, fake_binary, tmp_path):
  out_root = tmp_path / "o"
  launcher = _start_launcher(
    f"--binary={fake_binary}", "--sweep=seed=0", "--sweep=sleep=60", f"--out_root={out_root}"
  )
  child = int(_wait_for(out_root / "seed-0_sleep-60" / "pid.txt"))
  assert _alive(child)
  launcher.send_signal(sig)
  _, stderr = launcher.communicate(timeout=WAIT_S)
  assert launcher.returncode == 128 + sig, stderr
  assert "stopped by" in stderr
  assert not _alive(child)
  assert local.read_status(str(out_root / "seed-0_sleep-60"))["status"] != "ok"


def test_a_live_run_is_never_started_twice(fake_binary, tmp_path):
  out_root = tmp_path / "o"
  args = [f"--binary={fake_binary}", "--sweep=seed=0", "--sweep=sleep=60", f"--out_root={out_root}"]
  first = _start_launcher(*args)
  run_dir = out_root / "seed-0_sleep-60"
  child = int(_wait_for(run_dir / "pid.txt"))
  first.kill()  # SIGKILL: no clean-up; its run lives on and keeps its folder locked.
  first.communicate(timeout=WAIT_S)
  try:
    assert _alive(child)
    second = _launch(*args)
    assert second.returncode == 1
    assert "busy" in second.stderr and "seed-0_sleep-60" in second.stderr
    assert (run_dir / "calls.txt").read_text() == "called\n"
    assert _is_locked(str(run_dir))
  finally:
    os.killpg(child, signal.SIGKILL)  # The run was started in its own process group.
  deadline = time.time() + WAIT_S
  while _is_locked(str(run_dir)):
    assert time.time() < deadline
    time.sleep(0.05)


@pytest.mark.slow
def test_local_runner_real_binary(tmp_path):
  """One real binary (best_of_n at a tiny size) through the runner (slow: ~15-40 s of JAX
  start-up and compilation; the fake binary above covers the same path)."""
  spec = {
    "binary": "experiments.best_of_n",
    # The config file comes first (fixed flags precede the grid's): its overrides follow.
    "fixed": {
      "config": "experiments/best_of_n/configs/default.py:smoke",
      "config.num_n": 3,
      "config.uniform_sizes": "4",
      "config.dirichlet_alphas": "1.0",
      "config.dirichlet_size": 5,
      "config.cherry_size": 5,
      "config.num_mc_draws": 4,
      "config.num_thresholds": 2,
      "config.proxy_arms": 8,
      "config.proxy_n_max": 4,
      "config.proxy_num_n": 2,
      "config.proxy_mc_draws": 4,
    },
    "grid": {"config.seed": [0], "config.n_max": [8]},
  }
  runs = sweep.expand(spec, out_root=str(tmp_path))
  statuses = local.run_all(runs, progress=False)
  assert statuses[runs[0].name][0] == "ok", (tmp_path / runs[0].name / "log.txt").read_text()
  with open(tmp_path / runs[0].name / "results.csv") as f:
    own_header = next(csv.reader(f))
  path, count = local.gather(runs, str(tmp_path))
  assert count > 0
  with open(path) as f:
    header = next(csv.reader(f))
  # The sweep columns are named by the grid's config fields, which no column of best_of_n's
  # own has; the run used them (config.json records every field).
  assert "kl" in own_header and not {"config.seed", "config.n_max"} & set(own_header)
  assert header == ["run", "config.seed", "config.n_max", *own_header]
  with open(tmp_path / runs[0].name / "config.json") as f:
    config = json.load(f)
  assert (config["seed"], config["n_max"], config["num_n"], config["proxy_arms"]) == (0, 8, 3, 8)


# ------------------------------------------------------------------------------
# Multi-host: the distributed wrapper, SLURM and TPU scripts (content only).
# ------------------------------------------------------------------------------


def test_distributed_wrapper_runs_module_unchanged(fake_binary, tmp_path):
  env = dict(os.environ, MAXK_DISTRIBUTED="0")
  out = tmp_path / "w"
  proc = subprocess.run(
    [sys.executable, "-m", "launch.distributed", fake_binary, f"--workdir={out}", "--seed=5"],
    cwd=_ROOT,
    env=env,
    capture_output=True,
    text=True,
    timeout=WAIT_S,
  )
  assert proc.returncode == 0, proc.stderr
  assert json.loads((out / "config.json").read_text())["seed"] == "5"


@pytest.mark.parametrize(
  "args, process_2",
  [
    (["--workdir=/x", "--config.seed=1"], ["--workdir=/x/process_2", "--config.seed=1"]),
    (["--config.seed=1", "--out_dir=/x"], ["--config.seed=1", "--out_dir=/x/process_2"]),
    (["--workdir", "/x", "--config.seed=1"], ["--workdir", "/x/process_2", "--config.seed=1"]),
    (["-out_dir", "/x"], ["-out_dir", "/x/process_2"]),
    (["-workdir=/x"], ["-workdir=/x/process_2"]),
    # Only the output folder flag; nothing after "--", where absl stops parsing flags.
    (["--workdir_old=/x", "--config=c.py", "--", "--workdir=/y"], None),
    (["--workdir="], None),  # No folder: the binary refuses it on every process alike.
  ],
)
def test_distributed_output_folder_per_process(args, process_2):
  for binary in ("experiments.best_of_n", "experiments.bandit_variance", "my.binary"):
    assert distributed.process_args(binary, args, 0) == args
    assert distributed.process_args(binary, args, 2) == (process_2 or args)
  # The LM's processes write one workdir together (its checkpoints): never rewritten.
  for binary in ("experiments.lm", "experiments.lm.main"):
    assert distributed.process_args(binary, args, 2) == args


def test_distributed_wrapper_gives_other_processes_their_own_folder(
  fake_binary, tmp_path, monkeypatch
):
  """The wrapper end to end as process 1 of a run (jax.distributed stubbed out)."""
  import jax  # pylint: disable=g-import-not-at-top

  monkeypatch.syspath_prepend(str(tmp_path))
  monkeypatch.setattr(sys, "argv", list(sys.argv))
  monkeypatch.setenv("MAXK_DISTRIBUTED", "1")
  monkeypatch.setattr(distributed, "_initialized", True)  # initialize() returns at once.
  monkeypatch.setattr(jax, "process_index", lambda: 1)
  out = tmp_path / "w"
  distributed.main(["distributed", fake_binary, f"--workdir={out}", "--seed=5"])
  assert sorted(os.listdir(out)) == ["process_1"]
  assert (out / "process_1" / "results.csv").exists()


def test_slurm_script_content():
  runs = sweep.expand(["config.seed=0,1,2"], out_root="/shared/out", binary="experiments.best_of_n")
  script = slurm.make_script(
    runs,
    out_root="/shared/out",
    repo_dir="/home/me/maxk",
    nodes=2,
    gpus_per_node=4,
    partition="gpu",
    account="acct",
    max_parallel=2,
    time="02:00:00",
    setup="source .venv/bin/activate",
  )
  lines = script.splitlines()
  assert lines[0] == "#!/bin/bash"
  for directive in (
    "--array=0-2%2",
    "--nodes=2",
    "--ntasks-per-node=1",
    "--gpus-per-node=4",
    "--partition=gpu",
    "--account=acct",
    "--time=02:00:00",
    "--output=/shared/out/slurm-%A_%a.out",
  ):
    assert f"#SBATCH {directive}" in lines
  assert "cd /home/me/maxk" in lines and "source .venv/bin/activate" in lines
  assert "set -euo pipefail" in lines
  # One array entry per run, each wrapped in launch.distributed.
  for run in runs:
    assert (
      f"'python -m launch.distributed experiments.best_of_n --workdir={run.workdir} "
      f"--config.seed={dict(run.params)['config.seed']}'  # {run.name}" in script
    )
  assert 'i="${SLURM_ARRAY_TASK_ID}"' in script
  # Finished runs of the same flags exit at once; tests/launch/sweep_test.py runs the guard.
  assert '"${WORKDIRS[$i]}"/results.csv' in script and "IDENTITIES=(" in script
  assert "scontrol show hostnames" in script and "MAXK_COORDINATOR_ADDRESS" in script
  assert 'MAXK_NUM_PROCESSES="${SLURM_NNODES}"' in script
  assert "MAXK_PROCESS_ID=\\$SLURM_PROCID" in script
  assert lines[-1].startswith("srun ") and "exec ${RUNS[$i]}" in lines[-1]
  # bash accepts it.
  subprocess.run(["bash", "-n"], input=script, text=True, check=True)
  with pytest.raises(ValueError):
    slurm.make_script([], out_root="/o", repo_dir="/r")


def test_slurm_and_tpu_binaries_write_scripts(tmp_path):
  sweep_file = os.path.join(_ROOT, "launch", "sweeps", "bandit_training_k.json")
  proc = subprocess.run(
    [
      sys.executable,
      "-m",
      "launch.slurm",
      f"--sweep={sweep_file}",
      f"--out_root={tmp_path / 's'}",
      "--nodes=1",
    ],
    cwd=_ROOT,
    capture_output=True,
    text=True,
    timeout=WAIT_S,
  )
  assert proc.returncode == 0, proc.stderr
  script = (tmp_path / "s" / "sweep.sbatch").read_text()
  assert (
    "#SBATCH --array=0-7" in script
    and script.count("launch.distributed experiments.bandit_training") == 8
  )
  proc = subprocess.run(
    [
      sys.executable,
      "-m",
      "launch.tpu",
      f"--sweep={sweep_file}",
      "--tpu_name=v4-16",
      "--zone=us-central2-b",
      "--out_root=/home/me/out",
      f"--script={tmp_path / 't.sh'}",
    ],
    cwd=_ROOT,
    capture_output=True,
    text=True,
    timeout=WAIT_S,
  )
  assert proc.returncode == 0, proc.stderr
  assert (tmp_path / "t.sh").read_text().count("--worker=all") == 8


def test_tpu_script_content():
  runs = sweep.expand(["config.seed=0,1"], out_root="/home/me/out", binary="experiments.lm.main")
  script = tpu.make_script(
    runs,
    tpu_name="my-v4-16",
    zone="us-central2-b",
    project="proj",
    out_root="/home/me/out",
    repo_dir="~/maxk",
    setup="source ~/maxk/.venv/bin/activate",
    fetch_to="out/tpu",
  )
  lines = script.splitlines()
  ssh = [line for line in lines if line.startswith("gcloud compute tpus tpu-vm ssh")]
  assert len(ssh) == 2
  for line, run in zip(ssh, runs):
    assert "my-v4-16 --zone=us-central2-b --project=proj --worker=all --command=" in line
    assert "cd ~/maxk && source ~/maxk/.venv/bin/activate && export MAXK_DISTRIBUTED=1" in line
    assert (
      f"python -m launch.distributed experiments.lm.main --workdir={run.workdir} "
      f"--config.seed={dict(run.params)['config.seed']}"
    ) in line
    assert f"{run.workdir}/results.csv" in line
  assert lines[-1] == (
    "gcloud compute tpus tpu-vm scp --recurse --worker=0 "
    "--zone=us-central2-b --project=proj my-v4-16:/home/me/out out/tpu"
  )
  subprocess.run(["bash", "-n"], input=script, text=True, check=True)
  # The remote command is one shell word that bash parses back to the intended line.
  remote = tpu.remote_command(runs[0], repo_dir="~/maxk")
  subprocess.run(["bash", "-n", "-c", remote], check=True)


def test_distributed_wrapper_initializes_jax_from_env(tmp_path, monkeypatch):
  """A one-process jax.distributed run through the SLURM-style MAXK_* variables."""
  pkg = tmp_path / "jaxprobe"
  pkg.mkdir()
  (pkg / "__init__.py").write_text("")
  (pkg / "probe.py").write_text(
    "import os, sys, jax\n"
    "print('PROBE', jax.process_index(), jax.process_count(), os.environ['MAXK_DISTRIBUTED'],"
    " sys.argv[1:])\n"
  )
  env = dict(
    os.environ,
    JAX_PLATFORMS="cpu",
    MAXK_COORDINATOR_ADDRESS="localhost:12911",
    MAXK_NUM_PROCESSES="1",
    MAXK_PROCESS_ID="0",
    PYTHONPATH=f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
  )
  proc = subprocess.run(
    [sys.executable, "-m", "launch.distributed", "jaxprobe.probe", "--workdir=/x"],
    cwd=_ROOT,
    env=env,
    capture_output=True,
    text=True,
    timeout=WAIT_S,
  )
  assert proc.returncode == 0, proc.stderr
  assert "PROBE 0 1 1 ['--workdir=/x']" in proc.stdout
