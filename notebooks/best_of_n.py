# %% [markdown]
# # Best-of-n: exact KL vs the bound vs the estimator; win rate vs KL
#
# Beirami et al., "Theoretical guarantees on the best-of-n alignment policy" (arXiv
# 2401.01879), computed exactly with `maxk.bon_*`. Every cell calls the functions of the
# study `experiments.best_of_n` (references, result rows, figures); the full study (more
# references, rewind-and-repeat with a try limit, a summary) is
# `python -m experiments.best_of_n --workdir=...`.

# %%
# Setup (notebooks/preamble.py): makes `maxk` and `experiments` importable, runs JAX on the
# CPU, applies the repository's figure style; SMOKE (MAXK_SMOKE=1) shrinks every size so
# that the notebook runs in seconds, as the tests run it. Each later cell imports what it uses.
# ruff: noqa: E402
try:
  import preamble
except ImportError:  # The kernel runs at the repository root.
  from notebooks import preamble

import jax
import jax.numpy as jnp
import numpy as np

# %matplotlib inline
SMOKE = preamble.start()
jax.config.update("jax_enable_x64", True)  # resolve tiny KL gaps, as the binary does

# %% [markdown]
# ## Exact KL vs log(n) - (n-1)/n vs the estimator d_n
#
# Three references of the study (`experiments.best_of_n.references`): uniform over L = 100
# outcomes, a "cherry-picked" one whose best outcome has probability 1e-4, and a random
# Dirichlet(0.3) one. The formula is an upper bound that overshoots once n exceeds the
# number of likely outcomes; the exact expectation of d_n
# (`maxk.bon_kl_estimate_expectation`) stays close to the exact KL, and so does its Monte
# Carlo mean over draws Y ~ pi_n (sampled from the exact PMF `maxk.bon_pmf`, error bars
# ±2 standard errors).

# %% caption="Best-of-n: exact KL(pi_n || pi) vs n beside the log n - (n-1)/n bound and d_n."
from IPython.display import display

from experiments.best_of_n import plotting
from experiments.best_of_n import references
from experiments.best_of_n import study

L = 20 if SMOKE else 100
refs = [
  references.uniform(L),
  references.cherry_top(L, 1e-4),
  references.dirichlet(np.random.default_rng(0), L, 0.3),
]
probs, rewards = references.pad(refs, jnp.float64)
ns = study.n_grid(100 if SMOKE else 10_000, 8 if SMOKE else 33)
draws = 20 if SMOKE else 400
rows = study.best_of_n_rows(
  refs, probs, rewards, ns=ns, num_mc_draws=draws, key=jax.random.key(0), progress=False
)
for ref in refs:
  last = study.select(rows, method="best_of_n", reference=ref.name)[-1]
  print(
    f"{ref.name:16s} n={last['n']}: KL={last['kl']:.3f}  bound={last['kl_bound']:.3f}  "
    f"E[d_n]={last['d_n_expected']:.3f}"
  )
display(plotting.kl_vs_n_figure(rows, refs, "Exact KL of best-of-n vs n"))

# %% [markdown]
# ## Monte Carlo d_n from best-of-n draws
#
# The estimator averaged over the draws above, on the Dirichlet reference: its spread
# shows how many draws are needed.

# %%
for row in study.select(rows, method="best_of_n", reference=refs[-1].name):
  print(
    f"n={row['n']:5d}: exact KL {row['kl']:.4f}   MC d_n {row['d_n_mc_mean']:.4f} "
    f"+- {row['d_n_mc_stderr']:.4f}   bound {row['kl_bound']:.4f}"
  )

# %% [markdown]
# ## Win rate vs KL: best-of-n vs rewind-and-repeat
#
# Best-of-n for the n above, and rewind-and-repeat (`maxk.rewind_repeat_pmf`: draw until
# the reward clears a threshold) for thresholds whose acceptance probabilities are
# log-spaced from 1 down to that of the best outcome, both against the reference. The
# dashed curve is (log n - (n-1)/n, n/(n+1)). At equal KL best-of-n mostly has the higher
# win rate: for a continuum of rewards, rewind-and-repeat with tail mass a has KL log(1/a)
# and win rate 1 - a/2, while best-of-n reaches that win rate at KL about log(2/a) - 1.

# %% caption="Win rate vs KL: best-of-n against rewind-and-repeat on three references."
thresholds = study.thresholds(refs, 5 if SMOKE else 25)
rr_rows = study.rewind_repeat_rows(
  refs, probs, rewards, thresholds=thresholds, max_tries=[None], progress=False
)
display(plotting.win_rate_figure(rows + rr_rows, refs, n_max=ns[-1]))

# %% [markdown]
# ## Beyond the hard max: every policy family on one frontier
#
# The policies that trade reward for KL to the reference, each computed exactly for a
# categorical reference of 1000 arms (`experiments.best_of_n.frontier`): best-of-n
# (`maxk.bon_pmf`), soft best-of-n that keeps sample i with probability proportional to
# exp(r_i / λ) (`maxk.soft_bon_pmf`, Verdun et al., arXiv 2505.03156), Best-of-Poisson with
# n = 1 + Poisson(μ) (`maxk.bop_pmf`, arXiv 2506.19248), the exponential tilt π e^{βr} / Z
# (`maxk.tilt_pmf`) and the χ²-regularised optimum π (r − λ_β)_+ / β (`maxk.chi2_pmf`,
# arXiv 2503.21878). Left: win rate against the reference vs KL, selecting by the true
# reward. Right: the true reward vs KL when each selects by a proxy with heavy-tailed
# (Student-t) errors: best-of-n peaks and falls (the star: its best n, found by the exact
# scan `maxk.proxy_bon_best_n`), as do soft best-of-n and Best-of-Poisson, while the χ²
# optimum's reward levels off as β shrinks.

# %% caption="Win rate vs KL of every policy family, and their true reward under a proxy."
from experiments.best_of_n import frontier

frontier_rows, best = frontier.rows(
  seed=0,
  num_arms=100 if SMOKE else 1000,
  sigma=1.0,
  t_df=2.0,
  n_max=16 if SMOKE else 256,
  num_points=5 if SMOKE else 25,
  lams=(0.25, 1.0),
)
print(
  f"proxy best-of-n: best n = {best['best_n']} (true reward "
  f"{best['true_reward_at_best_n']:.3f}), n = {16 if SMOKE else 256}: "
  f"{best['true_reward_at_n_max']:.3f}"
)
display(frontier.figure(frontier_rows, best, sigma=1.0))
