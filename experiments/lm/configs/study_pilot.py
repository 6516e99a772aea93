"""The pilot of the matched-KL LM study: how far GRPO and max@k move in 300 RL steps,
and which GRPO learning rate ends where max@k at k_opt = 8 ends.

Countdown as in the 8-seed study (model, warm start of 4000 SFT steps, 16 prompts x
16 samples per RL step, two inner epochs), but 300 RL steps (2.5x the 8-seed
study's 120) and pilot seeds (>= 1000: never a study seed, so no study problem or
warm start is looked at before the design is fixed). Variants, one process each,
so the two cores run them side by side:

* ``study_pilot.py:reference``: GRPO and max@k at k_opt = 8, learning rate 1e-4;
* ``study_pilot.py:lr7e-5``, ``:lr5e-5`` and ``:lr2.2e-5``: GRPO at a lower rate, the
  candidates for the KL-matched GRPO arm.

The 8-seed study ended GRPO at a KL to the warm start of 1.00 nats and max@k at
k_opt = 8 at 0.56 after 120 steps. If KL grew with the square of the learning rate,
GRPO would match at 1e-4 x sqrt(0.56) = 7.5e-5; if linearly, at 5.6e-5: the two
candidates bracket both. They did not: GRPO's final KL fell only slowly with the rate
and stayed above max@k's at all three (docs/lm_study/pilot.csv), so the design's rule
extrapolated to 2.2e-5, and the fourth variant,
``study_pilot.py:lr2.2e-5``, added then, measures that rate so that the rule
interpolates instead. The pilot logs the training-sample KL every step
(``steps.csv``'s ``kl_to_warm_start``) and evaluates every run once, at the end, on
128 held-out problems; its wall times measure the cost model of the study's design.

  python -m experiments.lm --config=experiments/lm/configs/study_pilot.py:reference \\
    --workdir=out/lm_pilot/reference
"""

import ml_collections

from experiments.lm.configs import study_8seed as study

VARIANTS = {
  "reference": (("grpo", "max_at_k@8"), 1e-4),
  "lr7e-5": (("grpo",), 7e-5),
  "lr5e-5": (("grpo",), 5e-5),
  "lr2.2e-5": (("grpo",), 2.2e-5),
}
SEED = 1000


def get_config(variant: str = "reference") -> ml_collections.ConfigDict:
  if variant not in VARIANTS:
    raise ValueError(f"Unknown pilot variant {variant!r}; valid: {sorted(VARIANTS)}.")
  runs, learning_rate = VARIANTS[variant]
  c = study.get_config("countdown")
  c.seed = SEED
  c.rl.runs = runs
  c.rl.learning_rate = learning_rate
  c.rl.steps = 300
  c.eval.every = 300
  c.eval.bin_n = 128
  c.checkpoint_every = 50
  return c
