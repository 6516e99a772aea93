"""Time per call of every max@k transform, jitted JAX vs straightforward NumPy.

Run as ``python -m benchmarks.estimators`` (``--quick`` for a smaller grid).

For each transform and batch B x group size n x k, the JAX function is jitted,
run once (compile + warm-up) and then timed with ``block_until_ready``; the
table reports the median.  Two NumPy implementations of the same formulas are
timed beside it:

* ``np_matrix``: the max@k paper's Listing 2 style, an n x n weight matrix W in
  sorted order (W_jj = C(j-1,k-1)/C(n,k), W_jm = C(m-2,k-2)/C(n,k) for m > j, and
  the baseline's terms), applied to every sorted group with one matmul;
* ``np_loop``: PKPO's Listing 1 style, a Python loop over groups that sorts each
  group and evaluates the rank weights for it: the float64 reference the library's
  tests use (``tests.maxk.enumeration.advantages_float64``; the benchmark is run
  from the repository root, where ``tests`` is a package).

``masked`` is the same JAX transform with ``where=`` (ragged groups, about 3 in 4
samples valid, every group at least k), and ``masked/jax`` its time over the dense
call's (the target is <= 1.5x).
``argsort`` is NumPy's stable argsort of the same [B, n] batch (float32), the
cheapest thing any implementation must do; ``jax/argsort`` is the JAX transform's
time in units of it (the CPU target for the on-policy transforms is <= 3x).
``ns/unit`` is JAX time / (B (n log2 n + n k)) in nanoseconds: it should stay
flat or fall as n grows if the per-group cost grows no faster than n log n + n k.
Cells whose NumPy (or off-policy exact) cost would be excessive are skipped.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
import math
import time
from typing import Any

from absl import flags
import jax
import jax.numpy as jnp
import numpy as np

from experiments import command_line
import maxk
from tests.maxk import enumeration

_QUICK = flags.DEFINE_bool("quick", False, "Small grid (B <= 256, n <= 512).")
_BATCHES = flags.DEFINE_list("batches", [], "Batch sizes B (overrides the grid's).")
_SIZES = flags.DEFINE_list("sizes", [], "Group sizes n (overrides the grid's).")
_KS = flags.DEFINE_list("ks", [], "Values of k (default: 1, 4, 8, n/2; k > n skipped).")
_REPEATS = flags.DEFINE_integer("repeats", 5, "Timed calls per cell (median reported).")
_SEED = flags.DEFINE_integer("seed", 0, "Seed for the random rewards.")
_TRANSFORMS = flags.DEFINE_list(
  "transforms",
  [
    "none",
    "loo",
    "loo_centered",
    "loo_minus_one",
    "leave_two_out",
    "mean_std",
    "off_policy_exact",
    "off_policy_first_order",
  ],
  "Transforms to time.",
)

_ON_POLICY = ("none", "loo", "loo_centered", "loo_minus_one", "leave_two_out", "mean_std")
_MAX_NP_MATRIX = 2e9  # B * n^2 multiply-adds
_MAX_NP_LOOP = 2**21  # B * n elements through the Python loop
_MAX_OFF_POLICY = 2**31  # B * n * k scan work


def _np_matrix_weights(n: int, k: int, name: str) -> np.ndarray:
  """n x n matrix W (sorted order) with a_sorted = W @ r_sorted, from the formulas."""
  j = np.arange(1, n + 1)[:, None]  # row: the sample
  m = np.arange(1, n + 1)[None, :]  # column: the reward
  w = np.where(j == m, enumeration.binom_ratio(j - 1, k - 1, n, k), 0.0)
  w += np.where(m > j, enumeration.binom_ratio(m - 2, k - 2, n, k), 0.0)  # S(i), max@k Eq. 9
  if name == "leave_two_out":  # Identically loo_centered (maxk.max_at_k_advantages).
    name = "loo_centered"
  if name in ("loo", "loo_centered") and n > k:
    scale = k / (n - 1) if name == "loo" else k / n
    # b_j = scale * [Σ_{m<j} C(m-1,k-1) r_m + Σ_{m>j} C(m-2,k-1) r_m] / C(n-1,k)
    w -= scale * np.where(m < j, enumeration.binom_ratio(m - 1, k - 1, n - 1, k), 0.0)
    w -= scale * np.where(m > j, enumeration.binom_ratio(m - 2, k - 1, n - 1, k), 0.0)
  elif name == "loo_minus_one" and k >= 2:
    w -= np.where(m > j, enumeration.binom_ratio(m - 2, k - 2, n, k), 0.0)
    w -= np.where(m < j, enumeration.binom_ratio(m - 1, k - 2, n, k), 0.0)
  elif name == "loo_minus_one":  # k == 1: loo_centered
    w -= (1 / n) * np.where(m != j, 1 / (n - 1), 0.0) if n > 1 else 0.0
  return w


def _np_first_order_matrix(
  r_sorted: np.ndarray, delta_sorted: np.ndarray, n: int, k: int
) -> np.ndarray:
  """max@k paper App. E: w'_jj, w'_jm (m > j) with δ-dependent entries; per group."""
  out = np.empty_like(r_sorted)
  j = np.arange(1, n + 1)
  diag_c = enumeration.binom_ratio(j - 1, k - 1, n, k)
  c2 = enumeration.binom_ratio(j - 2, k - 2, n, k)
  c3 = enumeration.binom_ratio(j - 3, k - 3, n, k)
  for b in range(r_sorted.shape[0]):
    d = delta_sorted[b]
    below = np.cumsum(d) - d  # Σ_{l<m} δ_l
    w = np.diag(diag_c * (1 + d) + c2 * below)
    upper = np.triu(np.ones((n, n)), 1)
    # m > j: C(m-2,k-2)(1+δ_j+δ_m) + C(m-3,k-3) Σ_{l<m, l≠j} δ_l
    w += upper * (
      c2[None, :] * (1 + d[:, None] + d[None, :]) + c3[None, :] * (below[None, :] - d[:, None])
    )
    out[b] = w @ r_sorted[b]
  return out


def _numpy_matrix(r: np.ndarray, lr: np.ndarray, k: int, name: str) -> np.ndarray:
  n = r.shape[-1]
  order = np.argsort(r, axis=-1, kind="stable")
  r_sorted = np.take_along_axis(r, order, -1)
  if name == "off_policy_first_order":
    a_sorted = _np_first_order_matrix(r_sorted, np.expm1(np.take_along_axis(lr, order, -1)), n, k)
  else:
    a_sorted = r_sorted @ _np_matrix_weights(n, k, "none" if name == "mean_std" else name).T
    if name == "mean_std":
      a_sorted = (a_sorted - a_sorted.mean(-1, keepdims=True)) / (
        a_sorted.std(-1, keepdims=True) + 1e-6
      )
  out = np.empty_like(a_sorted)
  np.put_along_axis(out, order, a_sorted, -1)
  return out


def _jax_fn(name: str, k: int) -> Callable[..., jax.Array]:
  if name in _ON_POLICY:
    return jax.jit(lambda r, lr: maxk.max_at_k_advantages(r, k, baseline=name))
  method = name.removeprefix("off_policy_")
  return jax.jit(lambda r, lr: maxk.max_at_k_advantages_off_policy(r, lr, k, method=method))


def _jax_masked_fn(name: str, k: int) -> Callable[..., jax.Array]:
  if name in _ON_POLICY:
    return jax.jit(lambda r, lr, w: maxk.max_at_k_advantages(r, k, baseline=name, where=w))
  method = name.removeprefix("off_policy_")
  return jax.jit(
    lambda r, lr, w: maxk.max_at_k_advantages_off_policy(r, lr, k, method=method, where=w)
  )


def _time(fn: Callable[..., Any], *args: Any, repeats: int) -> float:
  jax.block_until_ready(fn(*args))
  times = []
  for _ in range(repeats):
    start = time.perf_counter()
    jax.block_until_ready(fn(*args))
    times.append(time.perf_counter() - start)
  return float(np.median(times))


def _fmt_us(seconds: float | None) -> str:
  return "-" if seconds is None else f"{seconds * 1e6:,.0f}"


def _fmt_ratio(numer: float | None, denom: float | None) -> str:
  return "-" if numer is None or denom is None else f"{numer / denom:,.1f}x"


def main(argv: Sequence[str]) -> None:
  del argv
  rng = np.random.default_rng(_SEED.value)
  batches = [int(b) for b in _BATCHES.value] or ([1, 256] if _QUICK.value else [1, 256, 4096])
  sizes = [int(n) for n in _SIZES.value] or ([8, 64, 512] if _QUICK.value else [8, 64, 512, 4096])
  print(
    f"jax {jax.__version__} on {jax.devices()[0].platform} "
    f"({jax.devices()[0].device_kind}); times in microseconds, median of "
    f"{_REPEATS.value}\n"
  )
  print(
    "| transform | B | n | k | jax (us) | masked (us) | masked/jax | argsort (us) "
    "| jax/argsort | np_matrix (us) | np_loop (us) | matrix/jax | loop/jax | ns/unit |"
  )
  print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
  for name in _TRANSFORMS.value:
    for batch in batches:
      for n in sizes:
        ks = {int(k) for k in _KS.value} or {1, 4, 8, n // 2}
        for k in sorted(ks & set(range(1, n + 1))):
          r = rng.random((batch, n)).astype(np.float32)
          lr = (0.1 * rng.standard_normal((batch, n))).astype(np.float32)
          valid = rng.random((batch, n)) < 0.75
          valid[:, :k] = True
          t_jax = t_masked = None
          if name != "off_policy_exact" or batch * n * k <= _MAX_OFF_POLICY:
            # Fewer repeats for the cells that take seconds per call.
            repeats = _REPEATS.value if batch * n <= 2**20 else 1
            args = (jnp.asarray(r), jnp.asarray(lr))
            t_jax = _time(_jax_fn(name, k), *args, repeats=repeats)
            t_masked = _time(_jax_masked_fn(name, k), *args, jnp.asarray(valid), repeats=repeats)
          t_sort = _time(lambda: np.argsort(r, axis=-1, kind="stable"), repeats=_REPEATS.value)
          r64, lr64 = r.astype(np.float64), lr.astype(np.float64)
          t_mat = t_loop = None
          if (
            name != "off_policy_exact"
            and batch * n * n <= _MAX_NP_MATRIX
            and (name != "off_policy_first_order" or batch * n * n <= 2**24)
          ):
            t_mat = _time(lambda: _numpy_matrix(r64, lr64, k, name), repeats=3)
          if name in _ON_POLICY and batch * n <= _MAX_NP_LOOP:
            t_loop = _time(lambda: enumeration.advantages_float64(r64, k, name), repeats=3)
          unit = batch * (n * math.log2(n) + n * k)
          per_unit = "-" if t_jax is None else f"{t_jax / unit * 1e9:.2f}"
          print(
            f"| {name} | {batch} | {n} | {k} | {_fmt_us(t_jax)} | {_fmt_us(t_masked)} "
            f"| {_fmt_ratio(t_masked, t_jax)} | {_fmt_us(t_sort)} "
            f"| {_fmt_ratio(t_jax, t_sort)} | {_fmt_us(t_mat)} "
            f"| {_fmt_us(t_loop)} | {_fmt_ratio(t_mat, t_jax)} "
            f"| {_fmt_ratio(t_loop, t_jax)} | {per_unit} |",
            flush=True,
          )


if __name__ == "__main__":
  command_line.run(main)
