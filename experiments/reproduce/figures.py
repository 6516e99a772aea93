"""The figures of the reproduction's stages, each with a short title and one line of
explanation, for the index page."""

from __future__ import annotations

from collections.abc import Mapping
import glob
import os
from typing import NamedTuple

from experiments.reproduce import tables

# One short title and one line of explanation per figure a binary writes (paths
# relative to the folder).
FIGURES: dict[str, tuple[str, str]] = {
  "best_of_n/kl_vs_n_uniform.png": (
    "KL vs n, uniform references",
    "Uniform references: exact KL(pi_n || pi) vs n beside log(n) - (n-1)/n (an upper bound "
    "that overshoots once n exceeds the alphabet size), the exact E[d_n] and the Monte Carlo "
    "estimator d_n (+-2 s.e.).",
  ),
  "best_of_n/kl_vs_n_other.png": (
    "KL vs n, other references",
    "Cherry-picked and Dirichlet references: the bound overshoots the exact KL by nats when "
    "the best outcome is rare, while d_n (+-2 s.e.) tracks it.",
  ),
  "best_of_n/kl_gap.png": (
    "KL gap and its bounds",
    "The gap bound - exact KL vs n, with its proven lower bound and the 2n(n-1)exp(-H_2) "
    "upper bound (Sec. 3 of the paper; both proved in docs/best_of_n_bounds.md).",
  ),
  "best_of_n/win_rate_vs_kl.png": (
    "Win rate vs KL",
    "Win rate vs KL: best-of-n and rewind-and-repeat against the curve "
    "(log n - (n-1)/n, n/(n+1)); at equal KL rewind-and-repeat mostly wins less often than "
    "best-of-n.",
  ),
  "best_of_n/proxy_overoptimisation.png": (
    "Best-of-n selected by a noisy proxy",
    "True reward of the arm best-of-n selects by a proxy score r + sigma*error (exact "
    "maxk.selected_at_k_exact lines, Monte Carlo +-2 s.e., star: the peak): with Gaussian "
    "errors it rises or levels off with n, with heavy-tailed (Student-t) errors it peaks and falls "
    "(over-optimisation), at a KL that follows log n - (n-1)/n (proxy_peaks.csv).",
  ),
  "best_of_n/win_rate_frontier.png": (
    "Win rate vs KL of every policy, and over-optimisation under a proxy",
    "Left: win rate vs KL of best-of-n (n = 1..256), soft best-of-n, Best-of-Poisson, the "
    "tilt and the chi-squared optimum selecting by the true reward. Right: their true reward "
    "vs KL when they select by a Student-t proxy; the star marks best-of-n's best n "
    "(maxk.proxy_bon_best_n, frontier_best_n.json).",
  ),
  "bandit_variance/variance_gaussian.png": (
    "Variance vs n, Gaussian toy (PKPO Fig. 4)",
    "PKPO's Gaussian toy: gradient variance of every estimator vs n, bands +-2 s.e. (the "
    "leave-one-out baselines cut the variance of the plain max@k transform).",
  ),
  "bandit_variance/variance_categorical.png": (
    "Variance vs n, softmax bandit",
    "Softmax bandit: gradient variance of every estimator vs n, bands +-2 s.e.",
  ),
  "bandit_variance/bias_gaussian.png": (
    "Bias vs n, Gaussian toy",
    "PKPO's Gaussian toy: bias / |exact gradient| with +-2 s.e. bars; the expected-unbiased "
    "estimators (top) cover 0, while mean_std, GRPO and first-order off-policy are biased.",
  ),
  "bandit_variance/bias_categorical.png": (
    "Bias vs n, softmax bandit",
    "Softmax bandit: bias / |exact gradient| with +-2 s.e. bars for every estimator.",
  ),
  "bandit_variance/objective_top_m.png": (
    "Rank objective: top m of k",
    "Softmax bandit, mean of the top m of k draws: gradient variance and bias (+-2 s.e.) of "
    "the none / loo / loo_centered baselines of maxk.order_stat_advantages against the exact "
    "gradient.",
  ),
  "bandit_variance/objective_min.png": (
    "Rank objective: min@k",
    "Softmax bandit, min@k (the worst of k draws; pass^k on binary rewards): gradient "
    "variance and bias (+-2 s.e.) of the rank-objective baselines.",
  ),
  "bandit_variance/objective_maxrl.png": (
    "Rank objective: MaxRL",
    "Softmax bandit, MaxRL's sum_{j<=k} pass@j / j on binarised rewards: the unbiased "
    "rank-objective baselines beside MaxRL's own estimator, which targets "
    "sum_{j<n} pass@j / j (unbiased only at k = n - 1; maxrl_no_cv at k = n).",
  ),
  "bandit_variance/variance_check.png": (
    "Check of the variance estimators",
    "The mean over replicates of maxk.max_at_k_variance / pass_at_k_variance against the "
    "empirical variance of max_at_k / pass_at_k (+-2 s.e.); unbiased estimators lie on y = x.",
  ),
  "bandit_variance/atlas.png": (
    "Variance atlas: variance / floor",
    "4-arm easy and hard bandits: each max@k estimator's exact variance over the floor (the "
    "least variance of any baseline of the other samples' rewards) vs n, per k; dashed: "
    "biased (rescaled by its mean's projection on the gradient), hollow: Monte Carlo.",
  ),
  "bandit_training/curves_easy.png": (
    "Training curves, easy bandit",
    "Easy bandit: exact max@k / pass@k during training for each estimator and k_opt (mean "
    "over seeds, band: 10-90% of the seeds).",
  ),
  "bandit_training/curves_hard.png": (
    "Training curves, hard bandit (PKPO Fig. 3)",
    "Hard bandit (rare best arm next to a decoy): larger k_opt explores and finds the best "
    "arm; annealing k recovers pass@1 (mean over seeds, band: 10-90% of the seeds).",
  ),
  "bandit_training/curves_gaussian.png": (
    "Training curves, Gaussian toy",
    "PKPO's Gaussian toy: exact max@k / pass@k while learning theta (mean over seeds, band: "
    "10-90% of the seeds).",
  ),
  "lm/pass_at_k.png": (
    "Small LM: pass@k and max@k vs k",
    "Small LM: held-out pass@k and max@k vs k after SFT and after RL with each estimator "
    "and k_opt.",
  ),
  "lm/committed/lm_study_frontier_countdown.png": (
    "Matched-KL LM study: pass@k against KL (committed, not re-run)",
    "The committed matched-KL study of max@k against GRPO on countdown (docs/lm_study, "
    "its README gives the seeds and verdicts; hours of runs, not re-run here): held-out "
    "pass@k against the KL to the warm start at each checkpoint, mean over seeds with a "
    "95% band.",
  ),
  "lm/bins.png": (
    "Small LM: problems by base pass@1",
    "Small LM: held-out problems binned by the base model's pass@1, with what each model "
    "solves in each bin.",
  ),
}
# Kept for callers that want the explanation only.
CAPTIONS = {path: caption for path, (_, caption) in FIGURES.items()}


class Figure(NamedTuple):
  """One figure of the page: its path relative to the folder, title and explanation."""

  path: str
  title: str
  caption: str


def caption(rel_path: str) -> str:
  """The explanation of the figure at ``rel_path`` (e.g. ``lm/pass_at_k.png``), or ""."""
  return CAPTIONS.get(rel_path, "")


def _notebook_title(row: Mapping[str, str]) -> str:
  """A notebook figure's title: its heading and notebook, e.g. ``Fig. 4: gradient
  variance vs n (pkpo.ipynb)``; a listing without titles (written by an older version)
  gives ``pkpo.ipynb, pkpo_03.png``."""
  title = row.get("title", "")
  return f"{title} ({row['notebook']})" if title else f"{row['notebook']}, {row['figure']}"


def stage_figures(workdir: str, stage: str) -> list[Figure]:
  """Every PNG a stage wrote, with its title and explanation, in a stable order.

  The notebooks stage lists its figures and their captions in its results.csv.
  """
  stage_dir = os.path.join(workdir, stage)
  if stage == "notebooks":
    listing = os.path.join(stage_dir, "results.csv")
    if not os.path.exists(listing):
      return []
    return [
      Figure(f"{stage}/{row['figure']}", _notebook_title(row), row["caption"])
      for row in tables.read_csv(listing)
    ]
  order = {path: i for i, path in enumerate(FIGURES)}  # Known figures first, in order.
  figures = []
  for path in glob.glob(os.path.join(stage_dir, "**", "*.png"), recursive=True):
    rel = os.path.relpath(path, workdir).replace(os.sep, "/")
    title, cap = FIGURES.get(rel, (os.path.basename(rel), f"Figure written by {stage}."))
    figures.append(Figure(rel, title, cap))
  return sorted(figures, key=lambda f: (order.get(f.path, len(order)), f.path))
