r"""Pinning runs to CPU cores, so that ``--threads_per_run`` really caps a run's threads.

XLA's CPU client and OpenMP size their thread pools from the cores the process may
run on (``sched_getaffinity``), and the kernel never schedules the process elsewhere,
so pinning a run to N cores caps it at N cores whatever flags it passes to XLA.

As a wrapper (the affinity survives ``exec``, and the process keeps its pid):
  python -m launch.cpus 0,1 -- python -m experiments.best_of_n --workdir=...
"""

from __future__ import annotations

from collections.abc import Sequence
import os
import queue
import sys


def available() -> list[int]:
  """The cores this process may run on, sorted."""
  return sorted(os.sched_getaffinity(0))


def core_sets(threads: int, slots: int, cores: Sequence[int] | None = None) -> list[list[int]]:
  """``slots`` sets of ``threads`` cores each, disjoint while the cores last, then reused.

  Raises:
    ValueError: ``threads`` is not in [1, number of cores].
  """
  cores = list(cores) if cores is not None else available()
  if not 1 <= threads <= len(cores):
    raise ValueError(f"--threads_per_run={threads} must be in [1, {len(cores)}] (cores here).")
  return [[cores[(s * threads + j) % len(cores)] for j in range(threads)] for s in range(slots)]


class CoreSlots:
  """A pool of core sets: a run takes one while it runs and gives it back after."""

  def __init__(self, threads: int, slots: int):
    self._free: queue.Queue[list[int]] = queue.Queue()
    for cores in core_sets(threads, slots):
      self._free.put(cores)

  def take(self) -> list[int]:
    return self._free.get()

  def give_back(self, cores: list[int]) -> None:
    self._free.put(cores)


def pinned(command: Sequence[str], cores: Sequence[int]) -> list[str]:
  """``command`` run through this module's wrapper, pinned to ``cores``."""
  return [sys.executable, "-m", "launch.cpus", ",".join(map(str, cores)), "--", *command]


def main(argv: Sequence[str]) -> None:
  if len(argv) < 4 or argv[2] != "--":
    raise SystemExit("usage: python -m launch.cpus CORE[,CORE...] -- COMMAND [ARGS...]")
  cores = {int(c) for c in argv[1].split(",")}
  os.sched_setaffinity(0, cores)
  threads = str(len(cores))
  os.environ["OMP_NUM_THREADS"] = threads  # OpenMP (NumPy's BLAS) may not read the affinity.
  os.execvp(argv[3], list(argv[3:]))


if __name__ == "__main__":
  main(sys.argv)
