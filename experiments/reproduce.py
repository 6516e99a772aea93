r"""Reproduces every CPU-feasible headline figure and table into one folder.

Runs the experiment binaries (as subprocesses, exactly as a user would) at settings
that finish in minutes on 2 CPU cores, executes the notebooks, and writes an index
page (``index.md`` and ``index.html``) showing every figure and the key tables with
one line of explanation each.

Usage:
  python -m experiments.reproduce --out_dir=out/reproduce
  python -m experiments.reproduce --out_dir=/tmp/r --smoke   # tiny sizes, < 1 minute

Finished stages (their ``results.csv`` exists and their command is unchanged) are
reused when the command is run again; ``--force`` reruns them.  Each stage's output
goes to ``OUT_DIR/<stage>/`` (its log in ``OUT_DIR/<stage>/log.txt``).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time

from absl import app
from absl import flags

from experiments import outputs
from experiments import report

_OUT_DIR = flags.DEFINE_string("out_dir", "out/reproduce", "Output folder (index.md/.html).")
_SEED = flags.DEFINE_integer("seed", 0, "Seed passed to every stage.")
_SMOKE = flags.DEFINE_bool("smoke", False, "Tiny sizes (for tests): seconds, not minutes.")
_LM = flags.DEFINE_bool(
  "lm", True, "Run the small-LM experiment (experiments/lm, tiny config) when it exists."
)
_NOTEBOOKS = flags.DEFINE_bool(
  "notebooks", True, "Execute notebooks/*.ipynb and collect their figures."
)
_STAGES = flags.DEFINE_list(
  "stages", ["all"], f"Stages to run ('all' or a subset of {list(report.STAGE_NAMES)})."
)
_FORCE = flags.DEFINE_bool("force", False, "Rerun stages whose outputs already exist.")
_TIMEOUT = flags.DEFINE_integer("stage_timeout", 1200, "Seconds before a stage is killed.")

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _selected() -> list[report.Stage]:
  names = list(report.STAGE_NAMES) if "all" in _STAGES.value else _STAGES.value
  unknown = set(names) - set(report.STAGE_NAMES)
  if unknown:
    raise app.UsageError(f"Unknown --stages {sorted(unknown)}; valid: {list(report.STAGE_NAMES)}.")
  stages = []
  for stage in report.stages(seed=_SEED.value, smoke=_SMOKE.value):
    if stage.name not in names:
      continue
    if stage.name == "lm" and not (_LM.value and report.lm_available()):
      continue
    if stage.name == "notebooks" and not _NOTEBOOKS.value:
      continue
    stages.append(stage)
  return stages


def _env(stage: str, out_dir: str) -> dict[str, str]:
  env = dict(os.environ)
  lm_results = os.path.join(out_dir, "lm", "results.csv")
  if stage == "notebooks" and os.path.exists(lm_results):
    env["MAXK_LM_RESULTS"] = lm_results  # lm.ipynb plots this run's LM outputs.
  env["PYTHONPATH"] = _ROOT + os.pathsep + env.get("PYTHONPATH", "")
  env.setdefault("JAX_PLATFORMS", "cpu")
  if _SMOKE.value:
    env["MAXK_SMOKE"] = "1"
  return env


def _last_progress_line(log_path: str) -> str:
  """The stage's latest progress (its last tqdm or log line)."""
  try:
    with open(log_path, "rb") as f:
      f.seek(max(0, os.path.getsize(log_path) - 600))
      tail = f.read().decode("utf-8", "replace")
  except OSError:
    return ""
  parts = [p.strip() for p in re.split(r"[\r\n]", tail) if p.strip()]
  return parts[-1][-90:] if parts else ""


def _wait(proc: subprocess.Popen, log_path: str, start: float) -> int | str:
  """Waits for a stage, showing its progress: a live line on a terminal, else every 30 s."""
  tty = sys.stdout.isatty()
  last_print = start
  while True:
    try:
      return proc.wait(timeout=1.0)
    except subprocess.TimeoutExpired:
      pass
    now = time.time()
    if now - start > _TIMEOUT.value:
      proc.kill()
      proc.wait()
      return "timeout"
    if tty:
      line = f"      {now - start:4.0f} s | {_last_progress_line(log_path)}"
      sys.stdout.write("\r" + line[:110].ljust(110))
      sys.stdout.flush()
    elif now - last_print >= 30:
      print(f"      {now - start:4.0f} s | {_last_progress_line(log_path)}", flush=True)
      last_print = now


def _run_stage(stage: report.Stage, out_dir: str) -> tuple[str, float]:
  """Runs one stage; returns (status, seconds)."""
  stage_dir = os.path.join(out_dir, stage.name)
  command = stage.command(stage_dir)
  marker = os.path.join(stage_dir, "reproduce_command.txt")
  done = os.path.join(stage_dir, stage.done_file)
  if not _FORCE.value and os.path.exists(done) and os.path.exists(marker):
    with open(marker) as f:
      if f.read() == " ".join(command):
        return "reused", 0.0
  started = os.path.join(stage_dir, "reproduce_started.txt")
  resumable = (
    stage.name == "lm" and os.path.exists(started) and (open(started).read() == " ".join(command))
  )  # The LM resumes from its checkpoints.
  if os.path.isdir(stage_dir) and not resumable:
    shutil.rmtree(stage_dir)
  os.makedirs(stage_dir, exist_ok=True)
  with open(started, "w") as f:
    f.write(" ".join(command))
  start = time.time()
  with open(os.path.join(stage_dir, "log.txt"), "w") as log:
    log.write("$ " + " ".join(command) + "\n")
    log.flush()
    proc = subprocess.Popen(
      command, cwd=_ROOT, env=_env(stage.name, out_dir), stdout=log, stderr=subprocess.STDOUT
    )
    code = _wait(proc, log.name, start)
  seconds = time.time() - start
  if sys.stdout.isatty():
    sys.stdout.write("\r" + " " * 110 + "\r")
  if code != 0 or not os.path.exists(done):
    return f"FAILED ({code}; see {os.path.relpath(stage_dir, out_dir)}/log.txt)", seconds
  with open(marker, "w") as f:
    f.write(" ".join(command))
  return "ok", seconds


def main(argv):
  out_dir = outputs.start_run(argv, _OUT_DIR.value)
  stages = _selected()
  total_start = time.time()
  statuses = {}
  print(f"Reproducing {len(stages)} stages into {out_dir}", flush=True)
  for i, stage in enumerate(stages, 1):
    print(
      f"[{i}/{len(stages)}] {stage.name}: {stage.title} (expected ~{stage.expected_s} s"
      f"{', smoke' if _SMOKE.value else ''}) ...",
      flush=True,
    )
    status, seconds = _run_stage(stage, out_dir)
    statuses[stage.name] = (status, seconds)
    elapsed = time.time() - total_start
    print(
      f"[{i}/{len(stages)}] {stage.name}: {status} in {seconds:.0f} s (total {elapsed:.0f} s)",
      flush=True,
    )
  # Stages not run now but finished earlier in this folder stay on the index page.
  shown, skipped = [], []
  for stage in report.stages(seed=_SEED.value, smoke=_SMOKE.value):
    if stage.name in statuses:
      shown.append(stage)
    elif os.path.exists(os.path.join(out_dir, stage.name, stage.done_file)):
      shown.append(stage)
      statuses[stage.name] = ("from an earlier run", 0.0)
    else:
      skipped.append(stage.name)
  md, html = report.write_index(
    out_dir,
    shown,
    statuses,
    skipped=skipped,
    total_seconds=time.time() - total_start,
    smoke=_SMOKE.value,
  )
  print(
    f"Done in {time.time() - total_start:.0f} s. Index: {md}\n                  {html}", flush=True
  )
  failed = [name for name, (status, _) in statuses.items() if status.startswith("FAILED")]
  if failed:
    print(f"Failed stages: {failed}", file=sys.stderr)
    sys.exit(1)


if __name__ == "__main__":
  app.run(main)
