"""Test configuration: CPU only, JAX at its default dtype.

JAX runs with ``jax_enable_x64`` off, so the library computes in float32 (its
default); the brute-force references in ``tests/maxk/enumeration.py`` and the
exact checks compute in NumPy float64 or exact rationals.
"""

from collections.abc import Iterator
import os
import shutil
import tempfile

import pytest

from tests import compiled_programs

os.environ.setdefault("JAX_PLATFORMS", "cpu")


def pytest_configure(config: pytest.Config) -> None:
  """The fast tests (the default ``-m 'not slow'``) compile with XLA's backend
  optimisations off: they check what is computed, not how fast, and LLVM's passes are
  most of XLA:CPU's compile time (the fast step takes about a quarter less). The integration
  tests (``-m slow``) and CI's lowest-versions job (``JAX_DISABLE_MOST_OPTIMIZATIONS=0``)
  compile as users do, so both compilations are tested. An explicit
  ``JAX_DISABLE_MOST_OPTIMIZATIONS`` wins; subprocesses inherit the choice.
  """
  if config.getoption("markexpr") == "not slow":
    os.environ.setdefault("JAX_DISABLE_MOST_OPTIMIZATIONS", "1")
  _share_compiled_programs(config)


def _share_compiled_programs(config: pytest.Config) -> None:
  """One persistent compilation cache for the processes of this run, and only this run.

  The xdist workers, and the binaries that tests start as users do, otherwise compile
  the same programs again, each in its own process. The cache is a new empty directory
  (every run compiles each program at least once) made by the controlling process,
  which the workers and their subprocesses inherit, and deleted at the end. An explicit
  ``JAX_COMPILATION_CACHE_DIR`` wins and is kept.
  """
  if "JAX_COMPILATION_CACHE_DIR" in os.environ:
    return
  directory = tempfile.mkdtemp(prefix="maxk-tests-jax-cache-")
  os.environ["JAX_COMPILATION_CACHE_DIR"] = directory
  os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")
  os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES", "0")
  config.add_cleanup(lambda: shutil.rmtree(directory, ignore_errors=True))


@pytest.fixture(autouse=True, scope="module")
def _stay_under_the_memory_map_limit() -> Iterator[None]:
  """After each test module, drops JAX's caches if the process nears the mapping limit."""
  yield
  compiled_programs.release_if_near_limit()
