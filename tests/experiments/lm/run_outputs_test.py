"""Tests of experiments.lm.run_outputs: the report's CSV files and the LM's figures."""

import csv

import numpy as np
import pytest

from experiments.lm import plotting
from experiments.lm import run_outputs
from tests.experiments.lm import report_rows_test

# The first columns of results.csv, in order, as the outputs' contract lists them.
CONTRACT_COLUMNS = report_rows_test.CONTRACT_COLUMNS
BASE, RUN = report_rows_test.BASE, report_rows_test.RUN


def test_write_reports_and_figures(tmp_path):
  prompts, keys = ["a=", "b=", "c="], ["ka", "kb", "kc"]
  tables = run_outputs.write_reports(
    str(tmp_path), [BASE, RUN], np.array([0, 1, 2]), seed=3, prompts=prompts, keys=keys
  )
  for name in run_outputs.FILES:
    with open(tmp_path / name) as f:
      rows = list(csv.DictReader(f))
    assert len(rows) == len(tables[name]) > 0, name
    assert all(r["seed"] == "3" for r in rows), name
    assert "run" not in rows[0], name  # launch.local adds its own run column when gathering.
  with open(tmp_path / "prompts.csv") as f:
    prompt_rows = list(csv.DictReader(f))
  assert len(prompt_rows) == 2 * 3
  row = prompt_rows[1]  # Base, prompt 1.
  assert (row["problem_key"], row["correct"], row["base_bin"]) == ("kb", "1", "medium")
  assert float(row["reward_mean"]) == pytest.approx(0.625) and row["rewards"] == "1 0.25"
  for name, draw in (
    ("pass_at_k.png", lambda p: plotting.plot_pass_at_k(tables["results.csv"], p)),
    ("bins.png", lambda p: plotting.plot_bins(tables["bins.csv"], tables["unsolved.csv"], p)),
  ):
    path = str(tmp_path / name)
    assert draw(path) == path
    with open(path, "rb") as f:
      header = f.read(24)
    width = int.from_bytes(header[16:20], "big")
    assert header[:8] == b"\x89PNG\r\n\x1a\n" and width >= 1000, (name, width)
