"""benchmarks.compile_time: every timed call is valid, its naive formula computes the
same quantity, and the binary prints its table."""

import jax.numpy as jnp
import numpy as np
import pytest

from benchmarks import compile_time
from benchmarks import naive
import maxk
from tests import binaries


def _names(b: int, n: int, k: int, seed: int = 0) -> dict[str, object]:
  rng = np.random.default_rng(seed)
  names = {
    "maxk": maxk,
    "naive": naive,
    "r": jnp.asarray(rng.random((b, n)), jnp.float32),
    "c": jnp.asarray(rng.random((b, n)) < 0.3),
    "lr": jnp.asarray(0.1 * rng.standard_normal((b, n)), jnp.float32),
    # answer ids from 8 values; answer 0 is the correct one
    "a": jnp.asarray(rng.integers(0, 8, (b, n)), jnp.int32),
    "k": k,
  }
  names["ca"] = names["a"] == 0
  return names


def test_every_call_evaluates_on_a_small_batch():
  names = _names(2, 8, 3)
  for name, call in compile_time.CALLS.items():
    out = np.asarray(eval(call, names))  # noqa: S307  (our own table of calls)
    assert out.shape[0] == 2 and np.all(np.isfinite(out)), name
  # Every public estimator of the package is timed.
  timed = {name.split("[")[0] for name in compile_time.CALLS}
  assert {"max_at_k_advantages", "order_stat_advantages", "grpo_advantages"} <= timed


def test_every_estimator_but_maj_at_k_has_a_naive_formula():
  # maj@k's plain formula enumerates the C(n, k) subsets; its target is absolute.
  missing = set(compile_time.CALLS) - set(compile_time.NAIVE)
  assert missing == {"maj_at_k", "maj_at_k_advantages"}
  assert set(compile_time.NAIVE) <= set(compile_time.CALLS)


@pytest.mark.parametrize("name", sorted(compile_time.NAIVE))
def test_the_naive_formula_computes_the_same_quantity(name):
  """Each ``first/naive`` ratio compares two programs for the same number: on a small
  batch (every group of c with both outcomes and without, k = 3 and 4) the naive jnp
  formula agrees with the estimator to float32 accuracy."""
  for n, k in ((8, 3), (12, 4)):
    names = _names(6, n, k, seed=n)
    c = np.array(names["c"])
    c[0], c[1] = False, True  # pass@k 0 and 1 (and their zero std)
    names["c"] = jnp.asarray(c)
    want = eval(compile_time.CALLS[name], names)  # noqa: S307  (our own table of calls)
    got = eval(compile_time.NAIVE[name], names)  # noqa: S307
    if name == "pass_at_k_posterior":  # the naive call returns every field
      want = maxk.pass_at_k_posterior(names["c"], k)
      np.testing.assert_allclose(np.stack(got), np.stack(want), rtol=2e-4, atol=2e-5)
      continue
    assert got.shape == want.shape, name
    # The naive variance is M̂² − T, which cancels in float32 to ~ε M̂² (M̂ <= 1 here).
    atol = 1e-5 if "variance" in name else 1e-5 * max(float(np.max(np.abs(want))), 1e-2)
    np.testing.assert_allclose(got, want, rtol=1e-3, atol=atol, err_msg=name)


@pytest.mark.slow  # Integration: a binary in a subprocess (README's second test step).
def test_binary_prints_a_row_with_both_first_calls():
  out = binaries.run(
    "benchmarks.compile_time", "--estimators=rloo_advantages", "--shapes=4x8", "--processes=1"
  ).stdout
  (row,) = [line for line in out.splitlines() if line.startswith("| rloo_advantages |")]
  cells = [cell.strip() for cell in row.split("|")[1:-1]]
  assert cells[1] == "4 x 8" and cells[4].endswith("x") and float(cells[2]) > 0
  assert float(cells[5]) > 0 and cells[6].endswith("x")  # the naive formula's first call
  assert float(cells[7]) >= 0  # the first call at k + 1
