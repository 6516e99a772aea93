"""The local launcher's child processes: one process group per run, and a lock per run.

* ``Children`` starts each run in its own process group (session) and stops every live
  run's whole group at once, so that stopping the launcher (SIGTERM, Ctrl-C) leaves no
  run behind.
* ``try_lock`` takes a run folder's lock (``flock`` on ``launch.lock``). The child
  inherits the locked file, so the lock is held for as long as the run lives, even if
  its launcher was killed with SIGKILL: a second launcher finds the run busy instead of
  starting a second copy into the same folder.
"""

from __future__ import annotations

from collections.abc import Sequence
import fcntl
import os
import signal
import subprocess
import threading
import time
from typing import Any

LOCK_FILE = "launch.lock"


def try_lock(workdir: str) -> int | None:
  """Locks ``workdir/launch.lock``; returns its descriptor, or None if a live run holds it."""
  os.makedirs(workdir, exist_ok=True)
  fd = os.open(os.path.join(workdir, LOCK_FILE), os.O_RDWR | os.O_CREAT, 0o644)
  try:
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
  except BlockingIOError:
    os.close(fd)
    return None
  return fd


def _signal_group(proc: subprocess.Popen, sig: int) -> None:
  try:
    os.killpg(proc.pid, sig)
  except ProcessLookupError:
    pass


class Children:
  """Live runs, each in its own process group; ``stop_all`` ends them all."""

  def __init__(self) -> None:
    self._lock = threading.Lock()
    self._procs: set[subprocess.Popen] = set()
    self.stopping = False

  def start(self, command: Sequence[str], **kwargs: Any) -> subprocess.Popen | None:
    """Starts ``command`` in a new process group; None once ``stop_all`` was called."""
    with self._lock:
      if self.stopping:
        return None
      proc = subprocess.Popen(list(command), start_new_session=True, **kwargs)
      self._procs.add(proc)
      return proc

  def wait(self, proc: subprocess.Popen, timeout: float | None = None) -> int | str:
    """Waits for ``proc``; past ``timeout`` seconds kills its group and returns "timeout"."""
    try:
      return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
      _signal_group(proc, signal.SIGKILL)
      proc.wait()
      return "timeout"
    finally:
      with self._lock:
        self._procs.discard(proc)

  def stop_all(self, grace: float = 5.0) -> int:
    """No new runs start; every live group gets SIGTERM, then SIGKILL after ``grace`` s.

    Returns the number of runs that were live.
    """
    with self._lock:
      self.stopping = True
      procs = list(self._procs)
    for proc in procs:
      _signal_group(proc, signal.SIGTERM)
    deadline = time.time() + grace
    for proc in procs:
      try:
        proc.wait(timeout=max(0.0, deadline - time.time()))
      except subprocess.TimeoutExpired:
        _signal_group(proc, signal.SIGKILL)
    return len(procs)
