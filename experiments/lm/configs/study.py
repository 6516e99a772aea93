"""The full comparison: every estimator, both tasks, three seeds (a sweep of 6 configs).

A config is one task and one seed: ``study.py:countdown`` (binary reward: the
answer reaches the target) or ``study.py:program`` (program synthesis with the
continuous reward), the seed from ``--config.seed``. Each config runs, on the same
prompts and sampling keys,

* base: the held-out evaluation of the warm start;
* ``grpo``, ``rloo`` (PPO's clipped ratio in later inner epochs);
* max@k (``loo_minus_one`` baseline) with k_opt = 1, 4, 8 and annealed 8 -> 1
  (PKPO Fig. 3), all with the exact off-policy weights;
* the off-policy study at k_opt = 4: ``max_at_k@4`` (exact weights),
  ``max_at_k@4/first_order`` and ``max_at_k@4/ppo_clip``, four inner epochs per
  batch so that the weights differ (``last_ess_frac``, ``last_max_weight`` and
  ``last_gap_*`` in metrics.jsonl measure by how much).

The whole study (2 tasks x 3 seeds) through ``launch.local``, one run at a time
(finished runs are skipped on rerun; one table ``out/lm_study/all_results.csv``)::

  python -m launch.local --sweep=launch/sweeps/lm_study.json --out_root=out/lm_study

and its summary across seeds, recomputed from each run's per-problem file (the
committed one is ``docs/lm_study``; see experiments/lm/study_summary.py)::

  python -m experiments.lm.study_summary --study_dir=out/lm_study --out_dir=out/lm_study/summary

Running time on 2 CPU cores, measured for the committed study (docs/lm_study),
one run at a time: a countdown config 14-15 minutes (22 while other jobs shared the
cores), a program config 21-22 minutes (its warm start is 900 steps: 300 left
pass@1 at 0.007), the whole study 1 hour 55 minutes.
"""

import ml_collections

from experiments.lm import contrasts
from experiments.lm.configs import default

# Task: (reward, task kwargs, SFT steps).
TASKS = {
  "countdown": (
    "binary",
    {"num_numbers": 3, "max_number": 9, "min_used": 2, "target_digits": 3},
    300,
  ),
  # The program task's defaults; graded by the fraction of hidden tests passed.
  "program": ("continuous", {}, 900),
}
OFF_POLICY_K = 4


def get_config(task: str = "countdown") -> ml_collections.ConfigDict:
  if task not in TASKS:
    raise ValueError(f"Unknown study task {task!r}; valid: {sorted(TASKS)} (study.py:TASK).")
  reward, kwargs, sft_steps = TASKS[task]
  c = default.get_config()
  c.task.name = task
  c.task.kwargs = ml_collections.ConfigDict(kwargs)
  c.sft.steps = sft_steps

  c.rl.runs = ",".join(
    [
      "grpo",
      "rloo",
      "max_at_k@1",
      f"max_at_k@{OFF_POLICY_K}",  # Exact weights (rl.off_policy).
      "max_at_k@8",
      "max_at_k@8:60:1",
      f"max_at_k@{OFF_POLICY_K}/first_order",
      f"max_at_k@{OFF_POLICY_K}/ppo_clip",
    ]
  )
  c.rl.reward = reward
  c.rl.steps = 120
  c.rl.inner_epochs = 4
  c.rl.off_policy = "exact"

  c.eval.num_prompts = 128  # Tighter intervals over prompts than the default's 64.
  c.eval.n = 32
  c.eval.every = 40
  c.checkpoint_every = 20
  return c


# ------------------------------------------------------------ declared contrasts
# The comparisons the study tests, declared before its runs and applied to every
# task (experiments/lm/contrasts.py). Their Holm family is all of them over all
# tasks (2 tasks x 8 = 16): the conservative choice, and what a reviewer counts.
# Every other comparison the summary reports is exploratory. k="n" is the
# evaluation's n (eval.n, 32 here).
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
