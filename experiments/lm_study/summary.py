r"""The LM study across seeds: one table set, intervals over seeds, verdicts, figures.

Usage, on the launcher's folder or on the committed copies of its runs
(experiments.lm_study.archive_runs):

  python -m experiments.lm_study.summary --study_dir=out/lm_study --workdir=out/lm_study/summary
  python -m experiments.lm_study.summary --study_config=experiments.lm.configs.study_8seed \
    --study_dir=docs/lm_study_8seed/runs --workdir=docs/lm_study_8seed

--study_config names the study's config module (a module name, or a .py file: one
below the working directory is imported as its module, another from its path;
default experiments.lm.configs.study, the current study): its TASKS x SEEDS are the
design, its CONTRASTS the declared contrasts (experiments.lm_study.config says what
else it may set). The archived 8-seed study is experiments.lm.configs.study_8seed. A
config that cannot be imported stops the summary with one line.

Each run folder of --study_dir (one task and one seed of the study config) holds its
per-prompt file prompts.csv, its training curves steps.csv and its split.json, and
checkpoints.csv (the held-out evaluations at checkpoints, with their KL to the warm
start) where the trainer wrote one; nothing else is needed (no metrics.jsonl, no
model checkpoints). checkpoints.csv is required of every run when a declared
contrast compares at matched KL (Contrast.at_kl); either every run has it or none.
Every evaluation number written here is recomputed from the per-prompt counts and
rewards by experiments.lm.reporting and checked against the run's own results.csv
and reward_hist.csv (a folder whose files disagree, e.g. written by other code,
stops the summary).

The summary covers the whole study or stops (one line naming the file or run, exit
code 1, nothing written). The study is its design, TASKS x SEEDS of
the study config, and it is complete when every one of these runs is present and
finished (prompts.csv and results.csv, and status ok where
launch.local recorded one); also every run that launch.local's runs.json
lists; no run of a task or seed outside the design, no folder with a run's files but
no config.json; and every file readable and well formed (steps.csv: numbers
where numbers belong, every RL row complete, no repeated step, the RL runs of its
prompts.csv, the same number of RL steps in every seed of a task).
--allow_incomplete summarises the finished runs of an incomplete study instead;
its README then names every missing run before anything else.

The runs' code is checked too, from each run's run.json (experiments/lm/provenance.py;
experiments.lm_study.commits): the summary stops, naming the runs and commits, when
any session ran from a checkout with uncommitted changes to tracked files, or the
sessions used more than one commit, unless all of them fall in one group of
EQUIVALENT_COMMITS of the study config (commits declared value-equivalent, each with
its test). Unless the study config sets REQUIRE_PROVENANCE = False (a study run before
run.json existed), it stops as well when a run has no run.json, a session no known
commit, or the runs do not all record one design note (config.study_design)
committed before each run's first session started. The title names the
method families and counts the tasks and seeds summarised.

Two kinds of interval, because the seeds of the study differ in everything: each
seed draws its own evaluation problems, warm start, training problems and samples.

* **Per seed, over prompts** (the runs' own files, gathered here with a task
  column): the 95% normal interval of the mean over that seed's problems. It
  covers the choice of problems and the sampling noise of the evaluation, not the
  randomness of training.
* **Across seeds**: the mean of the per-seed estimates with a 95% interval over the
  S seeds (S − 1 degrees of freedom), which covers the whole pipeline, training
  included. For a difference between two methods paired within seeds with a
  within-seed standard error (contrasts.csv, paired_summary.csv,
  unsolved_summary.csv) it is the *floored* Student-t interval of
  experiments.lm_study.significance.floored_interval: the between-seed variance is
  floored at the within-seed one (the mean of the seeds' squared standard errors
  over problems), since with 3-8 seeds the sample variance of a few differences that
  happen to agree can be far below the evaluation noise it must include. Everything
  else (a method's pass@k or max@k in summary.csv; the training quantities of
  dynamics.csv and solved_training.csv, which have no within-seed standard
  error) gets the plain Student-t interval. Intervals of quantities in [0, 1] are
  intersected with [0, 1] (differences with [-1, 1]; counts with [0, inf)).

Verdicts. The comparisons CONTRASTS of the study config are declared in advance
and applied to every task, each in a family (Contrast.family; one family unless the
study splits them); Holm's correction runs within each family over all tasks
(the conservative choice, and what a reviewer counts), contrasts at the final step
and at matched KL alike. A contrast with at_kl compares the two runs where each
seed's mean held-out KL to the warm start first reaches that level, interpolated
between its checkpoints (experiments.lm_study.matched_kl), over the seeds in which
both runs reached it. A declared contrast is
better or worse when its Holm-adjusted p-value is below 0.05; equivalent when it
declares a margin and the Holm-adjusted p-value of the two one-sided tests of
equivalence is below 0.05; not detected otherwise, reported with the power of its
test at the margin (contrasts.csv's power column). Every other number is
exploratory; a difference's
verdict is exploratory, excludes 0 or exploratory, includes 0 (its interval;
exploratory, no interval with one seed), with no correction for the ~45
comparisons per task and no claim about error rates.

Outputs in --workdir (alias --out_dir; no gathered prompts.csv: the run
folders hold theirs, and at 1024 binning samples it would be large):

* results.csv, bins.csv, unsolved.csv, paired.csv: every run's
  table, recomputed, with a task column;
* summary.csv: per task, method, scope (all problems or one base-difficulty
  bin) and k = 1..n, the per-seed pass@k and max@k (*_seeds, space-separated, in
  seed order) and their mean with the t-interval over seeds;
* contrasts.csv: per task and declared contrast, a row with the question, the
  runs a and b, measure (pass or max) and k (resolved), the per-seed
  differences and standard errors (diff_seeds, se_seeds), the mean diff
  with the floored interval (lo, hi), its uncorrected p_value, floored
  (whether the floor decided), the plain t-interval (t_lo, t_hi) for
  comparison, family, stderr (the floored interval's standard error), p_holm,
  margin, p_equivalence, power, p_equivalence_holm and the verdict; when the
  study declares a contrast at matched KL, two more columns close every row:
  at_kl (the KL level in nats, or "final" for a final-step contrast) and
  num_seeds_reached (the seeds in which both runs reached it, over which the
  row's interval, seeds, diff_seeds and se_seeds run; num_seeds for a final-step
  contrast), num_seeds then counting the task's seeds with checkpoints;
* frontier.csv and frontier_<task>.png (where the runs hold checkpoints.csv;
  experiments.lm_study.frontier): per task, run and k in 1, 8 and n, pass@k
  against the mean held-out KL to the warm start, on a KL grid (point grid: mean
  over seeds with the pointwise t-interval, up to the KL every seed reached) and at
  each checkpoint every seed evaluated (point checkpoint);
* paired_summary.csv: per task, pair of runs, metric and k, the per-seed
  differences with their intervals and standard errors, the mean with the floored
  interval and p_value, and the verdict (exploratory, or a declared contrast's,
  with its question and p_holm);
* unsolved_summary.csv: per task and method, the base-unsolved problems (no
  correct sample among the base model's bin_n binning samples, 1024 in the
  study) solved, pooled over seeds (Wilson's interval; each seed's problems are
  distinct), and the paired difference to the base model's fresh evaluation, across
  seeds with the floored interval and an exploratory verdict;
* dynamics.csv (from steps.csv; exploratory): one row per task, run and
  quantity, with value_seeds (per seed), mean and the t-interval lo,
  hi, and step_seeds (each seed's last step). Per RL run:
  clip_frac_median (median over RL steps of the share of samples clipped at the
  last inner epoch), grad_clipped_share (share of RL steps whose gradient was
  clipped), grad_norm_median, kl_to_warm_start_final and entropy_final
  (at the last RL step), ess_frac_mean (mean over RL steps of the effective
  sample size over n) and solved_cumulative_final; per task one row
  rl_run = warm_start, warm_pass_at_1_final: the warm start's last held-out
  pass@1 of the SFT curve, which the study's SFT steps aim to put in [0.1, 0.3];
* crossings.csv (exploratory): per task, metric (pass_at_k, max_at_k) and
  RL run, crossing_k: the smallest k in 1..n where the run's mean over seeds
  falls below the base model's (none if it never does), and
  crossing_k_seeds, the same on each seed's own curves;
* solved_training.csv (exploratory; PKPO's measure of solving harder problems,
  on training problems): per task and RL run, the distinct training problems with a
  correct sample in some RL step by the last (per seed, mean, t-interval), and the
  difference to GRPO within each seed (its runs share the training prompts; mean,
  plain t-interval, verdict);
* reward_hist.csv: per task, evaluation and reward bin
  (experiments.lm.report_rows.REWARD_BINS), the samples' count summed over
  seeds, its fraction of all samples, and each seed's fraction;
* provenance.csv (when some run has a run.json): per run, its commit(s) in session
  order, dirty (any session from a modified checkout), sessions, its first
  started_utc and last ended_utc, hours (the sessions' wall time; a killed session
  has no end and counts 0), device_kind and design_commit;
* splits.csv: per run, the held-out split (split.json): evaluation problems,
  distinct training problems, overlap (0; anything else stops the summary), and
  near_eval_problems, near_eval_share, near_definition (held-out problems
  with a close training problem; empty where a split.json predates them);
* figures per task: pass_at_k_<task>.png (pass@k and max@k for k = 1..n, log x,
  mean over seeds with the t-interval band), bins_<task>.png,
  contrasts_<task>.png (the key differences, per seed and across seeds, floored
  interval coloured by verdict), training_<task>.png (reward, entropy, KL to the
  warm start and clip fraction against the RL step: mean over seeds with the
  pointwise 95% t-interval over seeds as band), warm_start_<task>.png (held-out
  pass@1 against the SFT step, each seed and their mean, the target range shaded),
  rewards_<task>.png (reward histograms per method, log scale). Each run keeps
  one label and colour in every panel and figure; where two runs train identically
  up to a step by construction (an annealed k schedule and the constant run at its
  first k), the training figure marks the step and says so;
* README.md: in this order the runs (minutes each), their provenance (a row per
  commit: dirty, runs, first start, last end, device kinds, hours, design note
  commit), the declared contrasts (uncorrected and Holm p), the frontiers (only with
  checkpoints), the warm start (last pass@1 per seed and how many lie in
  [0.1, 0.3]), training dynamics, pass@k / max@k at k = 1, 4, 16, n, crossings, each
  method at its own k_opt against base and GRPO, base-unsolved problems, PKPO's
  training-problem measure, reward histograms, split closeness, then under
  "Exploratory" the rest (bins, key differences); every figure embedded with one
  line of explanation.

The runs are read from the runs' own records (method and k schedule), not from
their names: the key differences are the declared contrasts' pairs, then every RL
run against the base model and GRPO, each max@k run against the smallest k_opt, an
annealed run against the constant runs at its first and last k, and other
off-policy weights against the usual ones (experiments.lm_study.methods.key_pairs).
The library behind this binary is experiments.lm_study.

--from_paired=PATH writes only contrasts.csv into --workdir, from a
study's gathered paired.csv (e.g. a committed one whose run folders are gone; not for a
study that declares contrasts at matched KL, which need the runs' checkpoints.csv)::

  python -m experiments.lm_study.summary --study_config=experiments.lm.configs.study_8seed \
    --from_paired=docs/lm_study_8seed/paired.csv --workdir=/tmp/contrasts
"""

from __future__ import annotations

from collections.abc import Sequence
import os
from typing import Any

from absl import flags

from experiments import command_line
from experiments import outputs
from experiments.lm_study import config as config_lib
from experiments.lm_study import files
from experiments.lm_study import summarize

_STUDY_CONFIG = flags.DEFINE_string(
  "study_config",
  config_lib.DEFAULT,
  "The study's config module: a module name (experiments.lm.configs.study_8seed) or a .py "
  "file (experiments/lm/configs/study_8seed.py).",
)
_STUDY_DIR = flags.DEFINE_string(
  "study_dir",
  "out/lm_study",
  "The study sweep's --out_root, or a folder of its archived runs "
  "(experiments.lm_study.archive_runs).",
)
_WORKDIR = flags.DEFINE_string("workdir", "out/lm_study/summary", "Where the summary goes.")
# The output flag and its old name, as in every experiment binary (experiments/command_line.py).
flags.DEFINE_alias("out_dir", "workdir")
_ALLOW_INCOMPLETE = flags.DEFINE_bool(
  "allow_incomplete",
  False,
  "Summarise a study that lacks runs of its design or has fewer than 2 seeds; the "
  "README then names the missing runs first. Default: such a study stops the summary.",
)
_FROM_PAIRED = flags.DEFINE_string(
  "from_paired",
  None,
  "A study's gathered paired.csv (e.g. a committed docs/lm_study_8seed/paired.csv): write only "
  "contrasts.csv into --workdir from it, without the run folders (--study_dir unused).",
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


outputs.register_workdir_validator("workdir")


def main(argv: Sequence[str]) -> None:
  """The binary: :func:`experiments.lm_study.summarize.summarize` (or, with
  ``--from_paired``, :func:`~experiments.lm_study.summarize.contrasts_from_paired`) of
  the study of ``--study_config``, a refused study or config ending the process with
  one error line and exit code 1."""
  with command_line.one_line_errors(argv, files.StudyError):
    config = config_lib.load(_STUDY_CONFIG.value)
    if _FROM_PAIRED.value is not None:
      summarize.contrasts_from_paired(_FROM_PAIRED.value, _WORKDIR.value, config)
    else:
      summarize.summarize(
        _STUDY_DIR.value, _WORKDIR.value, config, allow_incomplete=_ALLOW_INCOMPLETE.value
      )


if __name__ == "__main__":
  command_line.run(main)
