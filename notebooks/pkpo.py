# %% [markdown]
# # Pass@k Policy Optimization (PKPO): the estimators as reward transforms
#
# Walder & Karkhanis, arXiv 2505.15201. Everything below calls the library (`maxk`) and the
# bandit experiment modules (`experiments.bandits`); nothing is re-implemented here. Set
# `MAXK_SMOKE=1` to run at tiny sizes (as the test suite does).

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
fig, ((ax0, ax1),) = plot_style.figure(1, 2, pyplot=True)
for i, k in enumerate(ks):
  value = jax.vmap(lambda t: toy.max_at_k(t, k))(thetas)
  grad = jax.vmap(jax.grad(lambda t: toy.max_at_k(t, k)))(thetas)
  ax0.plot(thetas, value, color=plot_style.sequential(i, len(ks)), label=f"k={k}")
  ax1.plot(thetas, grad, color=plot_style.sequential(i, len(ks)), label=f"k={k}")
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
fig, ((ax,),) = plot_style.figure(1, 1, pyplot=True)
ks = [k for k in [1, 2, 4, 8, 16] if k <= n]
for i, k in enumerate(ks):
  w = jax.grad(lambda r: maxk.max_at_k(r, k))(rewards)
  assert abs(float(w.sum()) - 1) < 1e-5
  ax.plot(np.arange(1, n + 1), w, "o-", color=plot_style.sequential(i, len(ks)), label=f"k={k}")
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
# ## Fig. 4: gradient variance vs n
#
# The Monte Carlo variance of each estimator's gradient for the Gaussian toy at theta = 1
# (all replicates in one jitted `vmap`, `experiments.bandits.variance.run_study`, the same
# code as `python -m experiments.bandit_variance`). The leave-one-out baselines cut the
# variance of the plain transform by orders of magnitude; all three are unbiased. Bands:
# +-2 standard errors of each Monte Carlo variance (normal theory,
# `experiments.bandit_variance.plotting.variance_stderr`).

# %% caption="PKPO Fig. 4: gradient variance vs n on the Gaussian toy for s, s^loo and s^(loo-1)."
from experiments.bandit_variance import plotting
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
fig, axes = plot_style.figure(1, 2, pyplot=True)
for ax, k in zip(axes[0], ks):
  for est in ["none", "loo", "loo_minus_one"]:
    sel = [row for row in rows if row["estimator"] == est and row["k"] == k]
    x = np.array([row["n"] for row in sel])
    y = np.array([row["variance"] for row in sel])
    se = np.array([plotting.variance_stderr(row) for row in sel])
    ax.plot(x, y, **plot_style.style(est), label=est)
    plot_style.band(ax, x, y - 2 * se, y + 2 * se, est)
  ax.set(xscale="log", yscale="log", xlabel="n (samples per group)", title=f"k={k}")
  ax.set_xticks(ns, [str(n) for n in ns])
  ax.minorticks_off()
axes[0][0].set_ylabel("gradient variance (band: ±2 s.e.)")
axes[0][0].legend()
for ax in axes[0][len(ks) :]:
  ax.axis("off")
fig.tight_layout()
plt.show()
print("max |bias| / stderr:", max(abs(row["bias_z"]) for row in rows))

# %% [markdown]
# ## Fig. 5: transformed rewards for 32 uniform rewards
#
# `maxk.max_at_k_advantages` with every baseline, for n = 32 rewards drawn from U(0, 1),
# plotted against the rank of the reward: one panel per baseline, one line per k. The
# transforms differ in scale by orders of magnitude (between baselines and between k), so
# each curve is divided by its largest absolute value (given in the legend): the figure
# shows the shape of each transform over the ranks, with its sign. Without a baseline (s)
# every sample is pushed up, by almost the same amount for large k; the leave-one-out
# baselines (s^loo, s^(loo-1)) centre the transform so that only samples which raise the
# max of a k-subset are reinforced, and with larger k fewer of the top ranks are. The last
# panel shows the rewards themselves.

# %% caption="PKPO Fig. 5: transformed rewards of 32 uniform rewards vs rank, per baseline and k."
n = 8 if SMOKE else 32
r = jnp.sort(jax.random.uniform(jax.random.key(0), (n,)))
ks = [1, 4] if SMOKE else [1, 4, 8, 16]
ranks = np.arange(1, n + 1)
fig, axes = plot_style.figure(2, 3, pyplot=True, sharex=True)
# "leave_two_out" is identically "loo_centered": one panel for both.
baselines = [b for b in maxk.BASELINES if b != "leave_two_out"]
for ax, baseline in zip(axes.flat, baselines):
  scales = []
  for i, k in enumerate(ks):
    a = np.asarray(maxk.max_at_k_advantages(r, k, baseline=baseline))
    scales.append(f"{np.abs(a).max():.2g}")
    ax.plot(ranks, a / np.abs(a).max(), ".-", color=plot_style.sequential(i, len(ks)))
  ax.axhline(0, color="k", lw=0.8)
  ax.set_title(f"baseline {baseline}\nmax |a| = {', '.join(scales)}", fontsize=11)
  ax.set_ylabel("a / max |a|")
  ax.set_ylim(-1.1, 1.1)
ax = axes.flat[len(baselines)]
ax.plot(ranks, r, "o-", color="k", ms=4, label="reward r")
for i, k in enumerate(ks):  # The legend of every panel: one colour per k.
  ax.plot([], [], ".-", color=plot_style.sequential(i, len(ks)), label=f"a, k={k}")
ax.set(title=f"the {n} rewards r ~ U(0, 1)", ylabel="reward r")
ax.legend(loc="upper left")
for ax in axes[-1]:
  ax.set_xlabel("rank of the reward (1 = smallest)")
fig.suptitle(
  f"Transformed rewards a of {n} uniform rewards, each curve scaled to max |a| = 1 "
  f"(max |a| listed for k = {', '.join(map(str, ks))})"
)
fig.tight_layout()
plt.show()
