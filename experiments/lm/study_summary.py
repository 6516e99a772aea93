r"""The LM study across seeds: one table set, intervals over seeds, verdicts, figures.

Usage, on the launcher's folder or on the committed copies of its runs
(``experiments.lm.archive_runs``)::

  python -m experiments.lm.study_summary --study_dir=out/lm_study --out_dir=out/lm_study/summary
  python -m experiments.lm.study_summary --study_dir=docs/lm_study/runs --out_dir=docs/lm_study

Each run folder of ``--study_dir`` (one task and one seed of
``experiments/lm/configs/study.py``) holds its per-prompt file ``prompts.csv``, its
training curves ``steps.csv`` and its ``split.json``; nothing else is needed (no
``metrics.jsonl``, no checkpoints). Every evaluation number written here is
recomputed from the per-prompt counts and rewards by :mod:`experiments.lm.reporting`
and checked against the run's own ``results.csv`` and ``reward_hist.csv`` (a folder
whose files disagree, e.g. written by other code, stops the summary).

The summary covers the whole study or stops (one line naming the file or run, exit
code 1, nothing written). The study is its design, ``TASKS`` x ``SEEDS`` of
``configs/study.py``, and it is complete when every one of these runs is present and
finished (``prompts.csv`` and ``results.csv``, and status ``ok`` where
``launch.local`` recorded one); also every run that launch.local's ``runs.json``
lists; no run of a task or seed outside the design, no folder with a run's files but
no ``config.json``; and every file readable and well formed (``steps.csv``: numbers
where numbers belong, every RL row complete, no repeated step, the RL runs of its
``prompts.csv``, the same number of RL steps in every seed of a task).
``--allow_incomplete`` summarises the finished runs of an incomplete study instead;
its README then names every missing run before anything else. The title names the
method families and counts the tasks and seeds summarised.

Two kinds of interval, because the seeds of the study differ in everything: each
seed draws its own evaluation problems, warm start, training problems and samples.

* **Per seed, over prompts** (the runs' own files, gathered here with a ``task``
  column): the 95% normal interval of the mean over that seed's problems. It
  covers the choice of problems and the sampling noise of the evaluation, not the
  randomness of training.
* **Across seeds**: the mean of the per-seed estimates with a 95% interval over the
  S seeds (S − 1 degrees of freedom), which covers the whole pipeline, training
  included. For a difference between two methods paired within seeds with a
  within-seed standard error (``contrasts.csv``, ``paired_summary.csv``,
  ``unsolved_summary.csv``) it is the *floored* Student-t interval of
  :func:`experiments.lm.contrasts.floored_interval`: the between-seed variance is
  floored at the within-seed one (the mean of the seeds' squared standard errors
  over problems), since with 3-8 seeds the sample variance of a few differences that
  happen to agree can be far below the evaluation noise it must include. Everything
  else (a method's pass@k or max@k in ``summary.csv``; the training quantities of
  ``dynamics.csv`` and ``solved_training.csv``, which have no within-seed standard
  error) gets the plain Student-t interval. Intervals of quantities in [0, 1] are
  intersected with [0, 1] (differences with [-1, 1]; counts with [0, inf)).

Verdicts. The comparisons ``CONTRASTS`` of ``experiments/lm/configs/study.py`` are
declared in advance and applied to every task; the family of Holm's correction is
all of them over all tasks (the conservative choice, and what a reviewer counts). A
declared contrast is ``significant`` when its Holm-adjusted p-value is below 0.05
and ``not significant`` otherwise. Every other number is exploratory; a difference's
verdict is ``exploratory, excludes 0`` or ``exploratory, includes 0`` (its interval;
``exploratory, no interval`` with one seed), with no correction for the ~45
comparisons per task and no claim about error rates.

Outputs in ``--out_dir`` (no gathered ``prompts.csv``: the run folders hold theirs,
and at 1024 binning samples it would be large):

* ``results.csv``, ``bins.csv``, ``unsolved.csv``, ``paired.csv``: every run's
  table, recomputed, with a ``task`` column;
* ``summary.csv``: per task, method, scope (``all`` problems or one base-difficulty
  bin) and k = 1..n, the per-seed pass@k and max@k (``*_seeds``, space-separated, in
  seed order) and their mean with the t-interval over seeds;
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
* ``unsolved_summary.csv``: per task and method, the base-unsolved problems (no
  correct sample among the base model's ``bin_n`` binning samples, 1024 in the
  study) solved, pooled over seeds (Wilson's interval; each seed's problems are
  distinct), and the paired difference to the base model's fresh evaluation, across
  seeds with the floored interval and an exploratory verdict;
* ``dynamics.csv`` (from ``steps.csv``; exploratory): one row per task, run and
  ``quantity``, with ``value_seeds`` (per seed), ``mean`` and the t-interval ``lo``,
  ``hi``, and ``step_seeds`` (each seed's last step). Per RL run:
  ``clip_frac_median`` (median over RL steps of the share of samples clipped at the
  last inner epoch), ``grad_clipped_share`` (share of RL steps whose gradient was
  clipped), ``grad_norm_median``, ``kl_to_warm_start_final`` and ``entropy_final``
  (at the last RL step), ``ess_frac_mean`` (mean over RL steps of the effective
  sample size over n) and ``solved_cumulative_final``; per task one row
  ``rl_run = warm_start``, ``warm_pass_at_1_final``: the warm start's last held-out
  pass@1 of the SFT curve, which the study's SFT steps aim to put in [0.1, 0.3];
* ``crossings.csv`` (exploratory): per task, metric (``pass_at_k``, ``max_at_k``) and
  RL run, ``crossing_k``: the smallest k in 1..n where the run's mean over seeds
  falls below the base model's (``none`` if it never does), and
  ``crossing_k_seeds``, the same on each seed's own curves;
* ``solved_training.csv`` (exploratory; PKPO's measure of solving harder problems,
  on training problems): per task and RL run, the distinct training problems with a
  correct sample in some RL step by the last (per seed, mean, t-interval), and the
  difference to GRPO within each seed (its runs share the training prompts; mean,
  plain t-interval, verdict);
* ``reward_hist.csv``: per task, evaluation and reward bin
  (:data:`experiments.lm.reporting.REWARD_BINS`), the samples' count summed over
  seeds, its ``fraction`` of all samples, and each seed's fraction;
* ``splits.csv``: per run, the held-out split (``split.json``): evaluation problems,
  distinct training problems, ``overlap`` (0; anything else stops the summary), and
  ``near_eval_problems``, ``near_eval_share``, ``near_definition`` (held-out problems
  with a close training problem; empty where a split.json predates them);
* figures per task: ``pass_at_k_<task>.png`` (pass@k and max@k for k = 1..n, log x,
  mean over seeds with the t-interval band), ``bins_<task>.png``,
  ``contrasts_<task>.png`` (the key differences, per seed and across seeds, floored
  interval coloured by verdict), ``training_<task>.png`` (reward, entropy, KL to the
  warm start and clip fraction against the RL step: mean over seeds with the
  pointwise 95% t-interval over seeds as band), ``warm_start_<task>.png`` (held-out
  pass@1 against the SFT step, each seed and their mean, the target range shaded),
  ``rewards_<task>.png`` (reward histograms per method, log scale);
* ``README.md``: in this order the runs (minutes each), the declared contrasts
  (uncorrected and Holm p), the warm start (last pass@1 per seed and how many lie in
  [0.1, 0.3]), training dynamics, pass@k / max@k at k = 1, 4, 16, n, crossings, each
  method at its own k_opt against base and GRPO, base-unsolved problems, PKPO's
  training-problem measure, reward histograms, split closeness, then under
  "Exploratory" the rest (bins, key differences).

``--from_paired=PATH`` writes only ``contrasts.csv`` into ``--out_dir``, from a
study's gathered ``paired.csv`` (e.g. a committed one whose run folders are gone)::

  python -m experiments.lm.study_summary --from_paired=docs/lm_study_3seed/paired.csv \
    --out_dir=/tmp/contrasts
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
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
from experiments.lm import contrasts
from experiments.lm import plotting
from experiments.lm import reporting
from experiments.lm.configs import study as study_config
import maxk

CONFIDENCE = reporting.CONFIDENCE
SCOPES = ("all", *reporting.BINS)
# Report columns: the k of pass@k / max@k shown in the Markdown tables, besides n.
TABLE_KS = (1, 4, 16)  # And n.
# The pairs of the contrasts figures and the README's exploratory table of key
# differences: (a_run, b_run, label), drawn at k = 1 and n where the study ran both.
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

_STUDY_DIR = flags.DEFINE_string(
  "study_dir",
  "out/lm_study",
  "The study sweep's --out_root, or a folder of its archived runs (experiments.lm.archive_runs).",
)
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
# None of them is a file this summary writes, so a summary inside the study folder
# (the default --out_dir) is not taken for a run.
RUN_FILES = (
  "steps.csv",
  "split.json",
  "metrics.jsonl",
  "checkpoints",
  "launch_status.json",
  "log.txt",
)
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
  if seed not in study_config.SEEDS:
    raise StudyError(
      f"{path}: seed {seed} is not a seed of the study (experiments/lm/configs/study.py: "
      f"SEEDS = {tuple(study_config.SEEDS)})."
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

  ``study_dir`` is the sweep's ``--out_root`` or a folder of archived runs
  (``experiments.lm.archive_runs``); folders whose names start with "." (an
  interrupted archive's partial copies) are not read. The study's design is
  ``TASKS`` x ``SEEDS`` of ``experiments/lm/configs/study.py``; a run of it is
  missing when it has no folder, is unfinished (no ``prompts.csv`` or
  ``results.csv``), or the launcher recorded it as not finished (``failed``,
  ``running``, ``stopped``). Missing too: every run that launch.local's
  ``runs.json`` lists without a folder, and a folder with a run's files but no
  ``config.json``. Intervals over seeds need 2 or more.

  Args:
    study_dir: the study sweep's ``--out_root``, or the archive of its runs.
    allow_incomplete: summarise the finished runs of an incomplete study (missing
      runs, or fewer than 2 seeds), which ``Study.missing`` then names; otherwise
      any of these stops.

  Raises:
    StudyError: if the folder holds no finished run, a run is missing (see above,
      unless ``allow_incomplete``), a run's task or seed is not one of the study's,
      two runs share a task and seed, the seeds of a task ran different methods, or
      a file is unreadable or malformed (naming it).
  """
  if not os.path.isdir(study_dir):
    raise StudyError(f"--study_dir={study_dir!r} is not a folder.")
  runs: list[Run] = []
  missing: list[str] = []
  seen: dict[tuple[str, int], str] = {}
  names = sorted(
    n
    for n in os.listdir(study_dir)
    if not n.startswith(".") and os.path.isdir(os.path.join(study_dir, n))
  )
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
  for task in study_config.TASKS:
    missing += [
      f"{task} seed {s}: no run folder" for s in study_config.SEEDS if (task, s) not in seen
    ]
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
  seeds = sorted({r.seed for r in runs})
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


def across_seeds_many(
  values: Sequence[Sequence[float]], bounds: tuple[float, float]
) -> list[tuple[float, ...]]:
  """:func:`across_seeds` of each sequence of ``values``, one batched call per
  number of seeds (the same numbers, far fewer dispatches)."""
  out: list[tuple[float, ...]] = [()] * len(values)
  by_size: dict[int, list[int]] = {}
  for i, v in enumerate(values):
    if len(v) < 2 or not np.all(np.isfinite(np.asarray(v, np.float64))):
      out[i] = across_seeds(v, bounds)
    else:
      by_size.setdefault(len(v), []).append(i)
  for indices in by_size.values():
    batch = jnp.asarray(np.array([values[i] for i in indices], np.float64))
    iv = maxk.mean_with_interval(batch, confidence=CONFIDENCE, distribution="t")
    for i, mean, lo, hi in zip(indices, np.asarray(iv.mean), np.asarray(iv.lo), np.asarray(iv.hi)):
      out[i] = (float(mean), max(bounds[0], float(lo)), min(bounds[1], float(hi)))
  return out


def _fmt_seeds(values: Iterable[float]) -> str:
  return " ".join(f"{float(v):.6g}" for v in values)


def check_reward_hist(
  written: Sequence[dict[str, str]], recomputed: Sequence[dict[str, Any]], where: str
) -> None:
  """Raises StudyError unless reward_hist.csv rows ``written`` hold the counts of
  ``recomputed`` (:func:`reporting.reward_histogram_rows` of the per-prompt data)."""
  old = [(r["rl_run"], r["bin"], r["count"]) for r in written]
  new = [(r["rl_run"], r["bin"], str(r["count"])) for r in recomputed]
  if old != new:
    raise StudyError(
      f"{where}: reward_hist.csv disagrees with the histogram of its prompts.csv's "
      "rewards: the folder was written by other code; rerun it."
    )


# The gathered per-seed tables written to --out_dir (the runs hold their prompts.csv).
GATHERED = ("results.csv", "bins.csv", "unsolved.csv", "paired.csv")


def _per_seed_tables(runs: Sequence[Run]) -> dict[str, list[dict[str, Any]]]:
  """The report tables of every run (:data:`GATHERED`, and each seed's reward
  histogram under ``reward_hist_seeds``), recomputed, with a ``task`` column."""
  tables: dict[str, list[dict[str, Any]]] = {name: [] for name in GATHERED}
  tables["reward_hist_seeds"] = []
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
    mine["reward_hist_seeds"] = reporting.reward_histogram_rows(run.evals, run.seed)
    path = os.path.join(run.folder, "reward_hist.csv")
    if os.path.exists(path):  # Runs written before reward_hist.csv existed have none.
      written = _read_csv(path, ("rl_run", "bin", "count"))
      check_reward_hist(written, mine["reward_hist_seeds"], run.folder)
    for name in tables:
      tables[name].extend({**row, "task": run.task} for row in mine[name])
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
  pending: list[tuple[dict[str, Any], str, list[float]]] = []  # Rows awaiting intervals.
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
      row.update(dict.fromkeys((metric, f"{metric}_lo", f"{metric}_hi"), math.nan))
      row[f"{metric}_seeds"] = _fmt_seeds(values)
      pending.append((row, metric, values))
    row["num_problems_seeds"] = " ".join(
      str(by_seed[s].get("num_problems", by_seed[s].get("num_prompts"))) for s in seeds
    )
    row["rl_run"] = rl_run
    out.append(row)
  intervals = across_seeds_many([values for _, _, values in pending], (0.0, 1.0))
  for (row, metric, _), (mean, lo, hi) in zip(pending, intervals):
    row.update({metric: mean, f"{metric}_lo": lo, f"{metric}_hi": hi})
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
# Fields of split.json files written since the near-duplicate count existed; empty
# in splits.csv for older ones.
NEAR_FIELDS = ("near_eval_problems", "near_eval_share", "near_definition")


def split_rows(runs: Sequence[Run]) -> list[dict[str, Any]]:
  """splits.csv: per run, the held-out split's sizes, ``overlap`` and how many
  evaluation problems have a near neighbour among the training problems
  (``near_eval_problems``, ``near_eval_share``, ``near_definition``; empty where
  split.json lacks them), from split.json (no rows when no run has one).

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
    out.append(
      {
        "task": run.task,
        "seed": run.seed,
        **{f: split[f] for f in SPLIT_FIELDS},
        **{f: split.get(f, "") for f in NEAR_FIELDS},
      }
    )
  return out


# ------------------------------------------------------------- training curves

# steps.csv columns of every RL row (experiments/lm/dynamics.py).
RL_STEP_FIELDS = (
  "reward",
  "entropy",
  "kl_to_warm_start",
  "clip_frac",
  "ess_frac",
  "grad_norm",
  "grad_clipped",
  "solved_cumulative",
)
STEPS_COLUMNS = ("stage", "run", "step", "warm_pass_at_1", *RL_STEP_FIELDS)


@dataclasses.dataclass(frozen=True)
class Steps:
  """One run's training curves (its ``steps.csv``).

  ``warm``: the warm-start curve, ``[E, 2]`` rows (SFT step, held-out pass@1) in
  step order; ``rl``: per RL run, ``step`` and each of :data:`RL_STEP_FIELDS` as
  float64 arrays in step order.
  """

  warm: np.ndarray
  rl: dict[str, dict[str, np.ndarray]]

  def steps(self, rl_run: str) -> int:
    return len(self.rl[rl_run]["step"])


def _number(text: str, path: str, line: int, column: str) -> float:
  try:
    return float(text)
  except ValueError:
    raise StudyError(f"{path}, line {line}: {column}={text!r} is not a number.") from None


def read_steps(path: str, rl_runs: Sequence[str]) -> Steps:
  """The training curves in ``path`` (a run's steps.csv) of a run whose RL runs are
  ``rl_runs``.

  Raises:
    StudyError: naming the file and line if a row's stage is not sft or rl, a value
      is not a number, an RL row lacks one of :data:`RL_STEP_FIELDS`, a step repeats,
      or the file's RL runs are not ``rl_runs``.
  """
  warm: list[tuple[float, float]] = []
  rl: dict[str, list[dict[str, float]]] = {}
  for line, row in enumerate(_read_csv(path, STEPS_COLUMNS), start=2):
    stage = row["stage"]
    if stage not in ("sft", "rl"):
      raise StudyError(f"{path}, line {line}: stage={stage!r} is neither sft nor rl.")
    step = _number(row["step"], path, line, "step")
    if stage == "sft":
      if row["warm_pass_at_1"]:
        warm.append((step, _number(row["warm_pass_at_1"], path, line, "warm_pass_at_1")))
      continue
    absent = [c for c in RL_STEP_FIELDS if not row[c]]
    if absent:
      raise StudyError(f"{path}, line {line}: an RL row without {', '.join(absent)}.")
    values = {c: _number(row[c], path, line, c) for c in RL_STEP_FIELDS}
    rl.setdefault(row["run"], []).append({"step": step, **values})
  if sorted(rl) != sorted(rl_runs):
    raise StudyError(
      f"{path} holds the RL runs {sorted(rl)}, its prompts.csv {sorted(rl_runs)}: the "
      "files come from different runs."
    )
  curves = {}
  for name, rows in rl.items():
    rows.sort(key=lambda r: r["step"])
    steps = [r["step"] for r in rows]
    if len(set(steps)) != len(steps):
      raise StudyError(f"{path}: run {name} repeats an RL step (a log written twice).")
    columns = ("step", *RL_STEP_FIELDS)
    curves[name] = {c: np.array([r[c] for r in rows], np.float64) for c in columns}
  warm.sort()
  if len({s for s, _ in warm}) != len(warm):
    raise StudyError(f"{path}: the warm-start curve repeats an SFT step.")
  return Steps(warm=np.array(warm, np.float64).reshape(-1, 2), rl=curves)


def read_all_steps(runs: Sequence[Run]) -> dict[tuple[str, int], Steps]:
  """(task, seed) -> the run's :class:`Steps`; empty when no run has a steps.csv.

  Raises:
    StudyError: as :func:`read_steps`; also if only some runs have a steps.csv, or
      the seeds of a task ran an RL run for different numbers of steps.
  """
  out = {}
  for run, path in _every_or_no_run(runs, "steps.csv"):
    rl_runs = [e.run for e in run.evals if e.stage != "base"]
    out[run.task, run.seed] = read_steps(path, rl_runs)
  for task in tasks_of(runs):
    mine = {seed: s for (t, seed), s in out.items() if t == task}
    for name in next(iter(mine.values())).rl if mine else ():
      lengths = {seed: s.steps(name) for seed, s in mine.items()}
      if len(set(lengths.values())) > 1:
        raise StudyError(
          f"The seeds of task {task} ran {name} for different numbers of RL steps "
          f"(steps.csv; by seed {lengths}): a log lacks rows."
        )
  return out


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


def _eval_labels(runs: Sequence[Run]) -> dict[tuple[str, str], reporting.Evaluation]:
  """(task, rl_run) -> the first seed's evaluation (its method and k_opt)."""
  out: dict[tuple[str, str], reporting.Evaluation] = {}
  for run in runs:
    for ev in run.evals:
      out.setdefault((run.task, ev.run), ev)
  return out


def plain_across_seeds(
  values_S: Sequence[float], bounds: tuple[float, float] = (-math.inf, math.inf)
) -> tuple[float, float, float]:
  """(mean, lo, hi) in float64: the mean of per-seed values with the plain Student-t
  interval of :func:`contrasts.plain_interval` intersected with ``bounds``; NaN bounds
  for fewer than 2 seeds (and NaN throughout for a NaN value)."""
  values = np.asarray(values_S, np.float64)
  mean = float(np.mean(values)) if values.size else float("nan")
  if values.size < 2:
    return mean, float("nan"), float("nan")
  iv = contrasts.plain_interval(values, confidence=CONFIDENCE)
  return mean, max(bounds[0], float(iv.lo)), min(bounds[1], float(iv.hi))


def _seed_row(values: Sequence[float], bounds: tuple[float, float]) -> dict[str, Any]:
  """Per-seed values, their mean and the plain Student-t interval over seeds."""
  mean, lo, hi = plain_across_seeds(values, bounds)
  return {"mean": mean, "lo": lo, "hi": hi, "value_seeds": _fmt_seeds(values)}


def _steps_by_task(
  runs: Sequence[Run], steps: dict[tuple[str, int], Steps]
) -> list[tuple[str, list[int], list[Steps]]]:
  """Per task with any steps.csv: the task, its seeds (run order) and their Steps."""
  out = []
  for task in tasks_of(runs):
    seeds = [r.seed for r in runs if r.task == task and (task, r.seed) in steps]
    if seeds:
      out.append((task, seeds, [steps[task, s] for s in seeds]))
  return out


def dynamics_rows(runs: Sequence[Run], steps: dict[tuple[str, int], Steps]) -> list[dict[str, Any]]:
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
        **_seed_row([w[1] for w in warm], (0.0, 1.0)),
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
            **_seed_row(values, bounds),
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

  def curve(task, run, seed, metric):
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
  runs: Sequence[Run], steps: dict[tuple[str, int], Steps], reference: str = "grpo"
) -> list[dict[str, Any]]:
  """solved_training.csv: per task and RL run, the distinct training problems solved
  (at least one correct sample) by the last RL step (``solved_cumulative``; PKPO's
  measure of solving harder problems), per seed and averaged with the plain
  t-interval over seeds, and its difference to ``reference`` within each seed (the
  runs of a seed share their training prompts), averaged with the plain t-interval
  and an exploratory verdict. No within-seed standard error exists for a count of
  problems, so no floor applies."""
  labels = _eval_labels(runs)
  out = []
  for task, seeds, mine in _steps_by_task(runs, steps):
    final = {
      name: [float(s.rl[name]["solved_cumulative"][-1]) for s in mine] for name in mine[0].rl
    }
    for name, values in final.items():
      mean, lo, hi = plain_across_seeds(values, (0.0, math.inf))
      diff = dict.fromkeys(("diff_vs_grpo", "diff_vs_grpo_lo", "diff_vs_grpo_hi"), float("nan"))
      diffs: list[float] = []
      verdict = ""
      if name != reference and reference in final:
        diffs = [a - b for a, b in zip(values, final[reference])]
        mean_d, lo_d, hi_d = plain_across_seeds(diffs)
        diff = {
          "diff_vs_grpo": mean_d,
          "diff_vs_grpo_lo": lo_d,
          "diff_vs_grpo_hi": hi_d,
        }
        verdict = contrasts.exploratory_verdict(lo_d, hi_d)
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
          "solved_seeds": _fmt_seeds(values),
          "solved": mean,
          "solved_lo": lo,
          "solved_hi": hi,
          **diff,
          "diff_vs_grpo_seeds": _fmt_seeds(diffs),
          "diff_vs_grpo_verdict": verdict,
        }
      )
  return out


def reward_hist_rows(per_seed: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
  """reward_hist.csv: per task, evaluation and reward bin, the samples' counts summed
  over seeds and their fraction of all samples (P x n per seed, summed), with each
  seed's fraction (``fraction_seeds``)."""
  groups: dict[tuple, list[dict[str, Any]]] = {}
  for r in per_seed:
    key = (r["task"], r["stage"], r["method"], r["k_opt"], r["rl_run"], r["bin"])
    groups.setdefault(key, []).append(r)
  totals: dict[tuple, int] = {}
  for key, rows in groups.items():
    totals[key[:5]] = totals.get(key[:5], 0) + sum(int(r["count"]) for r in rows)
  out = []
  for (task, stage, method, k_opt, rl_run, name), rows in groups.items():
    count = sum(int(r["count"]) for r in rows)
    total = totals[task, stage, method, k_opt, rl_run]
    out.append(
      {
        "task": task,
        "stage": stage,
        "method": method,
        "k_opt": k_opt,
        "rl_run": rl_run,
        "bin": name,
        "bin_lo": rows[0]["bin_lo"],
        "bin_hi": rows[0]["bin_hi"],
        "num_seeds": len(rows),
        "count": count,
        "fraction": count / total if total else float("nan"),
        "fraction_seeds": _fmt_seeds(float(r["fraction"]) for r in rows),
      }
    )
  return out


def training_curves(
  steps: dict[tuple[str, int], Steps], task: str, columns: Sequence[str]
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
        iv = contrasts.plain_interval(values, confidence=CONFIDENCE)
        lo, hi = iv.lo, iv.hi
      out[name][column] = (step, mean, lo, hi)
  return out


# ---------------------------------------------------------------------- figures


def _present_pairs(
  paired_summary: Sequence[dict[str, Any]], task: str
) -> list[tuple[str, str, str]]:
  """The pairs of :data:`FIGURE_PAIRS` whose runs ``task`` ran."""
  have = {(r["a_run"], r["b_run"]) for r in paired_summary if r["task"] == task}
  return [p for p in FIGURE_PAIRS if (p[0], p[1]) in have]


def write_figures(
  out_dir: str,
  tables: dict[str, list[dict[str, Any]]],
  tasks: Sequence[str],
  steps: dict[tuple[str, int], Steps] | None = None,
) -> list[str]:
  """The figures of the module docstring; returns their paths. Without ``steps`` (no
  run has a steps.csv) there are no training and warm-start figures."""
  paths = []

  def save(fig, name):
    paths.append(plot_style.save(fig, os.path.join(out_dir, name)))

  for task in tasks:
    mine = [r for r in tables["summary.csv"] if r["task"] == task]
    n = max(int(r["k_eval"]) for r in mine)
    save(
      plotting.study_pass_at_k_figure(
        [r for r in mine if r["scope"] == "all"],
        f"{task}: held-out pass@k and max@k, k = 1..{n}, mean over seeds with 95% "
        "t-interval over seeds",
      ),
      f"pass_at_k_{task}.png",
    )
    save(
      plotting.study_bins_figure(
        [r for r in mine if r["scope"] != "all"],
        [r for r in tables["unsolved_summary.csv"] if r["task"] == task],
        f"{task}: held-out problems by the base model's pass@1 (its own independent samples), "
        "mean over seeds with 95% t-interval over seeds",
      ),
      f"bins_{task}.png",
    )
    save(
      plotting.study_contrasts_figure(
        tables["paired_summary.csv"],
        _present_pairs(tables["paired_summary.csv"], task),
        task,
        (1, n),
        f"{task}: differences between methods (a − b), paired on the same problems per seed",
      ),
      f"contrasts_{task}.png",
    )
    save(
      plotting.study_reward_hist_figure(
        [r for r in tables["reward_hist.csv"] if r["task"] == task],
        f"{task}: continuous rewards of the final evaluations' samples, all seeds pooled",
      ),
      f"rewards_{task}.png",
    )
    if not steps or not any(t == task for t, _ in steps):
      continue
    curves = training_curves(steps, task, [c for c, _ in plotting.TRAINING_PANELS])
    save(
      plotting.study_training_figure(
        curves,
        f"{task}: training curves, mean over seeds with the pointwise 95% t-interval over seeds",
      ),
      f"training_{task}.png",
    )
    warm = {seed: s.warm for (t, seed), s in steps.items() if t == task}
    save(
      plotting.study_warm_start_figure(
        warm, WARM_TARGET, f"{task}: warm start (SFT), held-out pass@1 per seed"
      ),
      f"warm_start_{task}.png",
    )
  return paths


# ----------------------------------------------------------------------- report


def _cell(mean: float, lo: float, hi: float, fmt: str = ".3f") -> str:
  """``mean [lo, hi]``, or the mean alone where there is no interval."""
  mean, lo, hi = float(mean), float(lo), float(hi)
  if not math.isfinite(lo):
    return f"{mean:{fmt}}"
  return f"{mean:{fmt}} [{lo:{fmt}}, {hi:{fmt}}]"


def _estimate(row: dict[str, Any], metric: str) -> str:
  return _cell(row[metric], row[f"{metric}_lo"], row[f"{metric}_hi"])


def _label(r: dict[str, Any]) -> str:
  if r["stage"] == "base":
    return "base"
  k_opt = "" if r["k_opt"] in ("", "n/a") else f" k={r['k_opt']}"
  return f"`{r['method']}`{k_opt}"


def _run_label(r: dict[str, Any]) -> str:
  """:func:`_label` of a row with ``rl_run``, ``method`` and ``k_opt`` (no stage)."""
  return _label({**r, "stage": "base" if r["rl_run"] == "base" else "rl"})


def _table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
  lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
  lines += ["| " + " | ".join(row) + " |" for row in rows]
  return lines + [""]


def _figure(name: str, alt: str) -> list[str]:
  return [f"![{alt}]({name})", ""]


_REPORT_HEADER = """\
Written by `python -m experiments.lm.study_summary` from the run folders of
`python -m launch.local --sweep=launch/sweeps/lm_study.json --out_root=out/lm_study`
(config `experiments/lm/configs/study.py`), or from their committed copies in
`runs/` (`python -m experiments.lm.archive_runs`); each run folder holds its own
per-problem file `prompts.csv`. Each seed draws its own held-out problems, warm
start, training problems and samples. The module docstrings of
`experiments/lm/study_summary.py` and `experiments/lm/contrasts.py` define every
column and the statistics.

Only the declared contrasts test anything; every other section is exploratory: no
correction for the number of comparisons, and no claim about error rates. Cells:
mean over seeds [95% interval over seeds: the floored Student-t interval for a
difference paired within seeds, the plain Student-t interval otherwise].
"""

_DECLARED_NOTE = """\
The comparisons fixed before the runs (`CONTRASTS` of `configs/study.py`; a − b,
paired on the same problems within each seed; `contrasts.csv`). The interval over
seeds is the Student-t interval with the between-seed variance floored at the
within-seed one (the mean over seeds of each difference's squared standard error
over problems), as seeds that agree by chance would otherwise give a narrow
interval. Holm's correction runs over the family of every declared contrast of
every task ({m} tests), and a contrast is `significant` when its Holm-adjusted
p-value is below 0.05; the uncorrected p-value is beside it.
"""

_EXPLORATORY_NOTE = """\
Comparisons not declared in advance, with no correction for their number (about 45
per task). Their verdict says only whether the floored interval over seeds excludes
0; across many such comparisons some will by chance. The per-seed intervals over
problems are in the CSV files.
"""


def _n_of(summary: Sequence[dict[str, Any]], task: str) -> int:
  return max(int(r["k_eval"]) for r in summary if r["task"] == task)


def _overall_tables(summary: Sequence[dict[str, Any]], n: int) -> list[str]:
  """pass@k and max@k over all problems at k = 1, 4, 16 and n, a row per run."""
  rows = [r for r in summary if r["scope"] == "all"]
  cells = {(_label(r), int(r["k_eval"])): r for r in rows}
  labels = list(dict.fromkeys(_label(r) for r in rows))
  ks = sorted({k for k in TABLE_KS if k <= n} | {n})
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
    "problems (paired within each seed, mean over seeds, floored interval):",
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


def _runs_section(runs: Sequence[Run]) -> list[str]:
  hours = sum(r.seconds for r in runs) / 3600
  lines = ["## Runs", ""]
  lines += _table(
    ("task", "seed", "methods", "problems", "minutes"),
    (
      (r.task, str(r.seed), str(len(r.evals)), str(len(r.keys)), f"{r.seconds / 60:.1f}")
      for r in runs
    ),
  )
  return lines + [f"Total: {hours:.1f} hours of run time (the launcher's wall time).", ""]


def _seed_values(row: dict[str, Any]) -> list[float]:
  return [float(v) for v in str(row["value_seeds"]).split()]


def _warm_section(
  dynamics: Sequence[dict[str, Any]], results: Sequence[dict[str, Any]], tasks: Sequence[str]
) -> list[str]:
  lo, hi = WARM_TARGET
  lines = [
    "## Warm start",
    "",
    "The SFT steps of each task were chosen so that the warm start's held-out pass@1",
    f"lies in [{lo:g}, {hi:g}]. Last point of each seed's warm-start curve (`steps.csv`:",
    "sampled pass@1 on the held-out problems at the last evaluated SFT step), beside the",
    "base model's pass@1 in the final evaluation (same problems, the evaluation's n):",
    "",
  ]
  for task in tasks:
    row = next(
      (r for r in dynamics if r["task"] == task and r["quantity"] == "warm_pass_at_1_final"), None
    )
    if row is None:
      continue
    values = _seed_values(row)
    seeds = str(row["seeds"]).split()
    inside = sum(lo <= v <= hi for v in values)
    base = {
      str(r["seed"]): float(r["pass_at_k"])
      for r in results
      if r["task"] == task and r["rl_run"] == "base" and int(r["k_eval"]) == 1
    }
    lines += [
      f"**{task}**: {inside} of {len(values)} seeds in [{lo:g}, {hi:g}]; mean "
      f"{_cell(row['mean'], row['lo'], row['hi'])} (t-interval over seeds).",
      "",
    ]
    lines += _table(
      ("seed", "SFT step", "warm-start pass@1", "in target", "base pass@1 (final evaluation)"),
      (
        (s, step, f"{v:.3f}", "yes" if lo <= v <= hi else "**no**", f"{base.get(s, math.nan):.3f}")
        for s, step, v in zip(seeds, str(row["step_seeds"]).split(), values)
      ),
    )
    lines += _figure(f"warm_start_{task}.png", f"{task} warm-start curve")
  return lines


# (dynamics.csv quantity, column header, number format) of the README's table.
_DYNAMICS_COLUMNS = (
  ("clip_frac_median", "median clip fraction", ".4f"),
  ("grad_clipped_share", "steps with gradient clipped", ".3f"),
  ("grad_norm_median", "median gradient norm", ".1f"),
  ("kl_to_warm_start_final", "final KL to warm start", ".3f"),
  ("entropy_final", "final entropy", ".3f"),
  ("ess_frac_mean", "mean ESS / n", ".3f"),
)


def _dynamics_section(dynamics: Sequence[dict[str, Any]], tasks: Sequence[str]) -> list[str]:
  lines = [
    "## Training dynamics",
    "",
    "Per RL run, over its RL steps: the median share of samples that PPO-style clipping",
    "zeroed at the last inner epoch, the share of steps whose gradient norm exceeded",
    "`rl.max_grad_norm` (clipped update), the median gradient norm, the KL to the warm",
    "start and the token entropy at the last step, and the mean effective sample size",
    "of the importance ratios over n (`dynamics.csv` has each seed's value). Mean over",
    "seeds [t-interval]. The figure shows the mean over seeds with the pointwise 95%",
    "t-interval over seeds as band.",
    "",
  ]
  for task in tasks:
    rows = [r for r in dynamics if r["task"] == task and r["rl_run"] != "warm_start"]
    if not rows:
      continue
    cells = {(r["rl_run"], r["quantity"]): r for r in rows}
    runs = list(dict.fromkeys(r["rl_run"] for r in rows))
    lines += [f"**{task}**:", ""]
    lines += _table(
      ("method", *[h for _, h, _ in _DYNAMICS_COLUMNS]),
      (
        (
          _run_label(cells[run, "clip_frac_median"]),
          *[
            _cell(cells[run, q]["mean"], cells[run, q]["lo"], cells[run, q]["hi"], fmt)
            for q, _, fmt in _DYNAMICS_COLUMNS
          ],
        )
        for run in runs
      ),
    )
    lines += _figure(f"training_{task}.png", f"{task} training curves")
  return lines


def _pass_at_k_section(summary: Sequence[dict[str, Any]], tasks: Sequence[str]) -> list[str]:
  lines = ["## pass@k and max@k", ""]
  for task in tasks:
    mine = [r for r in summary if r["task"] == task]
    n = _n_of(summary, task)
    lines += [f"### {task}", ""]
    lines += _overall_tables(mine, n)
    lines += _figure(f"pass_at_k_{task}.png", f"{task} pass@k and max@k, k = 1..{n}")
  return lines


def _crossings_section(crossings: Sequence[dict[str, Any]], tasks: Sequence[str]) -> list[str]:
  lines = [
    "## Crossings: where RL falls below the base model",
    "",
    "The smallest k at which a method's pass@k (max@k) falls below the base model's:",
    "from the means over seeds, and from each seed's own curves (`none`: never, up to n;",
    "`crossings.csv`). Exploratory.",
    "",
  ]
  index = {(r["task"], r["rl_run"], r["metric"]): r for r in crossings}
  rows = []
  for task in tasks:
    for run in dict.fromkeys(r["rl_run"] for r in crossings if r["task"] == task):
      p, m = index[task, run, "pass_at_k"], index[task, run, "max_at_k"]
      rows.append(
        (
          task,
          _run_label(p),
          f"{p['crossing_k']} (n = {p['n']})",
          str(p["crossing_k_seeds"]),
          str(m["crossing_k"]),
          str(m["crossing_k_seeds"]),
        )
      )
  return lines + _table(
    ("task", "method", "pass@k: k (mean)", "per seed", "max@k: k (mean)", "per seed"), rows
  )


def own_k(rl_run: str, k_opt: str) -> int | None:
  """The k a run optimises: 1 for GRPO (its mean reward is pass@1's), k_opt for max@k,
  the last k of an annealed schedule (``8:60:1`` -> 1); None if unknown."""
  if rl_run.startswith("grpo") or rl_run.startswith("rloo"):
    return 1
  last = str(k_opt).split(":")[-1]
  return int(last) if last.isdigit() else None


def _paired_lookup(paired_summary, task, a, b, metric, k) -> tuple[str, str] | None:
  """(a − b [floored interval], verdict) from paired_summary rows, either order."""
  for x, y, sign in ((a, b, 1.0), (b, a, -1.0)):
    r = next(
      (
        r
        for r in paired_summary
        if (r["task"], r["a_run"], r["b_run"], r["metric"], int(r["k_eval"]))
        == (task, x, y, metric, k)
      ),
      None,
    )
    if r is not None:
      lo, hi = sorted((sign * float(r["diff_lo"]), sign * float(r["diff_hi"])))
      return _cell(sign * float(r["diff"]), lo, hi), str(r["verdict"])
  return None


def _own_k_section(
  summary: Sequence[dict[str, Any]], paired_summary: Sequence[dict[str, Any]], tasks
) -> list[str]:
  lines = [
    "## Each method at its own k_opt",
    "",
    "Each RL method against the base model and against GRPO in pass@k and max@k at the",
    "k it optimises (GRPO: 1; an annealed schedule: its last k), paired within seeds,",
    "floored interval over seeds. Exploratory, except the rows that are declared",
    "contrasts (their verdict is Holm's).",
    "",
  ]
  rows = []
  for task in tasks:
    runs = {r["rl_run"]: r for r in summary if r["task"] == task and r["scope"] == "all"}
    for name, r in runs.items():
      k = None if name == "base" else own_k(name, str(r["k_opt"]))
      if k is None:
        continue
      for metric, short in (("pass_at_k", "pass"), ("max_at_k", "max")):
        cells = []
        for b in ("base", "grpo"):
          found = None if b == name else _paired_lookup(paired_summary, task, name, b, metric, k)
          cells += list(found or ("–", ""))
        rows.append((task, _run_label(r), f"{short}@{k}", *cells))
  return lines + _table(
    ("task", "method", "at", "minus base", "verdict", "minus GRPO", "verdict"), rows
  )


def _unsolved_section(
  runs: Sequence[Run], unsolved_summary: Sequence[dict[str, Any]], tasks
) -> list[str]:
  bin_ns = sorted({r.bin_n for r in runs})
  n_eval = sorted({r.evals[0].n for r in runs})
  lines = [
    "## Base-unsolved problems",
    "",
    "A held-out problem is base-unsolved when none of the base model's "
    f"{' / '.join(map(str, bin_ns))} samples",
    "in its binning evaluation is correct (`bin_n` of the runs' prompts.csv; these",
    "samples are independent of the evaluations, which draw "
    f"{' / '.join(map(str, n_eval))} per problem). Exploratory.",
    "",
  ]
  for task in tasks:
    lines += [f"**{task}**:", ""]
    lines += _unsolved_table([r for r in unsolved_summary if r["task"] == task])
    lines += _figure(f"bins_{task}.png", f"{task} by base difficulty")
  return lines


def _solved_training_section(solved: Sequence[dict[str, Any]]) -> list[str]:
  if not solved:
    return []
  lines = [
    "## Training problems solved (PKPO's measure)",
    "",
    "Distinct training problems with at least one correct sample in any RL step up to",
    "the last (`solved_cumulative` of `steps.csv`; PKPO's measure of solving harder",
    "problems), mean over seeds [t-interval], and the difference to GRPO within each",
    "seed (the runs of a seed share their training prompts) [plain t-interval: a count",
    "has no within-seed standard error]. Exploratory.",
    "",
  ]
  return lines + _table(
    ("task", "method", "solved [t-interval]", "per seed", "minus GRPO [t-interval]", "verdict"),
    (
      (
        r["task"],
        _run_label(r),
        _cell(r["solved"], r["solved_lo"], r["solved_hi"], ".1f"),
        str(r["solved_seeds"]),
        ""
        if not math.isfinite(float(r["diff_vs_grpo"]))
        else _cell(r["diff_vs_grpo"], r["diff_vs_grpo_lo"], r["diff_vs_grpo_hi"], "+.1f"),
        str(r["diff_vs_grpo_verdict"]),
      )
      for r in solved
    ),
  )


def _reward_section(reward_hist: Sequence[dict[str, Any]], tasks) -> list[str]:
  lines = [
    "## Reward histograms",
    "",
    "The continuous rewards of the final evaluations' samples, each bin's fraction of",
    "all samples of all seeds (`reward_hist.csv`).",
    "",
  ]
  for task in tasks:
    rows = [r for r in reward_hist if r["task"] == task]
    bins = list(dict.fromkeys(r["bin"] for r in rows))
    index = {(r["rl_run"], r["bin"]): r for r in rows}
    runs = list(dict.fromkeys(r["rl_run"] for r in rows))
    lines += [f"**{task}**:", ""]
    lines += _table(
      ("method", *bins),
      (
        (
          _run_label(index[run, bins[0]]),
          *[f"{float(index[run, b]['fraction']):.3f}" for b in bins],
        )
        for run in runs
      ),
    )
    lines += _figure(f"rewards_{task}.png", f"{task} reward histograms")
  return lines


def _splits_section(splits: Sequence[dict[str, Any]], tasks) -> list[str]:
  if not splits:
    return []
  lines = [
    "## Split closeness",
    "",
    "Held-out problems share no key with a training problem (`overlap` 0, checked);",
    "the near share is the fraction of held-out problems with a training problem close",
    "to it (the definition below; `splits.csv`).",
    "",
  ]
  rows = []
  for task in tasks:
    mine = [s for s in splits if s["task"] == task]
    shares = [float(s["near_eval_share"]) for s in mine if s["near_eval_share"] != ""]
    definition = next((s["near_definition"] for s in mine if s["near_definition"]), "")
    rows.append(
      (
        task,
        " ".join(str(s["num_eval_problems"]) for s in mine),
        " ".join(str(s["near_eval_problems"]) or "–" for s in mine),
        f"{np.mean(shares):.3f}" if shares else "–",
        definition or "–",
      )
    )
  return lines + _table(
    ("task", "eval problems per seed", "near per seed", "mean near share", "near means"), rows
  )


_NUMBER_WORDS = ("no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")


def _count_of(count: int, noun: str) -> str:
  """``three seeds``, ``one task``; digits from 10 on."""
  word = _NUMBER_WORDS[count] if count < len(_NUMBER_WORDS) else str(count)
  return f"{word} {noun}{'' if count == 1 else 's'}"


# The README title's name of each method family (``method`` up to its first "/").
_FAMILY_NAMES = {
  "base": "base",
  "grpo": "GRPO",
  "rloo": "RLOO",
  "max_at_k": "max@k",
  "max_minus_second": "max minus second",
}


def _methods_phrase(runs: Sequence[Run]) -> str:
  """``base, GRPO and max@k``: the method families the runs evaluated, in order."""
  families = dict.fromkeys(
    _FAMILY_NAMES.get(e.method.split("/")[0], e.method.split("/")[0]) for r in runs for e in r.evals
  )
  names = list(families)
  if len(names) <= 1:
    return "".join(names)
  return ", ".join(names[:-1]) + " and " + names[-1]


def report_title(runs: Sequence[Run]) -> str:
  """The README's title: the method families evaluated, and the counts of tasks and
  seeds summarised."""
  tasks, seeds = tasks_of(runs), {r.seed for r in runs}
  counts = f"{_count_of(len(tasks), 'task')}, {_count_of(len(seeds), 'seed')}"
  methods = _methods_phrase(runs)
  return f"# LM study: {methods}, {counts}" if methods else f"# LM study: {counts}"


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
  runs: Sequence[Run], tables: dict[str, list[dict[str, Any]]], missing: Sequence[str] = ()
) -> str:
  """README.md of the summary folder from the ``tables`` of :func:`summarize`: (first,
  the runs ``missing`` from an incomplete study) the runs, the declared contrasts,
  then the exploratory sections in the order of the module docstring."""
  tasks = tasks_of(runs)
  declared = tables["contrasts.csv"]
  lines = [report_title(runs), ""]
  lines += _incomplete_note(missing)
  lines += [_REPORT_HEADER]
  lines += _runs_section(runs)
  lines += ["## Declared contrasts", "", _DECLARED_NOTE.format(m=len(declared))]
  lines += declared_table(declared)
  if tables["dynamics.csv"]:
    lines += _warm_section(tables["dynamics.csv"], tables["results.csv"], tasks)
    lines += _dynamics_section(tables["dynamics.csv"], tasks)
  lines += _pass_at_k_section(tables["summary.csv"], tasks)
  lines += _crossings_section(tables["crossings.csv"], tasks)
  lines += _own_k_section(tables["summary.csv"], tables["paired_summary.csv"], tasks)
  lines += _unsolved_section(runs, tables["unsolved_summary.csv"], tasks)
  lines += _solved_training_section(tables["solved_training.csv"])
  lines += _reward_section(tables["reward_hist.csv"], tasks)
  lines += _splits_section(tables["splits.csv"], tasks)
  lines += ["## Exploratory", "", _EXPLORATORY_NOTE]
  for task in tasks:
    mine = [r for r in tables["summary.csv"] if r["task"] == task]
    n = _n_of(tables["summary.csv"], task)
    lines += [f"### {task}", ""]
    lines += _bin_table(mine, 1) + _bin_table(mine, n)
    lines += _key_differences([r for r in tables["paired_summary.csv"] if r["task"] == task], n)
    lines += _figure(f"contrasts_{task}.png", f"{task} paired differences")
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
  tables["reward_hist.csv"] = reward_hist_rows(tables.pop("reward_hist_seeds"))
  tables["summary.csv"] = summary_rows(tables)
  tables["contrasts.csv"] = contrast_rows(tables["paired.csv"])
  tables["paired_summary.csv"] = paired_summary_rows(tables["paired.csv"], tables["contrasts.csv"])
  tables["unsolved_summary.csv"] = unsolved_summary_rows(tables["unsolved.csv"])
  tables["crossings.csv"] = crossing_rows(tables["results.csv"], tables["summary.csv"])
  steps = read_all_steps(runs)
  tables["dynamics.csv"] = dynamics_rows(runs, steps)
  tables["solved_training.csv"] = solved_training_rows(runs, steps)
  tables["splits.csv"] = split_rows(runs)
  out_dir = outputs.prepare_out_dir(out_dir)
  for name, rows in tables.items():
    if rows:
      outputs.write_results_csv(out_dir, rows, filename=name)
    elif os.path.exists(os.path.join(out_dir, name)):
      os.remove(os.path.join(out_dir, name))  # A previous summary's table, now empty.
  write_figures(out_dir, tables, tasks_of(runs), steps)
  with open(os.path.join(out_dir, "README.md"), "w") as f:
    f.write(report_markdown(runs, tables, study.missing))
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
