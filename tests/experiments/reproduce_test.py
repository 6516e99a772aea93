"""experiments.reproduce: the smoke run end to end, its flags, and the index page it writes."""

import csv
import json
import math
import os
import subprocess
import sys

import nbformat
import pytest

from experiments.reproduce import index_page
from experiments.reproduce import stages as stages_lib
from experiments.reproduce import tables
from notebooks import execute
from tests import REPO_ROOT


def _pngs(out_dir):
  return sorted(
    os.path.relpath(os.path.join(d, f), out_dir).replace(os.sep, "/")
    for d, _, files in os.walk(out_dir)
    for f in files
    if f.endswith(".png")
  )


def _reproduce(*args, timeout=300):
  return subprocess.run(
    [sys.executable, "-m", "experiments.reproduce", *args],
    cwd=REPO_ROOT,
    env=dict(os.environ, JAX_PLATFORMS="cpu"),
    capture_output=True,
    text=True,
    timeout=timeout,
  )


def _write_csv(path, header, rows):
  path.parent.mkdir(parents=True, exist_ok=True)
  with open(path, "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(header)
    w.writerows(rows)


def test_smoke_run_writes_index_with_every_figure(tmp_path):
  out = tmp_path / "reproduce"
  stages = "--stages=best_of_n,bandit_variance,bandit_training"
  proc = _reproduce(f"--out_dir={out}", "--smoke", "--seed=1", stages)
  assert proc.returncode == 0, proc.stdout + proc.stderr
  # Progress display: one line per stage start and end, with timings.
  assert "[1/3] best_of_n" in proc.stdout and "[3/3] bandit_training: ok in" in proc.stdout
  assert json.loads((out / "config.json").read_text())["seed"] == 1
  index_md = (out / "index.md").read_text()
  index_html = (out / "index.html").read_text()
  pngs = _pngs(out)
  assert len(pngs) >= 8
  for png in pngs:  # Every figure is shown, with its one-line explanation.
    assert f"({png})" in index_md and f"src='{png}'" in index_html
    assert index_page.caption(png), png
  assert "SMOKE" in index_md
  assert "| estimator | var n=4 | var n=8 | max abs bias_z |" in index_md  # PKPO Fig. 4.
  assert "| bandit | estimator | k_opt schedule | max@1 | max@4 |" in index_md
  assert "table unavailable" not in index_md
  assert "<table>" in index_html
  for stage in ("best_of_n", "bandit_variance", "bandit_training"):
    assert (out / stage / "results.csv").exists() and (out / stage / "log.txt").exists()
    assert "--seed=1" in (out / stage / "reproduce_command.txt").read_text()
  # Finished stages are reused on a second run.
  proc = _reproduce(f"--out_dir={out}", "--smoke", "--seed=1", "--stages=best_of_n", timeout=120)
  assert proc.returncode == 0 and "best_of_n: reused" in proc.stdout, proc.stdout


@pytest.mark.parametrize(
  "flag", ["--stages=best_of_n,nope", "--stage_timeout=0", "--stage_timeout=-5"]
)
def test_bad_flag_exits_nonzero_naming_it(flag, tmp_path):
  proc = _reproduce(f"--out_dir={tmp_path / 'out'}", flag, timeout=60)
  assert proc.returncode != 0
  assert flag.split("=")[0] in proc.stderr
  assert not (tmp_path / "out").exists()


def test_stage_commands():
  full = {s.name: s for s in stages_lib.stages(seed=3, smoke=False)}
  assert tuple(full) == stages_lib.STAGE_NAMES
  assert full["lm"].command("/w") == [
    sys.executable,
    "-m",
    "experiments.lm.main",
    "--workdir=/w",
    "--config=experiments/lm/configs/tiny.py",
    "--config.seed=3",
  ]
  assert full["best_of_n"].arguments("/o") == ["--out_dir=/o", "--seed=3"]
  assert full["notebooks"].command("/o")[1:] == ["-m", "notebooks", "--out_dir=/o"]


@pytest.mark.parametrize(
  "value, text",
  [
    (float("inf"), "inf"),
    (-math.inf, "-inf"),
    ("inf", "inf"),
    (float("nan"), "nan"),
    (3.0, "3"),
    ("2.5e7", "2.5e+07"),
    (0.123456, "0.1235"),
    ("grpo", "grpo"),
    ("", ""),
  ],
)
def test_format_number(value, text):
  assert tables.format_number(value) == text


def test_infinite_cells_do_not_stop_the_index(tmp_path):
  # Regression: an infinite variance raised OverflowError and no page was written.
  header = ["policy", "estimator", "n", "k", "variance", "bias_z"]
  rows = [
    ["gaussian", "none", 4, 2, "inf", "nan"],
    ["gaussian", "none", 8, 2, 0.5, "-inf"],
  ]
  _write_csv(tmp_path / "bandit_variance" / "results.csv", header, rows)
  stage = next(s for s in stages_lib.stages(seed=0, smoke=True) if s.name == "bandit_variance")
  md, _ = index_page.write_index(str(tmp_path), [stage], {"bandit_variance": ("ok", 1.0)})
  assert "| none | inf | 0.5 | inf |" in open(md).read()


def test_malformed_results_become_a_note_not_a_crash(tmp_path):
  _write_csv(tmp_path / "lm" / "results.csv", ["stage", "k_eval"], [["base", 1]])
  stage = next(s for s in stages_lib.stages(seed=0, smoke=True) if s.name == "lm")
  md, _ = index_page.write_index(str(tmp_path), [stage], {"lm": ("ok", 1.0)})
  assert "(table unavailable: KeyError: 'method')" in open(md).read()


def test_index_tables_and_notebook_figures(tmp_path):
  # A finished LM stage with the labels the LM binary writes: the model after SFT is
  # stage "base" (method "base", no k_opt); RL rows are stage "rl".
  lm_rows = []
  for stage, method, k_opt in (("base", "base", ""), ("rl", "max_at_k/loo_minus_one", 4)):
    for k in (1, 2, 4):
      lm_rows.append([stage, method, k_opt, k, 0.1 * k, 0.2 * k])
  header = ["stage", "method", "k_opt", "k_eval", "pass_at_k", "max_at_k"]
  _write_csv(tmp_path / "lm" / "results.csv", header, lm_rows)
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
