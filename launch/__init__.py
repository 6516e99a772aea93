"""Launching the experiment binaries: sweeps, local runs, SLURM arrays, Cloud TPU VMs.

* :mod:`launch.sweep`: a grid of flag values -> a list of runs (deterministic names).
* :mod:`launch.local`: runs a sweep as parallel local processes, skips runs finished
  with exactly the same flags, refuses folders holding runs with other flags, and
  gathers every run's ``results.csv`` into ``OUT_ROOT/all_results.csv``.
* :mod:`launch.processes`: the local runs' process groups and per-run folder locks.
* :mod:`launch.cpus`: pins a run to CPU cores (``launch.local --threads_per_run``).
* :mod:`launch.slurm`: writes (and optionally submits) an ``sbatch`` array script.
* :mod:`launch.tpu`: writes a script that runs each run on all workers of a TPU VM.
* :mod:`launch.distributed`: ``python -m launch.distributed MODULE [FLAGS]`` calls
  ``jax.distributed.initialize()`` and then runs the binary ``MODULE`` unchanged.
"""
