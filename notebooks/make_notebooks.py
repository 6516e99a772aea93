r"""Builds notebooks/*.ipynb from the cells below and executes them (full size) in place.

Usage (from the repository root):
  python notebooks/make_notebooks.py            # write and execute every notebook
  python notebooks/make_notebooks.py pkpo lm    # only these
  python notebooks/make_notebooks.py --no-execute

Edit the cells here, not in the .ipynb files, then rerun this script: the committed
notebooks hold their outputs (executed at full size, MAXK_SMOKE unset).
"""

import os
import sys
import time

import nbformat
from nbformat import v4

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

SETUP = r"""import os, sys
# Run from notebooks/ or the repository root: make `maxk` and `experiments` importable.
for _p in ("..", "."):
    if os.path.isdir(os.path.join(_p, "maxk")) and os.path.abspath(_p) not in sys.path:
        sys.path.insert(0, os.path.abspath(_p))
os.environ.setdefault("JAX_PLATFORMS", "cpu")
SMOKE = os.environ.get("MAXK_SMOKE") == "1"   # tiny sizes: the test suite runs every notebook so
import numpy as np
import jax, jax.numpy as jnp
import matplotlib
import matplotlib.pyplot as plt
%matplotlib inline
plt.rcParams.update({"figure.dpi": 60, "savefig.dpi": 60, "figure.figsize": (9, 3.4)})
import maxk
print("SMOKE =", SMOKE, "| jax", jax.__version__, "| devices", jax.devices())"""


def md(text, **meta):
  return v4.new_markdown_cell(text.strip("\n"), metadata=meta)


def code(text, caption=None):
  cell = v4.new_code_cell(text.strip("\n"))
  if caption:
    cell.metadata["caption"] = caption
  return cell


# ------------------------------------------------------------------------------
# PKPO.
# ------------------------------------------------------------------------------

PKPO = [
  md("""
# Pass@k Policy Optimization (PKPO): the estimators as reward transforms

Walder & Karkhanis, arXiv 2505.15201. Everything below calls the library (`maxk`) and the
bandit experiment modules (`experiments.bandits`); nothing is re-implemented here. Set
`MAXK_SMOKE=1` to run at tiny sizes (as the test suite does).
"""),
  code(SETUP),
  md("""
## Fig. 1: max@k of the Gaussian toy and its gradient vs theta

PKPO's toy: x ~ N(theta, sigma = 0.1), reward x^2 on [0, 1], else 0. `GaussianToy.max_at_k`
is the exact max@k by quadrature; `jax.grad` gives its exact gradient. Larger k moves the
optimum of theta towards the edge of the reward's support and makes the objective
risk-seeking.
"""),
  code(
    """
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
    print(f"k={k:2d}: argmax_theta max@k = {float(thetas[jnp.argmax(value)]):.3f}, "
          f"max = {float(value.max()):.4f}")
ax0.set(xlabel="theta", ylabel="max@k", title="maxg@k of the Gaussian toy")
ax1.set(xlabel="theta", ylabel="d max@k / d theta", title="its exact gradient")
ax1.axhline(0, color="k", lw=0.5); ax0.legend(); fig.tight_layout(); plt.show()
""",
    caption="PKPO Fig. 1: max@k of the Gaussian toy and its gradient vs theta, k in {1,2,4,8,16}.",
  ),
  md("""
## Fig. 2: estimator weights vs rank

The unbiased max@k estimate is linear in the sorted rewards, sum_i w_i r_(i). We read the
weights off the library by differentiating `maxk.max_at_k` at distinct rewards: w_i is the
probability that the i-th smallest of n samples is the maximum of a random k-subset,
C(i-1, k-1) / C(n, k).
"""),
  code(
    """
n = 8 if SMOKE else 32
rewards = jnp.arange(n, dtype=jnp.float32)           # distinct, already sorted: rank = index
fig, ax = plt.subplots(figsize=(6, 3.4))
for k in [1, 2, 4, 8, 16]:
    if k > n: continue
    w = jax.grad(lambda r: maxk.max_at_k(r, k))(rewards)
    assert abs(float(w.sum()) - 1) < 1e-5
    ax.plot(np.arange(1, n + 1), w, "o-", ms=3, label=f"k={k}")
ax.set(xlabel="rank i of the reward (1 = smallest)", ylabel="weight w_i",
       title=f"max@k estimator weights, n={n}", yscale="log", ylim=(1e-6, 1.1))
ax.legend(); fig.tight_layout(); plt.show()
""",
    caption="PKPO Fig. 2: weight of each reward rank in the unbiased max@k estimator.",
  ),
  md("""
## Fig. 5: transformed rewards for 32 uniform rewards

`maxk.max_at_k_advantages` with every baseline, for n = 32 rewards drawn from U(0, 1),
plotted against the rank of the reward. Without a baseline (s) every sample is pushed up;
the leave-one-out baselines (s^loo, s^(loo-1)) centre the transform so that only samples
which raise the max of a k-subset are reinforced.
"""),
  code(
    """
n = 8 if SMOKE else 32
r = jnp.sort(jax.random.uniform(jax.random.key(0), (n,)))
ks = [1, 4] if SMOKE else [1, 4, 8, 16]
fig, axes = plt.subplots(1, len(ks), figsize=(3 * len(ks), 3.2), sharey=False)
for ax, k in zip(axes, ks):
    for baseline in ["none", "loo", "loo_centered", "loo_minus_one"]:
        ax.plot(np.arange(1, n + 1), maxk.max_at_k_advantages(r, k, baseline=baseline),
                ".-", label=baseline)
    ax.plot(np.arange(1, n + 1), r, "k:", label="reward r")
    ax.set(title=f"k={k}", xlabel="rank"); ax.axhline(0, color="k", lw=0.5)
axes[0].set_ylabel("transformed reward"); axes[-1].legend(fontsize=7)
fig.tight_layout(); plt.show()
""",
    caption="PKPO Fig. 5: transformed rewards of 32 uniform rewards for each baseline and k.",
  ),
  md("""
## Fig. 4: gradient variance vs n

The Monte Carlo variance of each estimator's gradient for the Gaussian toy at theta = 1
(all replicates in one jitted `vmap`, `experiments.bandits.variance.run_study`, the same
code as `python -m experiments.bandit_variance`). The leave-one-out baselines cut the
variance of the plain transform by orders of magnitude; all three are unbiased.
"""),
  code(
    """
from experiments.bandits import variance
setting = variance.gaussian_setting(theta=1.0, sigma=0.1)
ns = [4, 8] if SMOKE else [4, 8, 16, 32, 64]
ks = [4] if SMOKE else [1, 8]
rows = variance.run_study([setting], ns=ns, ks=ks, num_replicates=200 if SMOKE else 10_000,
                          estimator_names=["none", "loo", "loo_minus_one"], seed=0,
                          pass_threshold=0.5)
fig, axes = plt.subplots(1, len(ks), figsize=(3.2 * len(ks), 3.2), squeeze=False)
for ax, k in zip(axes[0], ks):
    for est in ["none", "loo", "loo_minus_one"]:
        sel = [row for row in rows if row["estimator"] == est and row["k"] == k]
        ax.plot([row["n"] for row in sel], [row["variance"] for row in sel], "o-", label=est)
    ax.set(xscale="log", yscale="log", xlabel="n", title=f"k={k}")
    ax.set_xticks(ns, [str(n) for n in ns]); ax.minorticks_off()
axes[0][0].set_ylabel("gradient variance"); axes[0][-1].legend(fontsize=7)
fig.tight_layout(); plt.show()
print("max |bias| / stderr:", max(abs(row["bias_z"]) for row in rows))
""",
    caption="PKPO Fig. 4: gradient variance vs n on the Gaussian toy for s, s^loo and s^(loo-1).",
  ),
]

# ------------------------------------------------------------------------------
# Best-of-n.
# ------------------------------------------------------------------------------

BEST_OF_N = [
  md("""
# Best-of-n: exact KL vs the bound vs the estimator; win rate vs KL

Beirami et al., "Theoretical guarantees on the best-of-n alignment policy" (arXiv
2401.01879), computed exactly with `maxk.bon_*`. The full study (more references, n up to
10^4, Monte Carlo d_n) is `python -m experiments.best_of_n --out_dir=...`.
"""),
  code(
    SETUP
    + '\njax.config.update("jax_enable_x64", True)  # resolve tiny KL gaps, as the binary does'
  ),
  md("""
## Exact KL vs log(n) - (n-1)/n vs the estimator d_n

Three references: uniform over L = 100 outcomes, a "cherry-picked" one whose best outcome
has probability 1e-4, and a random Dirichlet(0.3) one. The formula is an upper bound that
overshoots once n exceeds the number of likely outcomes; the exact expectation of d_n
(`maxk.bon_kl_estimate_expectation`) stays close to the exact KL.
"""),
  code(
    """
L = 20 if SMOKE else 100
rng = np.random.default_rng(0)
eps = 1e-4
refs = {
    f"uniform L={L}": (np.full(L, 1 / L), np.arange(L, dtype=float)),
    "cherry (best has p=1e-4)": (np.r_[np.full(L - 1, (1 - eps) / (L - 1)), eps],
                                 np.arange(L, dtype=float)),
    "Dirichlet(0.3)": (rng.dirichlet(np.full(L, 0.3)), rng.standard_normal(L)),
}
ns = np.unique(np.round(np.logspace(0, 2 if SMOKE else 4, 8 if SMOKE else 33)).astype(int))
fig, axes = plt.subplots(1, 3, figsize=(11, 3.4))
for ax, (name, (p, r)) in zip(axes, refs.items()):
    kl = [float(maxk.bon_kl(p, r, int(n))) for n in ns]
    bound = [float(maxk.bon_kl_bound(int(n))) for n in ns]
    d_n = [float(maxk.bon_kl_estimate_expectation(p, r, int(n))) for n in ns]
    ax.plot(ns, bound, "k--", label="log n - (n-1)/n")
    ax.plot(ns, kl, "o-", ms=3, label="exact KL")
    ax.plot(ns, d_n, "x:", label="E[d_n]")
    ax.set(xscale="log", xlabel="n", title=name)
    print(f"{name:26s} n={ns[-1]}: KL={kl[-1]:.3f}  bound={bound[-1]:.3f}  E[d_n]={d_n[-1]:.3f}")
axes[0].set_ylabel("nats"); axes[0].legend(fontsize=8); fig.tight_layout(); plt.show()
""",
    caption="Best-of-n: exact KL(pi_n || pi) vs n beside the log n - (n-1)/n bound and E[d_n].",
  ),
  md("""
## Monte Carlo d_n from best-of-n draws

The estimator is averaged over draws Y ~ pi_n (sampled from the exact PMF `maxk.bon_pmf`);
its spread shows how many draws are needed.
"""),
  code("""
p, r = refs["Dirichlet(0.3)"]
draws = 20 if SMOKE else 400
for n in [4, 64] if SMOKE else [4, 64, 1024]:
    pmf = np.asarray(maxk.bon_pmf(p, r, n))
    y = rng.choice(L, size=draws, p=pmf / pmf.sum())
    d = np.asarray(maxk.bon_kl_estimate(p[y], n))
    print(f"n={n:5d}: exact KL {float(maxk.bon_kl(p, r, n)):.4f}   MC d_n {d.mean():.4f} "
          f"+- {d.std(ddof=1) / np.sqrt(draws):.4f}   bound {float(maxk.bon_kl_bound(n)):.4f}")
"""),
  md("""
## Win rate vs KL: best-of-n vs rewind-and-repeat

Best-of-n for n = 1..N, and rewind-and-repeat (`maxk.rewind_repeat_pmf`: draw until the
reward clears a threshold) for every threshold, both against the reference. The dashed
curve is (log n - (n-1)/n, n/(n+1)). At equal KL best-of-n mostly has the higher win
rate: for a continuum of rewards, rewind-and-repeat with tail mass a has KL log(1/a) and
win rate 1 - a/2, while best-of-n reaches that win rate at KL about log(2/a) - 1.
"""),
  code(
    """
fig, axes = plt.subplots(1, 3, figsize=(11, 3.4), sharey=True)
for ax, (name, (p, r)) in zip(axes, refs.items()):
    bon = [(float(maxk.bon_kl(p, r, int(n))), float(maxk.bon_win_rate(p, r, int(n)))) for n in ns]
    rr = []
    for t in np.unique(r)[:: max(1, L // (5 if SMOKE else 25))]:
        q = maxk.rewind_repeat_pmf(p, r, float(t))
        rr.append((float(maxk.kl_divergence(q, p)), float(maxk.win_rate(q, p, r))))
    rr.sort()
    nn = np.logspace(0, 4, 200)
    ax.plot(np.log(nn) - (nn - 1) / nn, nn / (nn + 1), "k--", lw=1, label="(log n-(n-1)/n, n/(n+1))")
    ax.plot(*zip(*bon), "o-", ms=3, label="best-of-n")
    ax.plot(*zip(*rr), "s-", ms=3, label="rewind-and-repeat")
    ax.set(xlabel="KL (nats)", title=name, xlim=(0, 1.2 * max(k for k, _ in bon + rr)))
axes[0].set_ylabel("win rate vs reference"); axes[0].legend(fontsize=7)
fig.tight_layout(); plt.show()
""",
    caption="Win rate vs KL: best-of-n against rewind-and-repeat on three references.",
  ),
]

# ------------------------------------------------------------------------------
# max@k paper: off-policy.
# ------------------------------------------------------------------------------

MAX_AT_K = [
  md("""
# max@k optimisation: on- vs off-policy weights

"The Best of N Worlds: Aligning RL with Best-of-N Sampling via max@k Optimisation"
(arXiv 2510.23393), Sec. 3.3 and App. E. Samples come from an old policy; the off-policy
transform re-weights each k-subset by the importance weight of its members:
`maxk.max_at_k_advantages_off_policy(rewards, log_ratio, k, method=...)` with the exact
product of ratios or the paper's first-order expansion 1 + sum(rho - 1).
"""),
  code(SETUP),
  md("""
## The weights: on-policy vs off-policy (exact and first-order)

n = 16 rewards, k = 4; the new policy is the old one moved by log-ratios of scale delta.
At delta = 0 both off-policy transforms equal the on-policy one (`baseline="none"`).
"""),
  code(
    """
n, k = (8, 2) if SMOKE else (16, 4)
key_r, key_l = jax.random.split(jax.random.key(0))
r = jnp.sort(jax.random.uniform(key_r, (n,)))
z = jax.random.normal(key_l, (n,))
on = maxk.max_at_k_advantages(r, k, baseline="none")
fig, axes = plt.subplots(1, 3, figsize=(11, 3.2), sharey=True)
for ax, delta in zip(axes, [0.0, 0.1, 0.5]):
    lr = delta * z
    ax.plot(on, "k.-", label="on-policy s_i")
    ax.plot(maxk.max_at_k_advantages_off_policy(r, lr, k, method="exact"), "o-", ms=3, label="off-policy exact")
    ax.plot(maxk.max_at_k_advantages_off_policy(r, lr, k, method="first_order"), "x--", label="off-policy first-order")
    ax.set(title=f"log-ratio scale delta={delta}", xlabel="rank of reward")
axes[0].set_ylabel("weight a_i"); axes[0].legend(fontsize=7); fig.tight_layout(); plt.show()
""",
    caption="max@k paper: on-policy vs exact and first-order off-policy weights as the policy moves.",
  ),
  md("""
## First-order vs exact error as the policy moves

(a) The weights themselves: the first-order weights differ from the exact ones by
O(delta^2) (slope 2 on log-log axes).
(b) The gradient: a softmax bandit (`experiments.bandits`), samples from old logits, target
logits = old + t * direction. The Monte Carlo mean of each estimator (all replicates of
`experiments.bandits.variance.gradient_estimates` in one jitted `vmap`) against the exact gradient
(`jax.grad` of `maxk.max_at_k_exact`): the exact weights stay unbiased (error at the Monte
Carlo noise floor) while the first-order bias grows with t.
"""),
  code(
    """
from experiments.bandits import estimators as est_lib, policies, variance
deltas = np.logspace(-3, 0, 5 if SMOKE else 13)
err = [float(jnp.max(jnp.abs(maxk.max_at_k_advantages_off_policy(r, d * z, k, method="first_order")
                              - maxk.max_at_k_advantages_off_policy(r, d * z, k, method="exact"))))
       for d in deltas]
policy, logits = policies.random_bandit(10, seed=0)
direction = jnp.asarray(np.random.default_rng(1).standard_normal(10), jnp.float32)
ests = [est_lib.get("off_policy_exact"), est_lib.get("off_policy_first_order")]
ts = [0.0, 0.5] if SMOKE else [0.0, 0.1, 0.2, 0.4, 0.7, 1.0, 1.5]
R = 500 if SMOKE else 100_000

@jax.jit  # One compilation for every shift t: replicates of variance.gradient_estimates.
def monte_carlo(target, old, key, exact):
    one = lambda kk: variance.gradient_estimates(policy, target, old, kk, n=n, k=k,
                                                 estimators=ests, pass_threshold=0.5)
    g = jax.vmap(one)(jax.random.split(key, R)) - exact   # [R, estimators, arms]
    return g.mean(0), g.var(0, ddof=1).sum(-1)

bias = {e.name: [] for e in ests}; noise = []
for i, t in enumerate(ts):
    target = logits + t * direction
    exact = policy.exact_gradient(target, k)
    diff, var = monte_carlo(target, logits, jax.random.key(i), jnp.asarray(exact, jnp.float32))
    for e, est in enumerate(ests):
        bias[est.name].append(float(jnp.linalg.norm(diff[e])) / np.linalg.norm(exact))
    noise.append(float(np.sqrt(var[0] / R)) / np.linalg.norm(exact))
fig, (ax0, ax1) = plt.subplots(1, 2)
ax0.loglog(deltas, err, "o-", label="max |a_first - a_exact|")
ax0.loglog(deltas, err[-1] * deltas**2 / deltas[-1]**2, "k:", label="slope 2")
ax0.set(xlabel="log-ratio scale delta", title="(a) weights"); ax0.legend(fontsize=8)
for name, b in bias.items():
    ax1.plot(ts, b, "o-", label=name)
ax1.plot(ts, noise, "k:", label="Monte Carlo std. error (exact)")
ax1.set(xlabel="policy shift t", ylabel="|E[g] - grad| / |grad|", title="(b) relative gradient bias")
ax1.legend(fontsize=8); fig.tight_layout(); plt.show()
for t, be, bf in zip(ts, bias["off_policy_exact"], bias["off_policy_first_order"]):
    print(f"t={t:.1f}: relative bias exact {be:.4f}, first-order {bf:.4f}")
""",
    caption="First-order vs exact off-policy error: O(delta^2) weights and a gradient bias that grows with the shift.",
  ),
]

# ------------------------------------------------------------------------------
# Small LM.
# ------------------------------------------------------------------------------

LM = [
  md("""
# Small-LM RL: pass@k curves

Reads the `results.csv` written by `python -m experiments.lm.main --config=... --workdir=DIR`
(columns stage, method, k_opt, k_eval, pass_at_k, max_at_k): from `$MAXK_LM_RESULTS` (a
results.csv or a workdir) when set, else the committed sample `notebooks/data/lm_results.csv`
(produced by the default config, see `notebooks/data/README.md`). No numbers are made up: if
neither exists, the notebook says so.
"""),
  code(SETUP),
  code("""
import csv
path = os.environ.get("MAXK_LM_RESULTS", "")
if path and os.path.isdir(path):
    path = os.path.join(path, "results.csv")
if not path:
    for candidate in ("data/lm_results.csv", "notebooks/data/lm_results.csv"):
        if os.path.exists(candidate):
            path = candidate
            break
rows = []
if path and os.path.exists(path):
    with open(path) as f:
        rows = list(csv.DictReader(f))
if rows:
    print(f"{len(rows)} rows from {path}")
else:
    print("No small-LM outputs are available yet: run "
          "`python -m experiments.lm.main --config=experiments/lm/configs/tiny.py --workdir=DIR` "
          "and set MAXK_LM_RESULTS=DIR.")
"""),
  md("""
## pass@k and max@k vs k, after SFT and after RL with each estimator

Unbiased estimates (`maxk.pass_at_k`, `maxk.max_at_k`) from n samples per held-out prompt.
Optimising max@k with a larger k_opt trades pass@1 for pass@k at large k.
"""),
  code(
    """
if rows:
    groups = {}
    for row in rows:
        groups.setdefault((row["stage"], row["method"], row["k_opt"]), []).append(row)
    fig, axes = plt.subplots(1, 2)
    for (stage, method, k_opt), sel in groups.items():
        sel.sort(key=lambda row: int(row["k_eval"]))
        ks = [int(row["k_eval"]) for row in sel]
        label = stage if stage in ("sft", "base") else f"{stage}: {method} k_opt={k_opt}"
        style = "k--" if stage in ("sft", "base") else "o-"
        for ax, metric in zip(axes, ["pass_at_k", "max_at_k"]):
            ax.plot(ks, [float(row[metric]) for row in sel], style, ms=3, label=label)
    for ax, metric in zip(axes, ["pass@k", "max@k"]):
        ax.set(xscale="log", xlabel="k (evaluation)", ylabel=metric, title=f"{metric} vs k")
    axes[0].legend(fontsize=7); fig.tight_layout(); plt.show()
    k_max = max(int(row["k_eval"]) for row in rows)
    for key, sel in groups.items():
        by_k = {int(row["k_eval"]): float(row["pass_at_k"]) for row in sel}
        print(f"{key}: pass@1 = {by_k.get(1, float('nan')):.3f}, pass@{k_max} = {by_k.get(k_max, float('nan')):.3f}")
else:
    print("Nothing to plot: no small-LM outputs are available yet.")
""",
    caption="Small LM: pass@k and max@k vs k after SFT and after RL with each estimator and k_opt.",
  ),
]

NOTEBOOKS = {"pkpo": PKPO, "best_of_n": BEST_OF_N, "max_at_k": MAX_AT_K, "lm": LM}


def build(name):
  nb = v4.new_notebook(cells=NOTEBOOKS[name])
  nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
  nb.metadata["language_info"] = {"name": "python"}
  return nb


def main(argv):
  execute = "--no-execute" not in argv
  names = [a for a in argv[1:] if not a.startswith("--")] or list(NOTEBOOKS)
  sys.path.insert(0, ROOT)
  from experiments import report  # pylint: disable=g-import-not-at-top

  for name in names:
    path = os.path.join(HERE, f"{name}.ipynb")
    nbformat.write(build(name), path)
    if execute:
      start = time.time()
      nb = report.execute_notebook(path, smoke=False)
      for cell in nb.cells:  # Keep committed files small and diffs quiet.
        cell.metadata.pop("execution", None)
      nbformat.write(nb, path)
      print(
        f"{name}: executed in {time.time() - start:.0f} s, {os.path.getsize(path) / 1e3:.0f} kB",
        flush=True,
      )


if __name__ == "__main__":
  main(sys.argv)
