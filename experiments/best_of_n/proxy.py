"""Best-of-n selected by a noisy proxy score: when does optimising the proxy stop paying?

A categorical base policy π over A arms (Dirichlet(1) probabilities) has true
rewards r_a ~ N(0, 1).  A proxy (reward model) scores arm a as s_a = r_a + σ ε_a,
with the error ε_a fixed per arm, either Gaussian or Student-t (heavy-tailed, with
``t_df`` degrees of freedom), for each σ.  Best-of-n draws n arms from π and keeps
the one of highest proxy score; for each n on a log grid the study records

* the true reward of the selected arm, exactly (``maxk.selected_at_k_exact``), and
  as a Monte Carlo mean over ``num_mc_draws`` simulated best-of-n draws with its
  standard error (the check: draws of n arms from π, argmax of the proxy);
* the proxy score of the selected arm (exact), which always grows with n;
* KL(π_n || π) of the selected policy, exactly (``maxk.bon_kl`` of the proxy
  scores, the KL of ``maxk.selected_pmf``), beside log n − (n−1)/n;

and, per error family and σ, the n of the grid where the true reward peaks (where
over-optimisation begins; the largest n when it is still rising).  With Gaussian
errors E[r | s] = s / (1 + σ²) rises with s, so the true reward keeps rising on
average; heavy-tailed errors make the most extreme scores mostly error (E[r | s]
falls back towards 0 for large s), and the true reward peaks and then falls
(Goodhart's law; Gao et al., "Scaling laws for reward model overoptimization",
arXiv 2210.10760; Kwa et al., "Catastrophic Goodhart", arXiv 2407.14503).

References: best-of-n with ties: Beirami et al., arXiv 2401.01879, Sec. 2.
"""

from __future__ import annotations

from collections.abc import Sequence

from matplotlib.figure import Figure
import numpy as np

from experiments import plot_style
from experiments.best_of_n import study
import maxk

#: The error families of the proxy, in figure order.
FAMILIES = ("gaussian", "student_t")

COLUMNS = (
  "errors",
  "sigma",
  "n",
  "true_reward_exact",
  "true_reward_mc_mean",
  "true_reward_mc_stderr",
  "num_mc_draws",
  "proxy_score_exact",
  "kl",
  "kl_bound",
)
PEAK_COLUMNS = (
  "errors",
  "sigma",
  "peak_n",
  "true_reward_at_peak",
  "true_reward_at_n_max",
  "true_reward_at_n_1",
  "kl_at_peak",
)


def policy(
  seed: int, num_arms: int, sigmas: Sequence[float], t_df: float
) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
  """(π [A], r [A], {family: proxy scores [num_sigmas, A]}) from ``seed``."""
  rng = np.random.default_rng([seed, 22])  # A stream of its own beside the references'.
  probs = rng.dirichlet(np.ones(num_arms))
  rewards = rng.normal(size=num_arms)
  errors = {"gaussian": rng.normal(size=num_arms), "student_t": rng.standard_t(t_df, num_arms)}
  sig = np.asarray(sigmas, np.float64)[:, None]
  return probs, rewards, {f: rewards + sig * errors[f] for f in FAMILIES}


def monte_carlo(
  probs: np.ndarray,
  rewards: np.ndarray,
  scores: np.ndarray,
  n: int,
  num_draws: int,
  rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray]:
  """Mean and standard error of the true reward of simulated best-of-n draws.

  Draws ``num_draws`` groups of n arms from π and keeps the arm of highest score
  in each (ties broken uniformly at random), for every row of ``scores``
  ``[S, A]`` on the same groups.  Returns ``[S]`` means and standard errors (NaN
  with one draw).
  """
  arms = rng.choice(len(probs), size=(num_draws, n), p=probs)
  tie_break = rng.random(arms.shape)
  s = scores[:, arms]  # [S, M, n]
  top = s == s.max(axis=-1, keepdims=True)
  pick = np.argmax(np.where(top, tie_break, -1.0), axis=-1)  # [S, M]
  chosen = rewards[np.take_along_axis(np.broadcast_to(arms, s.shape), pick[..., None], -1)[..., 0]]
  mean = chosen.mean(axis=-1)
  stderr = chosen.std(axis=-1, ddof=1) / np.sqrt(num_draws) if num_draws > 1 else np.nan + mean
  return mean, stderr


def rows(
  *,
  seed: int,
  num_arms: int,
  sigmas: Sequence[float],
  t_df: float,
  ns: Sequence[int],
  num_mc_draws: int,
) -> list[study.Row]:
  """One row (:data:`COLUMNS`) per error family, σ and n."""
  probs, rewards, scores = policy(seed, num_arms, sigmas, t_df)
  rng = np.random.default_rng([seed, 23])
  out = []
  for family in FAMILIES:
    s = scores[family]
    p = np.broadcast_to(probs, s.shape)
    for n in ns:
      true = np.asarray(maxk.selected_at_k_exact(p, s, rewards, n), np.float64)
      proxy = np.asarray(maxk.selected_at_k_exact(p, s, s, n), np.float64)
      kl = np.asarray(maxk.bon_kl(p, s, n), np.float64)
      mean, stderr = monte_carlo(probs, rewards, s, n, num_mc_draws, rng)
      bound = float(maxk.bon_kl_bound(n))
      for i, sigma in enumerate(sigmas):
        out.append(
          dict(
            errors=family,
            sigma=float(sigma),
            n=int(n),
            true_reward_exact=float(true[i]),
            true_reward_mc_mean=float(mean[i]),
            true_reward_mc_stderr=float(stderr[i]),
            num_mc_draws=num_mc_draws,
            proxy_score_exact=float(proxy[i]),
            kl=float(kl[i]),
            kl_bound=bound,
          )
        )
  return out


def peaks(result_rows: Sequence[study.Row]) -> list[study.Row]:
  """Per error family and σ, the n of the grid with the largest exact true reward."""
  out = []
  for family in FAMILIES:
    for sigma in sorted({r["sigma"] for r in result_rows if r["errors"] == family}):
      sel = [r for r in result_rows if r["errors"] == family and r["sigma"] == sigma]
      sel.sort(key=lambda r: r["n"])
      best = max(sel, key=lambda r: r["true_reward_exact"])  # The first of equal maxima.
      out.append(
        dict(
          errors=family,
          sigma=sigma,
          peak_n=best["n"],
          true_reward_at_peak=best["true_reward_exact"],
          true_reward_at_n_max=sel[-1]["true_reward_exact"],
          true_reward_at_n_1=sel[0]["true_reward_exact"],
          kl_at_peak=best["kl"],
        )
      )
  return out


def figure(result_rows: Sequence[study.Row], *, t_df: float) -> Figure:
  """True reward vs n for Gaussian and Student-t errors (exact lines, Monte Carlo
  ±2 s.e., peaks marked) and the selected policy's KL vs n."""
  fig, axes = plot_style.figure(1, 3, legend_width=2.4)
  sigmas = sorted({r["sigma"] for r in result_rows})
  titles = {"gaussian": "Gaussian proxy errors", "student_t": f"Student-t errors (df={t_df:g})"}
  peak = {(p["errors"], p["sigma"]): p for p in peaks(result_rows)}
  for ax, family in zip(axes[0], FAMILIES):
    for i, sigma in enumerate(sigmas):
      sel = [r for r in result_rows if r["errors"] == family and r["sigma"] == sigma]
      n = study.column(sel, "n")
      colour = plot_style.sequential(i, len(sigmas))
      ax.plot(n, study.column(sel, "true_reward_exact"), "-", color=colour, label=f"σ={sigma:g}")
      stderr = study.column(sel, "true_reward_mc_stderr")
      ax.errorbar(
        n,
        study.column(sel, "true_reward_mc_mean"),
        yerr=None if np.isnan(stderr).all() else 2 * stderr,
        fmt="o",
        ms=3,
        color=colour,
        capsize=2,
        alpha=0.6,
        label="_mc",
      )
      top = peak[(family, sigma)]
      ax.plot(top["peak_n"], top["true_reward_at_peak"], "*", ms=12, color=colour, mec="k")
    ax.set_xscale("log")
    ax.set_xlabel("n")
    ax.set_ylabel("true reward of the selected arm")
    ax.set_title(titles[family])
  ax = axes[0, 2]
  for i, sigma in enumerate(sigmas):
    for family, style in zip(FAMILIES, ("-", ":")):
      sel = [r for r in result_rows if r["errors"] == family and r["sigma"] == sigma]
      colour = plot_style.sequential(i, len(sigmas))
      ax.plot(study.column(sel, "n"), study.column(sel, "kl"), style, color=colour)
  sel = [r for r in result_rows if r["errors"] == FAMILIES[0] and r["sigma"] == sigmas[0]]
  ax.plot(study.column(sel, "n"), study.column(sel, "kl_bound"), "k--", label="log n − (n−1)/n")
  ax.plot([], [], "k-", label="KL, Gaussian errors")
  ax.plot([], [], "k:", label="KL, Student-t errors")
  ax.plot([], [], "k*", ms=10, label="peak (over-optimisation)")
  ax.plot([], [], "ko", ms=3, label="Monte Carlo (±2 s.e.)")
  ax.set_xscale("log")
  ax.set_xlabel("n")
  ax.set_ylabel("KL(π_n || π) (nats)")
  ax.set_title("KL of the selected policy")
  plot_style.legend(fig, axes)
  return fig
