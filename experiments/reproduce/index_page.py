"""The reproduction's index page: every figure and key table, one line of explanation each.

``write_index`` writes ``index.md`` and ``index.html`` into the reproduction's folder.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
import glob
import html
import os
import time

from experiments.reproduce import stages as stages_lib
from experiments.reproduce import tables

# One line of explanation per figure a binary writes (paths relative to the folder).
CAPTIONS = {
  "best_of_n/kl_vs_n_uniform.png": "Uniform references: exact KL(pi_n || pi) vs n beside "
  "log(n) - (n-1)/n (an upper bound that overshoots once n exceeds the alphabet size) and "
  "the estimator d_n.",
  "best_of_n/kl_vs_n_other.png": "Cherry-picked and Dirichlet references: the bound "
  "overshoots the exact KL by nats when the best outcome is rare, while d_n tracks it.",
  "best_of_n/kl_gap.png": "The gap bound - exact KL vs n, with its proven lower bound and "
  "the 2n(n-1)exp(-H_2) upper bound (Sec. 3 of the paper; both proved in "
  "docs/best_of_n_bounds.md).",
  "best_of_n/win_rate_vs_kl.png": "Win rate vs KL: best-of-n and rewind-and-repeat against "
  "the curve (log n - (n-1)/n, n/(n+1)); at equal KL rewind-and-repeat mostly wins less "
  "often than best-of-n.",
  "bandit_variance/variance_gaussian.png": "PKPO's Gaussian toy: gradient variance of every "
  "estimator vs n (the leave-one-out baselines cut the variance of the plain max@k "
  "transform).",
  "bandit_variance/variance_categorical.png": "Softmax bandit: gradient variance of every "
  "estimator vs n.",
  "bandit_variance/bias_gaussian.png": "PKPO's Gaussian toy: bias in standard errors (|z| < 3 "
  "for the unbiased estimators; mean_std, GRPO and first-order off-policy are biased).",
  "bandit_variance/bias_categorical.png": "Softmax bandit: bias in standard errors for every "
  "estimator.",
  "bandit_variance/objective_top_m.png": "Softmax bandit, mean of the top m of k draws: "
  "gradient variance and bias (+-2 s.e.) of the none / loo / loo_centered baselines of "
  "maxk.order_stat_advantages against the exact gradient.",
  "bandit_variance/objective_min.png": "Softmax bandit, min@k (the worst of k draws; pass^k on "
  "binary rewards): gradient variance and bias (+-2 s.e.) of the rank-objective baselines.",
  "bandit_variance/objective_maxrl.png": "Softmax bandit, MaxRL's sum_{j<=k} pass@j / j on "
  "binarised rewards: the unbiased rank-objective baselines beside MaxRL's own estimator, "
  "which targets sum_{j<n} pass@j / j (unbiased only at k = n - 1; maxrl_no_cv at k = n).",
  "bandit_variance/variance_check.png": "Check of the variance estimators: the mean over "
  "replicates of maxk.max_at_k_variance / pass_at_k_variance against the empirical variance "
  "of max_at_k / pass_at_k (+-2 s.e.); unbiased estimators lie on y = x.",
  "bandit_training/curves_easy.png": "Easy bandit: exact max@k / pass@k during training for "
  "each estimator and k_opt.",
  "bandit_training/curves_hard.png": "Hard bandit (rare best arm next to a decoy): larger "
  "k_opt explores and finds the best arm; annealing k recovers pass@1 (PKPO Fig. 3).",
  "bandit_training/curves_gaussian.png": "PKPO's Gaussian toy: exact max@k / pass@k while "
  "learning theta.",
  "lm/pass_at_k.png": "Small LM: pass@k vs k after SFT and after RL with each estimator and k_opt.",
}


def caption(rel_path: str) -> str:
  """The explanation of the figure at ``rel_path`` (e.g. ``lm/pass_at_k.png``), or ""."""
  return CAPTIONS.get(rel_path, "")


def stage_figures(out_dir: str, stage: str) -> list[tuple[str, str]]:
  """(path relative to ``out_dir``, caption) of every PNG a stage wrote, in a stable order.

  The notebooks stage lists its figures and their captions in its results.csv.
  """
  stage_dir = os.path.join(out_dir, stage)
  if stage == "notebooks":
    listing = os.path.join(stage_dir, "results.csv")
    if not os.path.exists(listing):
      return []
    return [(f"{stage}/{row['figure']}", row["caption"]) for row in tables.read_csv(listing)]
  figures = []
  for path in sorted(glob.glob(os.path.join(stage_dir, "**", "*.png"), recursive=True)):
    rel = os.path.relpath(path, out_dir).replace(os.sep, "/")
    figures.append((rel, caption(rel) or f"Figure written by {stage}."))
  return figures


def _md_to_html_table(md: str) -> str:
  lines = [line for line in md.splitlines() if line.strip()]
  if len(lines) < 2:
    return ""
  cells = lambda line: [c.strip() for c in line.strip().strip("|").split("|")]
  header = "".join(f"<th>{html.escape(c)}</th>" for c in cells(lines[0]))
  out = ["<table>", f"<tr>{header}</tr>"]
  for line in lines[2:]:
    out.append("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells(line)) + "</tr>")
  out.append("</table>")
  return "\n".join(out)


_STYLE = (
  "body{font-family:sans-serif;max-width:1000px;margin:auto}"
  "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 6px}"
  "figure{margin:1em 0}"
)


def write_index(
  out_dir: str,
  stages_run: Sequence[stages_lib.Stage],
  statuses: Mapping[str, tuple[str, float]],
  *,
  skipped: Sequence[str] = (),
  total_seconds: float = 0.0,
  smoke: bool = False,
) -> tuple[str, str]:
  """Writes ``out_dir/index.md`` and ``out_dir/index.html``; returns their paths.

  Args:
    out_dir: the reproduction's folder; stage ``s`` wrote into ``out_dir/s``.
    stages_run: the stages shown, each with its tables and figures.
    statuses: stage name -> (status, seconds), shown in the summary table.
    skipped: names of stages neither run nor found, listed as skipped.
    total_seconds: the wall time of the reproduction.
    smoke: whether the stages ran at smoke sizes (said in the introduction).
  """
  when = time.strftime("%Y-%m-%d %H:%M")
  intro = (
    f"Generated by `python -m experiments.reproduce` on {when} in "
    f"{total_seconds:.0f} s{' (SMOKE sizes: not the headline numbers)' if smoke else ''}. "
    "Each section is one stage; its folder holds results.csv, config.json "
    "(every flag) and log.txt."
  )
  md = ["# maxk: reproduced figures and tables", "", intro, ""]
  body = ["<h1>maxk: reproduced figures and tables</h1>", f"<p>{html.escape(intro)}</p>"]
  md += ["| stage | status | seconds |", "|---|---|---|"]
  rows_html = []
  for stage in stages_run:
    status, secs = statuses.get(stage.name, ("not run", 0.0))
    md.append(f"| [{stage.name}](#{stage.name}) | {status} | {secs:.0f} |")
    rows_html.append(
      f"<tr><td><a href='#{stage.name}'>{stage.name}</a></td>"
      f"<td>{html.escape(status)}</td><td>{secs:.0f}</td></tr>"
    )
  for name in skipped:
    md.append(f"| {name} | skipped | |")
    rows_html.append(f"<tr><td>{name}</td><td>skipped</td><td></td></tr>")
  body.append(
    "<table><tr><th>stage</th><th>status</th><th>seconds</th></tr>"
    + "".join(rows_html)
    + "</table>"
  )
  md.append("")
  for stage in stages_run:
    command = " ".join(["python", "-m", stage.module, *stage.arguments(stage.name)])
    md += [f"## {stage.name}", "", f"{stage.title}. Command: `{command}`", ""]
    body += [
      f"<h2 id='{stage.name}'>{html.escape(stage.name)}</h2>",
      f"<p>{html.escape(stage.title)}. Command: <code>{html.escape(command)}</code></p>",
    ]
    for title, table in tables.stage_tables(out_dir, stage.name):
      md += [f"**{title}**", "", table, ""]
      body += [f"<p><b>{html.escape(title)}</b></p>", _md_to_html_table(table)]
    for rel, cap in stage_figures(out_dir, stage.name):
      md += [f"![{os.path.basename(rel)}]({rel})", "", f"*{rel}*: {cap}", ""]
      body.append(
        f"<figure><img src='{html.escape(rel)}' style='max-width:900px'>"
        f"<figcaption><code>{html.escape(rel)}</code>: {html.escape(cap)}"
        "</figcaption></figure>"
      )
  md_path = os.path.join(out_dir, "index.md")
  with open(md_path, "w") as f:
    f.write("\n".join(md) + "\n")
  html_path = os.path.join(out_dir, "index.html")
  with open(html_path, "w") as f:
    f.write(
      "<!doctype html><html><head><meta charset='utf-8'><title>maxk reproduction</title>"
      f"<style>{_STYLE}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n"
    )
  return md_path, html_path
