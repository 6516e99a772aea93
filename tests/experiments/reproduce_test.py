"""experiments.reproduce: the smoke run end to end, and the index page it writes."""

import csv
import json
import os
import subprocess
import sys

import nbformat

from experiments import report
from tests import REPO_ROOT

_ROOT = REPO_ROOT


def _pngs(out_dir):
  return sorted(
    os.path.relpath(os.path.join(d, f), out_dir).replace(os.sep, "/")
    for d, _, files in os.walk(out_dir)
    for f in files
    if f.endswith(".png")
  )


def test_smoke_run_writes_index_with_every_figure(tmp_path):
  out = tmp_path / "reproduce"
  env = dict(os.environ, JAX_PLATFORMS="cpu")
  proc = subprocess.run(
    [
      sys.executable,
      "-m",
      "experiments.reproduce",
      f"--out_dir={out}",
      "--smoke",
      "--seed=1",
      "--stages=best_of_n,bandit_variance,bandit_training",
    ],
    cwd=_ROOT,
    env=env,
    capture_output=True,
    text=True,
    timeout=300,
  )
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
    assert report.caption(png), png
  assert "SMOKE" in index_md
  assert (
    "| estimator | var n=4 | var n=8 | max abs bias_z |" in index_md
  )  # The PKPO variance table.
  assert "<table>" in index_html
  for stage in ("best_of_n", "bandit_variance", "bandit_training"):
    assert (out / stage / "results.csv").exists() and (out / stage / "log.txt").exists()
    assert "--seed=1" in (out / stage / "reproduce_command.txt").read_text()
  # Finished stages are reused on a second run.
  proc = subprocess.run(
    [
      sys.executable,
      "-m",
      "experiments.reproduce",
      f"--out_dir={out}",
      "--smoke",
      "--seed=1",
      "--stages=best_of_n",
    ],
    cwd=_ROOT,
    env=env,
    capture_output=True,
    text=True,
    timeout=120,
  )
  assert proc.returncode == 0 and "best_of_n: reused" in proc.stdout, proc.stdout


def test_stage_commands_and_lm_flag():
  full = {s.name: s for s in report.stages(seed=3, smoke=False)}
  assert set(full) == set(report.STAGE_NAMES)
  assert full["lm"].command("/w")[3:5] == [
    "--workdir=/w",
    "--config=experiments/lm/configs/tiny.py",
  ]
  assert "--config.seed=3" in full["lm"].command("/w")
  assert full["best_of_n"].command("/o")[3:] == ["--out_dir=/o", "--seed=3"]
  assert full["notebooks"].command("/o")[2:] == ["experiments.report", "notebooks", "/o"]


def test_index_tables_and_notebook_figures(tmp_path):
  # A fake finished LM stage and notebook stage.
  (tmp_path / "lm").mkdir()
  with open(tmp_path / "lm" / "results.csv", "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["stage", "method", "k_opt", "k_eval", "pass_at_k", "max_at_k"])
    for stage, method in (("sft", "sft"), ("rl", "max_at_k")):
      for k in (1, 2, 4):
        w.writerow([stage, method, 4, k, 0.1 * k, 0.2 * k])
  (tmp_path / "lm" / "pass_at_k.png").write_bytes(b"\x89PNG")
  nb_dir = tmp_path / "notebooks"
  nb_dir.mkdir()
  rows = []
  for path in report.notebook_paths():
    nb = nbformat.read(path, as_version=4)
    stem = os.path.splitext(os.path.basename(path))[0]
    rows += report.extract_figures(nb, stem, str(nb_dir))
  assert sum(r["notebook"] == "pkpo.ipynb" for r in rows) >= 4  # PKPO Figs. 1, 2, 4, 5.
  assert all(r["caption"].startswith(f"[{r['notebook'][:-6]}.ipynb] ") for r in rows)
  with open(nb_dir / "results.csv", "w", newline="") as f:
    writer = csv.DictWriter(f, fieldnames=["notebook", "figure", "caption"])
    writer.writeheader()
    writer.writerows(rows)
  stages = [s for s in report.stages(seed=0, smoke=True) if s.name in ("lm", "notebooks")]
  md, html_path = report.write_index(
    str(tmp_path), stages, {"lm": ("ok", 1.0), "notebooks": ("ok", 2.0)}
  )
  text = open(md).read()
  assert "| stage | method | k_opt | pass@1 | pass@2 | pass@4 | max@1 | max@2 | max@4 |" in text
  assert "(lm/pass_at_k.png)" in text
  for row in rows:
    assert f"(notebooks/{row['figure']})" in text
  assert os.path.exists(html_path)
