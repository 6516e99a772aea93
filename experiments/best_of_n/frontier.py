"""Win rate against KL for every selection policy, and over-optimisation under a proxy.

One categorical base policy π (the proxy study's: Dirichlet(1) probabilities over
``num_arms`` arms, true rewards r ~ N(0, 1); :func:`experiments.best_of_n.proxy.policy`)
and a proxy s = r + σ ε with Student-t errors ε.  For each policy family, built with
the exact laws of ``maxk`` on a reward that selects,

* best-of-n (``maxk.bon_pmf``) for every n from 1 to ``n_max``;
* soft best-of-n (``maxk.soft_bon_pmf``) for each λ in ``lams``, n on a log grid;
* Best-of-Poisson (``maxk.bop_pmf``) with μ = n − 1 on that grid (n draws on average);
* the exponential tilt (``maxk.tilt_pmf``) and the χ²-regularised optimum
  (``maxk.chi2_pmf``) for β on log grids of ``2 num_points`` points,

the study records, in two settings, KL(q ‖ π), the win rate of q against π (on the
true reward, ties one half) and the mean true reward E_q[r]:

* ``"true"``: the policies select by the true reward: the win rate vs KL frontier;
* ``"proxy"``: they select by the proxy: the true reward vs KL, which rises and then
  falls (reward hacking), with the best n of best-of-n (``maxk.proxy_bon_best_n``).

References: Beirami et al., arXiv 2401.01879, Sec. 7 (win rate vs KL); Huang et
al., arXiv 2503.21878 (the χ² optimum); Khalaf et al., arXiv 2506.19248
(Best-of-Poisson, HedgeTune); Verdun et al., arXiv 2505.03156 (soft best-of-n);
Gao et al., arXiv 2210.10760 (over-optimisation against KL).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import jax
from matplotlib.figure import Figure
import numpy as np

from experiments import plot_style
from experiments.best_of_n import proxy
from experiments.best_of_n import study
import maxk

#: The two settings: selection by the true reward, and by the proxy.
SETTINGS = ("true", "proxy")
#: The policy families, in figure order.
POLICIES = ("best_of_n", "soft_best_of_n", "best_of_poisson", "tilt", "chi2")

COLUMNS = ("setting", "policy", "parameter", "value", "lam", "kl", "win_rate", "true_reward")

_COLOURS = {
  "best_of_n": "#1f77b4",
  "best_of_poisson": "#2ca02c",
  "tilt": "#d62728",
  "chi2": "#9467bd",
}


def _metrics(q: jax.Array, probs: np.ndarray, rewards: np.ndarray) -> tuple[float, float, float]:
  """(KL(q ‖ π), win rate of q against π on the true reward, E_q[r]) in float64."""
  q64 = np.asarray(q, np.float64)
  q64 = q64 / q64.sum()
  kl = float(maxk.kl_divergence(q64.astype(np.float32), probs.astype(np.float32)))
  win = float(maxk.win_rate(q64.astype(np.float32), probs.astype(np.float32), rewards))
  return max(kl, 0.0), win, float(q64 @ rewards)


def rows(
  *,
  seed: int,
  num_arms: int,
  sigma: float,
  t_df: float,
  n_max: int,
  num_points: int,
  lams: Sequence[float],
) -> tuple[list[study.Row], dict[str, float]]:
  """The rows (:data:`COLUMNS`) of both settings, and the proxy's best n of best-of-n.

  Returns:
    ``(rows, best)``: ``best`` holds ``best_n`` and ``true_reward_at_best_n`` (the
    exact argmax over n <= ``n_max``) and ``true_reward_at_n_max``.
  """
  probs, rewards, scores = proxy.policy(seed, num_arms, (sigma,), t_df)
  p32 = probs.astype(np.float32)
  selectors = {
    "true": rewards.astype(np.float32),
    "proxy": scores["student_t"][0].astype(np.float32),
  }
  ns = study.n_grid(n_max, num_points)
  betas = np.logspace(-2, 2, 2 * num_points)
  chi2_betas = np.logspace(-3, 1, 2 * num_points)
  out: list[study.Row] = []

  def add(
    setting: str, policy: str, parameter: str, value: float, q: jax.Array, lam: float
  ) -> None:
    kl, win, true_reward = _metrics(q, probs, rewards)
    out.append(
      dict(
        setting=setting,
        policy=policy,
        parameter=parameter,
        value=float(value),
        lam=lam,
        kl=kl,
        win_rate=win,
        true_reward=true_reward,
      )
    )

  for setting in SETTINGS:
    s = selectors[setting]
    for n in range(1, n_max + 1):
      add(setting, "best_of_n", "n", n, maxk.bon_pmf(p32, s, n), float("nan"))
    for lam in lams:
      for n in ns:
        add(setting, "soft_best_of_n", "n", n, maxk.soft_bon_pmf(p32, s, n, lam), float(lam))
    families: list[tuple[str, str, np.ndarray, Callable[..., jax.Array]]] = [
      ("best_of_poisson", "mu", np.asarray(ns, np.float64) - 1.0, maxk.bop_pmf),
      ("tilt", "beta", betas, maxk.tilt_pmf),
      ("chi2", "beta", chi2_betas, maxk.chi2_pmf),
    ]
    for policy, parameter, values, pmf in families:
      qs = jax.vmap(lambda v, pmf=pmf, s=s: pmf(p32, s, v))(values.astype(np.float32))
      for v, q in zip(values, qs):
        add(setting, policy, parameter, v, q, float("nan"))
  proxy_scores = selectors["proxy"]
  best_n, best = maxk.proxy_bon_best_n(p32, rewards.astype(np.float32), proxy_scores, max_n=n_max)
  at_max = maxk.proxy_bon_reward(p32, rewards.astype(np.float32), proxy_scores, n_max)
  summary = dict(
    best_n=int(best_n), true_reward_at_best_n=float(best), true_reward_at_n_max=float(at_max)
  )
  return out, summary


def figure(result_rows: Sequence[study.Row], best: dict[str, float], *, sigma: float) -> Figure:
  """Left: win rate vs KL when selecting by the true reward. Right: true reward vs KL
  when selecting by the proxy, best-of-n's best n starred."""
  fig, axes = plot_style.figure(1, 2, legend_width=2.6)
  lams = sorted({r["lam"] for r in result_rows if r["policy"] == "soft_best_of_n"})
  for ax, setting, y in zip(axes[0], SETTINGS, ("win_rate", "true_reward")):
    for policy in POLICIES:
      sel = study.select(result_rows, setting=setting, policy=policy)
      if policy == "soft_best_of_n":
        for i, lam in enumerate(lams):
          curve = [r for r in sel if r["lam"] == lam]
          ax.plot(
            study.column(curve, "kl"),
            study.column(curve, y),
            "-",
            color=plot_style.sequential(i, len(lams)),
            lw=1.3,
            label=f"soft best-of-n, λ={lam:g}",
          )
        continue
      style = "o" if policy == "best_of_n" else "-"
      ax.plot(
        study.column(sel, "kl"),
        study.column(sel, y),
        style,
        color=_COLOURS[policy],
        ms=3,
        label={"best_of_n": "best-of-n (n = 1, 2, ...)", "best_of_poisson": "Best-of-Poisson"}.get(
          policy, "tilt π·exp(βr)" if policy == "tilt" else "χ² optimum"
        ),
      )
    ax.set_xlabel("KL(policy ‖ π) [nats]")
  bon = study.select(result_rows, setting="proxy", policy="best_of_n")
  star = [r for r in bon if r["value"] == best["best_n"]]
  if star:
    axes[0, 1].plot(
      star[0]["kl"],
      star[0]["true_reward"],
      "*",
      ms=14,
      color=_COLOURS["best_of_n"],
      mec="k",
      label="best n under the proxy",
    )
  # The frontier where best-of-n lives (the tilt runs on to larger KL).
  bon_true = study.select(result_rows, setting="true", policy="best_of_n")
  axes[0, 0].set_xlim(0, 1.15 * float(np.max(study.column(bon_true, "kl"))) + 0.1)
  axes[0, 0].set_ylabel("win rate vs π")
  axes[0, 0].set_title("Selecting by the true reward")
  axes[0, 1].set_ylabel("true reward E_q[r]")
  axes[0, 1].set_title(f"Selecting by a proxy (Student-t errors, σ={sigma:g})")
  plot_style.legend(fig, axes)
  return fig
