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
