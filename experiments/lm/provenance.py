"""Where a run came from: ``WORKDIR/run.json``, one session per invocation of the binary.

``config.json`` is compared field by field on resume, so it holds the config alone;
what may change from one invocation of the same run to the next (the code's commit,
the machine, the time) goes to ``run.json`` instead, one session appended per
invocation (a resumed run has several)::

  {"sessions": [SESSION, ...]}

Each SESSION holds

* ``started_utc``, ``ended_utc``: ISO 8601 in UTC (``2026-12-03T17:00:26+00:00``);
  ``ended_utc`` is None while the session runs and after a kill;
* ``status``: ``running`` (until the session ends), ``finished``, ``failed:
  <ExceptionType>``, ``interrupted`` (KeyboardInterrupt), or ``killed``: a session
  still ``running`` when the next one starts (which holds the workdir's lock, so that
  process is gone) ended without a word (``kill -9``, a lost machine);
* ``commit``: ``git rev-parse HEAD`` of the repository holding the ``experiments``
  package that runs; ``dirty``: whether its tracked files differ from that commit
  (``git status --porcelain --untracked-files=no``: untracked files, such as an
  output folder inside the checkout, are ignored). Both None, with the reason in
  ``provenance_error``, when git cannot tell (no git binary, not a checkout, a git
  error); ``provenance_error`` is None otherwise;
* ``maxk_version``, ``jax_version``, ``python_version``, ``host`` (``platform.node()``),
  ``platform`` and ``device_kind`` (of ``jax.devices()[0]``), ``num_devices``
  (``jax.device_count()``; the mesh's size is ``config.json``'s
  ``num_devices_used``) and ``argv`` (``sys.argv``);
* ``study_design``: the config's ``study_design`` ("" for none), and with one
  ``design_commit`` (``git log -1 --format=%H -- <path>``) and
  ``design_committed_utc`` (that commit's committer time); both None without one.

A run whose config names a design note (``config.study_design``, a path relative to
the repository root) starts only when the note exists and is committed unmodified
(:func:`design_note`, before anything is written): a study's design precedes its
runs, which ``experiments.lm_study.summary`` checks against each run's first start.

Only process 0 writes ``run.json`` (:func:`recorded`), each time whole and
atomically.
"""

from __future__ import annotations

from collections.abc import Iterator
import contextlib
import dataclasses
import datetime
import json
import os
import platform
import subprocess
import sys
from typing import Any

from absl import logging
import jax

import experiments
from experiments import config_checks
from experiments import outputs
from experiments.lm import workdir as workdir_lib
import maxk

RUN_FILE = "run.json"
_GIT_TIMEOUT_S = 60


class GitError(RuntimeError):
  """git could not answer: no git binary, not a checkout, or a failed command."""


def code_dir() -> str:
  """The folder holding the ``experiments`` package that runs (its repository's root
  in a checkout)."""
  return os.path.dirname(os.path.dirname(os.path.abspath(experiments.__file__)))


def git(*args: str, cwd: str | None = None) -> str:
  """The standard output of ``git ARGS`` run in ``cwd`` (default :func:`code_dir`).

  Raises:
    GitError: naming the command and why it gave no answer.
  """
  command = "git " + " ".join(args)
  try:
    proc = subprocess.run(
      ["git", *args],
      cwd=cwd or code_dir(),
      capture_output=True,
      text=True,
      timeout=_GIT_TIMEOUT_S,
      check=False,
    )
  except (OSError, subprocess.SubprocessError) as e:
    raise GitError(f"{command}: {e}") from None
  if proc.returncode:
    lines = proc.stderr.strip().splitlines()
    raise GitError(f"{command}: {lines[-1] if lines else f'exit code {proc.returncode}'}")
  return proc.stdout


def utc_now() -> str:
  """The current time, ISO 8601 in UTC to the second."""
  return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def _utc(timestamp: str) -> str:
  return datetime.datetime.fromtimestamp(int(timestamp), datetime.timezone.utc).isoformat()


@dataclasses.dataclass(frozen=True)
class DesignNote:
  """A study's committed design note: its path (relative to the repository root), the
  latest commit that touched it and that commit's committer time (ISO 8601, UTC)."""

  path: str
  commit: str
  committed_utc: str


def design_note(path: str) -> DesignNote | None:
  """The design note ``path`` (``config.study_design``; "" for none), checked to be
  committed as it is on disk.

  Raises:
    config_checks.ConfigError: naming ``config.study_design``, when the file is absent,
      untracked, modified (staged or not) or git cannot tell.
  """
  if not path:
    return None
  field = f"config.study_design={path!r}"
  try:
    root = git("rev-parse", "--show-toplevel").strip()
    if not os.path.isfile(os.path.join(root, path)):
      raise config_checks.ConfigError(f"{field}: no such file in {root}.")
    changed = git("status", "--porcelain", "--", path, cwd=root).strip()
    last = git("log", "-1", "--format=%H %ct", "--", path, cwd=root).split()
  except GitError as e:
    raise config_checks.ConfigError(
      f"{field}: cannot check that the design note is committed ({e})."
    ) from None
  if changed or not last:
    what = "is not committed" if not last else "has uncommitted changes"
    raise config_checks.ConfigError(
      f"{field} {what} in {root}: commit the design note before any run of the study."
    )
  return DesignNote(path=path, commit=last[0], committed_utc=_utc(last[1]))


def code_state() -> dict[str, Any]:
  """``commit``, ``dirty`` and ``provenance_error`` of the running code (module docstring)."""
  try:
    commit = git("rev-parse", "HEAD").strip()
    dirty = bool(git("status", "--porcelain", "--untracked-files=no").strip())
  except GitError as e:
    return {"commit": None, "dirty": None, "provenance_error": str(e)}
  return {"commit": commit, "dirty": dirty, "provenance_error": None}


def new_session(design: DesignNote | None) -> dict[str, Any]:
  """A session (module docstring) starting now, ``status`` ``running``."""
  device = jax.devices()[0]
  return {
    "started_utc": utc_now(),
    "ended_utc": None,
    "status": "running",
    **code_state(),
    "maxk_version": maxk.__version__,
    "jax_version": jax.__version__,
    "python_version": platform.python_version(),
    "host": platform.node(),
    "platform": device.platform,
    "device_kind": device.device_kind,
    "num_devices": jax.device_count(),
    "argv": list(sys.argv),
    "study_design": design.path if design else "",
    "design_commit": design.commit if design else None,
    "design_committed_utc": design.committed_utc if design else None,
  }


def read_sessions(workdir: str) -> list[dict[str, Any]]:
  """The sessions of ``workdir/run.json`` (none when it is absent).

  Raises:
    workdir_lib.WorkdirError: the file is unreadable or not a list of sessions.
  """
  path = os.path.join(workdir, RUN_FILE)
  if not os.path.exists(path):
    return []
  try:
    with open(path) as f:
      sessions = json.load(f)["sessions"]
  except (OSError, ValueError, KeyError, TypeError) as e:
    raise workdir_lib.WorkdirError(f"{path} cannot be read ({e}); use a new --workdir.") from None
  if not isinstance(sessions, list) or not all(isinstance(s, dict) for s in sessions):
    raise workdir_lib.WorkdirError(f"{path} holds no list of sessions; use a new --workdir.")
  return sessions


def _write(workdir: str, sessions: list[dict[str, Any]]) -> None:
  outputs.write_json(os.path.join(workdir, RUN_FILE), {"sessions": sessions})


@contextlib.contextmanager
def recorded(workdir: str, design: DesignNote | None, *, writer: bool = True) -> Iterator[None]:
  """Appends this invocation's session to ``workdir/run.json`` for the body, and its end
  and status after it (``finished``, ``failed: <type>`` or ``interrupted``). Enter it
  inside ``workdir.claim``: the lock makes a session left ``running`` a dead one,
  marked ``killed``. Only the ``writer`` (process 0) writes.

  Raises:
    workdir_lib.WorkdirError: ``run.json`` exists but cannot be read.
  """
  if not writer:
    yield
    return
  sessions = read_sessions(workdir)
  for session in sessions:
    if session.get("status") == "running":
      session["status"] = "killed"
  sessions.append(new_session(design))
  _write(workdir, sessions)
  status = "finished"
  try:
    yield
  except KeyboardInterrupt:
    status = "interrupted"
    raise
  except BaseException as e:
    status = f"failed: {type(e).__name__}"
    raise
  finally:
    sessions[-1].update(ended_utc=utc_now(), status=status)
    try:
      _write(workdir, sessions)
    except OSError as e:  # Never hide the run's own outcome behind this one.
      logging.warning("Could not record the session's end in %s: %s", RUN_FILE, e)
