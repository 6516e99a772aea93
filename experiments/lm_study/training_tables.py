"""The study's training and curve tables across seeds (computing only; exploratory):
``dynamics.csv`` and ``solved_training.csv`` from the runs' ``steps.csv``,
``crossings.csv`` from the pass@k / max@k curves, and the training curves the
figures draw (columns: the module docstring of :mod:`experiments.lm_study.summary`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
import math
from typing import Any

import numpy as np

from experiments.lm import intervals
from experiments.lm import prompt_records
from experiments.lm_study import loading
from experiments.lm_study import methods as methods_lib
from experiments.lm_study import runs as runs_lib
from experiments.lm_study import seeds as seeds_lib
from experiments.lm_study import significance
from experiments.lm_study import steps as steps_lib

# dynamics.csv quantities: name -> (steps.csv column, reduction over RL steps, bounds).
DYNAMICS = {
  "clip_frac_median": ("clip_frac", "median", (0.0, 1.0)),
  "grad_clipped_share": ("grad_clipped", "mean", (0.0, 1.0)),
  "grad_norm_median": ("grad_norm", "median", (0.0, math.inf)),
  "kl_to_warm_start_final": ("kl_to_warm_start", "last", (-math.inf, math.inf)),
  "entropy_final": ("entropy", "last", (0.0, math.inf)),
  "ess_frac_mean": ("ess_frac", "mean", (0.0, 1.0)),
  "solved_cumulative_final": ("solved_cumulative", "last", (0.0, math.inf)),
}


WARM_TARGET = (0.1, 0.3)  # The warm start's held-out pass@1 the SFT steps aim for.


_REDUCE: dict[str, Callable[[np.ndarray], Any]] = {
  "median": np.median,
  "mean": np.mean,
  "last": lambda x: x[-1],
}


def _eval_labels(runs: Sequence[runs_lib.Run]) -> dict[tuple[str, str], prompt_records.Evaluation]:
  """(task, rl_run) -> the first seed's evaluation (its method and k_opt)."""
  out: dict[tuple[str, str], prompt_records.Evaluation] = {}
  for run in runs:
    for ev in run.evals:
      out.setdefault((run.task, ev.run), ev)
  return out


def _steps_by_task(
  runs: Sequence[runs_lib.Run], steps: dict[tuple[str, int], steps_lib.Steps]
) -> list[tuple[str, list[int], list[steps_lib.Steps]]]:
  """Per task with any steps.csv: the task, its seeds (run order) and their Steps."""
  out = []
  for task in loading.tasks_of(runs):
    seeds = [r.seed for r in runs if r.task == task and (task, r.seed) in steps]
    if seeds:
      out.append((task, seeds, [steps[task, s] for s in seeds]))
  return out


def dynamics_rows(
  runs: Sequence[runs_lib.Run], steps: dict[tuple[str, int], steps_lib.Steps]
) -> list[dict[str, Any]]:
  """dynamics.csv (module docstring): per task, the warm start's last held-out pass@1
  (``quantity`` = ``warm_pass_at_1_final``, ``rl_run`` = ``warm_start``), then per
  RL run each quantity of :data:`DYNAMICS`, per seed and averaged over seeds with
  the plain t-interval over seeds (exploratory)."""
  labels = _eval_labels(runs)
  out = []
  for task, seeds, mine in _steps_by_task(runs, steps):
    common = {"task": task, "num_seeds": len(seeds), "seeds": " ".join(map(str, seeds))}
    warm = [s.warm[-1] if len(s.warm) else (float("nan"), float("nan")) for s in mine]
    out.append(
      {
        **common,
        "rl_run": "warm_start",
        "method": "warm start (SFT)",
        "k_opt": "",
        "quantity": "warm_pass_at_1_final",
        **seeds_lib.seed_row([w[1] for w in warm], (0.0, 1.0)),
        "step_seeds": " ".join(f"{w[0]:g}" for w in warm),
      }
    )
    for name in mine[0].rl:
      ev = labels[task, name]
      for quantity, (column, how, bounds) in DYNAMICS.items():
        values = [float(_REDUCE[how](s.rl[name][column])) for s in mine]
        out.append(
          {
            **common,
            "rl_run": name,
            "method": ev.method,
            "k_opt": ev.k_opt,
            "quantity": quantity,
            **seeds_lib.seed_row(values, bounds),
            "step_seeds": " ".join(f"{s.rl[name]['step'][-1]:g}" for s in mine),
          }
        )
  return out


def _first_below(run_curve: np.ndarray, base_curve: np.ndarray) -> str:
  """The smallest k (1-based) with run_curve[k-1] < base_curve[k-1], or ``none``."""
  below = np.flatnonzero(np.asarray(run_curve) < np.asarray(base_curve))
  return str(int(below[0]) + 1) if below.size else "none"


def crossing_rows(
  results: Sequence[dict[str, Any]], summary: Sequence[dict[str, Any]]
) -> list[dict[str, Any]]:
  """crossings.csv: per task, metric (pass@k, max@k) and RL run, the smallest k in
  1..n where the run's mean over seeds falls below the base model's (``crossing_k``,
  ``none`` if it never does), and the same per seed (``crossing_k_seeds``, from each
  seed's own curves). Exploratory."""
  # (task, rl_run, seed or "mean") -> rows in k order.
  curves: dict[tuple[str, str, Any], list[dict[str, Any]]] = {}
  for r in results:
    curves.setdefault((r["task"], r["rl_run"], int(r["seed"])), []).append(r)
  for r in summary:
    if r["scope"] == "all":
      curves.setdefault((r["task"], r["rl_run"], "mean"), []).append(r)
  for rows in curves.values():
    rows.sort(key=lambda r: int(r["k_eval"]))

  def curve(task: str, run: str, seed: Any, metric: str) -> np.ndarray:
    return np.array([float(r[metric]) for r in curves[task, run, seed]], np.float64)

  out = []
  for task, run, _ in [key for key in curves if key[2] == "mean"]:
    if run == "base":
      continue
    seeds = sorted(s for t, x, s in curves if (t, x) == (task, run) and s != "mean")
    first = curves[task, run, "mean"][0]
    for metric in ("pass_at_k", "max_at_k"):
      per_seed = [
        _first_below(curve(task, run, s, metric), curve(task, "base", s, metric)) for s in seeds
      ]
      out.append(
        {
          "task": task,
          "rl_run": run,
          "method": first["method"],
          "k_opt": first["k_opt"],
          "metric": metric,
          "n": len(curves[task, run, "mean"]),
          "crossing_k": _first_below(
            curve(task, run, "mean", metric), curve(task, "base", "mean", metric)
          ),
          "num_seeds": len(seeds),
          "seeds": " ".join(map(str, seeds)),
          "crossing_k_seeds": " ".join(per_seed),
        }
      )
  return out


def solved_training_rows(
  runs: Sequence[runs_lib.Run],
  steps: dict[tuple[str, int], steps_lib.Steps],
  reference: str | None = None,
) -> list[dict[str, Any]]:
  """solved_training.csv: per task and RL run, the distinct training problems solved
  (at least one correct sample) by the last RL step (``solved_cumulative``; PKPO's
  measure of solving harder problems), per seed and averaged with the plain
  t-interval over seeds, and its difference to ``reference`` within each seed (the
  runs of a seed share their training prompts), averaged with the plain t-interval
  and an exploratory verdict. No within-seed standard error exists for a count of
  problems, so no floor applies. ``reference`` defaults to the study's GRPO run
  (:func:`experiments.lm_study.methods.reference_run`); none: no differences."""
  labels = _eval_labels(runs)
  if reference is None:
    reference = methods_lib.reference_run(
      methods_lib.method_of(e.run, e.method, e.k_opt) for e in labels.values()
    )
  out = []
  for task, seeds, mine in _steps_by_task(runs, steps):
    final = {
      name: [float(s.rl[name]["solved_cumulative"][-1]) for s in mine] for name in mine[0].rl
    }
    for name, values in final.items():
      mean, lo, hi = seeds_lib.plain_across_seeds(values, (0.0, math.inf))
      diff = dict.fromkeys(("diff_vs_grpo", "diff_vs_grpo_lo", "diff_vs_grpo_hi"), float("nan"))
      diffs: list[float] = []
      verdict = ""
      if reference is not None and name != reference and reference in final:
        diffs = [a - b for a, b in zip(values, final[reference])]
        mean_d, lo_d, hi_d = seeds_lib.plain_across_seeds(diffs)
        diff = {
          "diff_vs_grpo": mean_d,
          "diff_vs_grpo_lo": lo_d,
          "diff_vs_grpo_hi": hi_d,
        }
        verdict = significance.exploratory_verdict(lo_d, hi_d)
      ev = labels[task, name]
      out.append(
        {
          "task": task,
          "rl_run": name,
          "method": ev.method,
          "k_opt": ev.k_opt,
          "steps": mine[0].steps(name),
          "num_seeds": len(seeds),
          "seeds": " ".join(map(str, seeds)),
          "solved_seeds": seeds_lib.fmt_seeds(values),
          "solved": mean,
          "solved_lo": lo,
          "solved_hi": hi,
          **diff,
          "diff_vs_grpo_seeds": seeds_lib.fmt_seeds(diffs),
          "diff_vs_grpo_verdict": verdict,
        }
      )
  return out


def training_curves(
  steps: dict[tuple[str, int], steps_lib.Steps], task: str, columns: Sequence[str]
) -> dict[str, dict[str, tuple[np.ndarray, ...]]]:
  """rl_run -> column -> (step, mean over seeds, lo, hi) for ``task``: the pointwise
  plain 95% t-interval over seeds at each RL step (NaN bounds for one seed)."""
  mine = [s for (t, _), s in sorted(steps.items()) if t == task]
  out: dict[str, dict[str, tuple[np.ndarray, ...]]] = {}
  for name in mine[0].rl if mine else ():
    step = mine[0].rl[name]["step"]
    out[name] = {}
    for column in columns:
      values = np.stack([s.rl[name][column] for s in mine], axis=-1)  # [T, S]
      mean = values.mean(axis=-1)
      lo = hi = np.full_like(mean, np.nan)
      if values.shape[-1] >= 2:
        iv = significance.plain_interval(values, confidence=intervals.CONFIDENCE)
        lo, hi = iv.lo, iv.hi
      out[name][column] = (step, mean, lo, hi)
  return out
