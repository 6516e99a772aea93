r"""The best-of-n study: result rows over references and n, and their summary.

Rows are dicts with the columns of ``results.csv`` (:data:`COLUMNS`): one row per
(reference, n) for best-of-n and one per (reference, threshold, try limit) for
rewind-and-repeat; columns that do not apply to a method are ``""``.

Best-of-n rows hold, for n on a log grid: the exact KL(pi_n || pi), the analytical
formula log(n) - (n-1)/n (an upper bound), the gap between them with its upper bound
2n(n-1) exp(-H_2) (:func:`maxk.bon_kl_gap_bound`, Sec. 3 of the paper) and its lower bound
log(n eps_inf) - (n-1)/n (:func:`maxk.bon_kl_gap_lower_bound`), the exact expectation
of the estimator d_n under pi_n and its Monte Carlo mean over draws from pi_n with
a standard error, and the win rate with the bound n/(n+1) and the gap bound
(n-1)/2 exp(-H_2). Here exp(-H_2) is :func:`maxk.reward_collision_probability`.

References:
  Beirami et al., "Theoretical guarantees on the best-of-n alignment policy",
  arXiv 2401.01879 (Secs. 2-6).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
import math
from typing import Any

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike
import numpy as np
import tqdm

from experiments.best_of_n.references import Reference
import maxk

COLUMNS = (
  "method",
  "reference",
  "family",
  "num_outcomes",
  "n",
  "threshold",
  "max_tries",
  "accept_prob",
  "kl",
  "kl_bound",
  "kl_gap",
  "kl_gap_upper_bound",
  "kl_gap_lower_bound",
  "d_n_expected",
  "d_n_mc_mean",
  "d_n_mc_stderr",
  "num_mc_draws",
  "win_rate",
  "win_rate_bound",
  "win_rate_gap_upper_bound",
)

Row = dict[str, Any]


def n_grid(n_max: int, num_n: int) -> list[int]:
  """``num_n`` log-spaced points from 1 to ``n_max``, rounded, duplicates dropped.

  Raises:
    ValueError: if ``n_max`` or ``num_n`` is not an int >= 1.
  """
  for name, value in (("n_max", n_max), ("num_n", num_n)):
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
      raise ValueError(f"{name}={value!r} must be an int >= 1.")
  grid = np.unique(np.round(np.logspace(0, math.log10(n_max), num_n)))
  return [int(n) for n in grid]


def _empty_row(ref: Reference, method: str) -> Row:
  row: Row = dict.fromkeys(COLUMNS, "")
  row.update(method=method, reference=ref.name, family=ref.family, num_outcomes=len(ref.probs))
  return row


def best_of_n_rows(
  refs: Sequence[Reference],
  probs: ArrayLike,
  rewards: ArrayLike,
  *,
  ns: Iterable[int],
  num_mc_draws: int,
  key: jax.Array,
  progress: bool = True,
) -> list[Row]:
  """Best-of-n rows for every n in ``ns`` and reference (n-major order).

  Args:
    refs: the R references (names and sizes of the rows).
    probs: ``[R, L]`` padded probabilities (:func:`references.pad`).
    rewards: ``[R, L]`` padded rewards.
    ns: best-of-n sizes, each >= 1.
    num_mc_draws: M >= 1 draws Y ~ pi_n per (reference, n) for the Monte Carlo mean
      of d_n(pi(Y)); its standard error is ``""`` when M = 1.
    key: PRNG key; the draws for n use ``fold_in(key, n)``.
    progress: show a progress bar over n.

  Returns:
    One row per (n, reference) with the columns :data:`COLUMNS`.
  """
  if isinstance(num_mc_draws, bool) or not isinstance(num_mc_draws, int) or num_mc_draws < 1:
    raise ValueError(f"num_mc_draws={num_mc_draws!r} must be an int >= 1.")
  probs, rewards = jnp.asarray(probs), jnp.asarray(rewards)
  collision = np.asarray(maxk.reward_collision_probability(probs, rewards))
  rows = []
  for n in tqdm.tqdm(list(ns), desc="best-of-n over n", disable=not progress):
    rows += _best_of_n_rows_at(
      refs, probs, rewards, collision, n=n, num_mc_draws=num_mc_draws, key=key
    )
  return rows


def _best_of_n_rows_at(
  refs: Sequence[Reference],
  probs: jax.Array,
  rewards: jax.Array,
  collision: np.ndarray,
  *,
  n: int,
  num_mc_draws: int,
  key: jax.Array,
) -> list[Row]:
  """The rows of :func:`best_of_n_rows` at one n (``collision``: ``[R]`` exp(-H_2))."""
  pmf = maxk.bon_pmf(probs, rewards, n)
  kl = np.asarray(maxk.bon_kl(probs, rewards, n), np.float64)
  wr = np.asarray(maxk.bon_win_rate(probs, rewards, n), np.float64)
  d_exact = np.asarray(maxk.bon_kl_estimate_expectation(probs, rewards, n), np.float64)
  gap_lower = np.asarray(maxk.bon_kl_gap_lower_bound(probs, rewards, n), np.float64)
  # Sampling the exact PMF has the law of drawing n outcomes and keeping the best.
  draws = jax.random.categorical(
    jax.random.fold_in(key, n), jnp.log(pmf), shape=(num_mc_draws, len(refs))
  )
  eps = jnp.take_along_axis(probs, draws.T, axis=-1)
  d_mc = np.asarray(maxk.bon_kl_estimate(eps, n), np.float64)
  bound = float(maxk.bon_kl_bound(n))
  wr_bound = float(maxk.bon_win_rate_bound(n))
  rows = []
  for i, ref in enumerate(refs):
    row = _empty_row(ref, "best_of_n")
    row.update(
      n=n,
      kl=kl[i],
      kl_bound=bound,
      kl_gap=bound - kl[i],
      kl_gap_upper_bound=2.0 * n * (n - 1) * collision[i],
      kl_gap_lower_bound=gap_lower[i],
      d_n_expected=d_exact[i],
      d_n_mc_mean=d_mc[i].mean(),
      d_n_mc_stderr=(d_mc[i].std(ddof=1) / math.sqrt(num_mc_draws) if num_mc_draws > 1 else ""),
      num_mc_draws=num_mc_draws,
      win_rate=wr[i],
      win_rate_bound=wr_bound,
      win_rate_gap_upper_bound=0.5 * (n - 1) * collision[i],
    )
    rows.append(row)
  return rows


def thresholds(refs: Sequence[Reference], num: int) -> np.ndarray:
  """``[num, R]`` reward thresholds whose acceptance probabilities P(r >= t) are
  log-spaced from 1 down to the probability of each reference's best outcome.

  Raises:
    ValueError: if ``num`` is not an int >= 1.
  """
  if isinstance(num, bool) or not isinstance(num, int) or num < 1:
    raise ValueError(f"num={num!r} must be an int >= 1.")
  out = np.zeros((num, len(refs)))
  for i, ref in enumerate(refs):
    order = np.argsort(-ref.rewards, kind="stable")
    tail = np.cumsum(ref.probs[order])  # P(r >= r_(j)), descending r.
    targets = np.logspace(0, math.log10(tail[0]), num)
    idx = np.searchsorted(tail, targets * (1 + 1e-9), side="right") - 1
    out[:, i] = ref.rewards[order][np.clip(idx, 0, len(tail) - 1)]
  return out


def rewind_repeat_rows(
  refs: Sequence[Reference],
  probs: ArrayLike,
  rewards: ArrayLike,
  *,
  thresholds: np.ndarray,
  max_tries: Sequence[int | None],
  progress: bool = True,
) -> list[Row]:
  """Rewind-and-repeat rows (Beirami et al. Sec. 6) for every try limit and threshold.

  Args:
    refs: the R references.
    probs: ``[R, L]`` padded probabilities.
    rewards: ``[R, L]`` padded rewards.
    thresholds: ``[T, R]`` reward thresholds (:func:`thresholds`).
    max_tries: try limits; ``None`` draws until acceptance (``max_tries="none"`` in
      the rows).
    progress: show a progress bar over thresholds.

  Returns:
    One row per (try limit, threshold, reference) with KL, win rate and the
    acceptance probability P(r >= threshold) under pi.
  """
  probs, rewards = jnp.asarray(probs), jnp.asarray(rewards)
  rows = []
  for limit in max_tries:
    desc = f"rewind-and-repeat (max_tries={limit})"
    for t in tqdm.tqdm(range(thresholds.shape[0]), desc=desc, disable=not progress):
      th = jnp.asarray(thresholds[t], probs.dtype)
      q = maxk.rewind_repeat_pmf(probs, rewards, th, max_tries=limit)
      kl = np.asarray(maxk.kl_divergence(q, probs), np.float64)
      wr = np.asarray(maxk.win_rate(q, probs, rewards), np.float64)
      accept = np.asarray(jnp.sum(jnp.where(rewards >= th[:, None], probs, 0.0), -1))
      for i, ref in enumerate(refs):
        row = _empty_row(ref, "rewind_repeat")
        row.update(
          threshold=thresholds[t, i],
          max_tries="none" if limit is None else limit,
          accept_prob=accept[i],
          kl=kl[i],
          win_rate=wr[i],
        )
        rows.append(row)
  return rows


def select(rows: Iterable[Row], **where: Any) -> list[Row]:
  """The rows whose columns equal every ``column=value`` in ``where``."""
  return [r for r in rows if all(r[k] == v for k, v in where.items())]


def column(rows: Iterable[Row], name: str) -> np.ndarray:
  """Column ``name`` as a float64 array (``""`` becomes NaN)."""
  return np.array([math.nan if r[name] == "" else float(r[name]) for r in rows])


def analytic_curve(kl: ArrayLike) -> np.ndarray:
  """n/(n+1) at the real n >= 1 where log(n) - (n-1)/n = kl (bisection on log n).

  The win rate best-of-n would have at KL ``kl`` if the analytical formula were
  exact. ``kl`` is clipped at 0; any shape.
  """
  kl = np.maximum(np.asarray(kl, np.float64), 0.0)
  lo, hi = np.zeros_like(kl), np.full_like(kl, 40.0)
  for _ in range(100):
    mid = 0.5 * (lo + hi)
    above = mid - (1 - np.exp(-mid)) > kl
    hi, lo = np.where(above, mid, hi), np.where(above, lo, mid)
  n = np.exp(0.5 * (lo + hi))
  return n / (n + 1)


def summarize(rows: Sequence[Row], refs: Sequence[Reference]) -> dict[str, dict[str, Any]]:
  """Key numbers per reference (``summary.json``).

  Where the formula log(n) - (n-1)/n is loose, how far E[d_n] is from the KL, how
  often the Monte Carlo d_n lies within 2 standard errors of E[d_n], the win-rate
  gaps, and per try limit the win rate rewind-and-repeat loses to best-of-n at equal
  KL (interpolating best-of-n's curve; ``None`` when no threshold falls in range).
  """
  out = {}
  for ref in refs:
    sel = select(rows, method="best_of_n", reference=ref.name)
    n = column(sel, "n")
    kl = column(sel, "kl")
    bound = column(sel, "kl_bound")
    d_exact = column(sel, "d_n_expected")
    d_mc = column(sel, "d_n_mc_mean")
    se = np.array([float(r["d_n_mc_stderr"] or 0.0) for r in sel])
    rel_gap = (bound - kl) / np.maximum(bound, 1e-12)
    loose = n[(rel_gap > 0.1) & (n > 1)]
    wr_gap = column(sel, "win_rate_bound") - column(sel, "win_rate")
    d_err = d_exact - kl
    worst = int(np.argmax(np.abs(d_err)))
    big = n > 1
    out[ref.name] = dict(
      num_outcomes=len(ref.probs),
      kl_at_n_max=kl[-1],
      formula_at_n_max=bound[-1],
      formula_max_overshoot=float(np.max(bound - kl)),
      first_n_with_formula_10pct_above_kl=float(loose[0]) if loose.size else None,
      d_n_expected_max_abs_error=float(np.abs(d_err[worst])),
      d_n_expected_max_abs_error_at_n=float(n[worst]),
      d_n_expected_max_rel_error=float(np.max(np.abs(d_err[big]) / np.maximum(kl[big], 1e-300))),
      d_n_expected_min_minus_kl=float(np.min(d_err)),
      d_n_mc_within_2se_fraction=float(
        np.mean(np.abs(d_mc - d_exact) <= 2 * se + 1e-6 * np.abs(d_exact) + 1e-9)
      ),
      win_rate_max_gap_to_n_over_n_plus_1=float(np.max(wr_gap)),
      win_rate_max_above_analytic_curve=float(np.max(column(sel, "win_rate") - analytic_curve(kl))),
    )
    for m in sorted({r["max_tries"] for r in rows if r["method"] == "rewind_repeat"}, key=str):
      rr = select(rows, method="rewind_repeat", reference=ref.name, max_tries=m)
      rr_kl = column(rr, "kl")
      order = np.argsort(kl)
      bon_at = np.interp(rr_kl, kl[order], column(sel, "win_rate")[order])
      inside = rr_kl <= kl.max()
      diff = (column(rr, "win_rate") - bon_at)[inside]
      prefix = f"rr_max_tries_{m}_win_rate_minus_bon_at_equal_kl"
      out[ref.name][prefix + "_max"] = float(np.max(diff)) if diff.size else None
      out[ref.name][prefix + "_mean"] = float(np.mean(diff)) if diff.size else None
  return out
