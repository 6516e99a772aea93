"""tests.compiled_programs: the mappings of compiled programs are released near the limit."""

import jax
import jax.numpy as jnp
import pytest

from tests import compiled_programs

pytestmark = pytest.mark.skipif(
  compiled_programs.memory_map_count() is None or compiled_programs.memory_map_limit() is None,
  reason="no /proc memory-map count on this platform",
)


def _compile_programs(count: int) -> None:
  for i in range(count):
    jax.jit(lambda x, i=i: jnp.cumsum(jnp.sort(x * i)))(jnp.ones(3 + i)).block_until_ready()


def test_compiled_programs_hold_mappings_until_released():
  before = compiled_programs.memory_map_count()
  _compile_programs(30)
  grown = compiled_programs.memory_map_count()
  assert grown > before + 30  # several mappings per program
  assert compiled_programs.release_if_near_limit(fraction=0.0)
  assert compiled_programs.memory_map_count() < grown - 30


def test_nothing_is_released_far_below_the_limit():
  assert not compiled_programs.release_if_near_limit(fraction=1.0)
