"""Starting a binary with Ctrl-C's default action, as a terminal starts it.

A test runner started in the background inherits SIGINT ignored, and so would the
binaries its tests start. The child is started through a short Python wrapper that
restores SIGINT's default action and then execs the binary (same pid), rather than
with ``preexec_fn``: Python code that runs between fork and exec in a multithreaded
process (JAX starts threads in the test process) can deadlock.
"""

from __future__ import annotations

from collections.abc import Sequence
import subprocess
import sys
from typing import Any

_RESTORE_AND_EXEC = (
  "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
  "os.execvp(sys.argv[1], sys.argv[1:])"
)


def popen(argv: Sequence[str], **kwargs: Any) -> subprocess.Popen:
  """``subprocess.Popen(argv, **kwargs)`` with SIGINT's default action in the child."""
  return subprocess.Popen([sys.executable, "-c", _RESTORE_AND_EXEC, *argv], **kwargs)
