# %% [markdown]
# # max@k optimisation: on- vs off-policy weights
#
# "The Best of N Worlds: Aligning RL with Best-of-N Sampling via max@k Optimisation"
# (arXiv 2510.23393), Sec. 3.3 and App. E. Samples come from an old policy; the off-policy
# transform re-weights each k-subset by the importance weight of its members:
# `maxk.max_at_k_advantages_off_policy(rewards, log_ratio, k, method=...)` with the exact
# product of ratios or the paper's first-order expansion 1 + sum(rho - 1).

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
import matplotlib.pyplot as plt
import numpy as np

from experiments import plot_style
import maxk

# %matplotlib inline
SMOKE = preamble.start()

# %% [markdown]
# ## The weights: on-policy vs off-policy (exact and first-order)
#
# n = 16 rewards, k = 4; the new policy is the old one moved by log-ratios of scale delta.
# At delta = 0 both off-policy transforms equal the on-policy one (`baseline="none"`).

# %% caption="max@k paper: on- vs off-policy weights (exact, first-order) as the policy moves."
n, k = (8, 2) if SMOKE else (16, 4)
key_r, key_l = jax.random.split(jax.random.key(0))
r = jnp.sort(jax.random.uniform(key_r, (n,)))
z = jax.random.normal(key_l, (n,))
on = maxk.max_at_k_advantages(r, k, baseline="none")
ranks = np.arange(1, n + 1)
fig, axes = plot_style.figure(1, 3, pyplot=True, sharey=True)
for ax, delta in zip(axes[0], [0.0, 0.1, 0.5]):
  lr = delta * z
  ax.plot(ranks, on, ".-", color="k", label="on-policy s_i")
  for method, linestyle in (("exact", "-"), ("first_order", "--")):
    a = maxk.max_at_k_advantages_off_policy(r, lr, k, method=method)
    style = plot_style.style(method) | {"linestyle": linestyle}
    ax.plot(ranks, a, label=f"off-policy {method}", **style)
  ax.set(title=f"log-ratio scale delta = {delta}", xlabel="rank of reward (1 = smallest)")
axes[0, 0].set_ylabel("weight a_i")
axes[0, 0].legend()
fig.tight_layout()
plt.show()

# %% [markdown]
# ## First-order vs exact error as the policy moves
#
# (a) The weights themselves: the first-order weights differ from the exact ones by
# O(delta^2) (slope 2 on log-log axes).
# (b) The gradient: a softmax bandit (`experiments.bandits`), samples from old logits, target
# logits = old + t * direction. The Monte Carlo mean of each estimator (all replicates of
# `experiments.bandits.variance.gradient_estimates` in one jitted `vmap`) against the exact gradient
# (`jax.grad` of `maxk.max_at_k_exact`): the exact weights stay unbiased (error at the Monte
# Carlo noise floor) while the first-order bias grows with t. Error bars: +-2 standard
# errors of the Monte Carlo mean (its norm's noise, relative to |grad|).

# %% caption="First-order off-policy: O(delta^2) weight error, gradient bias growing with shift."
from experiments import estimators as est_lib
from experiments.bandits import policies
from experiments.bandits import variance

deltas = np.logspace(-3, 0, 5 if SMOKE else 13)


def weight_gap(delta):
  log_ratio = delta * z
  first = maxk.max_at_k_advantages_off_policy(r, log_ratio, k, method="first_order")
  exact = maxk.max_at_k_advantages_off_policy(r, log_ratio, k, method="exact")
  return float(jnp.max(jnp.abs(first - exact)))


err = [weight_gap(d) for d in deltas]
policy, logits = policies.random_bandit(10, seed=0)
direction = jnp.asarray(np.random.default_rng(1).standard_normal(10), jnp.float32)
ests = [est_lib.get("off_policy_exact"), est_lib.get("off_policy_first_order")]
ts = [0.0, 0.5] if SMOKE else [0.0, 0.1, 0.2, 0.4, 0.7, 1.0, 1.5]
R = 500 if SMOKE else 100_000


@jax.jit  # One compilation for every shift t: replicates of variance.gradient_estimates.
def monte_carlo(target, old, key, exact):
  one = lambda kk: variance.gradient_estimates(
    policy, target, old, kk, n=n, k=k, estimators=ests, pass_threshold=0.5
  )
  g = jax.vmap(one)(jax.random.split(key, R)) - exact  # [R, estimators, arms]
  return g.mean(0), g.var(0, ddof=1).sum(-1)


bias = {e.name: [] for e in ests}
noise = {e.name: [] for e in ests}  # Standard error of the Monte Carlo mean, relative.
for i, t in enumerate(ts):
  target = logits + t * direction
  exact = policy.exact_gradient(target, k)
  diff, var = monte_carlo(target, logits, jax.random.key(i), jnp.asarray(exact, jnp.float32))
  for e, est in enumerate(ests):
    bias[est.name].append(float(jnp.linalg.norm(diff[e])) / np.linalg.norm(exact))
    noise[est.name].append(float(np.sqrt(var[e] / R)) / np.linalg.norm(exact))
fig, ((ax0, ax1),) = plot_style.figure(1, 2, pyplot=True)
ax0.loglog(
  deltas, err, "o-", color=plot_style.color("first_order"), label="max |a_first - a_exact|"
)
ax0.loglog(deltas, err[-1] * deltas**2 / deltas[-1] ** 2, "k:", label="slope 2")
ax0.set(xlabel="log-ratio scale delta", title="(a) weights")
ax0.legend()
for name, b in bias.items():
  ax1.errorbar(
    ts, b, yerr=2 * np.array(noise[name]), capsize=3, label=name, **plot_style.style(name)
  )
ax1.axhline(0, color="k", lw=0.8)
ax1.set(
  xlabel="policy shift t",
  ylabel="|E[g] - grad| / |grad|",
  title="(b) relative gradient bias (bars: ±2 s.e.)",
)
ax1.legend()
fig.tight_layout()
plt.show()
for t, be, bf in zip(ts, bias["off_policy_exact"], bias["off_policy_first_order"]):
  print(f"t={t:.1f}: relative bias exact {be:.4f}, first-order {bf:.4f}")
