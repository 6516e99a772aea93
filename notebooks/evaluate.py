# %% [markdown]
# # Evaluating samples: pass@k and maj@k with error bars, from a real harness's file
#
# `python -m maxk.evaluate` reads the per-sample files evaluation tools write and prints
# every sampled metric with its standard error, a 95% interval and the split of its
# variance into problems and samples (README, *Evaluating samples*). Here it reads a file
# written by the real lm-evaluation-harness 0.4.13 (`--log_samples`, its dummy model
# answering a local multiple-choice task of 8 questions with `repeats: 4`;
# `docs/evaluate/real/make_real.py` wrote it), exactly as a user types the command.
# lm-eval's own `acc` scores only the first of the 4 repeats of each question; maxk's
# pass@1 averages all four, and its pass@k and maj@k use every sample.

# %%
# Setup (notebooks/preamble.py): makes `maxk` and `experiments` importable, runs JAX on the
# CPU, applies the repository's figure style; SMOKE (MAXK_SMOKE=1) is unused here: the file
# is small. Each later cell imports what it uses.
# ruff: noqa: E402
try:
  import preamble
except ImportError:  # The kernel runs at the repository root.
  from notebooks import preamble

import os
import tempfile

# %matplotlib inline
SMOKE = preamble.start()
REAL = os.path.join(preamble.ROOT, "docs", "evaluate", "real", "lm_eval")
SAMPLES = os.path.join(REAL, "samples_maxk_mc_2026-12-05T11-56-24.804972.jsonl")

# %% [markdown]
# ## The table, with lm-eval's own number beside maxk's
#
# `--format` is detected from the file's first record; lm-eval's results file beside it
# supplies the tool's aggregate. `--extrapolate=4,8,16,32` adds pass@k beyond the 4
# samples from a Beta-binomial model of problem difficulty fitted to the counts (an
# assumption the unbiased rows at k <= 4 do not need; at k = 4 the two can be compared).

# %% caption="maxk.evaluate on lm-eval 0.4.13's samples: pass@k and maj@k with 95% intervals."
from IPython.display import Image
from IPython.display import display

from maxk import evaluate

figure_dir = tempfile.mkdtemp(prefix="maxk-evaluate-")
figure_path = os.path.join(figure_dir, "curves.png")
status = evaluate.main(
  [
    os.path.relpath(SAMPLES),  # as typed from the kernel's folder
    "--metrics=pass@k,maj@k",
    "--extrapolate=4,8,16,32",
    f"--figure={figure_path}",
  ]
)
assert status == 0, status
display(Image(filename=figure_path))
