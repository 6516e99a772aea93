"""The LM study: base, GRPO and max@k at k_opt in {1, 4, 8} and annealed 8 -> 1, two
tasks, eight seeds (a sweep of 16 configs; archived in docs/lm_study_8seed).

A config is one task and one seed: ``study_8seed.py:countdown`` (binary reward: reach the
target from 4 numbers in 1..25, at least 2 of them used) or ``study_8seed.py:program``
(program synthesis, trained on the continuous reward: R^2 of the completion on the
hidden inputs, clipped at 0, so that no constant earns credit, times the mean
closeness 1 / (1 + |error|), so that a near miss earns about half), the seed from
``--config.seed``. Each seed draws its own held-out problems, warm start, training
problems and samples; within a seed every method sees the same prompts and sampling
keys. Each config runs

* base: the held-out evaluation of the warm start;
* ``grpo`` (PPO's clipped ratio in the second inner epoch);
* max@k (``loo_minus_one`` baseline, exact off-policy weights) at k_opt = 1, 4, 8
  and annealed 8 -> 1 (PKPO Fig. 3).

RLOO is not a separate arm: its advantages are n times max@1's with the
leave-one-out-minus-one baseline (``maxk.rloo_advantages(r) = n *
maxk.max_at_k_advantages(r, 1, baseline="loo_minus_one")``, tested in
tests/experiments/lm/rl_test.py), and Adam is nearly invariant to that constant
factor. The off-policy weights comparison has its own small study
(``study_off_policy.py``).

**Warm start.** SFT on reference solutions with a cosine learning-rate schedule;
``sft.steps`` per task is chosen from the measured warm-start curve (held-out
sampled pass@1 every ``sft.eval_every`` steps, in each run's ``steps.csv``) so that
the warm start's held-out pass@1 lies in [0.1, 0.3].

**RL step.** Learning rate 1e-4 with two inner epochs (``paper.py``'s docstring
measures how far one update moves the policy: about 0.05 nats per step at 1e-4,
with about 1% of samples clipped). ``rl.max_grad_norm`` = 1e4 is only a guard
against blow-ups: the estimators' gradients differ in scale by a constant factor
(a pilot on program measured median norms 523 for GRPO's z-scored advantages and
1.5 for max@1's, which carry a 1/n), which Adam's per-parameter normalisation
removes, so a clip at 200 clipped every GRPO step and no max@1 step. Each run's
``steps.csv`` records the clip fraction and whether each step's gradient was
clipped.

**Evaluation.** 128 held-out problems with 128 samples each (pass@k and max@k
curves to k = 128); the base model's binning evaluation draws 1024 samples per
problem, so "base-unsolved" means no correct sample in 1024.

The whole study through ``launch.local`` (finished runs are skipped on rerun, and
an interrupted one resumes from its last checkpoint), two runs at a time on 2 cores,
about 50 minutes per run::

  python -m launch.local --sweep=launch/sweeps/lm_study_8seed.json --out_root=out/lm_study_8seed \
    --parallel=2 --threads_per_run=1

or one seed of both tasks at a time (README's LM section has the command; the
same run names and folders), then keep each finished run's small files in the repository::

  python -m experiments.lm_study.archive_runs --study_dir=out/lm_study_8seed \
    --dest=docs/lm_study_8seed/runs

and its summary across seeds, recomputed from each run's per-problem file (it
refuses an incomplete study unless ``--allow_incomplete``; see
experiments/lm_study/summary.py)::

  python -m experiments.lm_study.summary --study_config=experiments.lm.configs.study_8seed \
    --study_dir=docs/lm_study_8seed/runs --workdir=docs/lm_study_8seed

The archived run folders keep the names the sweep gave them when this module was
``configs/study.py`` (``config-experiments-lm-configs-study.py-<task>_config.seed-<s>``);
the summary reads each run's task and seed from its ``config.json``, not its name.

**Provenance.** Each run records the commit it ran in ``run.json``
(experiments/lm/provenance.py), and the summary refuses a study whose runs used more
than one commit or a checkout with uncommitted changes
(experiments/lm_study/commits.py). Commits may be declared value-equivalent in
``EQUIVALENT_COMMITS`` only with the test that shows it passing: for the first
commit of each group and each other one, the code of both (their tracked files,
``git archive``) runs ``python -m experiments.lm
--config=experiments/lm/configs/tiny.py:micro`` on one CPU device, and the two
``metrics.jsonl`` files must be equal byte for byte (``metrics.jsonl`` is a
deterministic function of the config; ``throughput.jsonl`` and ``run.json`` are not
compared). A change that alters any value fails it, and such commits are not
equivalent. tests/experiments/lm/provenance_test.py runs it for every pair declared
here (``test_declared_equivalent_commits_write_the_same_metrics``; about a minute
per commit on 2 CPU cores). The runs of this study predate ``run.json``, so
``REQUIRE_PROVENANCE`` is False: the summary lists them as runs without a record,
and checks no design note.
"""

import ml_collections

from experiments.lm import contrasts
from experiments.lm.configs import default

# Task: (reward, task kwargs, SFT steps).
TASKS = {
  "countdown": (
    "binary",
    {"num_numbers": 4, "max_number": 25, "min_used": 2, "target_digits": 3},
    4000,
  ),
  # The program task's defaults: degree-1 functions, graded by R^2 on hidden inputs.
  "program": ("continuous", {}, 2500),
}
SEEDS = tuple(range(8))
RUNS = ("grpo", "max_at_k@1", "max_at_k@4", "max_at_k@8", "max_at_k@8:60:1")


def get_config(task: str = "countdown") -> ml_collections.ConfigDict:
  if task not in TASKS:
    raise ValueError(f"Unknown study task {task!r}; valid: {sorted(TASKS)} (study_8seed.py:TASK).")
  reward, kwargs, sft_steps = TASKS[task]
  c = default.get_config()
  c.task.name = task
  c.task.kwargs = ml_collections.ConfigDict(kwargs)

  c.sft.steps = sft_steps
  c.sft.learning_rate = 3e-3
  c.sft.warmup_steps = 100
  c.sft.schedule = "cosine"
  c.sft.final_lr_fraction = 0.1
  c.sft.eval_every = 500
  c.sft.eval_n = 16

  c.rl.runs = RUNS
  c.rl.reward = reward
  c.rl.steps = 120
  c.rl.learning_rate = 1e-4
  c.rl.inner_epochs = 2
  c.rl.max_grad_norm = 1e4
  c.rl.off_policy = "exact"

  c.eval.num_prompts = 128
  c.eval.n = 128
  c.eval.bin_n = 1024
  c.eval.chunk_prompts = 16  # 16 x 1024 rows at a time bound the sampler's memory.
  c.eval.every = 120  # The final evaluation only; steps.csv has the training curves.
  c.checkpoint_every = 20
  return c


# ------------------------------------------------------------ declared contrasts
# The comparisons the study tests, declared before its runs and applied to every
# task (experiments/lm/contrasts.py; tested by experiments/lm_study/significance.py).
# Their Holm family is all of them over all tasks (2 tasks x 8 = 16): the
# conservative choice, and what a reviewer counts.
# Every other comparison the summary reports is exploratory. k="n" is the
# evaluation's n (eval.n, 128 here).
# The effect at which contrasts.csv reports each declared test's power. The study
# declared no equivalence margin, so a non-significant contrast is "not detected",
# never "no difference"; this effect (0.02 in pass@k) was chosen after the runs, for
# the power column alone, and tests nothing.
POWER_EFFECT = 0.02
CONTRASTS = (
  contrasts.Contrast("grpo", "base", "pass", 1, "GRPO vs base at pass@1"),
  contrasts.Contrast("grpo", "base", "pass", "n", "GRPO vs base at pass@n"),
  contrasts.Contrast("max_at_k_k4", "base", "pass", 4, "k_opt = 4 vs base at pass@4"),
  contrasts.Contrast("max_at_k_k8", "base", "pass", 8, "k_opt = 8 vs base at pass@8"),
  contrasts.Contrast("max_at_k_k4", "grpo", "pass", 4, "k_opt = 4 vs GRPO at pass@4"),
  contrasts.Contrast("max_at_k_k8", "grpo", "pass", 8, "k_opt = 8 vs GRPO at pass@8"),
  contrasts.Contrast("max_at_k_k8", "max_at_k_k1", "pass", "n", "k_opt = 8 vs k_opt = 1 at pass@n"),
  contrasts.Contrast(
    "max_at_k_k8-60-1", "max_at_k_k8", "pass", 1, "annealed 8 -> 1 vs k_opt = 8 at pass@1"
  ),
)


# ------------------------------------------------------------------ provenance
# experiments/lm_study/commits.py: these runs predate run.json (False lets the summary
# read them); a new study keeps the default, True.
REQUIRE_PROVENANCE = False
# Groups of commits (hashes or >= 7-digit prefixes) declared value-equivalent, each pair
# tested as the docstring says; a study whose runs span commits of one group passes.
EQUIVALENT_COMMITS: tuple[tuple[str, ...], ...] = ()

# --------------------------------------------------------------------- the audit
# The study is archived (docs/lm_study_8seed): its summary's README opens with an
# audit of what its files show does not hold (experiments/lm_study/audit.py), power
# reported at an effect of AUDIT_MARGIN where contrasts.csv declares no margin.
AUDIT = True
AUDIT_MARGIN = 0.02
