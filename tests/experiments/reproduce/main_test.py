"""python -m experiments.reproduce: the smoke run end to end, and its flags."""

import json
import os

import pytest

from experiments.reproduce import index_page
from tests import binaries


def _pngs(out_dir):
  return sorted(
    os.path.relpath(os.path.join(d, f), out_dir).replace(os.sep, "/")
    for d, _, files in os.walk(out_dir)
    for f in files
    if f.endswith(".png")
  )


def test_smoke_run_writes_index_with_every_figure(tmp_path):
  out = tmp_path / "reproduce"
  stages = "--stages=best_of_n,bandit_variance,bandit_training"
  proc = binaries.run(
    "experiments.reproduce", f"--out_dir={out}", "--smoke", "--seed=1", stages, check=False
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
    assert index_page.caption(png), png
  assert "SMOKE" in index_md
  assert "| estimator | var n=4 | var n=8 | max abs bias_z |" in index_md  # PKPO Fig. 4.
  assert "Gradient variance of min@k of each estimator" in index_md  # Rank objectives.
  assert "| policy | statistic | n | k | empirical var | s.e. | mean estimated var |" in index_md
  assert "| bandit | estimator | k_opt schedule | max@1 | max@4 |" in index_md
  assert "table unavailable" not in index_md
  assert "<table>" in index_html
  for stage in ("best_of_n", "bandit_variance", "bandit_training"):
    assert (out / stage / "results.csv").exists() and (out / stage / "log.txt").exists()
    assert "--seed=1" in (out / stage / "reproduce_command.txt").read_text()
  # Finished stages are reused on a second run.
  proc = binaries.run(
    "experiments.reproduce",
    f"--out_dir={out}",
    "--smoke",
    "--seed=1",
    "--stages=best_of_n",
    check=False,
  )
  assert proc.returncode == 0 and "best_of_n: reused" in proc.stdout, proc.stdout


@pytest.mark.parametrize(
  "flag", ["--stages=best_of_n,nope", "--stage_timeout=0", "--stage_timeout=-5"]
)
def test_bad_flag_exits_nonzero_naming_it(flag, tmp_path):
  proc = binaries.run("experiments.reproduce", f"--out_dir={tmp_path / 'out'}", flag, check=False)
  assert proc.returncode != 0
  assert flag.split("=")[0] in proc.stderr
  assert not (tmp_path / "out").exists()
