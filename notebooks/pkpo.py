# %% [markdown]
# # Pass@k Policy Optimization (PKPO): the estimators as reward transforms
#
# Walder & Karkhanis, arXiv 2505.15201. Everything below calls the library (`maxk`) and the
# bandit experiment modules (`experiments.bandits`); nothing is re-implemented here. Set
# `MAXK_SMOKE=1` to run at tiny sizes (as the test suite does).

# %%
# Setup. Each later cell imports what it uses, after the path set-up below.
# ruff: noqa: E402
import os
import sys

# Run from notebooks/ or the repository root: make `maxk` and `experiments` importable.
for _p in ("..", "."):
  if os.path.isdir(os.path.join(_p, "maxk")) and os.path.abspath(_p) not in sys.path:
    sys.path.insert(0, os.path.abspath(_p))
os.environ.setdefault("JAX_PLATFORMS", "cpu")
# MAXK_SMOKE=1 shrinks every size so that the notebook runs in seconds (the tests do).
SMOKE = os.environ.get("MAXK_SMOKE") == "1"

import jax
import jax.numpy as jnp
import matplotlib.pyplot as plt
import numpy as np

import maxk

# %matplotlib inline
plt.rcParams.update({"figure.dpi": 60, "savefig.dpi": 60, "figure.figsize": (9, 3.4)})
print("SMOKE =", SMOKE, "| jax", jax.__version__, "| devices", jax.devices())

# %% [markdown]
# ## Fig. 1: max@k of the Gaussian toy and its gradient vs theta
#
# PKPO's toy: x ~ N(theta, sigma = 0.1), reward x^2 on [0, 1], else 0. `GaussianToy.max_at_k`
# is the exact max@k by quadrature; `jax.grad` gives its exact gradient. Larger k moves the
# optimum of theta towards the edge of the reward's support and makes the objective
# risk-seeking.

# %% caption="PKPO Fig. 1: max@k of the Gaussian toy and its gradient vs theta, k in {1,2,4,8,16}."
from experiments.bandits import policies

toy = policies.GaussianToy(sigma=0.1)
thetas = jnp.linspace(0.0, 1.4, 30 if SMOKE else 281)
ks = [1, 2, 4, 8, 16]
fig, (ax0, ax1) = plt.subplots(1, 2)
for k in ks:
  value = jax.vmap(lambda t: toy.max_at_k(t, k))(thetas)
  grad = jax.vmap(jax.grad(lambda t: toy.max_at_k(t, k)))(thetas)
  ax0.plot(thetas, value, label=f"k={k}")
  ax1.plot(thetas, grad, label=f"k={k}")
  print(
    f"k={k:2d}: argmax_theta max@k = {float(thetas[jnp.argmax(value)]):.3f}, "
    f"max = {float(value.max()):.4f}"
  )
ax0.set(xlabel="theta", ylabel="max@k", title="max@k of the Gaussian toy")
ax1.set(xlabel="theta", ylabel="d max@k / d theta", title="its exact gradient")
ax1.axhline(0, color="k", lw=0.5)
ax0.legend()
fig.tight_layout()
plt.show()

# %% [markdown]
# ## Fig. 2: estimator weights vs rank
#
# The unbiased max@k estimate is linear in the sorted rewards, sum_i w_i r_(i). We read the
# weights off the library by differentiating `maxk.max_at_k` at distinct rewards: w_i is the
# probability that the i-th smallest of n samples is the maximum of a random k-subset,
# C(i-1, k-1) / C(n, k).

# %% caption="PKPO Fig. 2: weight of each reward rank in the unbiased max@k estimator."
n = 8 if SMOKE else 32
rewards = jnp.arange(n, dtype=jnp.float32)  # distinct, already sorted: rank = index
fig, ax = plt.subplots(figsize=(6, 3.4))
for k in [1, 2, 4, 8, 16]:
  if k > n:
    continue
  w = jax.grad(lambda r: maxk.max_at_k(r, k))(rewards)
  assert abs(float(w.sum()) - 1) < 1e-5
  ax.plot(np.arange(1, n + 1), w, "o-", ms=3, label=f"k={k}")
ax.set(
  xlabel="rank i of the reward (1 = smallest)",
  ylabel="weight w_i",
  title=f"max@k estimator weights, n={n}",
  yscale="log",
  ylim=(1e-6, 1.1),
)
ax.legend()
fig.tight_layout()
plt.show()

# %% [markdown]
# ## Fig. 5: transformed rewards for 32 uniform rewards
#
# `maxk.max_at_k_advantages` with every baseline, for n = 32 rewards drawn from U(0, 1),
# plotted against the rank of the reward. Without a baseline (s) every sample is pushed up;
# the leave-one-out baselines (s^loo, s^(loo-1)) centre the transform so that only samples
# which raise the max of a k-subset are reinforced.

# %% caption="PKPO Fig. 5: transformed rewards of 32 uniform rewards for each baseline and k."
n = 8 if SMOKE else 32
r = jnp.sort(jax.random.uniform(jax.random.key(0), (n,)))
ks = [1, 4] if SMOKE else [1, 4, 8, 16]
fig, axes = plt.subplots(1, len(ks), figsize=(3 * len(ks), 3.2), sharey=False)
for ax, k in zip(axes, ks):
  for baseline in ["none", "loo", "loo_centered", "loo_minus_one"]:
    ax.plot(
      np.arange(1, n + 1), maxk.max_at_k_advantages(r, k, baseline=baseline), ".-", label=baseline
    )
  ax.plot(np.arange(1, n + 1), r, "k:", label="reward r")
  ax.set(title=f"k={k}", xlabel="rank")
  ax.axhline(0, color="k", lw=0.5)
axes[0].set_ylabel("transformed reward")
axes[-1].legend(fontsize=7)
fig.tight_layout()
plt.show()

# %% [markdown]
# ## Fig. 4: gradient variance vs n
#
# The Monte Carlo variance of each estimator's gradient for the Gaussian toy at theta = 1
# (all replicates in one jitted `vmap`, `experiments.bandits.variance.run_study`, the same
# code as `python -m experiments.bandit_variance`). The leave-one-out baselines cut the
# variance of the plain transform by orders of magnitude; all three are unbiased.

# %% caption="PKPO Fig. 4: gradient variance vs n on the Gaussian toy for s, s^loo and s^(loo-1)."
from experiments.bandits import variance

setting = variance.gaussian_setting(theta=1.0, sigma=0.1)
ns = [4, 8] if SMOKE else [4, 8, 16, 32, 64]
ks = [4] if SMOKE else [1, 8]
rows = variance.run_study(
  [setting],
  ns=ns,
  ks=ks,
  num_replicates=200 if SMOKE else 10_000,
  estimator_names=["none", "loo", "loo_minus_one"],
  seed=0,
  pass_threshold=0.5,
)
fig, axes = plt.subplots(1, len(ks), figsize=(3.2 * len(ks), 3.2), squeeze=False)
for ax, k in zip(axes[0], ks):
  for est in ["none", "loo", "loo_minus_one"]:
    sel = [row for row in rows if row["estimator"] == est and row["k"] == k]
    ax.plot([row["n"] for row in sel], [row["variance"] for row in sel], "o-", label=est)
  ax.set(xscale="log", yscale="log", xlabel="n", title=f"k={k}")
  ax.set_xticks(ns, [str(n) for n in ns])
  ax.minorticks_off()
axes[0][0].set_ylabel("gradient variance")
axes[0][-1].legend(fontsize=7)
fig.tight_layout()
plt.show()
print("max |bias| / stderr:", max(abs(row["bias_z"]) for row in rows))
