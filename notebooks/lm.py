# %% [markdown]
# # Small-LM RL: pass@k curves with intervals, difficulty bins, paired differences
#
# Reads the outputs of `python -m experiments.lm.main --config=... --workdir=DIR`: `results.csv`
# (stage, method, k_opt, k_eval, seed, pass@k and max@k with 95% intervals over prompts) and,
# next to it, `bins.csv`, `unsolved.csv` and `paired.csv` (see `experiments/lm/run_outputs.py`).
# They come from `$MAXK_LM_RESULTS` (a results.csv or a workdir) when set, else from the
# committed sample `notebooks/data/lm_results.csv` (and `lm_bins.csv`, ... beside it; see
# `notebooks/data/README.md`). No numbers are made up: whatever is missing, the notebook says so.

# %%
# Setup (notebooks/preamble.py): makes `maxk` and `experiments` importable, runs JAX on the
# CPU, applies the repository's figure style; SMOKE (MAXK_SMOKE=1) shrinks every size so
# that the notebook runs in seconds, as the tests run it. Each later cell imports what it uses.
# ruff: noqa: E402
try:
  import preamble
except ImportError:  # The kernel runs at the repository root.
  from notebooks import preamble

import os

from IPython.display import display

# %matplotlib inline
SMOKE = preamble.start()

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


def read(name):
  """Rows of results.csv or of a sibling (``bins.csv``; ``lm_bins.csv`` by lm_results.csv)."""
  folder, base = os.path.split(path)
  if name == "results.csv":
    sibling = path
  elif base.endswith("results.csv"):
    sibling = os.path.join(folder, base[: -len("results.csv")] + name)
  else:  # A results file under another name: its siblings are unknown.
    return []
  if not sibling or not os.path.exists(sibling):
    return []
  with open(sibling) as f:
    return list(csv.DictReader(f))


rows, bins, unsolved, paired = (
  read(n) for n in ("results.csv", "bins.csv", "unsolved.csv", "paired.csv")
)
if rows:
  print(f"{len(rows)} rows from {path}")
  if "pass_at_k_lo" not in rows[0]:
    print("This results.csv predates the intervals: curves are shown without bands.")
else:
  print(
    "No small-LM outputs are available yet: run "
    "`python -m experiments.lm.main --config=experiments/lm/configs/tiny.py --workdir=DIR` "
    "and set MAXK_LM_RESULTS=DIR."
  )

# %% [markdown]
# ## pass@k and max@k vs k, after SFT and after RL with each estimator
#
# Unbiased estimates (`maxk.pass_at_k`, `maxk.max_at_k`) from n samples per held-out problem,
# averaged over problems; the bands are 95% intervals over problems (`maxk.mean_with_interval`:
# they cover the choice of problems and the sampling noise). Two curves whose bands overlap are
# not shown to differ; the paired table below is the sharper test.

# %% caption="Small LM: pass@k and max@k vs k, base and each RL run, 95% bands over problems."
from experiments.lm import plotting

if rows:
  display(plotting.pass_at_k_figure(rows))
  k_max = max(int(r["k_eval"]) for r in rows)
  for r in rows:
    if int(r["k_eval"]) in (1, k_max):
      bounds = (
        f" [{float(r['pass_at_k_lo']):.3f}, {float(r['pass_at_k_hi']):.3f}]"
        if "pass_at_k_lo" in r
        else ""
      )
      print(f"{plotting.label(r):55s} pass@{r['k_eval']:<3} = {float(r['pass_at_k']):.3f}{bounds}")
else:
  print("Nothing to plot: no small-LM outputs are available yet.")

# %% [markdown]
# ## Paired differences between methods on the same problems
#
# `maxk.paired_difference` of the per-problem estimates: the shared problem difficulty cancels,
# so these intervals are narrower than the difference of two separate intervals. A difference
# whose interval contains 0 is within noise.

# %%
if paired:
  k_max = max(int(p["k_eval"]) for p in paired)
  print(f"{'a - b':70s} {'metric':9s} {'k':>3s}  diff   95% interval")
  for p in paired:
    if int(p["k_eval"]) in (1, k_max):
      a = plotting.label({"stage": "rl", "method": p["a_method"], "k_opt": p["a_k_opt"]})
      b = "base" if p["b_run"] == "base" else p["b_method"]
      b += f", k_opt={p['b_k_opt']}" if p["b_k_opt"] not in ("", "n/a") else ""
      print(
        f"{a + '  -  ' + b:70s} {p['metric']:9s} {p['k_eval']:>3s} {float(p['diff']):+.3f} "
        f"[{float(p['diff_lo']):+.3f}, {float(p['diff_hi']):+.3f}]"
      )
else:
  print("No paired.csv next to the results (written by experiments.lm since intervals exist).")

# %% [markdown]
# ## Problems by difficulty for the base model
#
# Each held-out problem is binned by the base model's pass@1 on an independent set of n samples
# (unsolved: 0 of n; hard: at most 1/5; medium: at most 3/5; easy: above). PKPO claims that
# optimising pass@k with k > 1 helps most on hard problems. The right-hand panels give the
# fraction of base-unsolved problems that each model solves (at least one of n samples correct);
# the base model's own row, on fresh samples, is the reference a trained model must beat.

# %% caption="Small LM: pass@k / max@k per base-difficulty bin; base-unsolved problems solved."
if bins and unsolved:
  display(plotting.bins_figure(bins, unsolved))
  for u in unsolved:
    diff = u["diff_vs_base"]
    versus = (
      f", vs base {float(diff):+.3f} [{float(u['diff_vs_base_lo']):+.3f}, "
      f"{float(u['diff_vs_base_hi']):+.3f}]"
      if diff not in ("", "nan")
      else ""
    )
    print(
      f"{plotting.label(u):55s} solves {u['solved']}/{u['num_base_unsolved']} base-unsolved{versus}"
    )
else:
  print(
    "No bins.csv / unsolved.csv next to the results (written by experiments.lm since bins exist)."
  )
