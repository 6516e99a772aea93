# %% [markdown]
# # Small-LM RL: pass@k curves
#
# Reads the `results.csv` written by `python -m experiments.lm.main --config=... --workdir=DIR`
# (columns stage, method, k_opt, k_eval, pass_at_k, max_at_k): from `$MAXK_LM_RESULTS` (a
# results.csv or a workdir) when set, else the committed sample `notebooks/data/lm_results.csv`
# (produced by the default config, see `notebooks/data/README.md`). No numbers are made up: if
# neither exists, the notebook says so.

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
import matplotlib.pyplot as plt

# %matplotlib inline
plt.rcParams.update({"figure.dpi": 60, "savefig.dpi": 60, "figure.figsize": (9, 3.4)})
print("SMOKE =", SMOKE, "| jax", jax.__version__, "| devices", jax.devices())

# %%
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
  print(
    "No small-LM outputs are available yet: run "
    "`python -m experiments.lm.main --config=experiments/lm/configs/tiny.py --workdir=DIR` "
    "and set MAXK_LM_RESULTS=DIR."
  )

# %% [markdown]
# ## pass@k and max@k vs k, after SFT and after RL with each estimator
#
# Unbiased estimates (`maxk.pass_at_k`, `maxk.max_at_k`) from n samples per held-out prompt.
# Optimising max@k with a larger k_opt trades pass@1 for pass@k at large k.

# %% caption="Small LM: pass@k and max@k vs k after SFT and after RL with each estimator and k_opt."
if rows:
  groups = {}
  for row in rows:
    groups.setdefault((row["stage"], row["method"], row["k_opt"]), []).append(row)
  fig, axes = plt.subplots(1, 2)
  for (stage, method, k_opt), sel in groups.items():
    sel.sort(key=lambda row: int(row["k_eval"]))
    ks = [int(row["k_eval"]) for row in sel]
    # Stage "base" is the model after SFT; the "rl" rows name their estimator in `method`.
    label = "base (after SFT)" if stage == "base" else f"{method}, k_opt={k_opt}"
    style = "k--" if stage == "base" else "o-"
    for ax, metric in zip(axes, ["pass_at_k", "max_at_k"]):
      ax.plot(ks, [float(row[metric]) for row in sel], style, ms=3, label=label)
  for ax, metric in zip(axes, ["pass@k", "max@k"]):
    ax.set(xscale="log", xlabel="k (evaluation)", ylabel=metric, title=f"{metric} vs k")
  axes[0].legend(fontsize=7)
  fig.tight_layout()
  plt.show()
  k_max = max(int(row["k_eval"]) for row in rows)
  for key, sel in groups.items():
    by_k = {int(row["k_eval"]): float(row["pass_at_k"]) for row in sel}
    pass_1, pass_max = by_k.get(1, float("nan")), by_k.get(k_max, float("nan"))
    print(f"{key}: pass@1 = {pass_1:.3f}, pass@{k_max} = {pass_max:.3f}")
else:
  print("Nothing to plot: no small-LM outputs are available yet.")
