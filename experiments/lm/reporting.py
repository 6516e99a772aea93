"""Results with uncertainty: per-prompt file, intervals, difficulty bins, paired differences.

Inputs, from ``metrics.jsonl``: the final evaluation of the base model (after SFT)
and of each RL run, each with per-prompt data (``prompt_fields``: the number of
correct samples and the continuous reward of every sample), and the base model's
*binning* evaluation: an independent draw of n samples per evaluation problem,
used only to sort the problems into difficulty bins. Binning on separate samples
keeps the per-bin numbers of the base model unbiased: binned on its own
evaluation, the base model would score 0 on "unsolved" problems by construction.

Difficulty bins, from the binning evaluation's pass@1 estimate c/n per problem:
``unsolved`` (c = 0), ``hard`` (0 < c/n <= 1/5), ``medium`` (1/5 < c/n <= 3/5),
``easy`` (c/n > 3/5).

Intervals are 95% normal intervals over prompts: ``maxk.mean_with_interval`` of
the per-prompt unbiased estimates (``maxk.pass_at_k``, ``maxk.max_at_k``), which
covers both the choice of prompts and the sampling noise, and
``maxk.paired_difference`` for two methods on the same prompts, which removes the
shared prompt difficulty. A set of fewer than two prompts gets no interval (NaN).
Every task's rewards lie in [0, 1], so every estimate here does too (differences in
[-1, 1]); the normal intervals are intersected with that range, which cannot lower
their coverage. The fraction of base-unsolved problems a model solves is a binomial
proportion over a handful of problems, so it gets Wilson's score interval (Wilson
1927), which stays in [0, 1] and keeps its coverage for small counts, instead of the
normal one.

Outputs (CSV files in the workdir; every row carries ``seed`` and names the RL run
in ``rl_run``, ``base`` for the base model; a ``run`` column is left to launchers,
which add one when they gather results):

* ``results.csv``: per stage/method/k_opt and k_eval = 1..n, ``pass_at_k``,
  ``max_at_k``, their ``_lo``/``_hi`` bounds and standard errors ``_se``;
* ``prompts.csv``: per method and evaluation problem, the problem key, the prompt,
  n, the number correct, the mean and max continuous reward, the base bin, the
  binning evaluation's count ``bin_correct`` of ``bin_n`` samples, and all n rewards
  (``rewards``, space-separated), enough to recompute every number here offline;
* ``bins.csv``: pass@k and max@k with intervals per method, bin and k;
* ``unsolved.csv``: per method, the fraction of the base-unsolved problems it
  solves (at least one correct of n at its final evaluation) with an interval, and
  the paired difference to the base model's own evaluation of the same problems
  (the base model, sampled again, solves some of them too) with its standard error;
* ``paired.csv``: every RL run minus the base model and minus each earlier run, on
  the same problems, for pass@k and max@k at k = 1, 2, 4, ..., n.
"""

from __future__ import annotations

from collections.abc import Sequence
import dataclasses
from fractions import Fraction
import math
import statistics
from typing import Any

import jax.numpy as jnp
import numpy as np

from experiments import outputs
from experiments.lm import evaluation
from experiments.lm import workdir as workdir_lib
import maxk

CONFIDENCE = 0.95
BINS = ("unsolved", "hard", "medium", "easy")
HARD_MAX = Fraction(1, 5)  # Upper bound of c/n for "hard".
MEDIUM_MAX = Fraction(3, 5)  # Upper bound of c/n for "medium".
FILES = ("results.csv", "prompts.csv", "bins.csv", "unsolved.csv", "paired.csv")


# ------------------------------------------------------------------ per-prompt data


def encode_rewards(rewards_n: np.ndarray) -> str:
  """Space-separated float32 rewards, each in its shortest exact form."""
  values = np.asarray(rewards_n, np.float32).ravel()
  return " ".join(np.format_float_positional(v, unique=True, trim="-") for v in values)


def decode_rewards(text: str) -> np.ndarray:
  """Inverse of :func:`encode_rewards` (float32, bit for bit)."""
  return np.array([float(v) for v in text.split()], np.float32)


def prompt_fields(rewards: dict[str, np.ndarray]) -> dict[str, Any]:
  """Per-prompt fields of a log record from ``evaluation.evaluate``'s rewards.

  ``eval_correct``: correct samples per prompt; ``eval_rewards``: the continuous
  rewards of each prompt's samples (:func:`encode_rewards`).
  """
  binary_Pxn = np.asarray(rewards["binary"])
  return {
    "eval_correct": [int(c) for c in np.sum(binary_Pxn > 0, axis=-1)],
    "eval_rewards": [encode_rewards(row) for row in np.asarray(rewards["continuous"])],
  }


@dataclasses.dataclass(frozen=True)
class Evaluation:
  """One final evaluation on the evaluation problems (``correct_P``, ``rewards_Pxn``)."""

  run: str  # "base" or the RL run's name.
  stage: str  # "base" or "rl".
  method: str
  k_opt: str
  correct_P: np.ndarray
  rewards_Pxn: np.ndarray

  @property
  def n(self) -> int:
    return self.rewards_Pxn.shape[1]

  @property
  def binary_Pxn(self) -> np.ndarray:
    """A binary reward matrix with ``correct_P`` ones per row (pass@k needs only the count)."""
    return (np.arange(self.n)[None, :] < self.correct_P[:, None]).astype(np.float32)


def _prompt_data(record: dict[str, Any], name: str, n_eval: int) -> tuple[np.ndarray, np.ndarray]:
  if "eval_correct" not in record or "eval_rewards" not in record:
    raise workdir_lib.WorkdirError(
      f"metrics.jsonl's final evaluation of {name} lacks per-prompt rewards (an older "
      "version wrote it); use a new --workdir."
    )
  correct = np.asarray(record["eval_correct"], np.int64)
  rewards = [decode_rewards(text) for text in record["eval_rewards"]]
  if len(rewards) != len(correct) or any(r.size != n_eval for r in rewards):
    raise workdir_lib.WorkdirError(
      f"metrics.jsonl's final evaluation of {name} does not hold {n_eval} rewards per prompt."
    )
  if np.any(correct < 0) or np.any(correct > n_eval):
    raise workdir_lib.WorkdirError(f"metrics.jsonl's counts of {name} lie outside [0, {n_eval}].")
  return correct, np.stack(rewards) if rewards else np.zeros((0, n_eval), np.float32)


def final_evaluations(
  records: Sequence[dict[str, Any]], n_eval: int, k_labels: dict[str, str]
) -> tuple[list[Evaluation], np.ndarray]:
  """The base evaluation and each run's last one (in ``k_labels``' order), and the
  base model's binning counts ``[P]``.

  Args:
    records: the log.
    n_eval: samples per prompt.
    k_labels: run name -> its k_opt label (``rl.RunSpec.k_label``), in run order.

  Raises:
    WorkdirError: if the log lacks an evaluation, its per-prompt data, or the
      binning counts.
  """
  finals: dict[str, dict[str, Any]] = {}
  for record in records:
    if "eval_pass_at_k" in record:
      finals["base" if record["stage"] == "base" else record["run"]] = record
  missing = [name for name in ["base", *k_labels] if name not in finals]
  if missing:
    raise workdir_lib.WorkdirError(f"metrics.jsonl lacks the evaluation of {missing}.")
  evals = []
  for name in ["base", *k_labels]:
    record = finals[name]
    correct, rewards = _prompt_data(record, name, n_eval)
    stage = "base" if name == "base" else "rl"
    k_opt = "" if name == "base" else k_labels[name]
    evals.append(Evaluation(name, stage, record["method"], k_opt, correct, rewards))
  sizes = {len(e.correct_P) for e in evals}
  bin_correct = np.asarray(finals["base"].get("bin_correct", []), np.int64)
  if len(sizes) != 1 or bin_correct.size not in sizes:
    raise workdir_lib.WorkdirError(
      "metrics.jsonl's evaluations (and the base binning counts, bin_correct) do not "
      "cover the same prompts."
    )
  return evals, bin_correct


# -------------------------------------------------------------------------- helpers


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


def _interval(values_xP: np.ndarray, bounds: tuple[float, float] = (0.0, 1.0)) -> tuple:
  """(mean, se, lo, hi) over the last (prompt) axis, the interval intersected with
  ``bounds``; NaN se and bounds for fewer than 2 prompts."""
  values_xP = np.asarray(values_xP, np.float64)
  if values_xP.shape[-1] >= 2:
    iv = maxk.mean_with_interval(jnp.asarray(values_xP), confidence=CONFIDENCE)
    mean, se, lo, hi = (np.asarray(x, np.float64) for x in (iv.mean, iv.stderr, iv.lo, iv.hi))
    return mean, se, np.clip(lo, *bounds), np.clip(hi, *bounds)
  nan = np.full(values_xP.shape[:-1], np.nan)
  mean = np.mean(values_xP, axis=-1) if values_xP.shape[-1] else nan
  return mean, nan, nan, nan


def _paired(a_xP: np.ndarray, b_xP: np.ndarray) -> tuple[np.ndarray, ...]:
  """(mean, se, lo, hi) of a - b over prompts (``maxk.paired_difference``), in [-1, 1]."""
  a_xP, b_xP = np.asarray(a_xP, np.float64), np.asarray(b_xP, np.float64)
  if a_xP.shape[-1] >= 2:
    iv = maxk.paired_difference(jnp.asarray(a_xP), jnp.asarray(b_xP), confidence=CONFIDENCE)
    mean, se, lo, hi = (np.asarray(x, np.float64) for x in (iv.mean, iv.stderr, iv.lo, iv.hi))
    return mean, se, np.clip(lo, -1.0, 1.0), np.clip(hi, -1.0, 1.0)
  return _interval(a_xP - b_xP, (-1.0, 1.0))


def wilson_interval(successes: int, trials: int) -> tuple[float, float, float, float]:
  """(p̂, se, lo, hi) of a binomial proportion: p̂ = successes / trials, se =
  √(p̂(1 − p̂)/trials) and Wilson's score interval at ``CONFIDENCE``,
  (p̂ + z²/2m ± z √(p̂(1 − p̂)/m + z²/4m²)) / (1 + z²/m) with m = trials."""
  if trials < 1:
    return (np.nan,) * 4
  z = float(statistics.NormalDist().inv_cdf((1 + CONFIDENCE) / 2))
  p = successes / trials
  center = (p + z * z / (2 * trials)) / (1 + z * z / trials)
  half = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / (1 + z * z / trials)
  # The interval holds p̂ (at 0 and 1 successes-to-trials it ends there exactly, where
  # center ∓ half would leave a rounding error of ~1e-17).
  lo = 0.0 if successes == 0 else min(p, max(0.0, center - half))
  hi = 1.0 if successes == trials else max(p, min(1.0, center + half))
  return p, math.sqrt(p * (1 - p) / trials), lo, hi


def per_prompt_estimates(ev: Evaluation) -> tuple[np.ndarray, np.ndarray]:
  """Per-prompt pass@k and max@k, k = 1..n: float64 ``[n, P]`` each."""
  pass_kP, max_kP = evaluation.per_prompt_all_k(
    jnp.asarray(ev.binary_Pxn), jnp.asarray(ev.rewards_Pxn)
  )
  return np.asarray(pass_kP, np.float64), np.asarray(max_kP, np.float64)


def _identity(ev: Evaluation, seed: int) -> dict[str, Any]:
  return {"stage": ev.stage, "method": ev.method, "k_opt": ev.k_opt, "seed": seed}


def _float(x: Any) -> float:
  return float(x) if math.isfinite(float(x)) else float("nan")


# --------------------------------------------------------------------------- tables


def _estimate_fields(p_mean, p_lo, p_hi, m_mean, m_lo, m_hi) -> dict[str, float]:
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
  evals: Sequence[Evaluation], seed: int, estimates: dict[str, tuple] | None = None
) -> list[dict[str, Any]]:
  """results.csv: one row per evaluation and k_eval = 1..n, with 95% intervals."""
  rows = []
  for ev in evals:
    pass_kP, max_kP = (estimates or {}).get(ev.run) or per_prompt_estimates(ev)
    p_mean, p_se, p_lo, p_hi = _interval(pass_kP)
    m_mean, m_se, m_lo, m_hi = _interval(max_kP)
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
  evals: Sequence[Evaluation],
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
          "rewards": encode_rewards(rewards),
        }
      )
  return rows


def bin_rows(
  evals: Sequence[Evaluation],
  seed: int,
  bin_correct: np.ndarray,
  estimates: dict[str, tuple] | None = None,
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
      p_mean, p_se, p_lo, p_hi = _interval(pass_kP[:, members])
      m_mean, m_se, m_lo, m_hi = _interval(max_kP[:, members])
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
  evals: Sequence[Evaluation], seed: int, bin_correct: np.ndarray, *, bin_n: int | None = None
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
    mean, se, lo, hi = (np.nan,) * 4
    d_mean, d_se, d_lo, d_hi = (np.nan,) * 4
    if solved.size:
      mean, se, lo, hi = wilson_interval(int(solved.sum()), solved.size)
      if ev.stage != "base":
        d_mean, d_se, d_lo, d_hi = _paired(solved, base_solved)
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
  evals: Sequence[Evaluation], seed: int, estimates: dict[str, tuple] | None = None
) -> list[dict[str, Any]]:
  """paired.csv: each RL run (a) minus the base and each earlier run (b), same prompts."""
  est = {ev.run: (estimates or {}).get(ev.run) or per_prompt_estimates(ev) for ev in evals}
  rows = []
  for i, a in enumerate(evals):
    for b in evals[:i]:
      for metric, index in (("pass_at_k", 0), ("max_at_k", 1)):
        mean, se, lo, hi = _paired(est[a.run][index], est[b.run][index])
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


def reward_histogram_rows(evals: Sequence[Evaluation], seed: int) -> list[dict[str, Any]]:
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
  evals: Sequence[Evaluation],
  bin_correct: np.ndarray,
  *,
  seed: int,
  prompts: Sequence[str],
  keys: Sequence[str],
  bin_n: int | None = None,
) -> dict[str, list[dict[str, Any]]]:
  """The rows of the five CSV files of the module docstring, by file name.

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


def write_reports(
  workdir: str,
  evals: Sequence[Evaluation],
  bin_correct: np.ndarray,
  *,
  seed: int,
  prompts: Sequence[str],
  keys: Sequence[str],
  bin_n: int | None = None,
) -> dict[str, list[dict[str, Any]]]:
  """Writes the five CSV files of the module docstring; returns their rows by file name."""
  tables = report_tables(evals, bin_correct, seed=seed, prompts=prompts, keys=keys, bin_n=bin_n)
  for name, rows in tables.items():
    outputs.write_results_csv(workdir, rows, filename=name)
  return tables
