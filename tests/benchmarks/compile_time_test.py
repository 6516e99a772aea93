"""benchmarks.compile_time: every timed call is valid, and the binary prints its table."""

import jax.numpy as jnp
import numpy as np
import pytest

from benchmarks import compile_time
import maxk
from tests import binaries


def test_every_call_evaluates_on_a_small_batch():
  rng = np.random.default_rng(0)
  names = {
    "maxk": maxk,
    "r": jnp.asarray(rng.random((2, 8)), jnp.float32),
    "c": jnp.asarray(rng.random((2, 8)) < 0.3),
    "lr": jnp.asarray(0.1 * rng.standard_normal((2, 8)), jnp.float32),
    "k": 3,
  }
  for name, call in compile_time.CALLS.items():
    out = np.asarray(eval(call, names))  # noqa: S307  (our own table of calls)
    assert out.shape[0] == 2 and np.all(np.isfinite(out)), name
  # Every public estimator of the package is timed.
  timed = {name.split("[")[0] for name in compile_time.CALLS}
  assert {"max_at_k_advantages", "order_stat_advantages", "grpo_advantages"} <= timed


@pytest.mark.slow  # Integration: a binary in a subprocess (README's second test step).
def test_binary_prints_a_row_with_both_first_calls():
  out = binaries.run(
    "benchmarks.compile_time", "--estimators=rloo_advantages", "--shapes=4x8", "--processes=1"
  ).stdout
  (row,) = [line for line in out.splitlines() if line.startswith("| rloo_advantages |")]
  cells = [cell.strip() for cell in row.split("|")[1:-1]]
  assert cells[1] == "4 x 8" and cells[4].endswith("x") and float(cells[2]) > 0
  assert float(cells[5]) >= 0  # the first call at k + 1
