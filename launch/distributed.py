r"""Runs an experiment binary multi-host: ``jax.distributed.initialize()``, then the binary.

Usage (one process per host; the SLURM and TPU launchers generate these lines):
  python -m launch.distributed experiments.best_of_n --workdir=/shared/out/run0 [FLAGS]

The binaries need no change: this module initialises JAX's distributed runtime and
then runs ``MODULE`` as ``__main__`` with the remaining arguments. The coordinator is
taken from the environment when set (``MAXK_COORDINATOR_ADDRESS=host:port``,
``MAXK_NUM_PROCESSES``, ``MAXK_PROCESS_ID``; the SLURM script sets them), else
auto-detected by ``jax.distributed.initialize()`` (SLURM, Cloud TPU VMs, ...).
``MAXK_DISTRIBUTED=0`` skips the initialisation (single process, e.g. for tests).

The output folder, per binary:

* The LM binary (:data:`SHARED_WORKDIR_BINARIES`: ``experiments.lm`` and
  ``experiments.lm.main``) shards its work across the processes, which checkpoint
  collectively into one folder: its ``--workdir`` is passed unchanged to every process.
* Every other binary (best_of_n, the bandit studies, ...) computes the same result on
  every process, whose outputs would overwrite each other: on processes other than 0
  its output folder ``X`` becomes ``X/process_<i>``, so that ``X`` holds process 0's
  outputs only. Both spellings of the flag are rewritten (``--workdir`` and its alias
  ``--out_dir``), as ``--flag=X`` or ``--flag X``, with one or two dashes.
"""

from __future__ import annotations

from collections.abc import Sequence
import os
import re
import runpy
import sys

_initialized = False

# Binaries whose processes share one output folder (see the module docstring).
SHARED_WORKDIR_BINARIES = frozenset({"experiments.lm", "experiments.lm.main"})
# The output folder flag of the experiment binaries and its alias (experiments/command_line.py).
_OUT_FLAG = re.compile(r"--?(?:workdir|out_dir)(?==|$)")


def initialize() -> None:
  """``jax.distributed.initialize`` with the MAXK_* environment, at most once."""
  global _initialized
  if _initialized:
    return
  import jax  # pylint: disable=g-import-not-at-top

  address = os.environ.get("MAXK_COORDINATOR_ADDRESS")
  if address:
    jax.distributed.initialize(
      coordinator_address=address,
      num_processes=int(os.environ["MAXK_NUM_PROCESSES"]),
      process_id=int(os.environ["MAXK_PROCESS_ID"]),
    )
  else:
    jax.distributed.initialize()
  _initialized = True


def process_args(module: str, args: Sequence[str], process_index: int) -> list[str]:
  """``module``'s arguments on process ``process_index``: the output folder ``X``
  (``--workdir`` or ``--out_dir``) becomes ``X/process_<i>`` on processes other than
  0, except for :data:`SHARED_WORKDIR_BINARIES`, whose arguments are unchanged."""
  if process_index == 0 or module in SHARED_WORKDIR_BINARIES:
    return list(args)
  out = list(args)
  for i, arg in enumerate(out):
    if arg == "--":  # absl parses no flag after it.
      break
    match = _OUT_FLAG.match(arg)
    if match is None:
      continue
    if match.end() < len(arg):  # --flag=X
      out[i] = arg[: match.end() + 1] + _process_dir(arg[match.end() + 1 :], process_index)
    elif i + 1 < len(out):  # --flag X (absl takes the next argument as the value)
      out[i + 1] = _process_dir(out[i + 1], process_index)
  return out


def _process_dir(path: str, process_index: int) -> str:
  # An empty folder stays empty, for the binary to refuse as it does on process 0.
  return os.path.join(path, f"process_{process_index}") if path else path


def main(argv: Sequence[str]) -> None:
  """``argv[1]`` is the binary's module, the rest its arguments (module docstring)."""
  if len(argv) < 2 or argv[1].startswith("-"):
    raise SystemExit("usage: python -m launch.distributed MODULE [FLAGS...]")
  module, args = argv[1], argv[2:]
  index = 0
  if os.environ.get("MAXK_DISTRIBUTED", "1") != "0":
    initialize()
    import jax  # pylint: disable=g-import-not-at-top

    index = jax.process_index()
  os.environ["MAXK_DISTRIBUTED"] = "1" if _initialized else "0"
  sys.argv = [module, *process_args(module, args, index)]
  runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
  main(sys.argv)
