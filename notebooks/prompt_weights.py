# %% [markdown]
# # How each method weights prompts: w(p) for binary rewards
#
# With a 0/1 reward a prompt is described by its success probability p under the policy,
# and the expected update of one group of n samples, E[sum_i a_i grad log pi(y_i)], is
# w(p) grad p for every advantage transform that treats the samples alike.
# `maxk.implied_prompt_weight` computes w(p) exactly (a sum over the binomial count of
# correct samples). An unbiased estimator of grad f(p) has w = f'(p) (pass@k: f = 1 - (1 -
# p)^k); any other method ascends, in expectation, the F(p) with F' = w. Everything below
# calls the library (`maxk`); nothing is re-implemented here.

# %%
# Setup (notebooks/preamble.py): makes `maxk` and `experiments` importable, runs JAX on the
# CPU, applies the repository's figure style; SMOKE (MAXK_SMOKE=1) shrinks every size so
# that the notebook runs in seconds, as the tests run it. Each later cell imports what it uses.
# ruff: noqa: E402
try:
  import preamble
except ImportError:  # The kernel runs at the repository root.
  from notebooks import preamble

import math

import matplotlib.pyplot as plt
import numpy as np

from experiments import plot_style
import maxk

# %matplotlib inline
SMOKE = preamble.start()

# %% [markdown]
# ## The methods at n = 16
#
# Each method is the advantage transform a trainer would apply to the 0/1 rewards of a
# group of n = 16: GRPO (population std), RLOO, `maxk.max_at_k_advantages` (unbiased for
# pass@k) at k = 1, 4, 16, MaxRL with its control variate, Pass@k Training at k = 4 (at
# k = n its group std is always 0 and so is its weight), and the rank objective min@4 = p^4
# (all four correct), whose unbiased advantages `maxk.success_objective_advantages` builds
# from the mixture p^4 = 4 pass@1 - 6 pass@2 + 4 pass@3 - pass@4. Weights are on the scale of
# sum_i a_i grad log pi(y_i); averaging the loss over the n samples scales all alike.

# %%
N = 16
MIN_K = 4
min_coefficients = [(-1) ** (j + 1) * math.comb(MIN_K, j) for j in range(1, MIN_K + 1)]
METHODS = {
  "grpo": maxk.grpo_advantages,
  "rloo": maxk.rloo_advantages,
  **{f"max_at_k k={k}": (lambda r, k=k: maxk.max_at_k_advantages(r, k)) for k in (1, 4, 16)},
  "maxrl": maxk.maxrl_advantages,
  "pass_at_k_training k=4": lambda r: maxk.pass_at_k_training_advantages(r, 4),
  f"min k={MIN_K} (rank objective)": lambda r: maxk.success_objective_advantages(
    r, min_coefficients
  ),
}
p = np.linspace(0.0, 1.0, 41 if SMOKE else 1001)
weights = {name: np.asarray(maxk.implied_prompt_weight(fn, p, N)) for name, fn in METHODS.items()}
# Checks against the closed forms of the unbiased ones: w = f'(p).
np.testing.assert_allclose(weights["max_at_k k=4"], 4 * (1 - p) ** 3, rtol=1e-5, atol=1e-6)
np.testing.assert_allclose(weights[f"min k={MIN_K} (rank objective)"], 4 * p**3, atol=1e-5)
np.testing.assert_allclose(weights["rloo"], N, rtol=1e-5)
print(f"{'method':32s}" + "".join(f"  p={x:<6g}" for x in (0, 0.05, 0.25, 0.5, 0.75, 1)))
for name, w in weights.items():
  at = [w[np.argmin(np.abs(p - x))] for x in (0, 0.05, 0.25, 0.5, 0.75, 1)]
  peaks = p[w >= w.max() * (1 - 1e-5)]
  where = (
    "flat"
    if w.min() >= w.max() * (1 - 1e-5)
    else "peak at p = " + ", ".join(f"{x:g}" for x in peaks)
  )
  print(f"{name:32s}" + "".join(f"  {v:8.3g}" for v in at) + f"   {where}")

# %% [markdown]
# ## w(p) and its shape
#
# Left, w(p) on a log scale; right, each w divided by its own maximum, the shape of the
# emphasis over prompt difficulty.
#
# * max@k (unbiased): w = k (1 - p)^(k - 1), flat at k = 1 (RLOO has the same shape at n
#   times the scale); for larger k it concentrates on hard prompts. At k = 16 it has halved
#   by p = 0.045 and is 1e-3 of its peak by p = 0.37: solved prompts get almost no push.
# * MaxRL: n (1 - (1 - p)^(n - 1)) / p also peaks at p = 0 (n (n - 1) = 240) but decays only
#   like 1/p, the log-likelihood's weight, and stays at n = 16 on solved prompts: hard
#   prompts weigh 15 times more than easy ones, which are not dropped.
# * Pass@k Training (k = 4) is also largest at p = 0 (27.7) and falls to 0 at p = 1, more
#   slowly than max@4 (its std normalisation boosts nearly solved groups): 0.22 of its peak
#   at p = 1/2, against 0.125 for max@4.
# * GRPO: the std normalisation makes w U-shaped and symmetric about p = 1/2, least there
#   (31, about twice RLOO's 16) and twice that at p = 0 and p = 1 (16 sqrt(15) = 62, finite
#   at n = 16): it favours both the nearly unsolved and the nearly solved prompts over the
#   middle ones.
# * The rank objective min@4 = p^4 is the mirror image of max@4: w = 4 p^3, all on nearly
#   solved prompts.

# %% caption="Prompt weights w(p) at n = 16 (log scale, and normalised to each maximum)."
fig, ((ax0, ax1),) = plot_style.figure(1, 2, pyplot=True, legend_width=3.3)
max_names = [name for name in weights if name.startswith("max_at_k")]
for name, w in weights.items():
  if name in max_names:
    kwargs = {"color": plot_style.shade("max_at_k", max_names.index(name), len(max_names))}
  else:
    # RLOO is flat like max@1 (at 16 times the scale): dashed, to be seen beside it.
    kwargs = {"color": plot_style.color(name), "linestyle": "--" if name == "rloo" else "-"}
  ax0.plot(p, np.where(w > 0, w, np.nan), label=name, **kwargs)
  ax1.plot(p, w / w.max(), label=name, **kwargs)
ax0.set(
  xlabel="success probability p",
  ylabel="w(p)",
  yscale="log",
  ylim=(1e-3, 500),
  title=f"prompt weight w(p), n = {N}",
)
ax1.set(xlabel="success probability p", ylabel="w(p) / max w", title="its shape")
plot_style.legend(fig, (ax0, ax1))
plt.show()
