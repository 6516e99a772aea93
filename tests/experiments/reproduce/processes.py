"""Whether a process has ended, for the tests that stop a stage and its workers."""

import time


def alive(pid):
  """Whether process ``pid`` runs (a zombie has ended)."""
  try:
    with open(f"/proc/{pid}/stat") as f:
      return f.read().rsplit(")", 1)[1].split()[0] != "Z"
  except FileNotFoundError:
    return False


def ends_within(pid, seconds):
  """Whether process ``pid`` ends within ``seconds``: a signal to another process is
  delivered asynchronously, so a killed worker may still run for a moment on a busy
  machine."""
  deadline = time.monotonic() + seconds
  while alive(pid):
    if time.monotonic() > deadline:
      return False
    time.sleep(0.05)
  return True
