r"""Runs an experiment binary multi-host: ``jax.distributed.initialize()``, then the binary.

Usage (one process per host; the SLURM and TPU launchers generate these lines):
  python -m launch.distributed experiments.best_of_n --out_dir=/shared/out/run0 [FLAGS]

The binaries need no change: this module initialises JAX's distributed runtime and
then runs ``MODULE`` as ``__main__`` with the remaining arguments. The coordinator is
taken from the environment when set (``MAXK_COORDINATOR_ADDRESS=host:port``,
``MAXK_NUM_PROCESSES``, ``MAXK_PROCESS_ID``; the SLURM script sets them), else
auto-detected by ``jax.distributed.initialize()`` (SLURM, Cloud TPU VMs, ...).
``MAXK_DISTRIBUTED=0`` skips the initialisation (single process, e.g. for tests).

Binaries that compute the same result on every process (best_of_n, the bandit
studies) would all write the same files: on processes other than 0, ``--out_dir=X``
is rewritten to ``X/process_<i>`` so that ``X`` holds process 0's outputs only.
``--workdir`` (experiments.lm.main, which shards its work and checkpoints
collectively) is passed unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence
import os
import runpy
import sys

_initialized = False


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


def process_args(args: Sequence[str], process_index: int) -> list[str]:
  """Rewrites ``--out_dir=X`` to ``X/process_<i>`` on processes other than 0."""
  if process_index == 0:
    return list(args)
  out = []
  for a in args:
    if a.startswith("--out_dir="):
      a = "--out_dir=" + os.path.join(a.split("=", 1)[1], f"process_{process_index}")
    out.append(a)
  return out


def main(argv: Sequence[str]) -> None:
  if len(argv) < 2 or argv[1].startswith("-"):
    raise SystemExit("usage: python -m launch.distributed MODULE [FLAGS...]")
  module, args = argv[1], argv[2:]
  index = 0
  if os.environ.get("MAXK_DISTRIBUTED", "1") != "0":
    initialize()
    import jax  # pylint: disable=g-import-not-at-top

    index = jax.process_index()
  os.environ["MAXK_DISTRIBUTED"] = "1" if _initialized else "0"
  sys.argv = [module, *process_args(args, index)]
  runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
  main(sys.argv)
