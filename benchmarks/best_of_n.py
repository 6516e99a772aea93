"""Jitted time per call of the best-of-n functions vs the number of outcomes L.

Run as ``python -m benchmarks.best_of_n``.  Each function is jitted, warmed up
(compiled and run once), then timed over ``--repeats`` calls with
``block_until_ready``; the table reports the median time per call, and the time
divided by L log2 L, which stays roughly flat for an O(L log L) algorithm.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
import math
import time
from typing import Any

from absl import flags
import jax
import numpy as np

from experiments import command_line
import maxk

_SIZES = flags.DEFINE_list(
  "sizes", ["1000", "10000", "100000", "1000000"], "Numbers of outcomes L to time."
)
_N = flags.DEFINE_integer("n", 10_000, "Best-of-n parameter n (static).")
_REPEATS = flags.DEFINE_integer("repeats", 5, "Timed calls per (function, L).")
_SEED = flags.DEFINE_integer("seed", 0, "Seed for the random references.")
_FUNCTIONS = flags.DEFINE_list(
  "functions",
  ["bon_kl", "bon_pmf", "bon_win_rate", "max_at_k_exact"],
  "Which maxk best-of-n functions to time.",
)


def _time_call(fn: Callable[..., Any], *args: Any, repeats: int) -> tuple[float, float]:
  start = time.perf_counter()
  jax.block_until_ready(fn(*args))  # Compile + first run.
  first = time.perf_counter() - start
  times = []
  for _ in range(repeats):
    start = time.perf_counter()
    jax.block_until_ready(fn(*args))
    times.append(time.perf_counter() - start)
  return first, float(np.median(times))


def main(argv: Sequence[str]) -> None:
  del argv
  rng = np.random.default_rng(_SEED.value)
  n = _N.value
  header = (
    f"{'function':<16}{'L':>10}{'first call (s)':>16}{'ms / call':>12}{'ns / (L log2 L)':>17}"
  )
  print(
    f"jax {jax.__version__} on {jax.devices()[0].platform}; n = {n}; "
    f"median of {_REPEATS.value} calls after warm-up"
  )
  print(header)
  print("-" * len(header))
  for name in _FUNCTIONS.value:
    fn = jax.jit(getattr(maxk, name), static_argnums=2)
    for size in (int(s) for s in _SIZES.value):
      probs = rng.dirichlet(np.ones(size)).astype(np.float32)
      rewards = rng.standard_normal(size).astype(np.float32)
      first, per_call = _time_call(fn, probs, rewards, n, repeats=_REPEATS.value)
      scaled = per_call * 1e9 / (size * math.log2(size))
      print(f"{name:<16}{size:>10}{first:>16.3f}{per_call * 1e3:>12.2f}{scaled:>17.2f}")


if __name__ == "__main__":
  command_line.run(main)
