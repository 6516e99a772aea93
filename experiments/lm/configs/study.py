"""The LM study: max@k at k_opt = 8 against GRPO on countdown, at the final step and at
matched KL to the warm start (docs/lm_study; its design note docs/lm_study/DESIGN.md,
written and committed before any run).

A config is one seed (``study.py`` with ``--config.seed=S``, S in SEEDS). Each seed
trains its own warm start (4000 SFT steps, as in the 8-seed study) on problems whose
reference answers solve no held-out problem (``task.novel_answers``), then three RL
arms of RL_STEPS steps from it, on the same prompts and sampling keys:

* ``grpo``: GRPO (PPO's clipped ratio in the second inner epoch), learning rate 1e-4;
* ``max_at_k_k8``: max@k at k_opt = 8 (``loo_minus_one`` baseline, exact off-policy
  weights), 1e-4;
* the KL-matched GRPO arm: GRPO at MATCHED_LEARNING_RATE, the rate at which the
  pilot's GRPO ends where its max@k ends (``experiments.lm_study.design_rules``'s rule).

Every arm is evaluated on NUM_PROBLEMS held-out problems, 128 samples each, at step 0
(the warm start, shared) and every EVAL_EVERY steps, every evaluation with the same
sampling keys (``eval.common_keys``) and the held-out KL to the warm start
(``eval.kl``); ``checkpoints.csv`` holds the frontier. The design note and its numbers
(``docs/lm_study/power.csv``, ``pilot.csv``, ``design.json``) come from

  python -m experiments.lm_study.design --workdir=docs/lm_study

which refuses to write unless MATCHED_LEARNING_RATE, KL_LEVEL, NUM_SEEDS and
NUM_PROBLEMS below equal what its rules compute from the pilot
(``study_pilot.py``, committed in docs/lm_study/pilot) and the 8-seed study. The
runs, two at a time on 2 cores, in parts (finished runs are skipped)::

  python -m launch.local --sweep=launch/sweeps/lm_study.json --out_root=out/lm_study \\
    --parallel=2 --threads_per_run=1
  python -m experiments.lm_study.archive_runs --study_dir=out/lm_study --dest=docs/lm_study/runs
  python -m experiments.lm_study.summary --study_config=experiments.lm.configs.study \\
    --study_dir=docs/lm_study/runs --workdir=docs/lm_study
"""

import ml_collections

from experiments.lm import contrasts
from experiments.lm.configs import study_8seed

TITLE = "LM study: max@k against GRPO at matched KL"
CONFIG_PATH = "experiments/lm/configs/study.py"
TASK = "countdown"
TASKS = {TASK: study_8seed.TASKS[TASK]}

# ------------------------------------------------------------- declared design
MARGIN = 0.02  # Equivalence margin in pass@k, and the effect the power analysis targets.
TARGET_POWER = 0.8
BUDGET_HOURS = 30.0  # Single-core hours for all seeds.
SEEDS_GRID = tuple(range(8, 41, 2))
PROBLEMS_GRID = (128, 192, 256, 384, 512)
INFLATION = 1.5  # The fragility check: power with both variances times this.
DRAWS = 20000  # Simulated studies per power figure.
VARIANCE_SOURCE = "docs/lm_study_8seed/paired_summary.csv"
VARIANCE_PROBLEMS = 128
PILOT_DIR = "docs/lm_study/pilot"
PILOT_TARGET_RUN = "max_at_k_k8"
PILOT_MATCHED_RUN = "grpo"
KL_FRACTION = 0.75
KL_STEP = 0.05
# The held-out KL's cost relative to an evaluation's sampling: about 2 x kl_samples / n
# (two forward passes over kl_samples of the n samples; experiments/lm/held_out_kl.py).
KL_SAMPLES = 16
KL_OVERHEAD = 2 * KL_SAMPLES / 128
RL_STEPS = 300  # 2.5x the 8-seed study's 120.
EVAL_EVERY = 50

# What the design computes (study_design refuses to write the note otherwise).
MATCHED_LEARNING_RATE = 3e-5
KL_LEVEL = 0.6
NUM_SEEDS = 24
NUM_PROBLEMS = 192

MATCHED_RUN = f"grpo_lr{MATCHED_LEARNING_RATE:g}"
RUNS = ("grpo", "max_at_k@8", f"grpo[lr={MATCHED_LEARNING_RATE:g}]")
SEEDS = tuple(range(NUM_SEEDS))
PRIMARY = ("max_at_k_k8", "grpo", (8, 128))


def get_config() -> ml_collections.ConfigDict:
  c = study_8seed.get_config(TASK)
  c.task.novel_answers = True
  c.study_design = "docs/lm_study/DESIGN.md"

  c.rl.runs = RUNS
  c.rl.steps = RL_STEPS

  c.eval.num_prompts = NUM_PROBLEMS
  c.eval.n = 128
  c.eval.bin_n = 128  # One binning evaluation (the 8-seed study's 1024 cost 8).
  c.eval.every = EVAL_EVERY
  c.eval.kl = True
  c.eval.kl_samples = KL_SAMPLES
  c.eval.common_keys = True
  c.checkpoint_every = EVAL_EVERY
  return c


# ------------------------------------------------------------ declared contrasts
# Primary: max@k at k_opt = 8 against GRPO at the k it optimises and at n = 128, at the
# final step and at matched held-out KL; one Holm family, with the equivalence margin.
# Secondary: one Holm family of their own. Everything else the summary reports is
# exploratory. k="n" is the evaluation's n (128).
_K8, _GRPO = "max_at_k_k8", "grpo"
CONTRASTS = (
  contrasts.Contrast(_K8, _GRPO, "pass", 8, "k_opt = 8 vs GRPO at pass@8", MARGIN, "primary"),
  contrasts.Contrast(_K8, _GRPO, "pass", "n", "k_opt = 8 vs GRPO at pass@n", MARGIN, "primary"),
  contrasts.Contrast(
    _K8, _GRPO, "pass", 8, "k_opt = 8 vs GRPO at pass@8, matched KL", MARGIN, "primary", KL_LEVEL
  ),
  contrasts.Contrast(
    _K8, _GRPO, "pass", "n", "k_opt = 8 vs GRPO at pass@n, matched KL", MARGIN, "primary", KL_LEVEL
  ),
  contrasts.Contrast(
    _K8, MATCHED_RUN, "pass", 8, "k_opt = 8 vs KL-matched GRPO at pass@8", MARGIN, "secondary"
  ),
  contrasts.Contrast(
    _K8, MATCHED_RUN, "pass", "n", "k_opt = 8 vs KL-matched GRPO at pass@n", MARGIN, "secondary"
  ),
  contrasts.Contrast(_K8, _GRPO, "pass", 1, "k_opt = 8 vs GRPO at pass@1", MARGIN, "secondary"),
  contrasts.Contrast(_GRPO, "base", "pass", 1, "GRPO vs base at pass@1", MARGIN, "secondary"),
  contrasts.Contrast(_GRPO, "base", "pass", "n", "GRPO vs base at pass@n", MARGIN, "secondary"),
  contrasts.Contrast(_K8, "base", "pass", 8, "k_opt = 8 vs base at pass@8", MARGIN, "secondary"),
  contrasts.Contrast(
    MATCHED_RUN,
    _GRPO,
    "pass",
    "n",
    "KL-matched GRPO vs GRPO at pass@n, matched KL",
    MARGIN,
    "secondary",
    KL_LEVEL,
  ),
)
FAMILY_SIZE = sum(c.family == "primary" for c in CONTRASTS)
POWER_EFFECT = MARGIN
REQUIRE_PROVENANCE = True
EQUIVALENT_COMMITS: tuple[tuple[str, ...], ...] = ()

# ------------------------------------------------------------ the note's prose
QUESTION = (
  "Does max@k training at k_opt = 8 (PKPO's estimator with the leave-one-out-minus-one "
  "baseline and exact off-policy weights) give a higher held-out pass@8, the k it optimises, "
  "and pass@128 than GRPO on countdown, and does any difference remain when the two are "
  "compared at the same KL to the warm start? The 8-seed study could not say: its test of "
  "this question had {power:.0%} power at a difference of {margin:g}, and its arms ended at "
  "different distances from the warm start (docs/lm_study_8seed/README.md, Audit)."
)
ARMS_TEXT = (
  "Countdown (4 numbers in 1..25, at least 2 used), the 8-seed study's model and warm start "
  "(4000 SFT steps), but SFT problems whose reference solution would solve a held-out "
  "problem are never drawn (`task.novel_answers`), so no held-out answer is seen verbatim "
  "in training. Three RL arms from each seed's warm start, on the same prompts and sampling "
  "keys: `grpo` and `max_at_k_k8` at learning rate 1e-4, and GRPO at {lr:g}, the KL-matched "
  "arm (the pilot's rule below). {steps} RL steps of 16 prompts x 16 samples, two inner "
  "epochs. Every arm is evaluated at step 0 (the shared warm start) and every {every} steps "
  "on the held-out problems, 128 samples each, all evaluations with the same sampling keys, "
  "with the held-out KL to the warm start (exact per token, summed along 16 samples per "
  "problem)."
)
CONTRASTS_TEXT = (
  "Primary: {family} tests in one Holm family. Each is `better` or `worse` when its "
  "Holm-adjusted p-value is below 0.05, `equivalent` when the Holm-adjusted p-value of the "
  "two one-sided tests within ±{margin:g} is below 0.05, and otherwise `not detected` with "
  "the power its test had. At matched KL, each seed's arms are read where their held-out "
  "KL first reaches {kl:g} nats, interpolated linearly between evaluated checkpoints; a seed "
  "whose arm never reaches it drops out of that contrast and the table says how many "
  "remain. Secondary contrasts form a second Holm family; every other number of the "
  "summary is exploratory."
)
PILOT_TEXT = (
  "One seed of the pilot config (`experiments/lm/configs/study_pilot.py`, seed 1000, never a "
  "study seed) trained GRPO at {rates} learning rates and max@k at k_opt = 8 at 1e-4 for 300 "
  "steps. The KL-matched rate, {lr:g}, interpolates log(final KL) linearly in log(rate) "
  "between the two GRPO rates whose final KL brackets max@k's (extrapolating from the "
  "nearest two where none does); the matched-KL level, {kl:g} nats, "
  "is {fraction:g} of the smallest final KL of the arms at 1e-4, rounded down to a multiple "
  "of {step:g}. The pilot's KL is the training-sample estimate; the study matches on the "
  "held-out KL, which the pilot did not measure."
)
ANALYSIS_TEXT = (
  "Runs go in parts, two at a time, from a worktree frozen at a commit after this note's; "
  "each run records its commit and times (`run.json`), and the summary refuses runs of "
  "several commits (unless declared value-equivalent with the test that shows it), of a "
  "modified checkout, or started before this note's commit. No seed is dropped for its "
  "results; a failed run is resumed from its checkpoints. The analysis is the summary's: "
  "paired differences per seed over the held-out problems, the floored t-interval over "
  "seeds, Holm within each family, and the verdicts above. Program is not part of this "
  "study: in the 8-seed study its training reward barely moved in any arm (the audit's "
  "item 4), and no claim should rest on an arm that did not learn."
)
