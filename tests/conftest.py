"""Test configuration: CPU only, JAX at its default dtype.

JAX runs with ``jax_enable_x64`` off, so the library computes in float32 (its
default); the brute-force references in ``tests/maxk/enumeration.py`` and the
exact checks compute in NumPy float64 or exact rationals.
"""

from collections.abc import Iterator
import os

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


@pytest.fixture(autouse=True, scope="module")
def _stay_under_the_memory_map_limit() -> Iterator[None]:
  """After each test module, drops JAX's caches if the process nears the mapping limit."""
  yield
  compiled_programs.release_if_near_limit()
