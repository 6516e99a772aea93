"""The index page's tables: number formatting and damaged results."""

import math

import pytest

from experiments.reproduce import index_page
from experiments.reproduce import stages as stages_lib
from experiments.reproduce import tables
from tests.experiments.reproduce import csv_files


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
  csv_files.write_csv(tmp_path / "bandit_variance" / "results.csv", header, rows)
  stage = next(s for s in stages_lib.stages(seed=0, smoke=True) if s.name == "bandit_variance")
  md, _ = index_page.write_index(str(tmp_path), [stage], {"bandit_variance": ("ok", 1.0)})
  assert "| none | inf | 0.5 | inf |" in open(md).read()


def test_malformed_results_become_a_note_not_a_crash(tmp_path):
  csv_files.write_csv(tmp_path / "lm" / "results.csv", ["stage", "k_eval"], [["base", 1]])
  stage = next(s for s in stages_lib.stages(seed=0, smoke=True) if s.name == "lm")
  md, _ = index_page.write_index(str(tmp_path), [stage], {"lm": ("ok", 1.0)})
  assert "(table unavailable: KeyError: 'method')" in open(md).read()
