"""First-call cost (trace + compile + run) of every public estimator, in units of argsort's.

Run as ``python -m benchmarks.compile_time`` (``--shapes=256x64,64x1024`` by default).

A user who calls an estimator at a new (shape, k, baseline) pays for tracing, XLA
compilation and the host tables before the first result.  Each row measures that
first call in a fresh Python process (so no cache of JAX or of maxk's tables
helps), beside the first call of ``jnp.argsort`` on the same [B, n] float32 batch
in the same process, and reports both and their ratio (the target is <= 2x).  A
trivial jitted computation runs first, so that neither pays the process's one-time
compiler start-up.  ``next k`` is the first call at k + 1 right after (a user
sweeping k): the estimators whose coefficient tables are arguments of their
compiled kernel reuse it.  The compiled call's time is shown too, so that a
cheaper compile is not bought with a slower program.  ``naive first`` is the
first call, in the same process right after the estimator's, of the same objective
written plainly in jnp (:mod:`benchmarks.naive`: gammaln coefficients, a sort, a dot
or cumulative sums, jitted), and ``first/naive`` the estimator's first call in units
of it (the target is <= 2x): what the estimator's exactness and robustness cost over
the formula a user would write.  Rows are medians over ``--processes`` fresh
processes.
"""

from __future__ import annotations

from collections.abc import Sequence
import json
import os
import statistics
import subprocess
import sys

from absl import app
from absl import flags

from experiments import command_line

_SHAPES = flags.DEFINE_list("shapes", ["256x64", "64x1024"], "Batch shapes BxN.")
_NAMES = flags.DEFINE_list("estimators", [], "Estimators to time (default: all).")
_K = flags.DEFINE_integer("k", 4, "k (and the rank objectives' length).")
_REPEATS = flags.DEFINE_integer("processes", 3, "Fresh processes per row (median reported).")

# name -> the call, as Python source over r (rewards [B, n]), c (bool), lr (log-ratios),
# a (answer ids, 8 distinct values) with ca (their correct flags: answer 0 is right)
# and k; each is evaluated in a fresh process.
CALLS = {
  "max_at_k": "maxk.max_at_k(r, k)",
  "pass_at_k": "maxk.pass_at_k(c, k)",
  "max_at_k_variance": "maxk.max_at_k_variance(r, k)",
  "pass_at_k_variance": "maxk.pass_at_k_variance(c, k)",
  **{
    f"max_at_k_advantages[{b}]": f"maxk.max_at_k_advantages(r, k, baseline={b!r})"
    for b in ("none", "loo", "loo_centered", "loo_minus_one", "mean_std")
  },
  "max_at_k_advantages_off_policy[exact]": "maxk.max_at_k_advantages_off_policy(r, lr, k)",
  "max_at_k_advantages_off_policy[first_order]": (
    "maxk.max_at_k_advantages_off_policy(r, lr, k, method='first_order')"
  ),
  "max_at_k_surrogate": "maxk.max_at_k_surrogate(lr, 0 * lr, r, k)",
  "grpo_advantages": "maxk.grpo_advantages(r)",
  "rloo_advantages": "maxk.rloo_advantages(r)",
  "max_minus_second_advantages": "maxk.max_minus_second_advantages(r)",
  "pass_at_k_training_advantages": "maxk.pass_at_k_training_advantages(c, k)",
  "maxrl_advantages": "maxk.maxrl_advantages(c)",
  "order_stat_at_k": "maxk.order_stat_at_k(r, maxk.rank_weights('top_m', k, m=2))",
  "order_stat_advantages": "maxk.order_stat_advantages(r, maxk.rank_weights('top_m', k, m=2))",
  "pass_at_k_posterior": "maxk.pass_at_k_posterior(c, k).mean",
  "maj_at_k": "maxk.maj_at_k(a, ca, k)",
  "maj_at_k_advantages": "maxk.maj_at_k_advantages(a, ca, k)",
}

# name -> the naive jnp formula of the same objective (benchmarks.naive, as ``naive``),
# over the same names.  maj@k has none: its plain formula enumerates the C(n, k) subsets
# (what it is measured against is the absolute first-call target in README).
NAIVE = {
  "max_at_k": "naive.max_at_k(r, k)",
  "pass_at_k": "naive.pass_at_k(c, k)",
  "max_at_k_variance": "naive.max_at_k_variance(r, k)",
  "pass_at_k_variance": "naive.pass_at_k_variance(c, k)",
  **{
    f"max_at_k_advantages[{b}]": f"naive.max_at_k_advantages(r, k, {b!r})"
    for b in ("none", "loo", "loo_centered", "loo_minus_one", "mean_std")
  },
  "max_at_k_advantages_off_policy[exact]": "naive.off_policy_exact(r, lr, k)",
  "max_at_k_advantages_off_policy[first_order]": "naive.off_policy_first_order(r, lr, k)",
  "max_at_k_surrogate": "naive.max_at_k_surrogate(lr, 0 * lr, r, k)",
  "grpo_advantages": "naive.grpo_advantages(r)",
  "rloo_advantages": "naive.rloo_advantages(r)",
  "max_minus_second_advantages": "naive.max_minus_second_advantages(r)",
  "pass_at_k_training_advantages": "naive.pass_at_k_training_advantages(c, k)",
  "maxrl_advantages": "naive.maxrl_advantages(c)",
  "order_stat_at_k": "naive.order_stat_at_k(r, maxk.rank_weights('top_m', k, m=2))",
  "order_stat_advantages": "naive.order_stat_advantages(r, maxk.rank_weights('top_m', k, m=2))",
  # The whole posterior (mean, std and interval), as maxk computes it.
  "pass_at_k_posterior": "naive.pass_at_k_posterior(c, k)",
}

_CHILD = """
import json, sys, time
import jax, jax.numpy as jnp, numpy as np
import maxk
from benchmarks import naive
b, n, k = {b}, {n}, {k}
rng = np.random.default_rng(0)
r = jnp.asarray(rng.random((b, n)), jnp.float32)
c = jnp.asarray(rng.random((b, n)) < 0.3)
lr = jnp.asarray(0.1 * rng.standard_normal((b, n)), jnp.float32)
a = jnp.asarray(rng.integers(0, 8, (b, n)), jnp.int32)
ca = a == 0
jax.block_until_ready((r, c, lr, a, ca))
jax.block_until_ready(jax.jit(lambda x: x + 1)(jnp.zeros(3)))  # compiler start-up

def first_and_next(fn):
  start = time.perf_counter()
  jax.block_until_ready(fn())
  first = time.perf_counter() - start
  start = time.perf_counter()
  jax.block_until_ready(fn())
  return first, time.perf_counter() - start

sort_first, sort_next = first_and_next(lambda: jnp.argsort(r, axis=-1))
est_first, est_next = first_and_next(lambda: {call})
k = k + 1
next_k, _ = first_and_next(lambda: {call})
k = k - 1
naive_first, _ = first_and_next(lambda: {naive})
print(json.dumps([sort_first, sort_next, est_first, est_next, next_k, naive_first]))
"""


def measure(call: str, naive: str, b: int, n: int, k: int) -> list[float]:
  """[argsort first, argsort next, estimator first, estimator next, first at k + 1,
  naive first] (s)."""
  env = {**os.environ, "JAX_PLATFORMS": os.environ.get("JAX_PLATFORMS", "cpu")}
  out = subprocess.run(
    [sys.executable, "-c", _CHILD.format(b=b, n=n, k=k, call=call, naive=naive)],
    capture_output=True,
    text=True,
    check=True,
    env=env,
  )
  return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: Sequence[str]) -> None:
  del argv
  names = _NAMES.value or list(CALLS)
  unknown = sorted(set(names) - set(CALLS))
  if unknown:
    raise app.UsageError(f"--estimators: unknown {unknown}; known: {sorted(CALLS)}")
  print(f"first call in a fresh process, median of {_REPEATS.value}; k = {_K.value}\n")
  print(
    "| estimator | B x n | argsort first (ms) | first (ms) | first/argsort first "
    "| naive first (ms) | first/naive | next k (ms) | argsort (us) | compiled call (us) |"
  )
  print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
  for shape in _SHAPES.value:
    b, n = (int(x) for x in shape.lower().split("x"))
    for name in names:
      naive_call = NAIVE.get(name, "0")  # no naive formula: its columns print "-"
      runs = [measure(CALLS[name], naive_call, b, n, _K.value) for _ in range(_REPEATS.value)]
      sort_first, sort_next, first, nxt, next_k, naive_first = (
        statistics.median(col) for col in zip(*runs)
      )
      naive_cells = (
        f"{naive_first * 1e3:.0f} | {first / naive_first:.1f}x" if name in NAIVE else "- | -"
      )
      print(
        f"| {name} | {b} x {n} | {sort_first * 1e3:.0f} | {first * 1e3:.0f} "
        f"| {first / sort_first:.1f}x | {naive_cells} "
        f"| {next_k * 1e3:.0f} | {sort_next * 1e6:.0f} | {nxt * 1e6:.0f} |",
        flush=True,
      )


if __name__ == "__main__":
  command_line.run(main)
