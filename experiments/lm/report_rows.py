"""The rows of the report's CSV files, computed from the final evaluations.

Difficulty bins, from the base model's binning evaluation's pass@1 estimate c/n per
problem: ``unsolved`` (c = 0), ``hard`` (0 < c/n <= 1/5), ``medium``
(1/5 < c/n <= 3/5), ``easy`` (c/n > 3/5). Binning on samples apart from the
evaluation keeps the per-bin numbers of the base model unbiased: binned on its own
evaluation, the base model would score 0 on "unsolved" problems by construction.

Estimates are the per-prompt unbiased ``maxk.pass_at_k`` and ``maxk.max_at_k`` with
the intervals of ``intervals``; every row carries ``seed`` and names the RL run in
``rl_run`` (``base`` for the base model). ``run_outputs`` lists the files and writes them.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
import math
from typing import Any

import jax.numpy as jnp
import numpy as np

from experiments.lm import evaluation
from experiments.lm import intervals
from experiments.lm import prompt_records

BINS = ("unsolved", "hard", "medium", "easy")
HARD_MAX = Fraction(1, 5)  # Upper bound of c/n for "hard".
MEDIUM_MAX = Fraction(3, 5)  # Upper bound of c/n for "medium".
# Per run: its per-prompt pass@k and max@k, k = 1..n (float64 [n, P] each).
Estimates = dict[str, tuple[np.ndarray, np.ndarray]]


def difficulty_bins(correct_P: np.ndarray, n: int) -> np.ndarray:
  """The bin (one of ``BINS``) of each problem from its binning count c of n.

  Raises:
    ValueError: if ``n < 1`` or a count lies outside [0, n].
  """
  if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
    raise ValueError(f"n={n!r} must be an integer >= 1.")
  correct_P = np.asarray(correct_P)
  if np.any(correct_P < 0) or np.any(correct_P > n):
    raise ValueError(f"correct_P must lie in [0, n={n}]; got {correct_P.tolist()}.")
  out = []
  for c in correct_P.tolist():
    rate = Fraction(c, n)
    if c == 0:
      out.append("unsolved")
    elif rate <= HARD_MAX:
      out.append("hard")
    elif rate <= MEDIUM_MAX:
      out.append("medium")
    else:
      out.append("easy")
  return np.array(out, dtype=object)


def per_prompt_estimates(ev: prompt_records.Evaluation) -> tuple[np.ndarray, np.ndarray]:
  """Per-prompt pass@k and max@k, k = 1..n: float64 ``[n, P]`` each."""
  pass_kP, max_kP = evaluation.per_prompt_all_k(
    jnp.asarray(ev.binary_Pxn), jnp.asarray(ev.rewards_Pxn)
  )
  return np.asarray(pass_kP, np.float64), np.asarray(max_kP, np.float64)


def _identity(ev: prompt_records.Evaluation, seed: int) -> dict[str, Any]:
  return {"stage": ev.stage, "method": ev.method, "k_opt": ev.k_opt, "seed": seed}


def _float(x: Any) -> float:
  return float(x) if math.isfinite(float(x)) else float("nan")


def _estimate_fields(
  p_mean: Any, p_lo: Any, p_hi: Any, m_mean: Any, m_lo: Any, m_hi: Any
) -> dict[str, float]:
  """pass@k and max@k with their interval bounds, in the contract's column order."""
  return {
    "pass_at_k": _float(p_mean),
    "pass_at_k_lo": _float(p_lo),
    "pass_at_k_hi": _float(p_hi),
    "max_at_k": _float(m_mean),
    "max_at_k_lo": _float(m_lo),
    "max_at_k_hi": _float(m_hi),
  }


def result_rows(
  evals: Sequence[prompt_records.Evaluation], seed: int, estimates: Estimates | None = None
) -> list[dict[str, Any]]:
  """results.csv: one row per evaluation and k_eval = 1..n, with 95% intervals."""
  rows = []
  for ev in evals:
    pass_kP, max_kP = (estimates or {}).get(ev.run) or per_prompt_estimates(ev)
    p_mean, p_se, p_lo, p_hi = intervals.mean_interval(pass_kP)
    m_mean, m_se, m_lo, m_hi = intervals.mean_interval(max_kP)
    for k in range(1, ev.n + 1):
      i = k - 1
      rows.append(
        {
          "stage": ev.stage,
          "method": ev.method,
          "k_opt": ev.k_opt,
          "k_eval": k,
          "seed": seed,
          **_estimate_fields(p_mean[i], p_lo[i], p_hi[i], m_mean[i], m_lo[i], m_hi[i]),
          "pass_at_k_se": _float(p_se[i]),
          "max_at_k_se": _float(m_se[i]),
          "rl_run": ev.run,
          "num_prompts": len(ev.correct_P),
          "n": ev.n,
        }
      )
  return rows


def prompt_rows(
  evals: Sequence[prompt_records.Evaluation],
  seed: int,
  prompts: Sequence[str],
  keys: Sequence[str],
  bin_correct: np.ndarray,
  *,
  bin_n: int | None = None,
) -> list[dict[str, Any]]:
  """prompts.csv: one row per evaluation and problem (see the module docstring)."""
  bin_n = bin_n or evals[0].n
  bins = difficulty_bins(bin_correct, bin_n)
  rows = []
  for ev in evals:
    for p, (prompt, key) in enumerate(zip(prompts, keys)):
      rewards = ev.rewards_Pxn[p]
      rows.append(
        {
          **_identity(ev, seed),
          "rl_run": ev.run,
          "problem": p,
          "problem_key": key,
          "prompt": prompt,
          "n": ev.n,
          "correct": int(ev.correct_P[p]),
          "reward_mean": float(np.mean(rewards)),
          "reward_max": float(np.max(rewards)),
          "base_bin": bins[p],
          "bin_correct": int(bin_correct[p]),
          "bin_n": bin_n,
          "rewards": prompt_records.encode_rewards(rewards),
        }
      )
  return rows


def bin_rows(
  evals: Sequence[prompt_records.Evaluation],
  seed: int,
  bin_correct: np.ndarray,
  estimates: Estimates | None = None,
  *,
  bin_n: int | None = None,
) -> list[dict[str, Any]]:
  """bins.csv: pass@k and max@k with intervals per evaluation, base bin and k."""
  bins = difficulty_bins(bin_correct, bin_n or evals[0].n)
  rows = []
  for ev in evals:
    pass_kP, max_kP = (estimates or {}).get(ev.run) or per_prompt_estimates(ev)
    for name in BINS:
      members = bins == name
      if not members.any():
        continue
      p_mean, p_se, p_lo, p_hi = intervals.mean_interval(pass_kP[:, members])
      m_mean, m_se, m_lo, m_hi = intervals.mean_interval(max_kP[:, members])
      for k in range(1, ev.n + 1):
        i = k - 1
        rows.append(
          {
            **_identity(ev, seed),
            "bin": name,
            "num_problems": int(members.sum()),
            "k_eval": k,
            **_estimate_fields(p_mean[i], p_lo[i], p_hi[i], m_mean[i], m_lo[i], m_hi[i]),
            "rl_run": ev.run,
          }
        )
  return rows


def unsolved_rows(
  evals: Sequence[prompt_records.Evaluation],
  seed: int,
  bin_correct: np.ndarray,
  *,
  bin_n: int | None = None,
) -> list[dict[str, Any]]:
  """unsolved.csv: per evaluation, the fraction of base-unsolved problems it solves.

  ``evals[0]`` is the base model's final evaluation (fresh samples): its row is the
  reference, and the other rows give their paired difference to it (``diff_*``).
  """
  unsolved = difficulty_bins(bin_correct, bin_n or evals[0].n) == "unsolved"
  base_solved = (evals[0].correct_P[unsolved] > 0).astype(np.float64)
  rows = []
  for ev in evals:
    solved = (ev.correct_P[unsolved] > 0).astype(np.float64)
    solved_iv: tuple[Any, ...] = (np.nan,) * 4
    diff_iv: tuple[Any, ...] = (np.nan,) * 4
    if solved.size:
      solved_iv = intervals.wilson_interval(int(solved.sum()), solved.size)
      if ev.stage != "base":
        diff_iv = intervals.paired_interval(solved, base_solved)
    mean, se, lo, hi = solved_iv
    d_mean, d_se, d_lo, d_hi = diff_iv
    rows.append(
      {
        **_identity(ev, seed),
        "num_base_unsolved": int(unsolved.sum()),
        "solved": int(solved.sum()),
        "solved_fraction": _float(mean),
        "solved_fraction_lo": _float(lo),
        "solved_fraction_hi": _float(hi),
        "solved_fraction_se": _float(se),
        "diff_vs_base": _float(d_mean),
        "diff_vs_base_lo": _float(d_lo),
        "diff_vs_base_hi": _float(d_hi),
        "diff_vs_base_se": _float(d_se),
        "rl_run": ev.run,
      }
    )
  return rows


def paired_ks(n: int) -> list[int]:
  """k = 1, 2, 4, ... up to n, and n itself."""
  return sorted({2**i for i in range(int(math.log2(n)) + 1)} | {n})


def paired_rows(
  evals: Sequence[prompt_records.Evaluation], seed: int, estimates: Estimates | None = None
) -> list[dict[str, Any]]:
  """paired.csv: each RL run (a) minus the base and each earlier run (b), same prompts."""
  est = {ev.run: (estimates or {}).get(ev.run) or per_prompt_estimates(ev) for ev in evals}
  rows = []
  for i, a in enumerate(evals):
    for b in evals[:i]:
      for metric, index in (("pass_at_k", 0), ("max_at_k", 1)):
        mean, se, lo, hi = intervals.paired_interval(est[a.run][index], est[b.run][index])
        for k in paired_ks(a.n):
          rows.append(
            {
              "a_run": a.run,
              "a_method": a.method,
              "a_k_opt": a.k_opt,
              "b_run": b.run,
              "b_method": b.method,
              "b_k_opt": b.k_opt,
              "seed": seed,
              "metric": metric,
              "k_eval": k,
              "diff": _float(mean[k - 1]),
              "diff_lo": _float(lo[k - 1]),
              "diff_hi": _float(hi[k - 1]),
              "diff_se": _float(se[k - 1]),
              "num_prompts": len(a.correct_P),
            }
          )
  return rows


# reward_hist.csv bins: exactly 0, ten bins (lo, hi] over (0, 1) (the last one
# (0.9, 1) open), exactly 1.
REWARD_BINS = (
  ("0", 0.0, 0.0),
  *(
    (f"({i / 10:g},{(i + 1) / 10:g}]" if i < 9 else "(0.9,1)", i / 10, (i + 1) / 10)
    for i in range(10)
  ),
  ("1", 1.0, 1.0),
)


def reward_histogram_rows(
  evals: Sequence[prompt_records.Evaluation], seed: int
) -> list[dict[str, Any]]:
  """reward_hist.csv: per evaluation, how its samples' continuous rewards are spread.

  One row per bin of ``REWARD_BINS`` (count and fraction of all P * n samples): the
  shape a mean hides, e.g. mass piling onto a partial-credit value.
  """
  rows = []
  for ev in evals:
    # Compared in float32, the rewards' type: a reward of 0.1 falls in (0, 0.1].
    r = np.asarray(ev.rewards_Pxn, np.float32).ravel()
    total = max(r.size, 1)
    for name, lo_edge, hi_edge in REWARD_BINS:
      lo, hi = np.float32(lo_edge), np.float32(hi_edge)
      if lo == hi:
        count = int(np.sum(r == lo))
      elif hi == 1.0:
        count = int(np.sum((r > lo) & (r < hi)))
      else:
        count = int(np.sum((r > lo) & (r <= hi)))
      rows.append(
        {
          **_identity(ev, seed),
          "rl_run": ev.run,
          "bin": name,
          "bin_lo": lo_edge,
          "bin_hi": hi_edge,
          "count": count,
          "fraction": count / total,
        }
      )
  return rows


def report_tables(
  evals: Sequence[prompt_records.Evaluation],
  bin_correct: np.ndarray,
  *,
  seed: int,
  prompts: Sequence[str],
  keys: Sequence[str],
  bin_n: int | None = None,
) -> dict[str, list[dict[str, Any]]]:
  """The rows of the five CSV files ``run_outputs.FILES`` lists, by file name.

  ``bin_n``: samples per problem of the binning evaluation (default: the evaluations' n).
  """
  estimates = {ev.run: per_prompt_estimates(ev) for ev in evals}
  return {
    "results.csv": result_rows(evals, seed, estimates),
    "prompts.csv": prompt_rows(evals, seed, prompts, keys, bin_correct, bin_n=bin_n),
    "bins.csv": bin_rows(evals, seed, bin_correct, estimates, bin_n=bin_n),
    "unsolved.csv": unsolved_rows(evals, seed, bin_correct, bin_n=bin_n),
    "paired.csv": paired_rows(evals, seed, estimates),
  }
