r"""The LM study across seeds: one table set, intervals over seeds, verdicts, figures.

Usage (after ``launch.local`` ran the study sweep into ``out/lm_study``)::

  python -m experiments.lm.study_summary --study_dir=out/lm_study --out_dir=docs/lm_study

Each run folder of ``--study_dir`` (one task and one seed of
``experiments/lm/configs/study.py``) holds its per-prompt file ``prompts.csv``.
Every number written here is recomputed from those per-prompt counts and rewards by
:mod:`experiments.lm.reporting`, and checked against the run's own ``results.csv``
(a folder whose files disagree, e.g. written by other code, stops the summary).

The summary covers the whole study or stops (one line naming the file or run, exit
code 1, nothing written): every task of ``configs/study.py`` with the same seeds,
at least 2 of them, each run finished (``prompts.csv`` and ``results.csv``, and
status ``ok`` where ``launch.local`` recorded one); every run that launch.local's
``runs.json`` lists; no run of a task outside the study, no folder with a run's
files but no ``config.json``; and every file readable and well formed
(``metrics.jsonl`` lines pass their checksums, see experiments/lm/checkpointing.py).
``--allow_incomplete`` summarises the finished runs of an incomplete study instead;
its README then names every missing run before anything else. The title counts the
tasks and seeds summarised.

Two kinds of interval, because the seeds of the study differ in everything: each
seed draws its own evaluation problems, warm start, training problems and samples.

* **Per seed, over prompts** (the runs' own files, gathered here with a ``task``
  column): the 95% normal interval of the mean over that seed's problems. It
  covers the choice of problems and the sampling noise of the evaluation, not the
  randomness of training.
* **Across seeds**: the mean of the per-seed estimates with a 95% interval over the
  S seeds (S − 1 degrees of freedom), which covers the whole pipeline, training
  included. For a method's pass@k or max@k (``summary.csv``) it is the Student-t
  interval (``maxk.mean_with_interval(..., distribution="t")``). For a difference
  between two methods (``contrasts.csv``, ``paired_summary.csv``,
  ``unsolved_summary.csv``; paired on the same problems and sampling keys within
  each seed) it is the *floored* Student-t interval of
  :func:`experiments.lm.contrasts.floored_interval`: the between-seed variance is
  floored at the within-seed one (the mean of the seeds' squared standard errors
  over problems), since with 3-8 seeds the sample variance of a few differences that
  happen to agree can be far below the evaluation noise it must include. Intervals of
  quantities in [0, 1] are intersected with [0, 1] (differences with [-1, 1]).

Verdicts. The comparisons ``CONTRASTS`` of ``experiments/lm/configs/study.py`` are
declared in advance and applied to every task; the family of Holm's correction is
all of them over all tasks (the conservative choice, and what a reviewer counts). A
declared contrast is ``significant`` when its Holm-adjusted p-value is below 0.05
and ``not significant`` otherwise. Every other difference is exploratory: its verdict
is ``exploratory, excludes 0`` or ``exploratory, includes 0`` (its floored interval;
``exploratory, no interval`` with one seed), with no correction for the ~45
comparisons per task and no claim about error rates.

Outputs in ``--out_dir``:

* ``results.csv``, ``prompts.csv``, ``bins.csv``, ``unsolved.csv``, ``paired.csv``:
  every run's table, recomputed, with a ``task`` column (the per-prompt file holds
  every sample's reward, so all of it can be recomputed offline);
* ``summary.csv``: per task, method, scope (``all`` problems or one base-difficulty
  bin) and k, the per-seed pass@k and max@k (``*_seeds``, space-separated, in seed
  order) and their mean with the across-seeds interval;
* ``contrasts.csv``: per task and declared contrast, a row with the question, the
  runs a and b, ``measure`` (pass or max) and ``k`` (resolved), the per-seed
  differences and standard errors (``diff_seeds``, ``se_seeds``), the mean ``diff``
  with the floored interval (``lo``, ``hi``), its uncorrected ``p_value``, ``floored``
  (whether the floor decided), the plain t-interval (``t_lo``, ``t_hi``) for
  comparison, ``p_holm`` and the ``verdict``;
* ``paired_summary.csv``: per task, pair of runs, metric and k, the per-seed
  differences with their intervals and standard errors, the mean with the floored
  interval and ``p_value``, and the verdict (exploratory, or a declared contrast's,
  with its ``question`` and ``p_holm``);
* ``unsolved_summary.csv``: per task and method, the base-unsolved problems solved,
  pooled over seeds (Wilson's interval; each seed's problems are distinct), and the
  paired difference to the base model's fresh evaluation, across seeds with the
  floored interval and an exploratory verdict;
* ``off_policy.csv``: per task and run, the RL steps' mean effective sample size
  fraction, largest normalised weight and (max@k runs) distances of the first-order
  and PPO-clip weights from the exact ones, at the last inner epoch (from each run's
  ``metrics.jsonl``), per seed and the mean over seeds;
* ``splits.csv``: per run, the held-out split (``split.json``): evaluation problems,
  distinct training problems, and ``overlap`` (0; anything else stops the summary);
* ``pass_at_k_<task>.png``, ``bins_<task>.png``: the across-seeds means and
  intervals; ``contrasts_<task>.png``: the key differences in pass@k and max@k, per
  seed and across seeds (floored interval, coloured by verdict);
* ``README.md``: the declared contrasts first, then under "Exploratory" the tables of
  all the rest, the running times, and the verdicts.

``--from_paired=PATH`` writes only ``contrasts.csv`` into ``--out_dir``, from a
study's gathered ``paired.csv`` (e.g. the committed one, whose run folders are gone)::

  python -m experiments.lm.study_summary --from_paired=docs/lm_study/paired.csv \
    --out_dir=docs/lm_study
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
import csv
import dataclasses
import json
import math
import os
from typing import Any

from absl import app
from absl import flags
from absl import logging
import jax.numpy as jnp
import numpy as np

from experiments import outputs
from experiments import plot_style
from experiments.lm import checkpointing
from experiments.lm import contrasts
from experiments.lm import plotting
from experiments.lm import reporting
from experiments.lm import workdir as workdir_lib
from experiments.lm.configs import study as study_config
import maxk

CONFIDENCE = reporting.CONFIDENCE
SCOPES = ("all", *reporting.BINS)
# Report columns: the k of pass@k / max@k shown in the Markdown tables.
TABLE_KS = (1, 4, 16, 32)
# The pairs of the contrasts figures and the README's exploratory table of key
# differences: (a_run, b_run, label), drawn at FIGURE_KS.
FIGURE_PAIRS = (
  ("grpo", "base", "GRPO vs base"),
  ("max_at_k_k4", "base", "k_opt = 4 vs base"),
  ("max_at_k_k8", "base", "k_opt = 8 vs base"),
  ("max_at_k_k8", "max_at_k_k1", "k_opt = 8 vs k_opt = 1"),
  ("max_at_k_k4", "max_at_k_k1", "k_opt = 4 vs k_opt = 1"),
  ("max_at_k_k4", "grpo", "k_opt = 4 vs GRPO"),
  ("max_at_k_k8", "grpo", "k_opt = 8 vs GRPO"),
  ("max_at_k_k1", "grpo", "k_opt = 1 vs GRPO"),
  ("rloo", "grpo", "RLOO vs GRPO"),
  ("max_at_k_k8-60-1", "max_at_k_k8", "annealed 8 -> 1 vs k_opt = 8"),
  ("max_at_k_k8-60-1", "max_at_k_k1", "annealed 8 -> 1 vs k_opt = 1"),
  ("max_at_k_k4_first_order", "max_at_k_k4", "first-order vs exact weights (k_opt = 4)"),
  ("max_at_k_k4_ppo_clip", "max_at_k_k4", "PPO-clip vs exact weights (k_opt = 4)"),
)
FIGURE_KS = (1, 32)

_STUDY_DIR = flags.DEFINE_string("study_dir", "out/lm_study", "The study sweep's --out_root.")
_OUT_DIR = flags.DEFINE_string("out_dir", "out/lm_study/summary", "Where the summary goes.")
_ALLOW_INCOMPLETE = flags.DEFINE_bool(
  "allow_incomplete",
  False,
  "Summarise a study that lacks runs of its design or has fewer than 2 seeds; the "
  "README then names the missing runs first. Default: such a study stops the summary.",
)
_FROM_PAIRED = flags.DEFINE_string(
  "from_paired",
  None,
  "A study's gathered paired.csv (e.g. a committed docs/lm_study/paired.csv): write only "
  "contrasts.csv into --out_dir from it, without the run folders (--study_dir unused).",
)


@flags.multi_flags_validator(
  ["study_dir", "from_paired"],
  message="--study_dir must be an existing folder (the sweep's --out_root), and "
  "--from_paired, if given, an existing file.",
)
def _check_inputs(values: dict[str, Any]) -> bool:
  if values["from_paired"] is not None:
    return os.path.isfile(values["from_paired"])
  return os.path.isdir(values["study_dir"])


outputs.register_out_dir_validator("out_dir")


class StudyError(ValueError):
  """A study folder that cannot be summarised (missing, unfinished or inconsistent runs)."""


# ---------------------------------------------------------------------- loading


@dataclasses.dataclass(frozen=True)
class Run:
  """One finished run of the study: one task, one seed, every method's evaluation."""

  folder: str
  task: str
  seed: int
  evals: tuple[reporting.Evaluation, ...]
  bin_correct: np.ndarray
  prompts: tuple[str, ...]
  keys: tuple[str, ...]
  seconds: float  # The launcher's wall time for the run; NaN if not recorded.
  bin_n: int = 0  # Samples per problem of the binning evaluation; 0: the evaluations' n.


def _read_json(path: str) -> Any:
  """The JSON value in ``path``; StudyError naming the file if it cannot be read."""
  try:
    with open(path) as f:
      return json.load(f)
  except OSError as e:
    raise StudyError(f"{path} cannot be read ({e.strerror}).") from None
  except ValueError as e:
    raise StudyError(f"{path} is not valid JSON ({e}).") from None


def _read_csv(path: str, columns: Sequence[str] = ()) -> list[dict[str, str]]:
  """The rows of ``path``; StudyError naming the file and line if it cannot be read,
  lacks one of ``columns``, or a row has more or fewer fields than the header (a
  truncated or edited file)."""
  try:
    with open(path, newline="") as f:
      reader = csv.DictReader(f)
      missing = [c for c in columns if c not in (reader.fieldnames or [])]
      if missing:
        raise StudyError(f"{path} lacks the column(s) {missing}.")
      rows = []
      for row in reader:
        if None in row or None in row.values():  # Extra fields / fields missing.
          fields = sum(v is not None for k, v in row.items() if k is not None)
          fields += len(row.get(None) or [])
          raise StudyError(
            f"{path}, line {reader.line_num}: {fields} of {len(reader.fieldnames or [])} "
            "fields (a truncated or damaged file)."
          )
        rows.append(row)
  except OSError as e:
    raise StudyError(f"{path} cannot be read ({e.strerror}).") from None
  except csv.Error as e:
    raise StudyError(f"{path} is not a readable CSV file ({e}).") from None
  return rows


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
    raise StudyError(f"{where}: {column}={row[column]!r} is not an integer in [0, {n}].")
  return value


def _rewards(row: dict[str, str], n: int, where: str) -> np.ndarray:
  """The row's n rewards, each finite in [0, 1]; StudyError naming the row otherwise."""
  try:
    rewards = reporting.decode_rewards(row["rewards"])
  except ValueError:
    rewards = np.array([np.nan], np.float32)
  if rewards.shape != (n,) or not np.all((rewards >= 0) & (rewards <= 1)):
    raise StudyError(f"{where}: rewards must be {n} numbers in [0, 1].")
  return rewards


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
  if not rows:
    raise StudyError(f"{where}: prompts.csv holds no rows.")
  try:
    n = int(rows[0]["n"])
  except ValueError:
    n = 0
  if n < 1:
    raise StudyError(f"{where}, prompts.csv line 2: n={rows[0]['n']!r} is not an integer >= 1.")
  by_run: dict[str, list[tuple[int, dict[str, str]]]] = {}
  for line, row in enumerate(rows, start=2):
    if row["n"] != rows[0]["n"]:
      raise StudyError(f"{where}, prompts.csv line {line}: n={row['n']!r}, not {n} as above.")
    by_run.setdefault(row["rl_run"], []).append((line, row))
  if "base" not in by_run:
    raise StudyError(f"{where}: the per-prompt rows hold no base model.")
  base_rows = [row for _, row in by_run["base"]]
  evals = []
  for name, mine in by_run.items():
    if [r["problem_key"] for _, r in mine] != [r["problem_key"] for r in base_rows]:
      raise StudyError(f"{where}: run {name} covers other problems than base.")
    at = lambda line: f"{where}, prompts.csv line {line}"  # noqa: E731
    evals.append(
      reporting.Evaluation(
        run=name,
        stage=mine[0][1]["stage"],
        method=mine[0][1]["method"],
        k_opt=mine[0][1]["k_opt"],
        correct_P=np.array([_count(r, "correct", n, at(i)) for i, r in mine], np.int64),
        rewards_Pxn=np.stack([_rewards(r, n, at(i)) for i, r in mine]),
      )
    )
  # prompts.csv files written before eval.bin_n existed have no bin_n column: their
  # binning evaluation drew n samples.
  bin_text = base_rows[0].get("bin_n") or str(n)
  try:
    bin_n = int(bin_text)
  except ValueError:
    bin_n = 0
  if bin_n < 1 or any((r.get("bin_n") or str(n)) != bin_text for r in base_rows):
    raise StudyError(f"{where}: prompts.csv's bin_n={bin_text!r} is not one integer >= 1.")
  bin_correct = [
    _count(r, "bin_correct", bin_n, f"{where}, prompts.csv line {i}") for i, r in by_run["base"]
  ]
  return Run(
    folder=folder,
    task=task,
    seed=seed,
    evals=tuple(evals),
    bin_correct=np.array(bin_correct, np.int64),
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
  ``recomputed`` (:func:`reporting.result_rows` of the per-prompt data), row by row."""
  if len(written) != len(recomputed):
    raise StudyError(
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
      raise StudyError(f"{where}, results.csv line {line}: a value is not a number.") from None
    if not (same_row and close):
      raise StudyError(
        f"{where}: results.csv disagrees with the numbers recomputed from its "
        f"prompts.csv at run {old['rl_run']}, k={old['k_eval']}: the folder was written "
        "by other code; rerun it."
      )


# Files of a run folder besides config.json (experiments.lm.main's and launch.local's):
# a folder holding one of them but no config.json is a damaged run, not another folder.
RUN_FILES = ("metrics.jsonl", "split.json", "checkpoints", "launch_status.json", "log.txt")
# launch.local's list of the sweep's runs in its --out_root.
RUNS_FILE = "runs.json"
STUDY_BINARY = "experiments.lm.main"


@dataclasses.dataclass(frozen=True)
class Study:
  """The finished runs of a study folder, and the runs of its design it lacks."""

  runs: tuple[Run, ...]
  missing: tuple[str, ...]  # "<task> seed <s>: <why>" or "<folder>: <why>", one per run.

  @property
  def seeds(self) -> list[int]:
    return sorted({r.seed for r in self.runs})


def _identity(folder: str) -> tuple[str, int]:
  """(task, seed) of a run folder, from its config.json."""
  path = os.path.join(folder, "config.json")
  config = _read_json(path)
  try:
    task, seed = config["task"]["name"], config["seed"]
  except (KeyError, TypeError):
    raise StudyError(f"{path} lacks task.name or seed.") from None
  if not isinstance(task, str) or isinstance(seed, bool) or not isinstance(seed, int):
    raise StudyError(f"{path}: task.name={task!r} or seed={seed!r} has the wrong type.")
  if task not in study_config.TASKS:
    raise StudyError(
      f"{path}: task {task!r} is not a task of the study (experiments/lm/configs/study.py: "
      f"{sorted(study_config.TASKS)})."
    )
  return task, seed


def _launch_record(folder: str) -> tuple[str | None, float]:
  """(why the launcher's record says the run did not finish, or None; its seconds).

  A folder without ``launch_status.json`` (a run started by hand) has no record:
  (None, NaN).
  """
  path = os.path.join(folder, "launch_status.json")
  if not os.path.exists(path):
    return None, float("nan")
  status = _read_json(path)
  if not isinstance(status, dict):
    raise StudyError(f"{path} does not hold a JSON object.")
  try:
    seconds = float(status.get("seconds", "nan"))
  except (TypeError, ValueError):
    raise StudyError(f"{path}: seconds={status.get('seconds')!r} is not a number.") from None
  if status.get("status") != "ok":
    return f"the launcher recorded status {status.get('status')!r} ({path})", seconds
  return None, seconds


def _listed_runs(study_dir: str) -> list[str]:
  """Folder names of the study binary's runs in ``study_dir/runs.json`` (none if absent)."""
  path = os.path.join(study_dir, RUNS_FILE)
  if not os.path.exists(path):
    return []
  listed = _read_json(path)
  if not isinstance(listed, list) or not all(
    isinstance(r, dict) and isinstance(r.get("name"), str) for r in listed
  ):
    raise StudyError(f"{path} is not launch.local's list of runs (objects with a name).")
  return [r["name"] for r in listed if r.get("binary") == STUDY_BINARY]


def load_study(study_dir: str, *, allow_incomplete: bool = False) -> Study:
  """The runs of ``study_dir``, sorted by task and seed, and the runs it lacks.

  The study's design is every task of ``experiments/lm/configs/study.py`` with every
  seed that a run folder's ``config.json`` names; a run of it is missing when it has
  no folder, is unfinished (no ``prompts.csv`` or ``results.csv``), or the launcher
  recorded it as not finished (``failed``, ``running``, ``stopped``). Missing too:
  every run that launch.local's ``runs.json`` lists without a folder, and a folder
  with a run's files but no ``config.json``. Intervals over seeds need 2 or more.

  Args:
    study_dir: the study sweep's ``--out_root``.
    allow_incomplete: summarise the finished runs of an incomplete study (fewer than
      2 seeds, or missing runs), which ``Study.missing`` then names; otherwise any
      of these stops.

  Raises:
    StudyError: if the folder holds no finished run, a run is missing (see above,
      unless ``allow_incomplete``), a run's task is not a task of the study, two
      runs share a task and seed, the seeds of a task ran different methods, or a
      file is unreadable or malformed (naming it).
  """
  if not os.path.isdir(study_dir):
    raise StudyError(f"--study_dir={study_dir!r} is not a folder.")
  runs: list[Run] = []
  missing: list[str] = []
  seen: dict[tuple[str, int], str] = {}
  names = sorted(n for n in os.listdir(study_dir) if os.path.isdir(os.path.join(study_dir, n)))
  for name in names:
    folder = os.path.join(study_dir, name)
    if not os.path.isfile(os.path.join(folder, "config.json")):
      found = [f for f in RUN_FILES if os.path.exists(os.path.join(folder, f))]
      if found:
        missing.append(f"{folder}: holds {found[0]} but no config.json")
      continue
    task, seed = _identity(folder)
    if (task, seed) in seen:
      raise StudyError(f"Two runs of task {task}, seed {seed}: {seen[task, seed]} and {folder}.")
    seen[task, seed] = folder
    failed, seconds = _launch_record(folder)
    absent = [
      f for f in ("results.csv", "prompts.csv") if not os.path.isfile(os.path.join(folder, f))
    ]
    if failed or absent:
      why = failed or f"unfinished or damaged: no {' and no '.join(absent)}"
      missing.append(f"{task} seed {seed}: {why} ({folder})")
      continue
    rows = _read_csv(os.path.join(folder, "prompts.csv"), PROMPT_COLUMNS)
    runs.append(run_from_prompt_rows(rows, task=task, seed=seed, folder=folder, seconds=seconds))
  seeds = sorted({seed for _, seed in seen})
  for task in study_config.TASKS:
    missing += [f"{task} seed {s}: no run folder" for s in seeds if (task, s) not in seen]
  missing += [
    f"{os.path.join(study_dir, n)}: listed in {RUNS_FILE} but absent"
    for n in _listed_runs(study_dir)
    if n not in names
  ]
  if not runs:
    raise StudyError(
      f"No finished run folders (config.json, prompts.csv, results.csv) in {study_dir}"
      + (f"; missing: {'; '.join(missing)}." if missing else ".")
    )
  if len(seeds) < 2:
    missing.append(f"only seed {seeds[0]}: intervals over seeds need 2 or more")
  if missing and not allow_incomplete:
    raise StudyError(
      f"{study_dir} is incomplete: {'; '.join(missing)}. Finish those runs, or pass "
      "--allow_incomplete for a report that names them."
    )
  runs.sort(key=lambda r: (r.task, r.seed))
  for task in tasks_of(runs):
    methods = {tuple(e.run for e in r.evals) for r in runs if r.task == task}
    if len(methods) != 1:
      raise StudyError(f"The seeds of task {task} ran different methods: {sorted(methods)}.")
  return Study(runs=tuple(runs), missing=tuple(missing))


def tasks_of(runs: Iterable[Run]) -> list[str]:
  return list(dict.fromkeys(r.task for r in runs))


# ---------------------------------------------------------------- across seeds


def across_seeds(values_S: Sequence[float], bounds: tuple[float, float]) -> tuple[float, ...]:
  """(mean, lo, hi): the mean of per-seed values and its Student-t interval (S − 1
  degrees of freedom) intersected with ``bounds``; NaN bounds for fewer than 2."""
  values = np.asarray(values_S, np.float64)
  if values.size < 2 or not np.all(np.isfinite(values)):
    mean = float(np.mean(values)) if values.size else float("nan")
    return mean, float("nan"), float("nan")
  iv = maxk.mean_with_interval(jnp.asarray(values), confidence=CONFIDENCE, distribution="t")
  lo, hi = float(iv.lo), float(iv.hi)
  return float(iv.mean), max(bounds[0], lo), min(bounds[1], hi)


def _fmt_seeds(values: Iterable[float]) -> str:
  return " ".join(f"{float(v):.6g}" for v in values)


def _per_seed_tables(runs: Sequence[Run]) -> dict[str, list[dict[str, Any]]]:
  """The five report tables of every run, recomputed, with a ``task`` column."""
  tables: dict[str, list[dict[str, Any]]] = {name: [] for name in reporting.FILES}
  for run in runs:
    mine = reporting.report_tables(
      run.evals,
      run.bin_correct,
      seed=run.seed,
      prompts=run.prompts,
      keys=run.keys,
      bin_n=run.bin_n or None,
    )
    written = _read_csv(os.path.join(run.folder, "results.csv"), RESULT_COLUMNS)
    check_results(written, mine["results.csv"], run.folder)
    for name, rows in mine.items():
      tables[name].extend({**row, "task": run.task} for row in rows)
  return tables


def summary_rows(tables: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
  """summary.csv from the gathered results.csv and bins.csv rows."""
  groups: dict[tuple, dict[int, dict[str, Any]]] = {}
  for scope_rows, scope_of in (
    (tables["results.csv"], lambda r: "all"),
    (tables["bins.csv"], lambda r: r["bin"]),
  ):
    for r in scope_rows:
      key = (r["task"], r["stage"], r["method"], r["k_opt"], r["rl_run"], scope_of(r), r["k_eval"])
      groups.setdefault(key, {})[r["seed"]] = r
  out = []
  order = {scope: i for i, scope in enumerate(SCOPES)}
  # By task and scope; the sort is stable, so runs and k keep their order within.
  for key in sorted(groups, key=lambda k: (k[0], order[k[5]])):
    task, stage, method, k_opt, rl_run, scope, k = key
    by_seed = groups[key]
    seeds = sorted(by_seed)
    row: dict[str, Any] = {
      "task": task,
      "stage": stage,
      "method": method,
      "k_opt": k_opt,
      "k_eval": k,
      "scope": scope,
      "num_seeds": len(seeds),
      "seeds": " ".join(str(s) for s in seeds),
    }
    for metric in ("pass_at_k", "max_at_k"):
      values = [float(by_seed[s][metric]) for s in seeds]
      mean, lo, hi = across_seeds(values, (0.0, 1.0))
      row.update({metric: mean, f"{metric}_lo": lo, f"{metric}_hi": hi})
      row[f"{metric}_seeds"] = _fmt_seeds(values)
    row["num_problems_seeds"] = " ".join(
      str(by_seed[s].get("num_problems", by_seed[s].get("num_prompts"))) for s in seeds
    )
    row["rl_run"] = rl_run
    out.append(row)
  return out


def seed_interval(diffs: Sequence[float], stderrs: Sequence[float]) -> contrasts.SeedInterval:
  """:func:`contrasts.floored_interval` of per-seed differences, its bounds intersected
  with [-1, 1]. The mean of the differences is kept where there is no interval: for
  fewer than 2 seeds, or a seed without a standard error (a set of one problem)."""
  mean = np.mean(np.asarray(diffs, np.float64)) if len(diffs) else np.float64(np.nan)
  if len(diffs) < 2:
    nan = np.full((), np.nan)
    return contrasts.SeedInterval(np.asarray(mean), nan, nan, nan, nan, np.asarray(False))
  iv = contrasts.floored_interval(diffs, stderrs, confidence=CONFIDENCE)
  return iv._replace(mean=np.asarray(mean), lo=np.maximum(iv.lo, -1.0), hi=np.minimum(iv.hi, 1.0))


def _plain(diffs: Sequence[float]) -> tuple[float, float]:
  """The unfloored t-interval's bounds in [-1, 1] (NaN for fewer than 2 seeds)."""
  if len(diffs) < 2:
    return float("nan"), float("nan")
  iv = contrasts.plain_interval(diffs, confidence=CONFIDENCE)
  return max(-1.0, float(iv.lo)), min(1.0, float(iv.hi))


def _paired_groups(paired: Sequence[dict[str, Any]]) -> dict[tuple, dict[int, dict[str, Any]]]:
  """(task, a_run, b_run, metric, k_eval) -> seed -> its paired.csv row."""
  groups: dict[tuple, dict[int, dict[str, Any]]] = {}
  for r in paired:
    key = (r["task"], r["a_run"], r["b_run"], r["metric"], int(r["k_eval"]))
    groups.setdefault(key, {})[int(r["seed"])] = r
  return groups


def contrast_rows(
  paired: Sequence[dict[str, Any]],
  declared: Sequence[contrasts.Contrast] = study_config.CONTRASTS,
) -> list[dict[str, Any]]:
  """contrasts.csv: every declared contrast of every task in ``paired`` (paired.csv
  rows), with the floored interval over seeds, its p-value, the Holm-adjusted one
  over the family of all of them (every task), the verdict, and the plain
  t-interval beside (``t_lo``, ``t_hi``).

  A contrast whose runs ``paired`` holds as b − a is negated. k = "n" is the task's
  largest k_eval (its evaluation's n).

  Raises:
    StudyError: if a task lacks the runs or the k of a declared contrast.
  """
  groups = _paired_groups(paired)
  out = []
  for task in dict.fromkeys(r["task"] for r in paired):
    n = max(int(r["k_eval"]) for r in paired if r["task"] == task)
    for c in declared:
      try:
        k = c.resolve_k(n)
      except ValueError as e:
        raise StudyError(f"Task {task}: {e}") from None
      sign, by_seed = 1.0, groups.get((task, c.a, c.b, c.metric, k))
      if by_seed is None:
        sign, by_seed = -1.0, groups.get((task, c.b, c.a, c.metric, k))
      if by_seed is None:
        raise StudyError(
          f"Task {task} has no paired difference {c.a} − {c.b} in {c.metric} at k={k}, "
          f"which the declared contrast {c.question!r} needs (configs/study.py)."
        )
      seeds = sorted(by_seed)
      diffs = [sign * float(by_seed[s]["diff"]) for s in seeds]
      ses = [float(by_seed[s]["diff_se"]) for s in seeds]
      iv = seed_interval(diffs, ses)
      t_lo, t_hi = _plain(diffs)
      out.append(
        {
          "task": task,
          "question": c.question,
          "a": c.a,
          "b": c.b,
          "measure": c.measure,
          "k": k,
          "num_seeds": len(seeds),
          "seeds": " ".join(str(s) for s in seeds),
          "diff_seeds": _fmt_seeds(diffs),
          "se_seeds": _fmt_seeds(ses),
          "diff": float(iv.mean),
          "lo": float(iv.lo),
          "hi": float(iv.hi),
          "p_value": float(iv.p_value),
          "floored": bool(iv.floored),
          "t_lo": t_lo,
          "t_hi": t_hi,
        }
      )
  adjusted = contrasts.holm([r["p_value"] for r in out]).tolist() if out else []
  for row, p_holm in zip(out, adjusted):
    row["p_holm"] = float(p_holm)
    row["verdict"] = contrasts.declared_verdict(float(p_holm))
  return out


def paired_summary_rows(
  paired: Sequence[dict[str, Any]], declared: Sequence[dict[str, Any]] = ()
) -> list[dict[str, Any]]:
  """paired_summary.csv from the gathered paired.csv rows: every pair, metric and k,
  with the floored interval over seeds and its p-value. A row that is a declared
  contrast (one of ``declared``, :func:`contrast_rows`, either sign) carries its
  ``question``, ``p_holm`` and verdict; every other row is exploratory."""
  index: dict[tuple, dict[str, Any]] = {}
  for c in declared:
    metric = contrasts.MEASURES[c["measure"]]
    index[c["task"], c["a"], c["b"], metric, int(c["k"])] = c
    index[c["task"], c["b"], c["a"], metric, int(c["k"])] = c
  out = []
  for key, by_seed in _paired_groups(paired).items():
    task, a_run, b_run, metric, k = key
    seeds = sorted(by_seed)
    diffs = [float(by_seed[s]["diff"]) for s in seeds]
    ses = [float(by_seed[s]["diff_se"]) for s in seeds]
    iv = seed_interval(diffs, ses)
    first = by_seed[seeds[0]]
    declared_row = index.get(key)
    out.append(
      {
        "task": task,
        "a_run": a_run,
        "a_method": first["a_method"],
        "a_k_opt": first["a_k_opt"],
        "b_run": b_run,
        "b_method": first["b_method"],
        "b_k_opt": first["b_k_opt"],
        "metric": metric,
        "k_eval": k,
        "num_seeds": len(seeds),
        "diff": float(iv.mean),
        "diff_lo": float(iv.lo),
        "diff_hi": float(iv.hi),
        "p_value": float(iv.p_value),
        "question": declared_row["question"] if declared_row else "",
        "p_holm": declared_row["p_holm"] if declared_row else float("nan"),
        "verdict": declared_row["verdict"]
        if declared_row
        else contrasts.exploratory_verdict(float(iv.lo), float(iv.hi)),
        "seeds": " ".join(str(s) for s in seeds),
        "diff_seeds": _fmt_seeds(diffs),
        "diff_se_seeds": _fmt_seeds(ses),
        "diff_lo_seeds": _fmt_seeds(float(by_seed[s]["diff_lo"]) for s in seeds),
        "diff_hi_seeds": _fmt_seeds(float(by_seed[s]["diff_hi"]) for s in seeds),
      }
    )
  return out


def unsolved_summary_rows(unsolved: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
  """unsolved_summary.csv: base-unsolved problems solved, pooled over seeds (Wilson's
  interval), and each RL run's paired difference to the base model's own fresh
  evaluation of the same problems, averaged over seeds with the floored interval and
  an exploratory verdict (as for :func:`paired_summary_rows`)."""
  groups: dict[tuple, list[dict[str, Any]]] = {}
  for r in unsolved:
    groups.setdefault((r["task"], r["stage"], r["method"], r["k_opt"], r["rl_run"]), []).append(r)
  out = []
  for (task, stage, method, k_opt, rl_run), rows in groups.items():
    solved = sum(int(r["solved"]) for r in rows)
    total = sum(int(r["num_base_unsolved"]) for r in rows)
    mean, se, lo, hi = reporting.wilson_interval(solved, total)
    diff = (float("nan"),) * 3
    diff_verdict = ""
    with_problems = [r for r in rows if int(r["num_base_unsolved"]) > 0]
    if stage != "base" and with_problems:  # A seed without such problems has no difference.
      iv = seed_interval(
        [float(r["diff_vs_base"]) for r in with_problems],
        [float(r["diff_vs_base_se"]) for r in with_problems],
      )
      diff = (float(iv.mean), float(iv.lo), float(iv.hi))
      diff_verdict = contrasts.exploratory_verdict(*diff[1:])
    out.append(
      {
        "task": task,
        "stage": stage,
        "method": method,
        "k_opt": k_opt,
        "num_seeds": len(rows),
        "num_base_unsolved": total,
        "solved": solved,
        "solved_fraction": mean,
        "solved_fraction_lo": lo,
        "solved_fraction_hi": hi,
        "solved_fraction_se": se,
        "solved_seeds": " ".join(f"{r['solved']}/{r['num_base_unsolved']}" for r in rows),
        "diff_vs_base": diff[0],
        "diff_vs_base_lo": diff[1],
        "diff_vs_base_hi": diff[2],
        "diff_vs_base_verdict": diff_verdict,
        "rl_run": rl_run,
      }
    )
  return out


# metrics.jsonl fields of the last inner epoch (rl.py) -> off_policy.csv columns.
OFF_POLICY_FIELDS = {
  "last_ess_frac": "ess_frac",
  "last_max_weight": "max_weight",
  "last_gap_first_order": "gap_first_order",
  "last_gap_ppo_clip": "gap_ppo_clip",
}


def _off_policy_means(path: str) -> dict[tuple[str, str], tuple[dict[str, float], int]]:
  """(run, method) -> (mean over RL steps of each OFF_POLICY_FIELDS field, steps).

  Raises:
    StudyError: naming the line of a line that is not a record, whose values do not
      match its checksum (``checkpointing.decode_records``), or lacks a field.
  """
  try:
    with open(path) as f:
      lines = f.read().splitlines()
    records = checkpointing.decode_records(lines, path)
  except OSError as e:
    raise StudyError(f"{path} cannot be read ({e.strerror}).") from None
  except workdir_lib.WorkdirError as e:
    raise StudyError(str(e)) from None
  if len(records) != len(lines):  # A finished run's log has no torn last line.
    raise StudyError(f"{path}, line {len(records) + 1}: not valid JSON.")
  values: dict[tuple[str, str], list[dict[str, float]]] = {}
  for number, record in enumerate(records, start=1):
    if record.get("stage") == "rl" and "last_ess_frac" in record:
      try:
        fields = {c: float(record.get(f, "nan")) for f, c in OFF_POLICY_FIELDS.items()}
        key = (str(record["run"]), str(record["method"]))
      except (KeyError, TypeError, ValueError):
        raise StudyError(
          f"{path}, line {number}: an RL record needs run, method and numeric "
          f"{sorted(OFF_POLICY_FIELDS)}."
        ) from None
      values.setdefault(key, []).append(fields)
  return {
    key: (
      {c: float(np.mean([s[c] for s in steps])) for c in OFF_POLICY_FIELDS.values()},
      len(steps),
    )
    for key, steps in values.items()
  }


def _every_or_no_run(runs: Sequence[Run], name: str) -> list[tuple[Run, str]]:
  """(run, path of its file ``name``) for every run, or none when no run has one.

  Raises:
    StudyError: naming the first missing file when only some runs have one (its
      numbers would cover other seeds than the rest of the summary).
  """
  paths = [(run, os.path.join(run.folder, name)) for run in runs]
  have = [os.path.exists(path) for _, path in paths]
  if any(have) and not all(have):
    absent = paths[have.index(False)][1]
    raise StudyError(f"{absent} is missing, while other runs of the study have their {name}.")
  return paths if any(have) else []


SPLIT_FIELDS = (
  "num_eval_problems",
  "distinct_sft_problems",
  "distinct_rl_problems",
  "distinct_training_problems",
  "overlap",
  "key",
)


def split_rows(runs: Sequence[Run]) -> list[dict[str, Any]]:
  """splits.csv: per run, the held-out split's sizes and ``overlap`` (split.json;
  none when no run has one).

  Raises:
    StudyError: if only some runs have a split.json, one is malformed, or one
      reports training problems that share a key with an evaluation problem
      (``overlap`` > 0).
  """
  out = []
  for run, path in _every_or_no_run(runs, "split.json"):
    split = _read_json(path)
    if not isinstance(split, dict) or not all(f in split for f in SPLIT_FIELDS):
      raise StudyError(f"{path} lacks one of the fields {list(SPLIT_FIELDS)}.")
    if split["overlap"] != 0:
      raise StudyError(f"{path}: {split['overlap']} training problems are evaluation problems.")
    out.append({"task": run.task, "seed": run.seed, **{f: split[f] for f in SPLIT_FIELDS}})
  return out


def off_policy_rows(runs: Sequence[Run]) -> list[dict[str, Any]]:
  """off_policy.csv: per task and RL run, the mean over RL steps of the last inner
  epoch's ESS fraction, largest normalised weight and (max@k runs) relative distance
  of the first-order and PPO-clip weights from the exact ones, per seed and averaged
  over seeds (none when no run has a metrics.jsonl).

  Raises:
    StudyError: if only some runs have a metrics.jsonl, one is damaged, or the seeds
      of a task logged different RL runs or numbers of steps.
  """
  per: dict[tuple[str, str, str], dict[int, tuple[dict[str, float], int]]] = {}
  logged: dict[str, set[tuple[str, str]]] = {}
  for run, path in _every_or_no_run(runs, "metrics.jsonl"):
    means = _off_policy_means(path)
    if logged.setdefault(run.task, set(means)) != set(means):
      raise StudyError(f"{path} logs other RL runs than the other seeds of task {run.task}.")
    for (name, method), one in means.items():
      per.setdefault((run.task, name, method), {})[run.seed] = one
  out = []
  for (task, name, method), by_seed in per.items():
    seeds = sorted(by_seed)
    steps = {by_seed[s][1] for s in seeds}
    if len(steps) != 1:
      raise StudyError(
        f"The seeds of task {task} logged {sorted(steps)} RL steps of run {name} "
        "(metrics.jsonl): a log lacks records."
      )
    row: dict[str, Any] = {
      "task": task,
      "rl_run": name,
      "method": method,
      "num_seeds": len(seeds),
      "steps": steps.pop(),
    }
    for column in OFF_POLICY_FIELDS.values():
      values = [by_seed[s][0][column] for s in seeds]
      row[column] = float(np.mean(values))
      row[f"{column}_seeds"] = _fmt_seeds(values)
    out.append(row)
  return out


# ---------------------------------------------------------------------- figures


def write_figures(out_dir: str, tables: dict[str, list[dict[str, Any]]], tasks) -> list[str]:
  """The figures of the module docstring; returns their paths."""
  paths = []
  for task in tasks:
    mine = [r for r in tables["summary.csv"] if r["task"] == task]
    fig = plotting.study_pass_at_k_figure(
      [r for r in mine if r["scope"] == "all"],
      f"{task}: held-out pass@k and max@k, mean over seeds with 95% t-interval over seeds",
    )
    paths.append(plot_style.save(fig, os.path.join(out_dir, f"pass_at_k_{task}.png")))
    fig = plotting.study_bins_figure(
      [r for r in mine if r["scope"] != "all"],
      [r for r in tables["unsolved_summary.csv"] if r["task"] == task],
      f"{task}: held-out problems by the base model's pass@1 (its own independent samples), "
      "mean over seeds with 95% t-interval over seeds",
    )
    paths.append(plot_style.save(fig, os.path.join(out_dir, f"bins_{task}.png")))
    fig = plotting.study_contrasts_figure(
      tables["paired_summary.csv"],
      FIGURE_PAIRS,
      task,
      FIGURE_KS,
      f"{task}: differences between methods (a − b), paired on the same problems per seed",
    )
    paths.append(plot_style.save(fig, os.path.join(out_dir, f"contrasts_{task}.png")))
  return paths


# ----------------------------------------------------------------------- report


def _cell(mean: float, lo: float, hi: float) -> str:
  """``mean [lo, hi]``, or the mean alone where there is no interval."""
  mean, lo, hi = float(mean), float(lo), float(hi)
  if not math.isfinite(lo):
    return f"{mean:.3f}"
  return f"{mean:.3f} [{lo:.3f}, {hi:.3f}]"


def _estimate(row: dict[str, Any], metric: str) -> str:
  return _cell(row[metric], row[f"{metric}_lo"], row[f"{metric}_hi"])


def _num(x: float) -> str:
  return f"{x:.3f}" if math.isfinite(x) else "–"


def _label(r: dict[str, Any]) -> str:
  if r["stage"] == "base":
    return "base"
  k_opt = "" if r["k_opt"] in ("", "n/a") else f" k={r['k_opt']}"
  return f"`{r['method']}`{k_opt}"


def _table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
  lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
  lines += ["| " + " | ".join(row) + " |" for row in rows]
  return lines + [""]


_REPORT_HEADER = """\
Written by `python -m experiments.lm.study_summary` from the runs of
`python -m launch.local --sweep=launch/sweeps/lm_study.json --out_root=out/lm_study`
(config `experiments/lm/configs/study.py`). Each seed draws its own held-out
problems, warm start, training problems and samples. The module docstrings of
`experiments/lm/study_summary.py` and `experiments/lm/contrasts.py` define every
column and the statistics.
"""

_DECLARED_NOTE = """\
The comparisons fixed before the runs (`CONTRASTS` of `configs/study.py`; a − b,
paired on the same problems within each seed). The interval over seeds is the
Student-t interval with the between-seed variance floored at the within-seed one
(the mean over seeds of each difference's squared standard error over problems), as
seeds that agree by chance would otherwise give a narrow interval. Holm's correction
runs over the family of every declared contrast of every task ({m} tests), and a
contrast is `significant` when its Holm-adjusted p-value is below 0.05; the
uncorrected p-value is beside it.
"""

_EXPLORATORY_NOTE = """\
Everything below is exploratory: comparisons not declared in advance, with no
correction for their number (about 45 per task). Their verdict says only whether the
floored interval over seeds excludes 0; across many such comparisons some will by
chance. Cells: mean over seeds [95% interval over seeds; Student-t for a method's
mean, floored Student-t for a difference]; the per-seed intervals over problems are
in the CSV files.

Runs (wall time on 2 CPU cores, one run at a time):
"""

_OFF_POLICY_NOTE = """\
Off-policy diagnostics of the last inner epoch, mean over RL steps and seeds: the
effective sample size of the importance ratios over n (Kong 1992; 1 on-policy),
the largest ratio over its group's sum (1/n on-policy), and for max@k runs the
relative distance ||w − w_exact|| / ||w_exact|| of the first-order and PPO
weights (before clipping) from the exact ones on the same batch (0 at k_opt = 1,
where the three coincide):
"""


def _overall_tables(summary: Sequence[dict[str, Any]], n: int) -> list[str]:
  """pass@k and max@k over all problems at :data:`TABLE_KS`, a row per run."""
  rows = [r for r in summary if r["scope"] == "all"]
  cells = {(_label(r), int(r["k_eval"])): r for r in rows}
  labels = list(dict.fromkeys(_label(r) for r in rows))
  ks = [k for k in TABLE_KS if k <= n]
  lines = []
  for metric, short in (("pass_at_k", "pass"), ("max_at_k", "max")):
    lines += [f"Held-out {short}@k, all problems:", ""]
    lines += _table(
      ("method", *[f"{short}@{k}" for k in ks]),
      ((lab, *[_estimate(cells[lab, k], metric) for k in ks]) for lab in labels),
    )
  return lines


def _bin_table(summary: Sequence[dict[str, Any]], k: int) -> list[str]:
  """pass@k per base-difficulty bin, a row per run."""
  rows = [r for r in summary if r["scope"] != "all" and int(r["k_eval"]) == k]
  scopes = [s for s in reporting.BINS if any(r["scope"] == s for r in rows)]
  counts = {r["scope"]: r["num_problems_seeds"].replace(" ", "+") for r in rows}
  cells = {(_label(r), r["scope"]): r for r in rows}
  labels = list(dict.fromkeys(_label(r) for r in rows))
  lines = [f"pass@{k} by the base model's difficulty bin (problems per seed in the header):", ""]
  return lines + _table(
    ("method", *[f"{s} ({counts[s]})" for s in scopes]),
    (
      (lab, *[_estimate(cells[lab, s], "pass_at_k") if (lab, s) in cells else "–" for s in scopes])
      for lab in labels
    ),
  )


def _unsolved_table(unsolved_summary: Sequence[dict[str, Any]]) -> list[str]:
  lines = [
    "Base-unsolved problems solved (>= 1 of n correct): pooled over seeds with Wilson's",
    "interval, and the difference to the base model's own fresh evaluation of the same",
    "problems (paired within each seed, mean over seeds):",
    "",
  ]
  return lines + _table(
    (
      "method",
      "solved (per seed)",
      "fraction [Wilson]",
      "minus base [floored interval]",
      "verdict",
    ),
    (
      (
        _label(r),
        f"{r['solved']}/{r['num_base_unsolved']} ({r['solved_seeds']})",
        _estimate(r, "solved_fraction"),
        "" if r["stage"] == "base" else _estimate(r, "diff_vs_base"),
        r["diff_vs_base_verdict"],
      )
      for r in unsolved_summary
    ),
  )


def _p(p: float) -> str:
  """A p-value to 3 decimals, ``<0.001`` below that."""
  p = float(p)
  if not math.isfinite(p):
    return "–"
  return "<0.001" if p < 0.001 else f"{p:.3f}"


DECLARED_HEADER = (
  "task",
  "declared contrast",
  "a − b [floored interval]",
  "p",
  "Holm p",
  "verdict",
)


def declared_table(rows: Sequence[dict[str, Any]]) -> list[str]:
  """The declared contrasts (:func:`contrast_rows`) as a Markdown table, a row each."""
  return _table(
    DECLARED_HEADER,
    (
      (
        r["task"],
        r["question"],
        _cell(r["diff"], r["lo"], r["hi"]),
        _p(r["p_value"]),
        _p(r["p_holm"]),
        r["verdict"],
      )
      for r in rows
    ),
  )


def _key_differences(paired_summary: Sequence[dict[str, Any]], n: int) -> list[str]:
  """:data:`FIGURE_PAIRS` in pass@k and max@k at k = 1 and n (exploratory)."""
  index = {(r["a_run"], r["b_run"], r["metric"], int(r["k_eval"])): r for r in paired_summary}
  rows = []
  for a, b, label in FIGURE_PAIRS:
    for metric, short in (("pass_at_k", "pass"), ("max_at_k", "max")):
      for k in (1, n):
        r = index.get((a, b, metric, k))
        if r is not None:
          per_seed = ", ".join(f"{float(d):+.3f}" for d in r["diff_seeds"].split())
          rows.append(
            (label, f"{short}@{k}", _estimate(r, "diff"), _p(r["p_value"]), per_seed, r["verdict"])
          )
  lines = [
    "Key differences (a − b, paired on the same problems within each seed; a declared",
    "contrast's row carries its Holm verdict):",
    "",
  ]
  return lines + _table(
    ("a vs b", "metric", "mean over seeds [floored interval]", "p", "per seed", "verdict"), rows
  )


def _off_policy_table(off_policy: Sequence[dict[str, Any]]) -> list[str]:
  if not off_policy:
    return []
  columns = ("ess_frac", "max_weight", "gap_first_order", "gap_ppo_clip")
  return [_OFF_POLICY_NOTE] + _table(
    ("run", "method", "ESS / n", "largest normalised weight", "gap first-order", "gap PPO-clip"),
    ((r["rl_run"], f"`{r['method']}`", *(_num(r[c]) for c in columns)) for r in off_policy),
  )


_NUMBER_WORDS = ("no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")


def _count_of(count: int, noun: str) -> str:
  """``three seeds``, ``one task``; digits from 10 on."""
  word = _NUMBER_WORDS[count] if count < len(_NUMBER_WORDS) else str(count)
  return f"{word} {noun}{'' if count == 1 else 's'}"


def report_title(runs: Sequence[Run]) -> str:
  """The README's title, counting the tasks and the seeds summarised."""
  tasks, seeds = tasks_of(runs), {r.seed for r in runs}
  return (
    f"# LM study: every estimator, {_count_of(len(tasks), 'task')}, {_count_of(len(seeds), 'seed')}"
  )


def _incomplete_note(missing: Sequence[str]) -> list[str]:
  """The README's warning that the study lacks runs (``--allow_incomplete``)."""
  if not missing:
    return []
  lines = [
    "**INCOMPLETE STUDY.** Summarised with `--allow_incomplete` without these runs of",
    "its design; its intervals and verdicts cover fewer seeds than designed, and the",
    "tasks may differ in their seeds:",
    "",
  ]
  return lines + [f"* {m}" for m in missing] + [""]


def report_markdown(
  runs,
  declared: Sequence[dict[str, Any]],
  summary,
  paired_summary,
  unsolved_summary,
  off_policy,
  missing: Sequence[str] = (),
) -> str:
  """README.md of the summary folder: (first, the runs ``missing`` from an
  incomplete study) the ``declared`` contrasts (:func:`contrast_rows`), then, under
  an "Exploratory" heading, what ran and per task the tables of its rows."""
  lines = [report_title(runs), ""]
  lines += _incomplete_note(missing)
  lines += [_REPORT_HEADER, "## Declared contrasts", ""]
  lines += [_DECLARED_NOTE.format(m=len(declared))]
  lines += declared_table(declared)
  lines += ["## Exploratory", "", _EXPLORATORY_NOTE]
  lines += _table(
    ("task", "seed", "methods", "problems", "minutes"),
    (
      (r.task, str(r.seed), str(len(r.evals)), str(len(r.keys)), f"{r.seconds / 60:.1f}")
      for r in runs
    ),
  )
  for task in tasks_of(runs):
    mine = [r for r in summary if r["task"] == task]
    n = max(int(r["k_eval"]) for r in mine)
    lines += [f"### {task}", ""]
    lines += _overall_tables(mine, n)
    lines += _bin_table(mine, 1) + _bin_table(mine, n)
    lines += _unsolved_table([r for r in unsolved_summary if r["task"] == task])
    lines += _key_differences([r for r in paired_summary if r["task"] == task], n)
    lines += _off_policy_table([r for r in off_policy if r["task"] == task])
  return "\n".join(lines).rstrip("\n") + "\n"


# ------------------------------------------------------------------------- main


def summarize(
  study_dir: str, out_dir: str, *, allow_incomplete: bool = False
) -> dict[str, list[dict[str, Any]]]:
  """Writes every output of the module docstring to ``out_dir``; returns the tables.

  Raises:
    StudyError: the study cannot be summarised (see :func:`load_study`; with
      ``allow_incomplete`` the README names the missing runs instead), before
      anything is written.
  """
  study = load_study(study_dir, allow_incomplete=allow_incomplete)
  for line in study.missing:
    logging.warning("Incomplete study, summarised without: %s", line)
  runs = study.runs
  tables = _per_seed_tables(runs)
  tables["summary.csv"] = summary_rows(tables)
  tables["contrasts.csv"] = contrast_rows(tables["paired.csv"])
  tables["paired_summary.csv"] = paired_summary_rows(tables["paired.csv"], tables["contrasts.csv"])
  tables["unsolved_summary.csv"] = unsolved_summary_rows(tables["unsolved.csv"])
  tables["off_policy.csv"] = off_policy_rows(runs)
  tables["splits.csv"] = split_rows(runs)
  out_dir = outputs.prepare_out_dir(out_dir)
  for name, rows in tables.items():
    if rows:
      outputs.write_results_csv(out_dir, rows, filename=name)
    elif os.path.exists(os.path.join(out_dir, name)):
      os.remove(os.path.join(out_dir, name))  # A previous summary's table, now empty.
  tasks = tasks_of(runs)
  write_figures(out_dir, tables, tasks)
  report = report_markdown(
    runs,
    tables["contrasts.csv"],
    tables["summary.csv"],
    tables["paired_summary.csv"],
    tables["unsolved_summary.csv"],
    tables["off_policy.csv"],
    study.missing,
  )
  with open(os.path.join(out_dir, "README.md"), "w") as f:
    f.write(report)
  return tables


PAIRED_COLUMNS = ("task", "seed", "a_run", "b_run", "metric", "k_eval", "diff", "diff_se")


def contrasts_from_paired(paired_csv: str, out_dir: str) -> list[dict[str, Any]]:
  """Writes ``out_dir/contrasts.csv`` (:func:`contrast_rows`) from a study's gathered
  ``paired.csv`` alone, e.g. a committed summary whose run folders are gone::

    python -m experiments.lm.study_summary --from_paired=docs/lm_study/paired.csv \\
      --out_dir=docs/lm_study

  paired.csv's ``diff_se`` is each seed's standard error over problems, as the
  full summary uses it. Returns the rows.

  Raises:
    StudyError: if the file cannot be read, lacks a column or a declared contrast,
      or a value is not a number.
  """
  rows = _read_csv(paired_csv, PAIRED_COLUMNS)
  try:
    for r in rows:
      int(r["seed"]), int(r["k_eval"]), float(r["diff"]), float(r["diff_se"])
  except ValueError:
    raise StudyError(f"{paired_csv}: a seed, k_eval, diff or diff_se is not a number.") from None
  if not rows:
    raise StudyError(f"{paired_csv} holds no rows.")
  out = contrast_rows(rows)
  outputs.write_results_csv(outputs.prepare_out_dir(out_dir), out, filename="contrasts.csv")
  return out


def main(argv: Sequence[str]) -> None:
  """The binary: :func:`summarize` (or, with ``--from_paired``,
  :func:`contrasts_from_paired`), a refused study ending the process with one error
  line and exit code 1."""
  if len(argv) > 1:
    raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
  try:
    if _FROM_PAIRED.value is not None:
      contrasts_from_paired(_FROM_PAIRED.value, _OUT_DIR.value)
    else:
      summarize(_STUDY_DIR.value, _OUT_DIR.value, allow_incomplete=_ALLOW_INCOMPLETE.value)
  except StudyError as e:
    raise SystemExit(f"experiments.lm.study_summary: {e}") from None


if __name__ == "__main__":
  app.run(main)
