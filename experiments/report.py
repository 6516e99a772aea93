"""The stages of ``experiments.reproduce`` and its index page (``index.md``, ``index.html``).

Also executes notebooks and extracts their figures:
``python -m experiments.report notebooks OUT_DIR [NOTEBOOK ...]`` runs every
``notebooks/*.ipynb`` (``MAXK_SMOKE`` is passed through) in a fresh kernel, saves the
executed copies and every PNG output into ``OUT_DIR`` and lists them in
``OUT_DIR/results.csv`` (columns notebook, figure, caption).
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
import csv
import dataclasses
import glob
import html
import json
import os
import sys
import time
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NOTEBOOK_DIR = os.path.join(ROOT, "notebooks")


@dataclasses.dataclass(frozen=True)
class Stage:
  """One step of the reproduction: a binary run as a subprocess."""

  name: str
  title: str
  module: str
  flags: tuple[str, ...]
  expected_s: int
  out_flag: str = "out_dir"
  done_file: str = "results.csv"
  positional: bool = False  # The output folder is a positional argument (notebooks).

  def command(self, out_dir: str) -> list[str]:
    if self.positional:
      return [sys.executable, "-m", self.module, *self.flags[:1], out_dir, *self.flags[1:]]
    return [sys.executable, "-m", self.module, f"--{self.out_flag}={out_dir}", *self.flags]


STAGE_NAMES = ("best_of_n", "bandit_variance", "bandit_training", "lm", "notebooks")


def lm_available() -> bool:
  return os.path.exists(os.path.join(ROOT, "experiments", "lm", "main.py"))


def stages(*, seed: int, smoke: bool) -> list[Stage]:
  """The reproduction's stages; ``smoke``: tiny sizes (seconds each)."""
  s = (f"--seed={seed}",)
  if smoke:
    bon = (
      "--n_max=100",
      "--num_n=6",
      "--uniform_sizes=10,100",
      "--dirichlet_size=50",
      "--num_mc_draws=10",
      "--num_thresholds=4",
      "--cherry_size=20",
    )
    var = (
      "--ns=4,8",
      "--ks=1,4",
      "--num_replicates=256",
      "--estimators=none,loo_minus_one,grpo,off_policy_exact,off_policy_first_order",
    )
    train = (
      "--num_steps=20",
      "--num_seeds=2",
      "--k_schedules=1,4",
      "--estimators=loo_minus_one,grpo",
      "--bandits=easy,gaussian",
      "--k_evals=1,4",
    )
    lm = ("--config=experiments/lm/configs/tiny.py:micro",)
  else:
    bon = ()
    var = ("--num_replicates=10000",)
    train = ()
    lm = ("--config=experiments/lm/configs/tiny.py",)  # Stages run in the repository root.
  lm_seed = (f"--config.seed={seed}",)
  return [
    Stage(
      "best_of_n",
      "best-of-n KL, bounds, estimator and win rate (Beirami et al.)",
      "experiments.best_of_n",
      s + bon,
      40,
    ),
    Stage(
      "bandit_variance",
      "bias and variance of every max@k gradient estimator (PKPO Fig. 4)",
      "experiments.bandit_variance",
      s + var,
      90,
    ),
    Stage(
      "bandit_training",
      "policy-gradient training with fixed / annealed k (PKPO Fig. 3)",
      "experiments.bandit_training",
      s + train,
      80,
    ),
    Stage(
      "lm",
      "small-LM RL: pass@k after SFT and after RL with each estimator",
      "experiments.lm.main",
      lm + lm_seed,
      90,
      out_flag="workdir",
    ),
    Stage(
      "notebooks",
      "the notebooks (PKPO Figs. 1, 2, 5; best-of-n; max@k; LM) executed",
      "experiments.report",
      ("notebooks",),
      150,
      positional=True,
    ),
  ]


# ------------------------------------------------------------------------------
# One line of explanation per figure.
# ------------------------------------------------------------------------------

CAPTIONS = {
  "best_of_n/kl_vs_n_uniform.png": "Uniform references: exact KL(pi_n || pi) vs n beside log(n) - (n-1)/n (an upper "
  "bound that overshoots once n exceeds the alphabet size) and the estimator d_n.",
  "best_of_n/kl_vs_n_other.png": "Cherry-picked and Dirichlet references: the bound overshoots the exact KL by nats "
  "when the best outcome is rare, while d_n tracks it.",
  "best_of_n/kl_gap.png": "The gap bound - exact KL vs n, with its proven lower bound and the 2n(n-1)exp(-H_2) "
  "upper bound (proved in maxk.bon_kl_gap_bound; Thm 3.4 per a secondary summary).",
  "best_of_n/win_rate_vs_kl.png": "Win rate vs KL: best-of-n and rewind-and-repeat against the curve "
  "(log n - (n-1)/n, n/(n+1)); at equal KL rewind-and-repeat mostly wins less often "
  "than best-of-n.",
  "bandit_variance/variance_gaussian.png": "PKPO's Gaussian toy: gradient variance of every estimator vs n (the leave-one-out "
  "baselines cut the variance of the plain max@k transform).",
  "bandit_variance/variance_categorical.png": "Softmax bandit: gradient variance of every estimator vs n.",
  "bandit_variance/bias_gaussian.png": "PKPO's Gaussian toy: bias in standard errors (|z| < 3 for the unbiased estimators; "
  "mean_std, GRPO and first-order off-policy are biased).",
  "bandit_variance/bias_categorical.png": "Softmax bandit: bias in standard errors for every estimator.",
  "bandit_training/curves_easy.png": "Easy bandit: exact max@k / pass@k during training for each estimator and k_opt.",
  "bandit_training/curves_hard.png": "Hard bandit (rare best arm next to a decoy): larger k_opt explores and finds the "
  "best arm; annealing k recovers pass@1 (PKPO Fig. 3).",
  "bandit_training/curves_gaussian.png": "PKPO's Gaussian toy: exact max@k / pass@k while learning theta.",
  "lm/pass_at_k.png": "Small LM: pass@k vs k after SFT and after RL with each estimator and k_opt.",
}


def caption(rel_path: str) -> str:
  return CAPTIONS.get(rel_path, "")


# ------------------------------------------------------------------------------
# Tables.
# ------------------------------------------------------------------------------


def read_csv(path: str) -> list[dict[str, str]]:
  with open(path, newline="") as f:
    return list(csv.DictReader(f))


def _fmt(x: Any, digits: int = 4) -> str:
  try:
    v = float(x)
  except (TypeError, ValueError):
    return str(x)
  if v != v:  # NaN.
    return "nan"
  if v == int(v) and abs(v) < 1e6:
    return str(int(v))
  return f"{v:.{digits}g}"


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
  lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
  lines += ["| " + " | ".join(_fmt(c) for c in row) + " |" for row in rows]
  return "\n".join(lines)


def variance_table(
  rows: Sequence[Mapping[str, str]], policy: str = "gaussian", k: int | None = None
) -> tuple[str, str] | None:
  """Estimator x n table of the gradient variance at one k (default: the largest k < max n)."""
  rows = [r for r in rows if r["policy"] == policy]
  if not rows:
    return None
  ks = sorted({int(r["k"]) for r in rows})
  ns = sorted({int(r["n"]) for r in rows})
  if k is None:  # The largest k > 1 that every n has, else the largest k below max n.
    k = max([kk for kk in ks if 1 < kk <= min(ns)] or [kk for kk in ks if 1 < kk < max(ns)] or ks)
  ests = list(dict.fromkeys(r["estimator"] for r in rows))
  table = []
  for e in ests:
    cells = {int(r["n"]): r for r in rows if r["estimator"] == e and int(r["k"]) == k}
    bias_z = [
      abs(float(r["bias_z"]))
      for r in rows
      if r["estimator"] == e and r["bias_z"] not in ("", "nan")
    ]
    table.append(
      [e]
      + [_fmt(cells[n]["variance"]) if n in cells else "" for n in ns]
      + [_fmt(max(bias_z)) if bias_z else ""]
    )
  header = ["estimator"] + [f"var n={n}" for n in ns] + ["max abs bias_z"]
  setting = " (PKPO's toy, Fig. 4)" if policy == "gaussian" else " (softmax bandit)"
  title = (
    f"Gradient variance of each estimator vs n, {policy} policy{setting}, k={k}; "
    "max |bias_z| (bias in standard errors over every k) > 3 flags a biased estimator."
  )
  return title, markdown_table(header, table)


def training_table(rows: Sequence[Mapping[str, str]]) -> tuple[str, str] | None:
  """Final exact max@k per bandit, estimator and schedule (mean over seeds)."""
  if not rows:
    return None
  value_cols = [c for c in rows[0] if c.startswith("final_")] or [
    c for c in rows[0] if c in ("max_at_k", "pass_at_k", "final")
  ]
  k_evals = sorted({int(r["k_eval"]) for r in rows}) if "k_eval" in rows[0] else []
  if not value_cols or not k_evals:
    return None
  col = next((c for c in value_cols if "max_at_k" in c), value_cols[0])
  keys = list(dict.fromkeys((r["bandit"], r["estimator"], r["schedule"]) for r in rows))
  table = []
  for key in keys:
    cells = {
      int(r["k_eval"]): r[col] for r in rows if (r["bandit"], r["estimator"], r["schedule"]) == key
    }
    table.append(list(key) + [cells.get(k, "") for k in k_evals])
  header = ["bandit", "estimator", "k_opt schedule"] + [f"{col} k={k}" for k in k_evals]
  return f"Exact {col} of the trained policy (mean over seeds) at each k_eval.", markdown_table(
    header, table
  )


def lm_table(rows: Sequence[Mapping[str, str]]) -> tuple[str, str] | None:
  """pass@k at k = 1, the middle and the largest k_eval, per stage/method/k_opt."""
  if not rows:
    return None
  k_evals = sorted({int(r["k_eval"]) for r in rows})
  shown = sorted({k_evals[0], k_evals[len(k_evals) // 2], k_evals[-1]})
  keys = list(dict.fromkeys((r["stage"], r["method"], r["k_opt"]) for r in rows))
  table = []
  for key in keys:
    cells = {int(r["k_eval"]): r for r in rows if (r["stage"], r["method"], r["k_opt"]) == key}
    table.append(
      list(key)
      + [cells[k]["pass_at_k"] if k in cells else "" for k in shown]
      + [cells[k]["max_at_k"] if k in cells else "" for k in shown]
    )
  header = ["stage", "method", "k_opt"] + [f"pass@{k}" for k in shown] + [f"max@{k}" for k in shown]
  return "Small LM: pass@k and max@k on held-out prompts, after SFT and after RL.", markdown_table(
    header, table
  )


def best_of_n_table(summary: Mapping[str, Any]) -> tuple[str, str] | None:
  """Per reference: worst overshoot of the bound and worst error of d_n (summary.json)."""
  if not summary:
    return None
  refs = [(name, v) for name, v in summary.items() if isinstance(v, Mapping)]
  if not refs:
    return None
  preferred = [
    "num_outcomes",
    "kl_at_n_max",
    "formula_at_n_max",
    "formula_max_overshoot",
    "d_n_expected_max_abs_error",
    "d_n_mc_within_2se_fraction",
  ]
  cols = [c for c in preferred if any(c in v for _, v in refs)]
  table = [
    [name] + [v.get(c, "") if v.get(c) is not None else "" for c in cols] for name, v in refs
  ]
  return (
    "Best-of-n per reference (summary.json): exact KL and the formula log n - (n-1)/n "
    "at the largest n, the formula's worst overshoot, d_n's worst error (nats)."
  ), markdown_table(["reference"] + cols, table)


def stage_tables(out_dir: str, stage: str) -> list[tuple[str, str]]:
  """The key tables of a finished stage: (one-line explanation, markdown table)."""
  path = os.path.join(out_dir, stage, "results.csv")
  tables = []
  try:
    if stage == "best_of_n":
      summary_path = os.path.join(out_dir, stage, "summary.json")
      if os.path.exists(summary_path):
        with open(summary_path) as f:
          tables.append(best_of_n_table(json.load(f)))
    elif stage == "bandit_variance" and os.path.exists(path):
      rows = read_csv(path)
      tables.append(variance_table(rows, "gaussian"))
      tables.append(variance_table(rows, "categorical"))
    elif stage == "bandit_training" and os.path.exists(path):
      tables.append(training_table(read_csv(path)))
    elif stage == "lm" and os.path.exists(path):
      tables.append(lm_table(read_csv(path)))
  except (KeyError, ValueError, StopIteration) as e:  # A table must never sink the index.
    tables.append((f"(table unavailable: {type(e).__name__}: {e})", ""))
  return [t for t in tables if t]


# ------------------------------------------------------------------------------
# The index page.
# ------------------------------------------------------------------------------


def stage_figures(out_dir: str, stage: str) -> list[tuple[str, str]]:
  """(relative path, caption) of every PNG a stage wrote, in a stable order."""
  figures = []
  stage_dir = os.path.join(out_dir, stage)
  if stage == "notebooks":
    listing = os.path.join(stage_dir, "results.csv")
    if os.path.exists(listing):
      for row in read_csv(listing):
        figures.append((f"{stage}/{row['figure']}", row["caption"]))
    return figures
  for path in sorted(glob.glob(os.path.join(stage_dir, "**", "*.png"), recursive=True)):
    rel = os.path.relpath(path, out_dir).replace(os.sep, "/")
    figures.append((rel, caption(rel) or f"Figure written by {stage}."))
  return figures


def _md_to_html_table(md: str) -> str:
  lines = [l for l in md.splitlines() if l.strip()]
  if len(lines) < 2:
    return ""
  cell = lambda l: [c.strip() for c in l.strip().strip("|").split("|")]
  out = [
    "<table>",
    "<tr>" + "".join(f"<th>{html.escape(c)}</th>" for c in cell(lines[0])) + "</tr>",
  ]
  for l in lines[2:]:
    out.append("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in cell(l)) + "</tr>")
  out.append("</table>")
  return "\n".join(out)


def write_index(
  out_dir: str,
  stages_run: Sequence[Stage],
  statuses: Mapping[str, tuple[str, float]],
  *,
  skipped: Sequence[str] = (),
  total_seconds: float = 0.0,
  smoke: bool = False,
) -> tuple[str, str]:
  """Writes ``out_dir/index.md`` and ``out_dir/index.html``; returns their paths."""
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
    md += [
      f"## {stage.name}",
      "",
      f"{stage.title}. Command: `"
      + " ".join(
        ["python", "-m", stage.module] + [a for a in stage.command(f"{out_dir}/{stage.name}")[3:]]
      ).replace(out_dir + "/", "")
      + "`",
      "",
    ]
    body += [
      f"<h2 id='{stage.name}'>{html.escape(stage.name)}</h2>",
      f"<p>{html.escape(stage.title)}.</p>",
    ]
    for title, table in stage_tables(out_dir, stage.name):
      md += [f"**{title}**", "", table, ""]
      body += [f"<p><b>{html.escape(title)}</b></p>", _md_to_html_table(table)]
    for rel, cap in stage_figures(out_dir, stage.name):
      md += [f"![{os.path.basename(rel)}]({rel})", "", f"*{rel}*: {cap}", ""]
      body += [
        f"<figure><img src='{html.escape(rel)}' style='max-width:900px'>"
        f"<figcaption><code>{html.escape(rel)}</code>: {html.escape(cap)}"
        "</figcaption></figure>"
      ]
  md_path = os.path.join(out_dir, "index.md")
  with open(md_path, "w") as f:
    f.write("\n".join(md) + "\n")
  html_path = os.path.join(out_dir, "index.html")
  with open(html_path, "w") as f:
    f.write(
      "<!doctype html><html><head><meta charset='utf-8'><title>maxk reproduction"
      "</title><style>body{font-family:sans-serif;max-width:1000px;margin:auto}"
      "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 6px}"
      "figure{margin:1em 0}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n"
    )
  return md_path, html_path


# ------------------------------------------------------------------------------
# Executing notebooks and extracting their figures.
# ------------------------------------------------------------------------------


def notebook_paths() -> list[str]:
  return sorted(glob.glob(os.path.join(NOTEBOOK_DIR, "*.ipynb")))


def execute_notebook(path: str, *, timeout: int = 600, smoke: bool | None = None):
  """Executes a notebook top to bottom in a fresh python3 kernel; returns the notebook.

  ``smoke`` sets ``MAXK_SMOKE`` for the kernel (None: inherit the environment).
  """
  import nbclient  # pylint: disable=g-import-not-at-top
  import nbformat  # pylint: disable=g-import-not-at-top

  nb = nbformat.read(path, as_version=4)
  old = os.environ.get("MAXK_SMOKE")
  old_path = os.environ.get("PYTHONPATH")
  if smoke is not None:
    os.environ["MAXK_SMOKE"] = "1" if smoke else "0"
  os.environ["PYTHONPATH"] = ROOT + (os.pathsep + old_path if old_path else "")
  os.environ.setdefault("JAX_PLATFORMS", "cpu")
  try:
    client = nbclient.NotebookClient(
      nb,
      timeout=timeout,
      kernel_name="python3",
      resources={"metadata": {"path": os.path.dirname(path)}},
    )
    client.execute()
  finally:
    for name, value in (("MAXK_SMOKE", old), ("PYTHONPATH", old_path)):
      if value is None:
        os.environ.pop(name, None)
      else:
        os.environ[name] = value
  return nb


def extract_figures(nb, stem: str, out_dir: str) -> list[dict[str, str]]:
  """Saves every PNG output of ``nb`` as ``out_dir/<stem>_<i>.png``; returns listing rows.

  The caption of a figure is the ``caption`` entry of its cell's metadata, else the
  first line of the nearest markdown cell above it.
  """
  rows, last_md, i = [], "", 0
  for cell in nb.cells:
    if cell.cell_type == "markdown":
      text = [l.strip("# ").strip() for l in cell.source.splitlines() if l.strip()]
      last_md = text[0] if text else last_md
      continue
    for output in cell.get("outputs", []):
      data = output.get("data", {})
      if "image/png" not in data:
        continue
      i += 1
      name = f"{stem}_{i:02d}.png"
      with open(os.path.join(out_dir, name), "wb") as f:
        f.write(base64.b64decode(data["image/png"]))
      rows.append(
        {
          "notebook": f"{stem}.ipynb",
          "figure": name,
          "caption": f"[{stem}.ipynb] " + cell.metadata.get("caption", last_md),
        }
      )
  return rows


def run_notebooks(out_dir: str, paths: Sequence[str] | None = None) -> list[dict[str, str]]:
  import nbformat  # pylint: disable=g-import-not-at-top

  os.makedirs(out_dir, exist_ok=True)
  rows = []
  for path in paths or notebook_paths():
    stem = os.path.splitext(os.path.basename(path))[0]
    start = time.time()
    print(f"  running notebook {stem} ...", flush=True)
    nb = execute_notebook(path)
    nbformat.write(nb, os.path.join(out_dir, f"{stem}.ipynb"))
    rows += extract_figures(nb, stem, out_dir)
    print(f"  notebook {stem}: {time.time() - start:.0f} s", flush=True)
  with open(os.path.join(out_dir, "results.csv"), "w", newline="") as f:
    writer = csv.DictWriter(f, fieldnames=["notebook", "figure", "caption"])
    writer.writeheader()
    writer.writerows(rows)
  return rows


def _main(argv: Sequence[str]) -> None:
  if len(argv) < 3 or argv[1] != "notebooks":
    raise SystemExit("usage: python -m experiments.report notebooks OUT_DIR [NOTEBOOK ...]")
  run_notebooks(argv[2], argv[3:] or None)


if __name__ == "__main__":
  _main(sys.argv)
