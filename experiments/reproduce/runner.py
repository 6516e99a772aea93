"""Running one stage of the reproduction: a subprocess with its log and progress line.

Each stage's folder records what ran there in ``reproduce_stage.json`` (see
``StageRecord``): the stage's identity, the command shown on the index page, its sizes,
its status, and when it ended and how long it took. A stage's finished outputs are
reused only for the same identity; the identity holds no absolute path of the
reproduction's folder or of the repository, so a copied or moved folder or checkout is
reused too.
"""

from __future__ import annotations

from collections.abc import Mapping
import dataclasses
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

from experiments.reproduce import stages as stages_lib

DONE_FILE = "results.csv"  # A stage is done when its folder holds this file.
RECORD_FILE = "reproduce_stage.json"  # The stage's StageRecord, written when it ends.
_STARTED_FILE = "reproduce_started.txt"  # The identity last started in the folder.
# Environment variables that change every stage's outputs (the stage's own settings
# are in Stage.env and Stage.inputs).
_IDENTITY_ENV = ("JAX_PLATFORMS",)


ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# An absl log line: "I1201 12:00:00.123456 140000 train.py:287] message"; C++ (XLA)
# logs before absl is set up write seconds since the epoch: "E0000 00:00:1733097600.1".
_ABSL_LINE = re.compile(r"^[DIWEF]\d{4} \d\d:\d\d:\d+\.\d+\s+\d+ ([^:\s]+):\d+\] ?(.*)$")
# A line without a letter or digit: a rule ("*****") or other decoration, never progress.
_RULE_LINE = re.compile(r"^[^A-Za-z0-9]*$")
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
  names: set[str] = set()
  for package in ("experiments", "notebooks", "maxk"):
    for _, _, files in os.walk(os.path.join(root, package)):
      names.update(f for f in files if f.endswith(".py"))
  return frozenset(names)


_OWN_SOURCES = _own_sources()


def progress_message(line: str, own_sources: frozenset[str] = _OWN_SOURCES) -> str | None:
  """The progress shown for one line of a stage's log, or None for library output.

  absl log lines count only when logged from this repository's own modules (their
  message is shown without the prefix); lines in Python's default logging format,
  Jupyter apps' log lines, warnings and lines without a letter or digit (rules) are
  library output; anything else (tqdm bars, printed lines) is progress.
  """
  line = line.strip()
  if _RULE_LINE.match(line):
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


def _library_banners(parts: list[str]) -> set[int]:
  """Indices of the lines of multi-line library log messages framed by rules.

  XLA's slow-compile alarm logs an empty message line, then its text between two rows
  of asterisks: every line from the first rule to the second belongs to it.
  """
  inside, banner = False, set[int]()
  for i, part in enumerate(parts):
    is_rule = bool(part.strip()) and _RULE_LINE.match(part.strip()) is not None
    if inside:
      banner.add(i)
      inside = not is_rule
    elif is_rule and i > 0:
      header = _ABSL_LINE.match(parts[i - 1].strip())
      if header and not header.group(2).strip():
        banner.add(i)
        inside = True
  return banner


def _last_progress_line(log_path: str) -> str:
  """The stage's latest progress: its last tqdm, printed or own log line (see
  :func:`progress_message`, and library messages framed by rules are skipped),
  clipped to ``_WIDTH`` characters."""
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
  banners = _library_banners(parts)
  for i in reversed(range(len(parts))):
    if i in banners:
      continue
    message = progress_message(parts[i])
    if message:
      return _clip(message)
  return ""


def _kill(proc: subprocess.Popen) -> None:
  """Kills a stage and every process it started (its own process group)."""
  try:
    os.killpg(proc.pid, signal.SIGKILL)
  except ProcessLookupError:
    pass
  proc.wait()


def _wait(proc: subprocess.Popen, log_path: str, start: float, timeout: float | None) -> int | str:
  """Waits for a stage, showing its progress: a live line on a terminal, else every 30 s.

  Past ``timeout`` seconds (None: never) kills it and returns "timeout".
  """
  tty = sys.stdout.isatty()
  last_print = start
  while True:
    try:
      return proc.wait(timeout=1.0)
    except subprocess.TimeoutExpired:
      pass
    now = time.time()
    if timeout and now - start > timeout:
      _kill(proc)
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


def _sha256(path: str) -> str:
  digest = hashlib.sha256()
  with open(path, "rb") as f:
    for block in iter(lambda: f.read(1 << 20), b""):
      digest.update(block)
  return digest.hexdigest()


def _config_files(stage: stages_lib.Stage) -> list[str]:
  """The config files the stage's ``--config=PATH[:VARIANT]`` flags name."""
  prefix = "--config="
  return [f[len(prefix) :].split(":", 1)[0] for f in stage.flags if f.startswith(prefix)]


def _interpreter(root: str = ROOT) -> str:
  """This interpreter's path: relative to ``root`` when inside it (a virtual
  environment in the checkout moves with it), else absolute."""
  rel = os.path.relpath(sys.executable, root)
  return sys.executable if rel == os.pardir or rel.startswith(os.pardir + os.sep) else rel


def identity(
  stage: stages_lib.Stage, workdir: str, env: Mapping[str, str], *, cwd: str = "."
) -> str:
  """Everything that decides the outputs of ``stage`` in ``workdir``, one item a line.

  Its command (interpreter, flags, output folder), the SHA-256 of the config file its
  ``--config`` flag names (relative to ``cwd``, where the stage runs; its sizes live
  there, not in the command, so an edited config reruns the stage), its environment
  settings, its sizes (smoke or full), the JAX backend, and the SHA-256 of each input
  file of an earlier stage (or "absent"). Two runs of a stage with the same identity
  write the same outputs.

  Paths are relative: the output folder to ``workdir`` (the stage's name), the config
  file to ``cwd``, the inputs to ``workdir``, and the interpreter to the repository
  root where it lies inside it (see :func:`_interpreter`). A reproduction folder or
  checkout copied or moved elsewhere keeps its identities, and its stages are reused.
  """
  lines = [" ".join([_interpreter(), "-m", stage.module, *stage.arguments(stage.name)])]
  for rel in _config_files(stage):
    path = os.path.join(cwd, rel)
    lines.append(
      f"config {rel}: " + (f"sha256 {_sha256(path)}" if os.path.exists(path) else "absent")
    )
  lines += [f"env {name}={value}" for name, value in stage.env]
  lines.append(f"smoke={stage.smoke}")
  lines += [f"env {name}={env.get(name, '')}" for name in _IDENTITY_ENV]
  for _, rel in stage.inputs:
    path = os.path.join(workdir, rel)
    lines.append(
      f"input {rel}: " + (f"sha256 {_sha256(path)}" if os.path.exists(path) else "absent")
    )
  return "\n".join(lines) + "\n"


@dataclasses.dataclass(frozen=True)
class StageRecord:
  """What ran in a stage's folder: written there (``RECORD_FILE``) when the stage ends.

  Attributes:
    identity: the stage's :func:`identity`.
    command: the command as a user types it (``Stage.shown_command``).
    smoke: whether it ran at smoke sizes.
    status: "ok" or "FAILED (...)" (see :func:`run_stage`).
    seconds: the stage's wall time when it ran (kept when its outputs are reused).
    ended: when it ended, "YYYY-MM-DD HH:MM UTC" ("" in records of older versions).
  """

  identity: str
  command: str
  smoke: bool
  status: str
  seconds: float = 0.0
  ended: str = ""

  @property
  def ok(self) -> bool:
    return self.status == "ok"


def read_record(stage_dir: str) -> StageRecord | None:
  """The record of the stage that ran in ``stage_dir``, or None (never ran, still
  running, or killed before it ended, or a record this version cannot read)."""
  text = _read(os.path.join(stage_dir, RECORD_FILE))
  if text is None:
    return None
  try:
    return StageRecord(**json.loads(text))
  except (TypeError, ValueError):
    return None


def _write_record(stage_dir: str, record: StageRecord) -> None:
  path = os.path.join(stage_dir, RECORD_FILE)
  with open(path + ".tmp", "w") as f:
    json.dump(dataclasses.asdict(record), f, indent=2)
    f.write("\n")
  os.replace(path + ".tmp", path)


def finished_record(stage_dir: str) -> StageRecord | None:
  """The record of the finished outputs in ``stage_dir`` (the stage ended "ok" and its
  ``DONE_FILE`` is there), or None: never ran, failed, interrupted, or still running."""
  record = read_record(stage_dir)
  if record is None or not record.ok:
    return None
  return record if os.path.exists(os.path.join(stage_dir, DONE_FILE)) else None


def _legacy_identity(stage: stages_lib.Stage, workdir: str, identity_now: str) -> str:
  """The identity that versions before relative paths recorded for the same stage: its
  first line the command with this interpreter's and the stage folder's absolute paths,
  the rest as now. A folder reproduced by such a version is still reused, and never
  refused as "other settings", when nothing else changed."""
  first = " ".join(stage.command(os.path.join(workdir, stage.name)))
  return "\n".join([first, *identity_now.split("\n")[1:]])


def _same(recorded: str, stage: stages_lib.Stage, workdir: str, wanted: str) -> bool:
  """Whether a recorded identity is ``wanted`` (or its form in older records)."""
  return recorded in (wanted, _legacy_identity(stage, workdir, wanted))


def _finished(stage: stages_lib.Stage, workdir: str, wanted: str) -> bool:
  """Whether the stage's folder holds finished outputs of the identity ``wanted``."""
  record = finished_record(os.path.join(workdir, stage.name))
  return record is not None and _same(record.identity, stage, workdir, wanted)


def would_replace(
  stage: stages_lib.Stage, workdir: str, env: Mapping[str, str], *, cwd: str
) -> bool:
  """Whether running ``stage`` now (without ``force``) would replace finished outputs:
  its folder holds a finished stage (see :func:`finished_record`) of another identity
  than :func:`identity` gives now. Only reads the file system."""
  record = finished_record(os.path.join(workdir, stage.name))
  wanted = identity(stage, workdir, env, cwd=cwd)
  return record is not None and not _same(record.identity, stage, workdir, wanted)


def _prepare(stage: stages_lib.Stage, stage_dir: str, wanted: str) -> None:
  """Empties ``stage_dir`` (keeping an LM stage started before with the same identity,
  which resumes from its checkpoints) and records the identity started there."""
  resumable = stage.name == "lm" and _read(os.path.join(stage_dir, _STARTED_FILE)) == wanted
  if os.path.isdir(stage_dir) and not resumable:
    shutil.rmtree(stage_dir)
  os.makedirs(stage_dir, exist_ok=True)
  if os.path.exists(os.path.join(stage_dir, RECORD_FILE)):
    os.remove(os.path.join(stage_dir, RECORD_FILE))
  with open(os.path.join(stage_dir, _STARTED_FILE), "w") as f:
    f.write(wanted)


def _execute(
  stage: stages_lib.Stage,
  stage_dir: str,
  *,
  cwd: str,
  env: Mapping[str, str],
  start: float,
  timeout: float | None,
) -> int | str:
  """Runs the stage's command with its output in ``stage_dir/log.txt``; returns its exit
  code, or "timeout" (see :func:`_wait`)."""
  command = stage.command(stage_dir)
  with open(os.path.join(stage_dir, "log.txt"), "w") as log:
    log.write(f"$ {' '.join([*(f'{k}={v}' for k, v in stage.env), *command])}\n")
    log.flush()
    proc = subprocess.Popen(
      command,
      cwd=cwd,
      env=dict(env),
      stdin=subprocess.DEVNULL,
      stdout=log,
      stderr=subprocess.STDOUT,
      # Its own process group, so that a kill reaches the kernels and workers it starts.
      start_new_session=True,
    )
    try:
      return _wait(proc, log.name, start, timeout)
    finally:  # Interrupted (Ctrl-C reaches only this process's group): stop the stage too.
      if proc.poll() is None:
        _kill(proc)


def _status(stage: stages_lib.Stage, stage_dir: str, code: int | str, timeout: float | None) -> str:
  """ "ok", or "FAILED (...)" naming the exit code or the time limit, and the log."""
  log_name = f"{stage.name}/log.txt"
  if code == "timeout":
    return f"FAILED (killed at --stage_timeout={timeout or 0:.0f} s; see {log_name})"
  if code != 0:
    return f"FAILED (exit code {code}; see {log_name})"
  if not os.path.exists(os.path.join(stage_dir, DONE_FILE)):
    return f"FAILED (exit code 0 but no {DONE_FILE}; see {log_name})"
  return "ok"


def run_stage(
  stage: stages_lib.Stage,
  workdir: str,
  *,
  cwd: str,
  env: Mapping[str, str],
  force: bool,
  timeout: float | None,
) -> tuple[str, float]:
  """Runs ``stage`` into ``workdir/<stage name>``; returns (status, seconds).

  The status is "reused" (finished outputs of the same :func:`identity` exist and
  ``force`` is off), "ok", or "FAILED (...)" naming the exit code, or the time limit
  ``timeout`` (seconds; None: no limit) that killed it, and the log. The folder is
  emptied first, except for the LM stage started before with the same identity, which
  resumes from its checkpoints. The stage's output (stdout and stderr, of every process
  it starts) goes to its ``log.txt``, never to this process's terminal. Its record
  (``RECORD_FILE``) keeps its seconds and when it ended, for the page of later runs
  that reuse it.

  Raises:
    KeyboardInterrupt: Ctrl-C while the stage ran: the stage (its whole process
      group) is stopped first, and its record says "FAILED (interrupted ...)", so its
      folder is never taken for finished outputs.
  """
  stage_dir = os.path.join(workdir, stage.name)
  wanted = identity(stage, workdir, env, cwd=cwd)
  if not force and _finished(stage, workdir, wanted):
    return "reused", 0.0
  _prepare(stage, stage_dir, wanted)
  start = time.time()

  def record(status: str) -> None:
    ended = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    shown = stage.shown_command(stage.name)
    _write_record(
      stage_dir, StageRecord(wanted, shown, stage.smoke, status, time.time() - start, ended)
    )

  try:
    code = _execute(stage, stage_dir, cwd=cwd, env=env, start=start, timeout=timeout)
  except KeyboardInterrupt:
    record(f"FAILED (interrupted; see {stage.name}/log.txt)")
    raise
  seconds = time.time() - start
  if sys.stdout.isatty():
    sys.stdout.write("\r" + " " * 110 + "\r")
  status = _status(stage, stage_dir, code, timeout)
  record(status)
  return status, seconds
