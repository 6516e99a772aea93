"""The bandit variance study: PKPO Fig. 4 sizes; ``default.py:smoke`` runs in seconds.

Usage: ``--config=experiments/bandit_variance/configs/default.py[:smoke]`` (the
binary's default), a field overridden with ``--config.FIELD=VALUE``. List fields are
tuples, comma-separated on the command line (``--config.ns=4,8``).
:func:`experiments.bandit_variance.validation.validate` states every field's rule.
"""

import ml_collections


def get_config(variant: str = "") -> ml_collections.ConfigDict:
  """The study's config; ``variant="smoke"``: tiny sizes (the reproduction's smoke stage)."""
  c = ml_collections.ConfigDict()
  c.seed = 0  # Same seed and config: same results.
  c.policies = ("gaussian", "categorical")  # PKPO's Gaussian toy and/or the softmax bandit.
  # "max" (max@k, both policies, every estimator) and the rank objectives "top_m"
  # (mean of the top top_m of k), "min" (min@k) and "maxrl" (sum_{j<=k} pass@j / j on
  # reward >= pass_threshold), these on the categorical bandit only.
  c.objectives = ("max", "top_m", "min", "maxrl")
  c.top_m = 2  # The m of "top_m" (cells with k < m are skipped).
  # max@k estimators: ("all",) or names of experiments.estimators.
  c.estimators = ("all",)
  c.ns = (4, 8, 16, 32)  # Group sizes n.
  c.ks = (1, 4, 8)  # Values of k (cells with k > n are skipped).
  c.num_replicates = 20_000  # Independent groups per (policy, n, k) cell.
  c.theta = 1.0  # Gaussian toy: x ~ N(theta, sigma^2).
  c.sigma = 0.1
  c.gaussian_shift = 0.05  # Gaussian toy, off-policy: samples from N(theta - shift, sigma^2).
  c.num_arms = 10  # Categorical bandit: arms.
  c.logit_scale = 1.0  # Categorical bandit: target logits ~ N(0, logit_scale^2) from seed.
  c.categorical_shift = 0.5  # Off-policy: sampling logits = logits + shift * N(0, I).
  c.pass_threshold = 0.5  # pass_at_k_training sees the binarised reward >= pass_threshold.
  # The variance atlas (experiments.bandits.atlas): exact variance / floor of every
  # on-policy max@k estimator on 4-arm bandits; () leaves it out.
  c.atlas_bandits = ("easy", "hard")
  c.atlas_ns = (8, 16, 32, 64)
  c.atlas_ks = (1, 4, 8)
  c.atlas_num_samples = 100_000  # Groups per Monte Carlo row (JSPO's batches).
  c.atlas_jspo_prompts = 4  # Prompts of equal difficulty in JSPO's batch.
  if variant == "smoke":
    c.ns = (4, 8)
    c.ks = (1, 4)
    c.num_replicates = 256
    c.estimators = ("none", "loo_minus_one", "grpo", "off_policy_exact", "off_policy_first_order")
    c.atlas_bandits = ("hard",)
    c.atlas_ns = (4,)
    c.atlas_ks = (1, 2)
    c.atlas_num_samples = 2000
  elif variant:
    raise ValueError(f"Unknown variant={variant!r}; valid options are '' and 'smoke'.")
  return c
