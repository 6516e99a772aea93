"""The best-of-n study at the paper's sizes; ``default.py:smoke`` runs in seconds.

Usage: ``--config=experiments/best_of_n/configs/default.py[:smoke]`` (the binary's
default), a field overridden with ``--config.FIELD=VALUE``. List fields are tuples,
comma-separated on the command line (``--config.uniform_sizes=10,100``; empty: none).
:func:`experiments.best_of_n.validation.validate` states every field's rule.
"""

import ml_collections


def get_config(variant: str = "") -> ml_collections.ConfigDict:
  """The study's config; ``variant="smoke"``: tiny sizes (the reproduction's smoke stage)."""
  c = ml_collections.ConfigDict()
  # Draws the Dirichlet references and the Monte Carlo draws (same config: same numbers).
  c.seed = 0
  c.n_max = 10_000  # Largest n of the log-spaced n grid.
  c.num_n = 41  # Points of the n grid from 1 to n_max (duplicates after rounding dropped).
  # Alphabet sizes L of the uniform references (rewards 0..L-1); (): none.
  c.uniform_sizes = (10, 100, 1000, 10000)
  c.cherry_eps = 1e-4  # Reference probability of the cherry-picked references' best outcome.
  # "cherry_top": the best outcome has cherry_eps, cherry_size - 1 others share the rest.
  c.cherry_size = 100
  # "cherry_staircase": rewards rise as probabilities fall by this factor per level,
  # down to cherry_eps (about 2 at least; larger: flatter plateaus).
  c.cherry_step = 100.0
  c.dirichlet_alphas = (0.1, 1.0)  # Concentrations of the Dirichlet references; (): none.
  c.dirichlet_size = 1000  # Their alphabet size (rewards ~ N(0, 1)).
  # Best-of-n draws per (reference, n) for the Monte Carlo estimate of d_n (its
  # standard error needs >= 2).
  c.num_mc_draws = 100
  # Rewind-and-repeat thresholds per reference (acceptance probabilities log-spaced
  # from 1 down to the best outcome's probability).
  c.num_thresholds = 25
  # Try limits of rewind-and-repeat besides the unlimited one, which always runs.
  c.rr_max_tries = (16,)
  # float64 (jax_enable_x64) resolves KL gaps below float32 resolution (~1e-7 nats).
  c.float64 = True
  # Best-of-n selected by a noisy proxy score (experiments.best_of_n.proxy).
  c.proxy_arms = 1000  # Arms of the base policy.
  # Scales sigma of the errors (proxy = reward + sigma * error).
  c.proxy_sigmas = (0.0, 0.5, 1.0, 2.0)
  c.proxy_t_df = 2.0  # Degrees of freedom of the heavy-tailed (Student-t) errors.
  c.proxy_n_max = 1024  # Largest n of its log-spaced n grid.
  c.proxy_num_n = 21  # Points of that grid.
  c.proxy_mc_draws = 200  # Simulated best-of-n draws per (errors, sigma, n).
  # The win rate vs KL frontier of every policy family (experiments.best_of_n.frontier),
  # on the proxy study's base policy (proxy_arms arms, Student-t errors of proxy_t_df).
  c.frontier_n_max = 256  # Best-of-n at every n from 1 to this; the largest n scanned.
  c.frontier_num_points = 25  # Points of the log grids of n (soft BoN, BoP), beta.
  c.frontier_lams = (0.25, 1.0)  # Temperatures of the soft best-of-n curves.
  c.frontier_sigma = 1.0  # Scale of the proxy's Student-t errors.
  if variant == "smoke":
    c.n_max = 100
    c.num_n = 6
    c.uniform_sizes = (10, 100)
    c.dirichlet_size = 50
    c.num_mc_draws = 10
    c.num_thresholds = 4
    c.cherry_size = 20
    c.proxy_arms = 100
    c.proxy_n_max = 64
    c.proxy_num_n = 6
    c.proxy_mc_draws = 20
    c.frontier_n_max = 16
    c.frontier_num_points = 5
  elif variant:
    raise ValueError(f"Unknown variant={variant!r}; valid options are '' and 'smoke'.")
  return c
