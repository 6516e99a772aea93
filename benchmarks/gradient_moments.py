"""Seconds per exact ``maxk.testing.gradient_moments`` call vs arms A and group size n.

Run as ``python -m benchmarks.gradient_moments`` (``--sizes=4x16,4x32,4x64,8x8,8x16`` by
default, A x n).  Each row is one estimator at one size on a uniform policy over A arms
with rewards 0, 1, ..., A − 1 (exact enumeration of the C(n + A − 1, A − 1) count
vectors, the equivariance check included); the table reports the median wall time over
``--repeats`` calls, after one untimed call that compiles a JAX estimator.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
import math
import statistics
import time
from typing import Any

from absl import app
from absl import flags
import numpy as np

from experiments import command_line
import maxk


def _define_flags() -> dict[str, flags.FlagHolder[Any]]:
  """The binary's flags, defined only when it runs (a test process imports this module
  beside other benchmarks that define ``sizes`` and ``repeats``)."""
  return {
    "sizes": flags.DEFINE_list(
      "sizes", ["4x16", "4x32", "4x64", "8x8", "8x16"], "Arms x group size, AxN."
    ),
    "estimators": flags.DEFINE_list("estimators", [], "Estimators to time (default: all)."),
    "repeats": flags.DEFINE_integer("repeats", 3, "Timed calls per row (median)."),
  }


def _rloo(r: np.ndarray) -> np.ndarray:
  n = r.shape[-1]
  return r - (r.sum(axis=-1, keepdims=True) - r) / (n - 1)


# name -> advantage function (rewards [T, n] -> advantages [T, n]).
ESTIMATORS: dict[str, Callable[[np.ndarray], Any]] = {
  "rloo (numpy)": _rloo,
  "max@4 loo (jax)": lambda r: maxk.max_at_k_advantages(r, 4, baseline="loo"),
  "grpo (jax)": maxk.grpo_advantages,
}


def time_moments(fn: Callable[[np.ndarray], Any], num_arms: int, n: int, repeats: int) -> float:
  """Median seconds of an exact gradient_moments call on a uniform policy over num_arms."""
  probs, rewards = np.full(num_arms, 1.0 / num_arms), np.arange(num_arms, dtype=np.float64)
  maxk.testing.gradient_moments(fn, probs, rewards, n)  # Compiles a JAX estimator.
  times = []
  for _ in range(repeats):
    start = time.perf_counter()
    moments = maxk.testing.gradient_moments(fn, probs, rewards, n)
    times.append(time.perf_counter() - start)
  if moments.method != "exact":
    raise app.UsageError(f"--sizes: {num_arms}x{n} is beyond MAX_COUNT_VECTORS")
  return statistics.median(times)


def main(argv: Sequence[str], flag_values: dict[str, flags.FlagHolder[Any]]) -> None:
  """Prints the table: a row per estimator and size."""
  if len(argv) > 1:
    raise app.UsageError(f"unexpected arguments: {argv[1:]}")
  names = flag_values["estimators"].value or list(ESTIMATORS)
  unknown = sorted(set(names) - set(ESTIMATORS))
  if unknown:
    raise app.UsageError(f"--estimators: unknown {unknown}; choose from {sorted(ESTIMATORS)}")
  sizes = []
  for size in flag_values["sizes"].value:
    try:
      num_arms, n = (int(x) for x in size.lower().split("x"))
    except ValueError:
      raise app.UsageError(f"--sizes: {size!r} is not AxN") from None
    if num_arms < 1 or n < 2:
      raise app.UsageError(f"--sizes: {size!r} needs A >= 1 and n >= 2")
    sizes.append((num_arms, n))
  print(f"median of {flag_values['repeats'].value} calls after one untimed call")
  header = f"{'estimator':<18} {'A':>3} {'n':>4} {'count vectors':>14} {'seconds':>9}"
  print(header)
  print("-" * len(header))
  for name in names:
    for num_arms, n in sizes:
      seconds = time_moments(ESTIMATORS[name], num_arms, n, flag_values["repeats"].value)
      count = math.comb(n + num_arms - 1, num_arms - 1)
      print(f"{name:<18} {num_arms:>3} {n:>4} {count:>14} {seconds:>9.3f}")


if __name__ == "__main__":
  _FLAG_VALUES = _define_flags()
  command_line.run(lambda argv: main(argv, _FLAG_VALUES))
