"""The index page: its content computed once, the LM table and the notebooks' figures with
their captions, rendered as Markdown and HTML."""

import csv
import os

import nbformat

from experiments.reproduce import index_html
from experiments.reproduce import index_markdown
from experiments.reproduce import index_page
from experiments.reproduce import page as page_lib
from experiments.reproduce import tables
from notebooks import execute
from tests import REPO_ROOT
from tests.experiments.reproduce import csv_files


def test_index_tables_and_notebook_figures(tmp_path):
  # A finished LM stage with the labels the LM binary writes: the model after SFT is
  # stage "base" (method "base", no k_opt); RL rows are stage "rl".
  lm_rows = []
  for stage, method, k_opt in (("base", "base", ""), ("rl", "max_at_k/loo_minus_one", 4)):
    for k in (1, 2, 4):
      lm_rows.append([stage, method, k_opt, k, 0.1 * k, 0.2 * k])
  header = ["stage", "method", "k_opt", "k_eval", "pass_at_k", "max_at_k"]
  csv_files.write_csv(tmp_path / "lm" / "results.csv", header, lm_rows)
  (tmp_path / "lm" / "pass_at_k.png").write_bytes(b"\x89PNG")
  # A finished notebooks stage, listing the committed notebooks' figures.
  nb_dir = tmp_path / "notebooks"
  nb_dir.mkdir()
  rows = []
  for path in execute.notebook_paths():
    nb = nbformat.read(path, as_version=4)
    stem = os.path.splitext(os.path.basename(path))[0]
    rows += execute.extract_figures(nb, stem, str(nb_dir))
  assert sum(r["notebook"] == "pkpo.ipynb" for r in rows) >= 4  # PKPO Figs. 1, 2, 4, 5.
  with open(nb_dir / "results.csv", "w", newline="") as f:
    writer = csv.DictWriter(f, fieldnames=["notebook", "figure", "title", "caption"])
    writer.writeheader()
    writer.writerows(rows)
  stages = [csv_files.shown_stage("lm"), csv_files.shown_stage("notebooks")]
  md, html_path = index_page.write_index(str(tmp_path), stages)
  text = open(md).read()
  assert "| stage | method | k_opt | pass@1 | pass@2 | pass@4 | max@1 | max@2 | max@4 |" in text
  assert "| base | base |  | 0.1 | 0.2 | 0.4 | 0.2 | 0.4 | 0.8 |" in text
  assert "| rl | max_at_k/loo_minus_one | 4 | 0.1 | 0.2 | 0.4 | 0.2 | 0.4 | 0.8 |" in text
  assert "(lm/pass_at_k.png)" in text
  for row in rows:
    assert f"(notebooks/{row['figure']})" in text
    assert f"*notebooks/{row['figure']}*: {row['caption']}" in text
  assert os.path.exists(html_path)


def test_inline_code_becomes_html_code():
  assert index_html.inline_html("Run `a < b` then `c`.") == (
    "Run <code>a &lt; b</code> then <code>c</code>."
  )
  assert index_html.inline_html("one ` backtick & more") == "one ` backtick &amp; more"


def test_one_page_model_rendered_as_markdown_and_as_html(tmp_path):
  header = ["bandit", "estimator", "schedule", "k_eval", "final_max_at_k_mean"]
  rows = [["easy", "a<b", "1", 1, 0.5]]
  csv_files.write_csv(tmp_path / "bandit_training" / "results.csv", header, rows)
  failed = csv_files.shown_stage("lm", "FAILED (exit code 2; see lm/log.txt)", seconds=5.0)
  reused = "reused (ran 2026-01-01 10:00 UTC, 93 s)"  # Its outputs took 93 s when it ran.
  stages = [csv_files.shown_stage("bandit_training", reused, smoke=False, seconds=93.4), failed]
  page = page_lib.build_page(
    str(tmp_path), stages, skipped=["notebooks"], total_seconds=3.4, when="2026-01-02 03:04"
  )
  training, lm = page.sections
  (table,) = training.tables
  assert table.header == ("bandit", "estimator", "k_opt schedule", "max@1")
  assert table.rows == (("easy", "a<b", "1", "0.5"),)
  assert training.notes == () and training.figures == ()
  assert lm.tables == () and [note.kind for note in lm.notes] == ["failed", "smoke"]
  assert page.skipped == ("notebooks",)
  md, html = index_markdown.render(page), index_html.render(page)
  for text in (md, html):
    # This run's own 3 s, and the 93 s behind the results shown (not the failed stage's).
    assert (
      "on 2026-01-02 03:04 in 3 s; the results shown took 93 s when their stages ran. "
      "1 of 2 stages ran at SMOKE sizes"
    ) in text
  assert f"| [bandit_training](#bandit_training) | {reused} | full | 93 |" in md
  assert f"<td class='status-ok'>{reused}</td><td>full</td><td>93</td>" in html
  assert "| easy | a<b | 1 | 0.5 |" in md
  assert "<tr><td>easy</td><td>a&lt;b</td><td>1</td><td>0.5</td></tr>" in html
  assert "| notebooks | skipped | | | |" in md
  assert "<tr><td>notebooks</td><td>skipped</td>" in html
  # A table that could not be built is its title alone, in both renderings.
  note = tables.Table("(table unavailable: KeyError: 'method')")
  assert index_markdown.table(note) == "" and index_html.table(note) == ""


def test_html_page_lists_every_figure_in_its_contents_under_a_grid(tmp_path):
  for name in ("kl_gap.png", "win_rate_vs_kl.png"):
    (tmp_path / "best_of_n").mkdir(exist_ok=True)
    (tmp_path / "best_of_n" / name).write_bytes(b"\x89PNG " + name.encode())
  _, html_path = index_page.write_index(str(tmp_path), [csv_files.shown_stage("best_of_n")])
  page = open(html_path).read()
  toc = page[page.index("<nav") : page.index("</nav>")]
  main = page[page.index("<main>") : page.index("</main>")]
  for name in ("kl_gap.png", "win_rate_vs_kl.png"):
    anchor = f"fig-best-of-n-{name.replace('_', '-').replace('.', '-')}"
    assert f"href='#{anchor}'" in toc  # Contents down to each figure ...
    assert f"<figure id='{anchor}'>" in main  # ... landing on it, in the grid ...
    assert f"<div class='lightbox' id='zoom-{anchor}'>" in page  # ... enlarged on click.
    assert f"<a href='#zoom-{anchor}'" in main
  assert main.index("<div class='grid'>") < main.index("<figure")
  assert "<code>python -m experiments.reproduce</code>" in page


def test_a_failed_stage_shows_a_warning_and_none_of_its_partial_outputs(tmp_path):
  # A stage that failed after writing part of its results and one figure.
  header = ["bandit", "estimator", "schedule", "k_eval", "final_max_at_k_mean"]
  rows = [["easy", "grpo", "1", 1, 0.5]]
  csv_files.write_csv(tmp_path / "bandit_training" / "results.csv", header, rows)
  (tmp_path / "bandit_training" / "curves_easy.png").write_bytes(b"\x89PNG")
  status = "FAILED (exit code 1; see bandit_training/log.txt)"
  failed = csv_files.shown_stage("bandit_training", status, smoke=False)
  md_path, html_path = index_page.write_index(str(tmp_path), [failed])
  md, page = open(md_path).read(), open(html_path).read()
  assert f"> **Warning:** {status}: this stage's partial outputs are not shown." in md
  assert "<p class='note failed' role='note'><b>Warning:</b> FAILED (exit code 1;" in page
  for text in (md, page):
    assert "k_opt schedule" not in text and "curves_easy.png" not in text
  # The same files of a finished stage are shown.
  md_path, _ = index_page.write_index(str(tmp_path), [csv_files.shown_stage("bandit_training")])
  md = open(md_path).read()
  assert "| easy | grpo | 1 | 0.5 |" in md and "(bandit_training/curves_easy.png)" in md
  assert "partial outputs" not in md


def test_each_stage_shows_its_own_command_and_sizes(tmp_path):
  # best_of_n run now (full, seed 7) beside bandit_variance from an earlier smoke run.
  now = csv_files.shown_stage("best_of_n", seed=7, smoke=False)
  earlier = csv_files.shown_stage("bandit_variance", "from an earlier run", seed=0, smoke=True)
  md_path, html_path = index_page.write_index(str(tmp_path), [now, earlier])
  md, page = open(md_path).read(), open(html_path).read()
  sections = dict(s.split("\n", 1) for s in md.split("\n## ")[1:])
  command = (
    "`python -m experiments.best_of_n --workdir=best_of_n "
    "--config=experiments/best_of_n/configs/default.py --config.seed=7`"
  )
  assert command in sections["best_of_n"]
  assert "SMOKE" not in sections["best_of_n"]
  assert "configs/default.py:smoke --config.seed=0`" in sections["bandit_variance"]
  assert "> **Warning:** SMOKE sizes (`--smoke`)" in sections["bandit_variance"]
  assert "| [best_of_n](#best_of_n) | ok | full | 1 | 0 |" in md
  assert "| [bandit_variance](#bandit_variance) | from an earlier run | smoke | 1 | 0 |" in md
  assert "1 of 2 stages ran at SMOKE sizes" in md
  assert "<td>smoke</td>" in page and "<p class='note smoke' role='note'>" in page


def _notebooks_listing(folder, figures):
  """A finished notebooks stage in ``folder``: (file name, bytes, title) per figure."""
  folder.mkdir(parents=True, exist_ok=True)
  for name, data, _ in figures:
    (folder / name).write_bytes(data)
  rows = [["lm.ipynb", name, title, f"[lm.ipynb] {title}."] for name, _, title in figures]
  csv_files.write_csv(folder / "results.csv", ["notebook", "figure", "title", "caption"], rows)


def test_a_figure_equal_to_one_shown_above_is_named_not_repeated(tmp_path):
  # The LM notebook plots the LM stage's own results with the stage's plotting code: its
  # two figures were on the page twice, byte for byte.
  (tmp_path / "lm").mkdir()
  (tmp_path / "lm" / "pass_at_k.png").write_bytes(b"\x89PNG pass")
  (tmp_path / "lm" / "bins.png").write_bytes(b"\x89PNG bins")
  figures = [
    ("lm_01.png", b"\x89PNG pass", "pass@k vs k"),
    ("lm_02.png", b"\x89PNG other", "paired differences"),
    ("lm_03.png", b"\x89PNG bins", "bins"),
  ]
  _notebooks_listing(tmp_path / "notebooks", figures)
  stages = [csv_files.shown_stage("lm"), csv_files.shown_stage("notebooks")]
  lm, notebooks = page_lib.build_page(str(tmp_path), stages).sections
  assert [f.path for f in lm.figures] == ["lm/pass_at_k.png", "lm/bins.png"]
  assert [f.path for f in notebooks.figures] == ["notebooks/lm_02.png"]
  assert [f.title for f in notebooks.figures] == ["paired differences (lm.ipynb)"]
  (repeat,) = [note for note in notebooks.notes if note.kind == "repeat"]
  assert repeat.label == "Note"
  assert "`notebooks/lm_01.png` (= `lm/pass_at_k.png`)" in repeat.text
  assert "`notebooks/lm_03.png` (= `lm/bins.png`)" in repeat.text
  md_path, html_path = index_page.write_index(str(tmp_path), stages)
  md, html = open(md_path).read(), open(html_path).read()
  for text in (md, html):
    assert "(notebooks/lm_02.png)" in text or "'notebooks/lm_02.png'" in text
    assert "src='notebooks/lm_01.png'" not in text and "](notebooks/lm_01.png)" not in text


def test_the_tiny_lm_stage_says_what_it_cannot_show(tmp_path):
  # Both tiny RL runs ended below the base model, and the page said nothing.
  stages = [csv_files.shown_stage("lm"), csv_files.shown_stage("bandit_training")]
  lm, training = page_lib.build_page(str(tmp_path), stages).sections
  (scope,) = [note for note in lm.notes if note.kind == "scope"]
  assert "checks the LM pipeline" in scope.text and "docs/lm_study/DESIGN.md" in scope.text
  assert os.path.exists(os.path.join(REPO_ROOT, "docs", "lm_study", "DESIGN.md"))
  assert os.path.isdir(os.path.join(REPO_ROOT, "docs", "lm_study_8seed"))
  assert (
    "*Small-LM RL*" in scope.text
    and "## Small-LM RL" in open(os.path.join(REPO_ROOT, "README.md")).read()
  )
  assert not [note for note in training.notes if note.kind == "scope"]
  md = index_markdown.render(page_lib.build_page(str(tmp_path), stages))
  assert "> **Note:** This tiny run checks the LM pipeline" in md
  assert "> **Warning:** SMOKE sizes" in md


def test_an_older_notebook_listing_without_titles_names_each_figure(tmp_path):
  folder = tmp_path / "notebooks"
  folder.mkdir()
  (folder / "pkpo_01.png").write_bytes(b"\x89PNG 1")
  csv_files.write_csv(
    folder / "results.csv", ["notebook", "figure", "caption"], [["pkpo.ipynb", "pkpo_01.png", "c"]]
  )
  (section,) = page_lib.build_page(str(tmp_path), [csv_files.shown_stage("notebooks")]).sections
  assert [f.title for f in section.figures] == ["pkpo.ipynb, pkpo_01.png"]


def test_committed_study_figure_is_shown_in_its_stage_and_removed_with_its_source(tmp_path):
  repo, out = tmp_path / "repo", tmp_path / "out"
  ((source, dest),) = page_lib.COMMITTED_FIGURES["lm"]
  (repo / source).parent.mkdir(parents=True)
  (repo / source).write_bytes(b"\x89PNG committed")
  csv_files.write_csv(out / "lm" / "results.csv", ["stage", "method"], [["base", "base"]])
  md, _ = index_page.write_index(str(out), [csv_files.shown_stage("lm")], repo_root=str(repo))
  assert (out / dest).read_bytes() == b"\x89PNG committed"
  text = open(md).read()
  assert f"({dest})" in text and "committed, not re-run" in text
  # A copy whose source is gone goes with it.
  os.remove(repo / source)
  md, _ = index_page.write_index(str(out), [csv_files.shown_stage("lm")], repo_root=str(repo))
  assert not (out / dest).exists() and f"({dest})" not in open(md).read()
