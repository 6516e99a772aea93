"""The index page: the LM table and the notebooks' figures with their captions."""

import csv
import os

import nbformat

from experiments.reproduce import index_page
from experiments.reproduce import stages as stages_lib
from notebooks import execute
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
    writer = csv.DictWriter(f, fieldnames=["notebook", "figure", "caption"])
    writer.writeheader()
    writer.writerows(rows)
  stages = [s for s in stages_lib.stages(seed=0, smoke=True) if s.name in ("lm", "notebooks")]
  md, html_path = index_page.write_index(
    str(tmp_path), stages, {"lm": ("ok", 1.0), "notebooks": ("ok", 2.0)}
  )
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
  assert index_page.inline_html("Run `a < b` then `c`.") == (
    "Run <code>a &lt; b</code> then <code>c</code>."
  )
  assert index_page.inline_html("one ` backtick & more") == "one ` backtick &amp; more"


def test_html_page_lists_every_figure_in_its_contents_under_a_grid(tmp_path):
  stage = next(s for s in stages_lib.stages(seed=0, smoke=True) if s.name == "best_of_n")
  for name in ("kl_gap.png", "win_rate_vs_kl.png"):
    (tmp_path / "best_of_n").mkdir(exist_ok=True)
    (tmp_path / "best_of_n" / name).write_bytes(b"\x89PNG")
  _, html_path = index_page.write_index(str(tmp_path), [stage], {"best_of_n": ("ok", 3.0)})
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
