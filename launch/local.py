r"""Runs a sweep as parallel local processes and gathers the results into one table.

Usage:
  python -m launch.local --binary=experiments.best_of_n \
      --sweep=config.seed=0,1 --sweep=config.num_mc_draws=10,100 --sweep=config.n_max=100 \
      --out_root=out/sweep_bon --parallel=2
  python -m launch.local --sweep=launch/sweeps/bandit_training_k.json --out_root=out/k_sweep

Each run writes into ``OUT_ROOT/<run name>`` (its log in ``log.txt`` there) and the
launcher records the run's binary and every flag, fixed ones included, with its status
in ``launch_status.json``. Rerunning the command resumes the sweep: a run is skipped
only when it finished (``results.csv``, status ok) with exactly the same binary and
flags. A run folder that holds a run with other flags (e.g. a changed ``fixed`` value
in the sweep file: run names come from the grid values only), or results that this
launcher did not record, is an error naming the run and the differing flags, and
nothing runs: choose another ``--out_root`` or remove the folder.

Each run holds a lock on its folder for as long as it lives, so a second launcher on
the same OUT_ROOT reports live runs as busy instead of starting second copies. Runs
start in their own process groups: stopping the launcher (SIGTERM, Ctrl-C) stops them.
``--threads_per_run=N`` pins each run to N cores (distinct cores for concurrent runs
while they last), which caps XLA's and OpenMP's threads.

At the end every finished run's ``results.csv`` is gathered into
``OUT_ROOT/all_results.csv`` with a ``run`` column and one column per sweep flag
(named ``sweep_<flag>`` where the results already have a column of that name);
``OUT_ROOT/runs.json`` lists every run. ``--gather_only`` only gathers (e.g. after a
SLURM or TPU sweep into the same OUT_ROOT).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
import concurrent.futures
import csv
import json
import os
import signal
import subprocess
import sys
import time
from typing import Any

from absl import app
from absl import flags
import tqdm

from experiments import outputs
from launch import _flags
from launch import cpus
from launch import processes
from launch import sweep as sweep_lib

_PARALLEL = flags.DEFINE_integer("parallel", 1, "Runs at the same time (>= 1).")
_DRY_RUN = flags.DEFINE_bool("dry_run", False, "Print the commands; run nothing.")
_GATHER_ONLY = flags.DEFINE_bool("gather_only", False, "Only gather existing results.")
_TIMEOUT = flags.DEFINE_integer("timeout", 0, "Seconds before a run is killed (0: never).")
_THREADS = flags.DEFINE_integer(
  "threads_per_run",
  0,
  "If > 0, pin each run to this many CPU cores (XLA and OpenMP size their thread pools "
  "from them); 0: no cap.",
)

outputs.register_workdir_validator("out_root")
flags.register_validator("parallel", lambda v: v >= 1, message="--parallel must be >= 1.")
flags.register_validator(
  "timeout", lambda v: v >= 0, message="--timeout must be >= 0 seconds (0: never)."
)
flags.register_validator(
  "threads_per_run",
  lambda v: 0 <= v <= len(cpus.available()),
  message=f"--threads_per_run must be in [0, {len(cpus.available())}] (the cores here).",
)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STATUS_FILE = "launch_status.json"
BUSY = "busy (a live run holds its folder's lock)"


def read_status(workdir: str) -> dict[str, Any] | None:
  """The launcher's record of the run in ``workdir`` (None if absent or unreadable)."""
  try:
    with open(os.path.join(workdir, STATUS_FILE)) as f:
      return json.load(f)
  except (OSError, ValueError):
    return None


def _write_status(workdir: str, **status: Any) -> None:
  with open(os.path.join(workdir, STATUS_FILE), "w") as f:
    json.dump(status, f, indent=2)


def is_done(workdir: str) -> bool:
  """results.csv exists and the launcher recorded the run as finished ok."""
  status = read_status(workdir)
  done = status is not None and status.get("status") == "ok"
  return done and os.path.exists(os.path.join(workdir, "results.csv"))


def _flag_diff(recorded: Mapping[str, str], wanted: Mapping[str, str]) -> list[str]:
  diffs = []
  for key in sorted(set(recorded) | set(wanted)):
    before, after = recorded.get(key), wanted.get(key)
    if before != after:
      diffs.append(
        f"--{key}: {'(unset)' if before is None else before} -> "
        f"{'(unset)' if after is None else after}"
      )
  return diffs


def conflict(run: sweep_lib.Run, *, require_record: bool = True) -> str | None:
  """Why ``run`` must not use its folder, or None.

  A folder conflicts when the launcher recorded a run there (finished or running)
  with another binary or other flags, or (``require_record``) when it holds
  results.csv without any record, so that its flags are unknown. A failed run's
  folder never conflicts: the run is started again, with the new flags.
  """
  status = read_status(run.workdir)
  if status is None:
    if require_record and os.path.exists(os.path.join(run.workdir, "results.csv")):
      return (
        f"{run.name}: {run.workdir} holds results.csv but no {STATUS_FILE}, so its flags "
        "are unknown (--gather_only gathers it; remove the folder to rerun it)"
      )
    return None
  if status.get("status") not in ("ok", "running"):
    return None
  wanted = {"binary": run.binary, **{f: v for f, v in run.flags}}
  recorded = {"binary": status.get("binary"), **status.get("flags", {})}
  diffs = _flag_diff(recorded, wanted)
  if not diffs:
    return None
  return (
    f"{run.name}: {run.workdir} holds a run with other flags ({'; '.join(diffs)}); "
    "use another --out_root or remove the folder"
  )


def run_env() -> dict[str, str]:
  env = dict(os.environ)
  env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
  return env


def run_one(
  run: sweep_lib.Run,
  children: processes.Children,
  *,
  timeout: int = 0,
  cores: Sequence[int] = (),
) -> tuple[str, float]:
  """Runs one run to completion; returns (status, seconds).

  The status is "skipped" (finished before with the same flags), "ok", "failed (RC)",
  "stopped" (the launcher is stopping) or ``BUSY``. ``cores``: pin the run to them.
  """
  lock = processes.try_lock(run.workdir)
  if lock is None:
    return BUSY, 0.0
  try:
    if is_done(run.workdir):
      return "skipped", 0.0
    command = run.command(sys.executable)
    record = dict(binary=run.binary, flags=dict(run.flags), command=command)
    _write_status(run.workdir, status="running", started=time.time(), **record)
    start = time.time()
    with open(os.path.join(run.workdir, "log.txt"), "w") as log:
      proc = children.start(
        cpus.pinned(command, cores) if cores else command,
        cwd=ROOT,
        env=run_env(),
        stdout=log,
        stderr=subprocess.STDOUT,
        pass_fds=(lock,),  # The run keeps its folder locked while it lives.
      )
      if proc is None:
        _write_status(run.workdir, status="stopped", **record)
        return "stopped", 0.0
      rc = children.wait(proc, timeout or None)
    seconds = time.time() - start
    ok = rc == 0 and os.path.exists(os.path.join(run.workdir, "results.csv"))
    status = "ok" if ok else f"failed ({rc})"
    _write_status(run.workdir, status=status, seconds=seconds, returncode=rc, **record)
    return status, seconds
  finally:
    os.close(lock)


def run_all(
  runs: Sequence[sweep_lib.Run],
  *,
  parallel: int = 1,
  timeout: int = 0,
  threads: int = 0,
  progress: bool = True,
  children: processes.Children | None = None,
) -> dict[str, tuple[str, float]]:
  """Runs every run (``parallel`` at a time); returns {name: (status, seconds)}.

  ``threads`` > 0 pins each run to that many cores. If this is interrupted (a signal
  handler raising, Ctrl-C), every live run's process group is stopped first.
  """
  children = children or processes.Children()
  slots = cpus.CoreSlots(threads, parallel) if threads > 0 else None

  def one(run: sweep_lib.Run) -> tuple[str, float]:
    cores = slots.take() if slots else []
    try:
      return run_one(run, children, timeout=timeout, cores=cores)
    finally:
      if slots:
        slots.give_back(cores)

  results: dict[str, tuple[str, float]] = {}
  with concurrent.futures.ThreadPoolExecutor(max_workers=parallel) as pool:
    futures = {pool.submit(one, r): r for r in runs}
    bar = tqdm.tqdm(total=len(runs), desc="runs", disable=not progress)
    try:
      for future in concurrent.futures.as_completed(futures):
        run = futures[future]
        results[run.name] = future.result()
        bar.update(1)
        bar.write(f"{run.name}: {results[run.name][0]} ({results[run.name][1]:.0f} s)")
    except BaseException:
      pool.shutdown(wait=False, cancel_futures=True)
      children.stop_all()
      raise
    finally:
      bar.close()
  return results


def _gatherable(run: sweep_lib.Run) -> bool:
  status = read_status(run.workdir)
  if status is not None and status.get("status") != "ok":
    return False
  return os.path.exists(os.path.join(run.workdir, "results.csv"))


def gather(
  runs: Sequence[sweep_lib.Run], out_root: str, filename: str = "all_results.csv"
) -> tuple[str, int]:
  """Concatenates every finished run's results.csv, adding run and sweep columns.

  Returns (path, number of rows). Runs without results.csv, and runs the launcher
  recorded as anything but finished (failed, running), are left out.
  """
  rows: list[tuple[sweep_lib.Run, dict[str, str]]] = []
  result_cols: list[str] = []
  for run in filter(_gatherable, runs):
    with open(os.path.join(run.workdir, "results.csv"), newline="") as f:
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


class _Stopped(Exception):
  """The launcher received SIGTERM or SIGINT."""

  def __init__(self, signum: int):
    super().__init__(signal.Signals(signum).name)
    self.signum = signum


def _raise_stopped(signum: int, frame: Any) -> None:
  del frame
  raise _Stopped(signum)


def main(argv: Sequence[str]) -> None:
  if len(argv) > 1:
    raise app.UsageError(f"Too many command-line arguments: {list(argv[1:])}.")
  out_root = os.path.abspath(_flags.out_root())
  try:
    runs = sweep_lib.expand_many(_flags.SWEEP.value, out_root=out_root, binary=_flags.BINARY.value)
  except ValueError as e:
    raise app.UsageError(str(e)) from e
  if _DRY_RUN.value:
    for run in runs:
      print(run.shell(), flush=True)
    return
  conflicts = [c for r in runs if (c := conflict(r, require_record=not _GATHER_ONLY.value))]
  if conflicts:
    print(f"launch.local: {len(conflicts)} run folder(s) in --out_root conflict:", file=sys.stderr)
    for line in conflicts:
      print(f"  {line}", file=sys.stderr)
    sys.exit(2)
  statuses = None
  if not _GATHER_ONLY.value:
    print(f"{len(runs)} runs into {out_root}, {_PARALLEL.value} at a time", flush=True)
    for signum in (signal.SIGTERM, signal.SIGINT):
      signal.signal(signum, _raise_stopped)
    try:
      statuses = run_all(
        runs, parallel=_PARALLEL.value, timeout=_TIMEOUT.value, threads=_THREADS.value
      )
    except _Stopped as e:
      print(f"launch.local: stopped by {e}; live runs were stopped.", file=sys.stderr)
      sys.exit(128 + e.signum)
  sweep_lib.write_manifest(runs, out_root, statuses)
  path, count = gather(runs, out_root)
  gathered = sum(map(_gatherable, runs))
  print(f"Gathered {count} rows from {gathered}/{len(runs)} runs into {path}", flush=True)
  failed = [n for n, (s, _) in (statuses or {}).items() if s.startswith("failed")]
  busy = [n for n, (s, _) in (statuses or {}).items() if s == BUSY]
  if failed:
    print(f"Failed runs: {failed}", file=sys.stderr)
  if busy:
    print(f"Runs busy in another launcher (not started again): {busy}", file=sys.stderr)
  if failed or busy:
    sys.exit(1)


if __name__ == "__main__":
  flags.mark_flag_as_required("out_root")
  app.run(main)
