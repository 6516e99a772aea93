"""One run of the study (a task and a seed) rebuilt from its per-prompt file, and the
checks that its own results.csv and reward_hist.csv hold the recomputed numbers."""

from __future__ import annotations

from collections.abc import Sequence
import dataclasses
import math
from typing import Any

import numpy as np

from experiments.lm import prompt_records
from experiments.lm_study import files


@dataclasses.dataclass(frozen=True)
class Run:
  """One finished run of the study: one task, one seed, every method's evaluation."""

  folder: str
  task: str
  seed: int
  evals: tuple[prompt_records.Evaluation, ...]
  bin_correct: np.ndarray
  prompts: tuple[str, ...]
  keys: tuple[str, ...]
  seconds: float  # The launcher's wall time for the run; NaN if not recorded.
  bin_n: int = 0  # Samples per problem of the binning evaluation; 0: the evaluations' n.


PROMPT_COLUMNS = (
  "rl_run",
  "stage",
  "method",
  "k_opt",
  "problem_key",
  "prompt",
  "n",
  "correct",
  "bin_correct",
  "rewards",
)


def _count(row: dict[str, str], column: str, n: int, where: str) -> int:
  """``row[column]`` as an integer in [0, n]; StudyError naming it otherwise."""
  try:
    value = int(row[column])
  except ValueError:
    value = -1
  if not 0 <= value <= n:
    raise files.StudyError(f"{where}: {column}={row[column]!r} is not an integer in [0, {n}].")
  return value


def _rewards(row: dict[str, str], n: int, where: str) -> np.ndarray:
  """The row's n rewards, each finite in [0, 1]; StudyError naming the row otherwise."""
  try:
    rewards = prompt_records.decode_rewards(row["rewards"])
  except ValueError:
    rewards = np.array([np.nan], np.float32)
  if rewards.shape != (n,) or not np.all((rewards >= 0) & (rewards <= 1)):
    raise files.StudyError(f"{where}: rewards must be {n} numbers in [0, 1].")
  return rewards


def _rows_by_run(
  rows: Sequence[dict[str, str]], where: str
) -> tuple[int, dict[str, list[tuple[int, dict[str, str]]]]]:
  """(n, rl_run -> its (prompts.csv line, row) pairs in order); StudyError unless
  every row has the first row's n >= 1 and a base model is among the runs."""
  if not rows:
    raise files.StudyError(f"{where}: prompts.csv holds no rows.")
  try:
    n = int(rows[0]["n"])
  except ValueError:
    n = 0
  if n < 1:
    raise files.StudyError(
      f"{where}, prompts.csv line 2: n={rows[0]['n']!r} is not an integer >= 1."
    )
  by_run: dict[str, list[tuple[int, dict[str, str]]]] = {}
  for line, row in enumerate(rows, start=2):
    if row["n"] != rows[0]["n"]:
      raise files.StudyError(f"{where}, prompts.csv line {line}: n={row['n']!r}, not {n} as above.")
    by_run.setdefault(row["rl_run"], []).append((line, row))
  if "base" not in by_run:
    raise files.StudyError(f"{where}: the per-prompt rows hold no base model.")
  return n, by_run


def _evaluation(
  name: str, mine: Sequence[tuple[int, dict[str, str]]], n: int, where: str
) -> prompt_records.Evaluation:
  """The evaluation of run ``name`` from its (line, row) pairs."""

  def at(line: int) -> str:
    return f"{where}, prompts.csv line {line}"

  first = mine[0][1]
  return prompt_records.Evaluation(
    run=name,
    stage=first["stage"],
    method=first["method"],
    k_opt=first["k_opt"],
    correct_P=np.array([_count(r, "correct", n, at(i)) for i, r in mine], np.int64),
    rewards_Pxn=np.stack([_rewards(r, n, at(i)) for i, r in mine]),
  )


def _bin_counts(
  base: Sequence[tuple[int, dict[str, str]]], n: int, where: str
) -> tuple[int, np.ndarray]:
  """(bin_n, the base model's correct count per problem in its binning evaluation)."""
  # prompts.csv files written before eval.bin_n existed have no bin_n column: their
  # binning evaluation drew n samples.
  bin_text = base[0][1].get("bin_n") or str(n)
  try:
    bin_n = int(bin_text)
  except ValueError:
    bin_n = 0
  if bin_n < 1 or any((r.get("bin_n") or str(n)) != bin_text for _, r in base):
    raise files.StudyError(f"{where}: prompts.csv's bin_n={bin_text!r} is not one integer >= 1.")
  counts = [_count(r, "bin_correct", bin_n, f"{where}, prompts.csv line {i}") for i, r in base]
  return bin_n, np.array(counts, np.int64)


def run_from_prompt_rows(
  rows: Sequence[dict[str, str]],
  *,
  task: str,
  seed: int,
  folder: str = "",
  seconds: float = float("nan"),
) -> Run:
  """A run's evaluations rebuilt from its per-prompt rows (prompts.csv's, in order).

  Raises:
    StudyError: if the rows hold no base model, a run covers other problems, or a
      row's counts or rewards are malformed (naming its line of prompts.csv).
  """
  where = folder or f"task {task}, seed {seed}"
  n, by_run = _rows_by_run(rows, where)
  base_rows = [row for _, row in by_run["base"]]
  evals = []
  for name, mine in by_run.items():
    if [r["problem_key"] for _, r in mine] != [r["problem_key"] for r in base_rows]:
      raise files.StudyError(f"{where}: run {name} covers other problems than base.")
    evals.append(_evaluation(name, mine, n, where))
  bin_n, bin_correct = _bin_counts(by_run["base"], n, where)
  return Run(
    folder=folder,
    task=task,
    seed=seed,
    evals=tuple(evals),
    bin_correct=bin_correct,
    prompts=tuple(r["prompt"] for r in base_rows),
    keys=tuple(r["problem_key"] for r in base_rows),
    seconds=seconds,
    bin_n=bin_n,
  )


RESULT_COLUMNS = (
  "rl_run",
  "k_eval",
  "pass_at_k",
  "pass_at_k_lo",
  "pass_at_k_hi",
  "max_at_k",
  "max_at_k_lo",
  "max_at_k_hi",
)


def check_results(
  written: Sequence[dict[str, str]], recomputed: Sequence[dict[str, Any]], where: str
) -> None:
  """Raises StudyError unless results.csv rows ``written`` hold the numbers of
  ``recomputed`` (:func:`report_rows.result_rows` of the per-prompt data), row by row."""
  if len(written) != len(recomputed):
    raise files.StudyError(
      f"{where}: results.csv has {len(written)} rows, its prompts.csv gives {len(recomputed)}."
    )
  # The per-problem estimates are float32 (maxk's default dtype), so a maxk whose
  # summation differs (e.g. compensated) moves a mean by a few float32 ulp: 1e-6
  # relative allows that and still catches any edit or other code's numbers.
  for line, (old, new) in enumerate(zip(written, recomputed), start=2):
    try:
      same_row = (old["rl_run"], int(old["k_eval"])) == (new["rl_run"], new["k_eval"])
      close = all(
        math.isclose(float(old[c]), new[c], rel_tol=1e-6, abs_tol=1e-9)
        or (math.isnan(float(old[c])) and math.isnan(new[c]))
        for c in RESULT_COLUMNS[2:]
      )
    except ValueError:
      raise files.StudyError(
        f"{where}, results.csv line {line}: a value is not a number."
      ) from None
    if not (same_row and close):
      raise files.StudyError(
        f"{where}: results.csv disagrees with the numbers recomputed from its "
        f"prompts.csv at run {old['rl_run']}, k={old['k_eval']}: the folder was written "
        "by other code; rerun it."
      )


def check_reward_hist(
  written: Sequence[dict[str, str]], recomputed: Sequence[dict[str, Any]], where: str
) -> None:
  """Raises StudyError unless reward_hist.csv rows ``written`` hold the counts of
  ``recomputed`` (:func:`report_rows.reward_histogram_rows` of the per-prompt data)."""
  old = [(r["rl_run"], r["bin"], r["count"]) for r in written]
  new = [(r["rl_run"], r["bin"], str(r["count"])) for r in recomputed]
  if old != new:
    raise files.StudyError(
      f"{where}: reward_hist.csv disagrees with the histogram of its prompts.csv's "
      "rewards: the folder was written by other code; rerun it."
    )
