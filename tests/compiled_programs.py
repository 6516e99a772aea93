"""Keeping a long test process under the kernel's limit on memory mappings.

Every program XLA:CPU compiles keeps a few memory mappings of its machine code for as
long as JAX caches it, and JAX caches every program of a module-level ``jax.jit`` for
the life of the process. One pytest-xdist worker runs half the fast suite: about 55
mappings per test, so over a thousand tests reach Linux's default ``vm.max_map_count``
(65530), where the next compile's ``mmap`` fails and the worker dies with SIGSEGV
inside XLA. ``release_if_near_limit`` drops JAX's caches when the process holds more
than half the limit; tests then recompile what they use, and nothing else changes.
"""

from __future__ import annotations

import gc
import sys

_MAPS = "/proc/self/maps"
_LIMIT = "/proc/sys/vm/max_map_count"


def memory_map_count() -> int | None:
  """The number of memory mappings this process holds; None where /proc has no count."""
  try:
    with open(_MAPS, "rb") as maps:
      return sum(1 for _ in maps)
  except OSError:
    return None


def memory_map_limit() -> int | None:
  """The kernel's limit on one process's memory mappings; None where it is not readable."""
  try:
    with open(_LIMIT) as limit:
      return int(limit.read())
  except (OSError, ValueError):
    return None


def release_if_near_limit(*, fraction: float = 0.5) -> bool:
  """Clears JAX's compiled-program caches when the mappings exceed ``fraction`` of the limit.

  Returns whether it cleared them. Does nothing (False) where the count or the limit is
  unknown, or where JAX was never imported.
  """
  jax = sys.modules.get("jax")
  count, limit = memory_map_count(), memory_map_limit()
  if jax is None or count is None or limit is None or count <= fraction * limit:
    return False
  jax.clear_caches()
  gc.collect()
  return True
