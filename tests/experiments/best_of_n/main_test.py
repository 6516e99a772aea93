"""The ``python -m experiments.best_of_n`` binary end to end (subprocesses, tiny sizes)."""

import csv
import json
import os
import subprocess
import sys

import pytest

from experiments.best_of_n import study
from tests import REPO_ROOT
from tests import WAIT_S

_TINY = [
  "--config.n_max=20",
  "--config.num_n=4",
  "--config.uniform_sizes=5",
  "--config.cherry_size=6",
  "--config.cherry_eps=0.01",
  "--config.dirichlet_alphas=0.5",
  "--config.dirichlet_size=8",
  "--config.num_mc_draws=3",
  "--config.num_thresholds=3",
  "--config.rr_max_tries=2",
  "--config.float64=False",
  "--config.proxy_arms=20",
  "--config.proxy_sigmas=0,1",
  "--config.proxy_n_max=8",
  "--config.proxy_num_n=3",
  "--config.proxy_mc_draws=5",
  "--config.frontier_n_max=6",
  "--config.frontier_num_points=3",
  "--config.frontier_lams=1",
]


def _run(*args):
  env = dict(os.environ, JAX_PLATFORMS="cpu")
  return subprocess.run(
    [sys.executable, "-m", "experiments.best_of_n", *args],
    cwd=REPO_ROOT,
    env=env,
    capture_output=True,
    text=True,
    timeout=WAIT_S,
  )


@pytest.mark.slow  # Integration: the binary end to end (README's second test step).
def test_binary_writes_every_output(tmp_path):
  proc = _run(f"--workdir={tmp_path}", "--config.seed=1", *_TINY)
  assert proc.returncode == 0, proc.stderr[-3000:]
  names = {
    "results.csv",
    "config.json",
    "summary.json",
    "kl_vs_n_uniform.png",
    "kl_vs_n_other.png",
    "kl_gap.png",
    "win_rate_vs_kl.png",
    "proxy.csv",
    "proxy_peaks.csv",
    "proxy_overoptimisation.png",
    "frontier.csv",
    "frontier_best_n.json",
    "win_rate_frontier.png",
  }
  assert names <= set(os.listdir(tmp_path))
  with open(tmp_path / "results.csv") as f:
    rows = list(csv.DictReader(f))
  assert tuple(rows[0]) == study.COLUMNS
  refs = ["uniform_L5", "cherry_top", "cherry_staircase", "dirichlet_a0.5"]
  # n grid [1, 3, 7, 20] per reference; 3 thresholds x try limits {none, 2}.
  assert len(rows) == 4 * 4 + 2 * 3 * 4
  assert sorted({r["reference"] for r in rows}) == sorted(refs)
  assert {r["max_tries"] for r in rows if r["method"] == "rewind_repeat"} == {"none", "2"}
  with open(tmp_path / "config.json") as f:
    config = json.load(f)
  assert config["num_mc_draws"] == 3 and config["uniform_sizes"] == [5]
  assert config["float64"] is False and config["workdir"] == str(tmp_path)
  with open(tmp_path / "summary.json") as f:
    summary = json.load(f)
  assert list(summary) == sorted(refs) and summary == json.loads(proc.stdout)
  with open(tmp_path / "proxy.csv") as f:
    proxy_rows = list(csv.DictReader(f))
  assert len(proxy_rows) == 2 * 2 * 3  # Error families x sigmas x n grid [1, 3, 8].
  assert config["proxy_sigmas"] == [0, 1]


@pytest.mark.parametrize(
  "flag, line",
  [
    ("--config.num_mc_draws=0", "config.num_mc_draws=0 must be an integer >= 1."),
    (
      "--config.uniform_sizes=10,0",
      "config.uniform_sizes=(10, 0) has 0: must be a list of integers >= 1.",
    ),
  ],
)
def test_bad_config_value_exits_1_with_one_line_naming_it(tmp_path, flag, line):
  workdir = tmp_path / "out"
  proc = _run(f"--workdir={workdir}", flag)
  assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
  assert proc.stderr.strip().splitlines()[-1] == f"experiments.best_of_n: {line}", proc.stderr
  assert not workdir.exists()  # Nothing written.


@pytest.mark.parametrize("flag", ["--workdir", "--out_dir"])  # --out_dir: its old name.
def test_bad_workdir_exits_with_one_line_naming_it(tmp_path, flag):
  proc = _run(f"{flag}=README.md/sub")  # Below a file (in the repository).
  assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
  readme = os.path.join(REPO_ROOT, "README.md")
  assert proc.stderr.strip().splitlines() == [
    f"experiments.best_of_n: flag --workdir=README.md/sub: cannot be created: {readme} is not "
    "a folder."
  ]
