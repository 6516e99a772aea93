"""The bandit training study: PKPO Fig. 3 sizes; ``default.py:smoke`` runs in seconds.

Usage: ``--config=experiments/bandit_training/configs/default.py[:smoke]`` (the
binary's default), a field overridden with ``--config.FIELD=VALUE``. List fields are
tuples, comma-separated on the command line (``--config.k_evals=1,4``).
:func:`experiments.bandit_training.validation.validate` states every field's rule.
"""

import ml_collections


def get_config(variant: str = "") -> ml_collections.ConfigDict:
  """The study's config; ``variant="smoke"``: tiny sizes (the reproduction's smoke stage)."""
  c = ml_collections.ConfigDict()
  c.seed = 0  # Same seed and config: same results.
  c.bandits = ("easy", "hard", "gaussian")  # Policies to train.
  # Names of experiments.estimators (or "all"). Those whose advantages do not depend
  # on k (grpo, rloo, max_minus_second) run once, schedule "n/a".
  c.estimators = ("loo_minus_one", "grpo", "max_minus_second")
  # k_opt schedules: "k" (fixed; or the integer k) or "k0:t1:k1[:t2:k2...]" (k0 for
  # steps 0 to t1 - 1, then k1 until step t2, ...; switch steps strictly increase
  # inside (0, num_steps)).
  c.k_schedules = ("1", "2", "4", "8", "8:200:1")
  c.n = 8  # Samples per step (group size); every k_opt must be <= n.
  c.num_steps = 400
  c.num_seeds = 32  # Independent seeds, vmapped.
  c.k_evals = (1, 2, 4, 8, 16)  # k of the exact pass@k / max@k logged every step.
  c.optimizer = "adam"  # "adam" or "sgd".
  c.learning_rate = 0.05  # Of the categorical bandits' logits.
  c.gaussian_learning_rate = 0.01  # Of theta for the "gaussian" bandit.
  c.inner_steps = 1  # Optimiser steps per sampled group (> 1: later steps are off-policy).
  c.pass_threshold = 0.9  # A sample is correct when reward >= pass_threshold.
  c.num_arms = 10  # Categorical bandits (the hard bandit needs >= 3).
  c.best_arm_prob = 0.01  # Hard bandit: initial probability of the best arm (reward 1).
  c.decoy_reward = 0.6  # Hard bandit: reward of the decoy arm.
  c.theta0 = 0.5  # Gaussian toy: initial theta.
  c.sigma = 0.1  # Gaussian toy: standard deviation.
  if variant == "smoke":
    c.num_steps = 20
    c.num_seeds = 2
    c.k_schedules = ("1", "4")
    c.estimators = ("loo_minus_one", "grpo")
    c.bandits = ("easy", "gaussian")
    c.k_evals = (1, 4)
  elif variant:
    raise ValueError(f"Unknown variant={variant!r}; valid options are '' and 'smoke'.")
  return c
