r"""Runs a sweep as parallel local processes and gathers the results into one table.

Usage:
  python -m launch.local --binary=experiments.best_of_n \
      --sweep=seed=0,1 --sweep=num_mc_draws=10,100 --sweep=n_max=100 \
      --out_root=out/sweep_bon --parallel=2
  python -m launch.local --sweep=launch/sweeps/bandit_training_k.json --out_root=out/k_sweep

Each run writes into ``OUT_ROOT/<run name>`` (its log in ``log.txt`` there). A run is
skipped when its folder already holds ``results.csv`` and it did not fail or get killed
(``launch_status.json``), so rerunning the command resumes a sweep. At the end every
run's ``results.csv`` is gathered into ``OUT_ROOT/all_results.csv`` with a ``run``
column and one column per sweep flag (named ``sweep_<flag>`` where the results
already have a column of that name); ``OUT_ROOT/runs.json`` lists every run.
``--gather_only`` only gathers (e.g. after a SLURM or TPU sweep into the same OUT_ROOT).
"""

from __future__ import annotations

from collections.abc import Sequence
import concurrent.futures
import csv
import json
import os
import subprocess
import sys
import time

from absl import app
from absl import flags
import tqdm

from launch import _flags
from launch import sweep as sweep_lib

_PARALLEL = flags.DEFINE_integer("parallel", 1, "Runs at the same time.")
_DRY_RUN = flags.DEFINE_bool("dry_run", False, "Print the commands; run nothing.")
_GATHER_ONLY = flags.DEFINE_bool("gather_only", False, "Only gather existing results.")
_TIMEOUT = flags.DEFINE_integer("timeout", 0, "Seconds before a run is killed (0: never).")
_THREADS = flags.DEFINE_integer(
  "threads_per_run", 0, "If > 0, cap each run's CPU threads (OMP/XLA) to this many."
)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STATUS_FILE = "launch_status.json"


def is_done(out_dir: str) -> bool:
  """results.csv exists and the run was not left failed or running by this launcher."""
  if not os.path.exists(os.path.join(out_dir, "results.csv")):
    return False
  status_path = os.path.join(out_dir, STATUS_FILE)
  if not os.path.exists(status_path):
    return True
  try:
    with open(status_path) as f:
      return json.load(f).get("status") == "ok"
  except (OSError, ValueError):
    return False


def _write_status(out_dir: str, **status) -> None:
  with open(os.path.join(out_dir, STATUS_FILE), "w") as f:
    json.dump(status, f, indent=2)


def run_env(threads: int = 0) -> dict[str, str]:
  env = dict(os.environ)
  env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
  if threads > 0:
    env["OMP_NUM_THREADS"] = str(threads)
    env["XLA_FLAGS"] = (
      env.get("XLA_FLAGS", "") + " --xla_cpu_multi_thread_eigen=false "
      f"intra_op_parallelism_threads={threads}"
    ).strip()
  return env


def run_one(run: sweep_lib.Run, *, timeout: int = 0, threads: int = 0) -> tuple[str, float]:
  """Runs one run to completion; returns (status, seconds)."""
  if is_done(run.out_dir):
    return "skipped", 0.0
  os.makedirs(run.out_dir, exist_ok=True)
  command = run.command(sys.executable)
  _write_status(run.out_dir, status="running", command=command, started=time.time())
  start = time.time()
  with open(os.path.join(run.out_dir, "log.txt"), "w") as log:
    try:
      rc = subprocess.run(
        command,
        cwd=ROOT,
        env=run_env(threads),
        stdout=log,
        stderr=subprocess.STDOUT,
        timeout=timeout or None,
      ).returncode
    except subprocess.TimeoutExpired:
      rc = "timeout"
  seconds = time.time() - start
  ok = rc == 0 and os.path.exists(os.path.join(run.out_dir, "results.csv"))
  status = "ok" if ok else f"failed ({rc})"
  _write_status(run.out_dir, status=status, command=command, seconds=seconds, returncode=rc)
  return status, seconds


def run_all(
  runs: Sequence[sweep_lib.Run],
  *,
  parallel: int = 1,
  timeout: int = 0,
  threads: int = 0,
  progress: bool = True,
) -> dict[str, tuple[str, float]]:
  """Runs every run (``parallel`` at a time); returns {name: (status, seconds)}."""
  results: dict[str, tuple[str, float]] = {}
  with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, parallel)) as pool:
    futures = {pool.submit(run_one, r, timeout=timeout, threads=threads): r for r in runs}
    bar = tqdm.tqdm(total=len(runs), desc="runs", disable=not progress)
    for future in concurrent.futures.as_completed(futures):
      run = futures[future]
      results[run.name] = future.result()
      bar.update(1)
      bar.write(f"{run.name}: {results[run.name][0]} ({results[run.name][1]:.0f} s)")
    bar.close()
  return results


def gather(
  runs: Sequence[sweep_lib.Run], out_root: str, filename: str = "all_results.csv"
) -> tuple[str, int]:
  """Concatenates every finished run's results.csv, adding run and sweep columns.

  Returns (path, number of rows). Runs without results.csv are left out.
  """
  rows, result_cols = [], []
  for run in runs:
    path = os.path.join(run.out_dir, "results.csv")
    if not os.path.exists(path):
      continue
    with open(path, newline="") as f:
      reader = csv.DictReader(f)
      for col in reader.fieldnames or []:
        if col not in result_cols:
          result_cols.append(col)
      rows.extend((run, row) for row in reader)
  sweep_keys = list(dict.fromkeys(k for run in runs for k, _ in run.params))
  sweep_cols = {k: (f"sweep_{k}" if k in result_cols or k == "run" else k) for k in sweep_keys}
  columns = ["run"] + list(sweep_cols.values()) + result_cols
  out = os.path.join(out_root, filename)
  os.makedirs(out_root, exist_ok=True)
  with open(out, "w", newline="") as f:
    writer = csv.DictWriter(f, fieldnames=columns)
    writer.writeheader()
    for run, row in rows:
      params = dict(run.params)
      record = {"run": run.name, **{sweep_cols[k]: params.get(k, "") for k in sweep_keys}}
      record.update(row)
      writer.writerow(record)
  return out, len(rows)


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f"Too many command-line arguments: {list(argv[1:])}.")
  out_root = os.path.abspath(_flags.OUT_ROOT.value)
  try:
    runs = sweep_lib.expand_many(_flags.SWEEP.value, out_root=out_root, binary=_flags.BINARY.value)
  except ValueError as e:
    raise app.UsageError(str(e)) from e
  if _DRY_RUN.value:
    for run in runs:
      print(run.shell(), flush=True)
    return
  statuses = None
  if not _GATHER_ONLY.value:
    print(f"{len(runs)} runs into {out_root}, {_PARALLEL.value} at a time", flush=True)
    statuses = run_all(
      runs, parallel=_PARALLEL.value, timeout=_TIMEOUT.value, threads=_THREADS.value
    )
  sweep_lib.write_manifest(runs, out_root, statuses)
  path, count = gather(runs, out_root)
  print(
    f"Gathered {count} rows from {sum(os.path.exists(os.path.join(r.out_dir, 'results.csv')) for r in runs)}"
    f"/{len(runs)} runs into {path}",
    flush=True,
  )
  failed = [n for n, (s, _) in (statuses or {}).items() if s.startswith("failed")]
  if failed:
    print(f"Failed runs: {failed}", file=sys.stderr)
    sys.exit(1)


if __name__ == "__main__":
  flags.mark_flag_as_required("out_root")
  app.run(main)
