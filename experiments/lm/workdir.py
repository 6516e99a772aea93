"""A workdir belongs to one config and has one writer at a time.

``claim(workdir, config_record)`` is entered before the experiment writes anything:

* **One writer.** It takes an exclusive ``fcntl.flock`` on ``WORKDIR/.lock`` and
  holds the open file for the life of the run. A second process on the same workdir
  fails at once. The kernel drops the lock when its holder exits, however it exits
  (``kill -9`` included), so a lock is never stale and is never deleted. Multi-host
  runs: only process 0 writes the workdir, so only it takes the lock (``flock`` on
  NFS is emulated with POSIX locks by Linux; other shared file systems may not lock).
* **One config.** A workdir that already holds ``config.json`` resumes only with an
  identical config (a list field recorded as the comma-separated string of older
  runs counts as its list): every config field, and the number of devices used (a different
  mesh changes floating-point reductions, so it would mix two runs' numbers). Only
  the recorded ``workdir`` path may differ, so a finished or interrupted workdir can
  be moved. Otherwise the run stops, naming the fields that differ, before it writes
  anything. A workdir with checkpoints or metrics but no ``config.json`` cannot be
  checked and is refused too.

Then it writes ``config.json`` (atomically) and hands the workdir to the run.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
import contextlib
import fcntl
import json
import os
from typing import Any

from experiments import config_checks
from experiments import outputs

LOCK_FILE = ".lock"
CONFIG_FILE = "config.json"
# Recorded with the config but free to differ on resume.
UNCHECKED_FIELDS = ("workdir",)
_MAX_LISTED = 8


class WorkdirError(config_checks.ConfigError):
  """The workdir cannot be used by this run: locked, another config, damaged (a
  :class:`experiments.config_checks.ConfigError`: the binary ends with its one line)."""


def config_differences(
  old: Mapping[str, Any], new: Mapping[str, Any], prefix: str = ""
) -> list[str]:
  """``"field: old -> new"`` for every (dotted) field whose value differs.

  Both mappings are compared as JSON would store them, so a config read back from
  ``config.json`` equals the one it was written from; a value of ``old`` that is the
  comma-separated string a list field held before list fields were lists
  (``"runs": "grpo,max_at_k@8"``) equals that list
  (:func:`experiments.config_checks.same_value`), so a workdir started then resumes.
  """
  diffs = []
  for name in sorted(set(old) | set(new)):
    field = prefix + name
    if not prefix and name in UNCHECKED_FIELDS:
      continue
    if name not in old or name not in new:
      where = "only in the new config" if name in new else "only in the workdir's config"
      diffs.append(f"{field} ({where})")
    elif isinstance(old[name], Mapping) and isinstance(new[name], Mapping):
      diffs.extend(config_differences(old[name], new[name], field + "."))
    elif not config_checks.same_value(old[name], new[name]):
      diffs.append(f"{field}: {old[name]!r} -> {new[name]!r}")
  return diffs


def _as_json(record: Mapping[str, Any]) -> dict[str, Any]:
  return json.loads(json.dumps(dict(record), sort_keys=True, default=str))


def check_config(workdir: str, record: Mapping[str, Any]) -> None:
  """Raises ``WorkdirError`` unless ``workdir`` is new or holds the same config."""
  path = os.path.join(workdir, CONFIG_FILE)
  if not os.path.exists(path):
    leftovers = [
      n for n in ("checkpoints", "metrics.jsonl") if os.path.exists(os.path.join(workdir, n))
    ]
    if leftovers:
      raise WorkdirError(
        f"{workdir} holds {' and '.join(leftovers)} but no {CONFIG_FILE}, so its config "
        "cannot be checked; use a new --workdir."
      )
    return
  try:
    with open(path) as f:
      old = json.load(f)
  except (OSError, ValueError) as e:
    raise WorkdirError(f"{path} cannot be read ({e}); use a new --workdir.") from None
  diffs = config_differences(old, _as_json(record))
  if diffs:
    listed = "; ".join(diffs[:_MAX_LISTED])
    more = f"; and {len(diffs) - _MAX_LISTED} more" if len(diffs) > _MAX_LISTED else ""
    raise WorkdirError(
      f"{workdir} holds a run of another config ({listed}{more}). A workdir resumes only "
      "with the config it was started with; use a new --workdir."
    )


@contextlib.contextmanager
def lock(workdir: str) -> Iterator[None]:
  """Holds an exclusive lock on ``workdir`` for the body; raises ``WorkdirError`` if taken."""
  path = os.path.join(workdir, LOCK_FILE)
  fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)  # Not inherited by child processes.
  try:
    try:
      fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
      holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "unknown"
      raise WorkdirError(
        f"{workdir} is in use by another run (pid {holder}, lock {path}); wait for it to "
        "finish or use another --workdir."
      ) from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    yield
  finally:
    os.close(fd)  # Releases the lock.


@contextlib.contextmanager
def claim(workdir: str, record: Mapping[str, Any], *, writer: bool = True) -> Iterator[str]:
  """Creates, locks and checks ``workdir``, writes ``config.json``; yields its absolute path.

  Args:
    workdir: the run's directory.
    record: what ``config.json`` holds (the config as a dict plus run facts).
    writer: whether this process writes the workdir (process 0); the others only get
      the path.

  Raises:
    WorkdirError: (writer) ``workdir`` is empty, a file, below a file or not
      writable (``outputs.workdir_problem``), is in use, or holds another config.
  """
  if not writer:
    yield os.path.abspath(workdir)
    return
  problem = outputs.workdir_problem(workdir)
  if problem is not None:
    raise WorkdirError(f"--workdir={workdir!r}: {problem}")
  workdir = os.path.abspath(workdir)
  if os.path.isdir(workdir):
    check_config(workdir, record)  # Refuse before creating even the lock file.
  os.makedirs(workdir, exist_ok=True)
  with lock(workdir):
    check_config(workdir, record)  # Again under the lock: a run may have just started.
    outputs.write_config(workdir, record)
    yield workdir
