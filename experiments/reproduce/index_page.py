"""The reproduction's index page: every figure and key table, one line of explanation each.

``write_index`` writes ``index.md`` and ``index.html`` into the reproduction's folder.
The HTML page is static and self-contained (its figures are the PNGs next to it, by
relative path), so it works opened from the file system: a table of contents down to
each figure, the figures of a stage in a grid with their explanation beneath them,
click-to-enlarge without scripts (a CSS ``:target`` overlay), and wide tables that
scroll inside their own box.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
import glob
import html
import os
import re
import time
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
  "lm/bins.png": (
    "Small LM: problems by base pass@1",
    "Small LM: held-out problems binned by the base model's pass@1, with what each model "
    "solves in each bin.",
  ),
}
# Kept for callers that want the explanation only.
CAPTIONS = {path: caption for path, (_, caption) in FIGURES.items()}


class ShownStage(NamedTuple):
  """One stage's section of the page: what ran in its folder, and how it ended.

  Attributes:
    name: the stage's name (its folder).
    title: one line on what it reproduces.
    command: the command that wrote its outputs, as a user types it.
    smoke: whether it ran at smoke sizes (marked on the page).
    status: "ok", "reused", "from an earlier run", or "FAILED ..." (then its partial
      outputs are not shown).
    seconds: its wall time in this run (0 when not run now).
  """

  name: str
  title: str
  command: str
  smoke: bool
  status: str
  seconds: float

  @property
  def failed(self) -> bool:
    return self.status.startswith("FAILED")


class Figure(NamedTuple):
  """One figure of the page: its path relative to the folder, title and explanation."""

  path: str
  title: str
  caption: str


def caption(rel_path: str) -> str:
  """The explanation of the figure at ``rel_path`` (e.g. ``lm/pass_at_k.png``), or ""."""
  return CAPTIONS.get(rel_path, "")


def _notebook_title(row: Mapping[str, str]) -> str:
  """A short title for a notebook figure: the notebook and the caption's head."""
  text = re.sub(r"^\[[^\]]*\]\s*", "", row.get("caption", ""))
  head = text.split(":", 1)[0].strip() if ":" in text else ""
  if not head or len(head) > 40:
    head = " ".join(text.split()[:6])
  stem = os.path.splitext(row.get("notebook", ""))[0]
  return f"{stem}: {head}" if head else stem


def stage_figures(out_dir: str, stage: str) -> list[Figure]:
  """Every PNG a stage wrote, with its title and explanation, in a stable order.

  The notebooks stage lists its figures and their captions in its results.csv.
  """
  stage_dir = os.path.join(out_dir, stage)
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
    rel = os.path.relpath(path, out_dir).replace(os.sep, "/")
    title, cap = FIGURES.get(rel, (os.path.basename(rel), f"Figure written by {stage}."))
    figures.append(Figure(rel, title, cap))
  return sorted(figures, key=lambda f: (order.get(f.path, len(order)), f.path))


def inline_html(text: str) -> str:
  """``text`` as HTML: escaped, with Markdown inline code (```x```) as ``<code>x</code>``."""
  parts = text.split("`")
  if len(parts) % 2 == 0:  # An unmatched backtick: no code spans.
    return html.escape(text)
  return "".join(
    f"<code>{html.escape(p)}</code>" if i % 2 else html.escape(p) for i, p in enumerate(parts)
  )


def _short(text: str, limit: int = 64) -> str:
  """The head of a table's title for the table of contents (escaped HTML)."""
  head = re.split(r"[;:(]|\. ", text, maxsplit=1)[0].strip().rstrip(",.")
  if len(head) > limit:
    head = head[: limit - 1].rsplit(" ", 1)[0] + "…"
  return html.escape(head)


def _anchor(text: str) -> str:
  return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-")


def _md_to_html_table(md: str) -> str:
  lines = [line for line in md.splitlines() if line.strip()]
  if len(lines) < 2:
    return ""
  cells = lambda line: [c.strip() for c in line.strip().strip("|").split("|")]
  header = "".join(f"<th>{html.escape(c)}</th>" for c in cells(lines[0]))
  out = ["<div class='table-wrap'><table>", f"<thead><tr>{header}</tr></thead><tbody>"]
  for line in lines[2:]:
    out.append("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells(line)) + "</tr>")
  out.append("</tbody></table></div>")
  return "\n".join(out)


_STYLE = """
:root{--fg:#1d1d1f;--muted:#5f6368;--line:#dadce0;--bg:#fff;--accent:#1a73e8;--soft:#f6f8fa}
*{box-sizing:border-box}
body{margin:0;font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);
 background:var(--bg)}
a{color:var(--accent);text-decoration:none}a:hover{text-decoration:underline}
code,pre{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.88em;
 background:var(--soft);border-radius:4px}
code{padding:.1em .3em}
pre{padding:.6em .8em;overflow-x:auto;white-space:pre;border:1px solid var(--line)}
.layout{display:grid;grid-template-columns:17rem minmax(0,1fr);gap:2rem;max-width:110rem;
 margin:0 auto;padding:0 1.5rem}
nav.toc{position:sticky;top:0;align-self:start;max-height:100vh;overflow-y:auto;
 padding:1.5rem 0;font-size:.9em}
nav.toc ul{list-style:none;margin:0;padding-left:.9rem}nav.toc>ul{padding-left:0}
nav.toc li{margin:.15em 0}nav.toc .kind{color:var(--muted);font-size:.85em}
main{min-width:0;padding:0 0 4rem}
header{max-width:110rem;margin:0 auto;padding:1.2rem 1.5rem 0}
h1{font-size:1.9rem;margin:.2em 0 .4em}
h2{font-size:1.5rem;margin:1.6em 0 .3em;padding-top:.4em;border-top:1px solid var(--line)}
.table-title{font-weight:600;margin:1.4em 0 .3em;font-size:.95em}
.intro{color:var(--muted)}
.table-wrap{width:fit-content;max-width:100%;overflow-x:auto;border:1px solid var(--line);
 border-radius:6px;margin:.5em 0 1em}
table{border-collapse:collapse;font-size:.9em;font-variant-numeric:tabular-nums}
th,td{padding:.3em .7em;border-bottom:1px solid var(--line);text-align:right;white-space:nowrap}
th{background:var(--soft);position:sticky;top:0}
th:first-child,td:first-child{text-align:left}
tbody tr:hover{background:#f1f5fd}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(min(100%,30rem),1fr));gap:1.2rem}
figure{margin:0;border:1px solid var(--line);border-radius:8px;padding:.6rem;background:#fff;
 scroll-margin-top:1rem}
figure img{display:block;width:100%;height:auto;cursor:zoom-in}
figcaption{font-size:.9em;margin-top:.5em}
figcaption .title{font-weight:600;display:block}
figcaption .path{color:var(--muted);font-size:.85em}
.lightbox{display:none;position:fixed;inset:0;z-index:10;background:rgba(20,20,20,.93);
 padding:2vh 2vw;text-align:center}
.lightbox:target{display:flex;flex-direction:column;align-items:center;justify-content:center}
.lightbox img{max-width:96vw;max-height:88vh;background:#fff;cursor:zoom-out}
.lightbox p{color:#eee;max-width:70rem;margin:.6em auto 0;font-size:.95em}
.status-ok{color:#188038}.status-failed{color:#c5221f;font-weight:600}
.note{border-left:4px solid #f9ab00;background:#fef7e0;padding:.4em .8em;margin:.6em 0}
.note.failed{border-left-color:#c5221f;background:#fce8e6}
@media (max-width:60rem){.layout{grid-template-columns:minmax(0,1fr)}
 nav.toc{position:static;max-height:none;border-bottom:1px solid var(--line)}}
"""

# Closes an enlarged figure with Escape (clicking it closes it without scripts).
_SCRIPT = """
document.addEventListener("keydown", function (e) {
  if (e.key === "Escape" && location.hash.indexOf("#zoom-") === 0) {
    location.hash = "#" + location.hash.slice(6);
  }
});
"""


def _status_class(status: str) -> str:
  if status.startswith("FAILED"):
    return "status-failed"
  return "status-ok" if status in ("ok", "reused") else ""


_Note = tuple[str, str]  # (kind: "failed" or "smoke", text with Markdown inline code)
_Section = tuple[ShownStage, list[_Note], list[tables.Table], list[Figure]]


def _notes(stage: ShownStage) -> list[_Note]:
  """The warnings of a stage's section."""
  notes = []
  if stage.failed:
    notes.append(("failed", f"{stage.status}: this stage's partial outputs are not shown."))
  if stage.smoke:
    notes.append(("smoke", "SMOKE sizes (`--smoke`): tiny settings, not the headline numbers."))
  return notes


def write_index(
  out_dir: str,
  stages: Sequence[ShownStage],
  *,
  skipped: Sequence[str] = (),
  total_seconds: float = 0.0,
) -> tuple[str, str]:
  """Writes ``out_dir/index.md`` and ``out_dir/index.html``; returns their paths.

  A failed stage's section shows its command and a warning, never tables or figures
  from its partial outputs; a smoke stage's section and its row in the summary table
  say "smoke".

  Args:
    out_dir: the reproduction's folder; stage ``s`` wrote into ``out_dir/s``.
    stages: the stages shown, each with its tables and figures.
    skipped: names of stages neither run nor found, listed as skipped.
    total_seconds: the wall time of the reproduction.
  """
  when = time.strftime("%Y-%m-%d %H:%M")
  num_smoke = sum(stage.smoke for stage in stages)
  smoke_note = (
    f" {num_smoke} of {len(stages)} stages ran at SMOKE sizes (marked): not the headline numbers."
    if num_smoke
    else ""
  )
  intro = (
    f"Generated by `python -m experiments.reproduce` on {when} in "
    f"{total_seconds:.0f} s.{smoke_note} "
    "Each section is one stage; its folder holds `results.csv`, `config.json` "
    "(every flag) and `log.txt`."
  )
  title = "maxk: reproduced figures and tables"
  # Everything shown, per stage: (stage, notes, tables, figures).
  sections: list[_Section] = []
  for stage in stages:
    if stage.failed:
      sections.append((stage, _notes(stage), [], []))
    else:
      shown_tables = tables.stage_tables(out_dir, stage.name)
      sections.append((stage, _notes(stage), shown_tables, stage_figures(out_dir, stage.name)))

  md = [f"# {title}", "", intro, ""]
  md += ["| stage | status | sizes | seconds | figures |", "|---|---|---|---|---|"]
  for stage, _, _, figures in sections:
    sizes = "smoke" if stage.smoke else "full"
    md.append(
      f"| [{stage.name}](#{stage.name}) | {stage.status} | {sizes} | {stage.seconds:.0f} "
      f"| {len(figures)} |"
    )
  md += [f"| {name} | skipped | | | |" for name in skipped]
  md += ["", "Contents:", ""]
  for stage, _, _, figures in sections:
    md.append(f"- [{stage.name}](#{stage.name})")
    md += [f"  - [{f.title}]({f.path})" for f in figures]
  md.append("")
  for stage, notes, stage_tables, figures in sections:
    md += [f"## {stage.name}", "", f"{stage.title}. Command: `{stage.command}`", ""]
    for _, note in notes:
      md += [f"> **Warning:** {note}", ""]
    for table_title, table in stage_tables:
      md += [f"**{table_title}**", "", table, ""]
    for f in figures:
      md += [f"![{f.title}]({f.path})", "", f"*{f.path}*: {f.caption}", ""]
  md_path = os.path.join(out_dir, "index.md")
  with open(md_path, "w") as out:
    out.write("\n".join(md) + "\n")

  toc = ["<nav class='toc' aria-label='Contents'><b>Contents</b><ul>"]
  toc.append("<li><a href='#stages'>Stages</a></li>")
  header = (
    f"<header><h1>{html.escape(title)}</h1>"
    f"<p class='intro'>{inline_html(intro)} Click a figure to enlarge it.</p></header>"
  )
  body = ["<h2 id='stages'>Stages</h2>"]
  rows_html = []
  for stage, _, _, figures in sections:
    rows_html.append(
      f"<tr><td><a href='#{stage.name}'>{stage.name}</a></td>"
      f"<td class='{_status_class(stage.status)}'>{html.escape(stage.status)}</td>"
      f"<td>{'smoke' if stage.smoke else 'full'}</td><td>{stage.seconds:.0f}</td>"
      f"<td>{len(figures)}</td></tr>"
    )
  rows_html += [
    f"<tr><td>{html.escape(n)}</td><td>skipped</td><td></td><td></td><td></td></tr>"
    for n in skipped
  ]
  body.append(
    "<div class='table-wrap'><table><thead><tr><th>stage</th><th>status</th><th>sizes</th>"
    "<th>seconds</th><th>figures</th></tr></thead><tbody>"
    + "".join(rows_html)
    + "</tbody></table></div>"
  )
  lightboxes = []
  for stage, notes, stage_tables, figures in sections:
    toc.append(f"<li><a href='#{stage.name}'>{html.escape(stage.name)}</a><ul>")
    body += [
      f"<h2 id='{stage.name}'>{html.escape(stage.name)}</h2>",
      f"<p>{inline_html(stage.title)}.</p>",
      f"<pre class='cmd'>{html.escape(stage.command)}</pre>",
    ]
    for kind, note in notes:
      body.append(f"<p class='note {kind}' role='note'><b>Warning:</b> {inline_html(note)}</p>")
    for i, (table_title, table) in enumerate(stage_tables, 1):
      anchor = f"{stage.name}-table-{i}"
      toc.append(
        f"<li><span class='kind'>table</span> <a href='#{anchor}'>{_short(table_title)}</a></li>"
      )
      body += [
        f"<p class='table-title' id='{anchor}'>{inline_html(table_title)}</p>",
        _md_to_html_table(table),
      ]
    if figures:
      body.append("<div class='grid'>")
    for f in figures:
      anchor = "fig-" + _anchor(f.path)
      src = html.escape(f.path)
      toc.append(
        f"<li><span class='kind'>figure</span> <a href='#{anchor}'>{html.escape(f.title)}</a></li>"
      )
      body.append(
        f"<figure id='{anchor}'><a href='#zoom-{anchor}' title='Enlarge'>"
        f"<img src='{src}' alt='{html.escape(f.title)}'></a>"
        f"<figcaption><span class='title'>{html.escape(f.title)}</span>"
        f"{inline_html(f.caption)} <span class='path'>(<a href='{src}'>{src}</a>)</span>"
        "</figcaption></figure>"
      )
      lightboxes.append(
        f"<div class='lightbox' id='zoom-{anchor}'><a href='#{anchor}' title='Close'>"
        f"<img src='{src}' alt='{html.escape(f.title)} (enlarged)'></a>"
        f"<p>{html.escape(f.title)}: {inline_html(f.caption)}</p></div>"
      )
    if figures:
      body.append("</div>")
    toc.append("</ul></li>")
  toc.append("</ul></nav>")
  html_path = os.path.join(out_dir, "index.html")
  with open(html_path, "w") as out:
    out.write(
      "<!doctype html>\n<html lang='en'><head><meta charset='utf-8'>"
      "<meta name='viewport' content='width=device-width, initial-scale=1'>"
      f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head><body>\n"
      f"{header}\n<div class='layout'>\n"
      + "\n".join(toc)
      + "\n<main>\n"
      + "\n".join(body)
      + "\n</main></div>\n"
      + "\n".join(lightboxes)
      + f"\n<script>{_SCRIPT}</script>\n</body></html>\n"
    )
  return md_path, html_path
