"""tests.compiled_programs: the mappings of compiled programs are released near the limit."""

import json
import pathlib
import subprocess
import sys

import pytest

from tests import compiled_programs

pytestmark = pytest.mark.skipif(
  compiled_programs.memory_map_count() is None or compiled_programs.memory_map_limit() is None,
  reason="no /proc memory-map count on this platform",
)

# Run in a fresh interpreter: in a long test worker, mappings freed by earlier releases are
# reused and neighbouring ones merge, so the growth one compile causes there is not stable.
_SCENARIO = """
import json
import jax
import jax.numpy as jnp
from tests import compiled_programs

before = compiled_programs.memory_map_count()
for i in range(30):
  jax.jit(lambda x, i=i: jnp.cumsum(jnp.sort(x * i)))(jnp.ones(3 + i)).block_until_ready()
grown = compiled_programs.memory_map_count()
released = compiled_programs.release_if_near_limit(fraction=0.0)
after = compiled_programs.memory_map_count()
print(json.dumps([before, grown, released, after]))
"""


def test_compiled_programs_hold_mappings_until_released():
  run = subprocess.run(
    [sys.executable, "-c", _SCENARIO],
    capture_output=True,
    text=True,
    check=True,
    timeout=300,
    cwd=pathlib.Path(__file__).parents[1],
  )
  before, grown, released, after = json.loads(run.stdout.strip().splitlines()[-1])
  assert grown > before + 30  # several mappings per program
  assert released
  assert after < grown - 30


def test_nothing_is_released_far_below_the_limit():
  assert not compiled_programs.release_if_near_limit(fraction=1.0)
