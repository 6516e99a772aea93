"""Time per call of the objectives beyond the max, in units of one argsort.

Run as ``python -m benchmarks.objectives`` (``--shapes=1024x64`` by default).

For each function (a verifier-selected best-of-k, majority vote, the curves over
every k, G-Pass@k, the success-objective advantages) and batch shape B x n, the
call is jitted, run once (compile + warm-up) and then timed with
``block_until_ready``; the table reports the median over ``--repeats`` calls
beside two units measured in the same process on the same [B, n] float32 batch:
``jnp.argsort`` (jitted and timed the same way: XLA's sort on this backend) and
NumPy's stable argsort (the unit of ``benchmarks.estimators``: the least any
implementation must do), and the ratios to both.  ``max_at_k`` is timed as the
reference row.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
import statistics
import time
from typing import Any

from absl import app
from absl import flags
import jax
import jax.numpy as jnp
import numpy as np

from experiments import command_line
import maxk


def _define_flags() -> dict[str, flags.FlagHolder[Any]]:
  """The binary's flags, defined only when it runs: ``shapes``, ``k``, ``repeats`` and
  ``seed`` share their names with other benchmarks' flags (benchmarks.compile_time's,
  benchmarks.estimators'), which a test process imports beside this module. The
  ``objective_`` names are aliases kept for earlier commands."""
  holders: dict[str, flags.FlagHolder[Any]] = {
    "shapes": flags.DEFINE_list("shapes", ["1024x64"], "Batch shapes BxN."),
    "objectives": flags.DEFINE_list("objectives", [], "Functions to time (default: all)."),
    "k": flags.DEFINE_integer("k", 8, "k of the functions that take one."),
    "answers": flags.DEFINE_integer(
      "answers", 8, "Distinct answer ids per group drawn for the majority vote."
    ),
    "repeats": flags.DEFINE_integer("repeats", 20, "Timed calls per row (median)."),
    "seed": flags.DEFINE_integer("seed", 0, "Seed of the random inputs."),
  }
  for name in ("shapes", "k", "repeats", "seed"):
    flags.DEFINE_alias(f"objective_{name}", name)
  return holders


# name -> the call, as a function of (s: scores, r: rewards, c: correct, a: answer
# ids, k).
CALLS = {
  "argsort": lambda s, r, c, a, k: jnp.argsort(r, axis=-1),
  "max_at_k": lambda s, r, c, a, k: maxk.max_at_k(r, k),
  "selected_at_k": lambda s, r, c, a, k: maxk.selected_at_k(s, r, k),
  "selected_at_k_advantages": lambda s, r, c, a, k: maxk.selected_at_k_advantages(s, r, k),
  "maj_at_k": lambda s, r, c, a, k: maxk.maj_at_k(a, c, k),
  "maj_at_k_advantages": lambda s, r, c, a, k: maxk.maj_at_k_advantages(a, c, k),
  "pass_at_k_curve": lambda s, r, c, a, k: maxk.pass_at_k_curve(c),
  "max_at_k_curve": lambda s, r, c, a, k: maxk.max_at_k_curve(r),
  "pass_hat_k": lambda s, r, c, a, k: maxk.pass_hat_k(c, k),
  "g_pass_at_k": lambda s, r, c, a, k: maxk.g_pass_at_k(c, k, 0.5),
  "mg_pass_at_k": lambda s, r, c, a, k: maxk.mg_pass_at_k(c, k),
  "success_objective_advantages": lambda s, r, c, a, k: maxk.success_objective_advantages(
    c, np.full(k, 1.0 / k)
  ),
}


def inputs(batch: int, n: int, answers: int, seed: int) -> tuple[jax.Array, ...]:
  """Scores, rewards, correct flags and answer ids ([batch, n] each)."""
  rng = np.random.default_rng(seed)
  rewards = rng.random((batch, n)).astype(np.float32)
  scores = (rewards + 0.3 * rng.standard_normal((batch, n))).astype(np.float32)
  ids = rng.integers(0, answers, (batch, n)).astype(np.int32)
  # Answer 0 is the correct one, so `correct` is a function of the answer id.
  correct = ids == 0
  return tuple(jnp.asarray(x) for x in (scores, rewards, correct, ids))


def time_call(fn: Callable[..., Any], args: Sequence[jax.Array], repeats: int) -> float:
  """Median seconds per call of the jitted ``fn`` after a compiling call."""
  jitted = jax.jit(fn)
  jax.block_until_ready(jitted(*args))
  times = []
  for _ in range(repeats):
    start = time.perf_counter()
    jax.block_until_ready(jitted(*args))
    times.append(time.perf_counter() - start)
  return statistics.median(times)


def time_numpy_argsort(x: np.ndarray, repeats: int) -> float:
  """Median seconds of NumPy's stable argsort of ``x`` along the last axis."""
  times = []
  for _ in range(repeats):
    start = time.perf_counter()
    np.argsort(x, axis=-1, kind="stable")
    times.append(time.perf_counter() - start)
  return statistics.median(times)


def main(argv: Sequence[str], flag_values: dict[str, flags.FlagHolder[Any]]) -> None:
  """Prints the table: a row per function and shape."""
  if len(argv) > 1:
    raise app.UsageError(f"unexpected arguments: {argv[1:]}")
  names = flag_values["objectives"].value or [name for name in CALLS if name != "argsort"]
  unknown = sorted(set(names) - set(CALLS))
  if unknown:
    raise app.UsageError(f"--objectives: unknown {unknown}; choose from {sorted(CALLS)}")
  header = f"{'function':<30} {'B':>6} {'n':>6} {'k':>4} {'ms/call':>10}"
  print(header + f" {'jnp.argsort':>11} {'ratio':>7} {'np.argsort':>10} {'ratio':>7}")
  repeats = flag_values["repeats"].value
  for shape in flag_values["shapes"].value:
    try:
      batch, n = (int(x) for x in shape.lower().split("x"))
    except ValueError:
      raise app.UsageError(f"--shapes: {shape!r} is not BxN") from None
    k = min(flag_values["k"].value, n)
    s, r, c, a = inputs(batch, n, flag_values["answers"].value, flag_values["seed"].value)
    sort_time = time_call(lambda s, r, c, a: CALLS["argsort"](s, r, c, a, k), (s, r, c, a), repeats)
    np_sort_time = time_numpy_argsort(np.asarray(r), repeats)
    for name in names:
      call = CALLS[name]
      seconds = time_call(
        lambda s, r, c, a, call=call: call(s, r, c, a, k),
        (s, r, c, a),
        repeats,
      )
      print(
        f"{name:<30} {batch:>6} {n:>6} {k:>4} {1e3 * seconds:>10.3f} {1e3 * sort_time:>11.3f}"
        f" {seconds / sort_time:>7.2f} {1e3 * np_sort_time:>10.3f} {seconds / np_sort_time:>7.2f}"
      )


if __name__ == "__main__":
  _FLAG_VALUES = _define_flags()
  command_line.run(lambda argv: main(argv, _FLAG_VALUES))
