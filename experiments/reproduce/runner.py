"""Running one stage of the reproduction: a subprocess with its log and progress line."""

from __future__ import annotations

from collections.abc import Mapping
import os
import re
import shutil
import subprocess
import sys
import time

from experiments.reproduce import stages as stages_lib

DONE_FILE = "results.csv"  # A stage is done when its folder holds this file.
_COMMAND_FILE = "reproduce_command.txt"  # The command of the stage's finished outputs.
_STARTED_FILE = "reproduce_started.txt"  # The command last started in the folder.


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


def _wait(proc: subprocess.Popen, log_path: str, start: float, timeout: float) -> int | str:
  """Waits for a stage, showing its progress: a live line on a terminal, else every 30 s."""
  tty = sys.stdout.isatty()
  last_print = start
  while True:
    try:
      return proc.wait(timeout=1.0)
    except subprocess.TimeoutExpired:
      pass
    now = time.time()
    if now - start > timeout:
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


def _read(path: str) -> str | None:
  if not os.path.exists(path):
    return None
  with open(path) as f:
    return f.read()


def run_stage(
  stage: stages_lib.Stage,
  out_dir: str,
  *,
  cwd: str,
  env: Mapping[str, str],
  force: bool,
  timeout: float,
) -> tuple[str, float]:
  """Runs ``stage`` into ``out_dir/<stage name>``; returns (status, seconds).

  The status is "reused" (finished outputs of the same command exist and ``force`` is
  off), "ok", or "FAILED (...)" naming the exit code and the log. The folder is
  emptied first, except for the LM stage started before with the same command, which
  resumes from its checkpoints.
  """
  stage_dir = os.path.join(out_dir, stage.name)
  command = " ".join(stage.command(stage_dir))
  if not force and os.path.exists(os.path.join(stage_dir, DONE_FILE)):
    if _read(os.path.join(stage_dir, _COMMAND_FILE)) == command:
      return "reused", 0.0
  resumable = stage.name == "lm" and _read(os.path.join(stage_dir, _STARTED_FILE)) == command
  if os.path.isdir(stage_dir) and not resumable:
    shutil.rmtree(stage_dir)
  os.makedirs(stage_dir, exist_ok=True)
  with open(os.path.join(stage_dir, _STARTED_FILE), "w") as f:
    f.write(command)
  start = time.time()
  with open(os.path.join(stage_dir, "log.txt"), "w") as log:
    log.write(f"$ {command}\n")
    log.flush()
    proc = subprocess.Popen(
      stage.command(stage_dir), cwd=cwd, env=dict(env), stdout=log, stderr=subprocess.STDOUT
    )
    code = _wait(proc, log.name, start, timeout)
  seconds = time.time() - start
  if sys.stdout.isatty():
    sys.stdout.write("\r" + " " * 110 + "\r")
  if code != 0 or not os.path.exists(os.path.join(stage_dir, DONE_FILE)):
    return f"FAILED ({code}; see {os.path.relpath(stage_dir, out_dir)}/log.txt)", seconds
  with open(os.path.join(stage_dir, _COMMAND_FILE), "w") as f:
    f.write(command)
  return "ok", seconds
