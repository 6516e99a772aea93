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


ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# An absl log line: "I1201 12:00:00.123456 140000 train.py:287] message".
_ABSL_LINE = re.compile(r"^[DIWEF]\d{4} \d\d:\d\d:\d\d\.\d+\s+\d+ ([^:\s]+):\d+\] ?(.*)$")
# Lines of Python's default logging format, of Jupyter's apps, and of warnings.
_LIBRARY_LINE = re.compile(
  r"^((DEBUG|INFO|WARNING|ERROR|CRITICAL):"
  r"|\[\w+\] (DEBUG|INFO|WARNING|ERROR|CRITICAL)"
  r"|\S+:\d+: \w*Warning:"
  r"|\s*warnings\.warn)"
)
_WIDTH = 90  # Characters of a progress line shown.


def _own_sources(root: str = ROOT) -> frozenset[str]:
  """File names of this repository's Python modules (experiments, notebooks, maxk)."""
  names = set()
  for package in ("experiments", "notebooks", "maxk"):
    for _, _, files in os.walk(os.path.join(root, package)):
      names.update(f for f in files if f.endswith(".py"))
  return frozenset(names)


_OWN_SOURCES = _own_sources()


def progress_message(line: str, own_sources: frozenset[str] = _OWN_SOURCES) -> str | None:
  """The progress shown for one line of a stage's log, or None for library output.

  absl log lines count only when logged from this repository's own modules (their
  message is shown without the prefix); lines in Python's default logging format,
  Jupyter apps' log lines and warnings are library output; anything else (tqdm bars,
  printed lines) is progress.
  """
  line = line.strip()
  if not line:
    return None
  match = _ABSL_LINE.match(line)
  if match:
    return match.group(2) if match.group(1) in own_sources else None
  if _LIBRARY_LINE.match(line):
    return None
  return line


def _clip(text: str, width: int = _WIDTH) -> str:
  if len(text) <= width:
    return text
  head = width // 3
  return text[:head] + " … " + text[-(width - head - 3) :]


def _last_progress_line(log_path: str) -> str:
  """The stage's latest progress: its last tqdm, printed or own log line (see
  :func:`progress_message`), clipped to ``_WIDTH`` characters."""
  try:
    with open(log_path, "rb") as f:
      start = max(0, os.path.getsize(log_path) - 16384)
      f.seek(start)
      tail = f.read().decode("utf-8", "replace")
  except OSError:
    return ""
  parts = re.split(r"[\r\n]", tail)
  if start > 0:  # The first part is the end of a line cut by the seek.
    parts = parts[1:]
  for part in reversed(parts):
    message = progress_message(part)
    if message:
      return _clip(message)
  return ""


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
