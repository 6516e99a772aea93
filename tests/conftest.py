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


@pytest.fixture(autouse=True, scope="module")
def _stay_under_the_memory_map_limit() -> Iterator[None]:
  """After each test module, drops JAX's caches if the process nears the mapping limit."""
  yield
  compiled_programs.release_if_near_limit()
