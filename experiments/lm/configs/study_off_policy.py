"""The off-policy weights study: exact, first-order and PPO-clip weights for max@k.

A small study of its own, apart from ``study_8seed.py``: on countdown (the study's task,
warm start and evaluation), max@k at k_opt = 4 with the ``loo_minus_one`` baseline
and four inner epochs per batch, so that the policy moves away from the sampler and
the weights differ, with each off-policy method on the same prompts and sampling
keys:

* ``max_at_k@4`` (exact importance-weighted max@k weights, unbiased);
* ``max_at_k@4/first_order`` (the product of ratios linearised);
* ``max_at_k@4/ppo_clip`` (each sample's own ratio, as PPO).

``steps.csv`` logs per step the effective sample size of the ratios, the clip
fraction and the gradient norms; ``metrics.jsonl`` also holds ``last_max_weight``
and the relative distances ``last_gap_first_order`` and ``last_gap_ppo_clip`` of
the approximate weights from the exact ones on the same batch. Three seeds::

  python -m launch.local --sweep=launch/sweeps/lm_off_policy.json --out_root=out/lm_off_policy

Its comparisons are exploratory (no contrasts are declared for it).
"""

import ml_collections

from experiments.lm.configs import study_8seed as study

K_OPT = 4


def get_config() -> ml_collections.ConfigDict:
  c = study.get_config("countdown")
  c.rl.runs = (f"max_at_k@{K_OPT}", f"max_at_k@{K_OPT}/first_order", f"max_at_k@{K_OPT}/ppo_clip")
  c.rl.inner_epochs = 4
  c.eval.n = 32
  c.eval.bin_n = 0  # No difficulty bins needed here: the binning draws eval.n samples.
  return c
