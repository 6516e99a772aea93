"""The index page's tables: number formatting and damaged results."""

import math

import pytest

from experiments.reproduce import index_markdown
from experiments.reproduce import index_page
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
  md, _ = index_page.write_index(str(tmp_path), [csv_files.shown_stage("bandit_variance")])
  assert "| none | inf | 0.5 | inf |" in open(md).read()


def test_malformed_results_become_a_note_not_a_crash(tmp_path):
  csv_files.write_csv(tmp_path / "lm" / "results.csv", ["stage", "k_eval"], [["base", 1]])
  md, _ = index_page.write_index(str(tmp_path), [csv_files.shown_stage("lm")])
  assert "(table unavailable: KeyError: 'method')" in open(md).read()


def test_bandit_variance_tables_per_objective_and_variance_check(tmp_path):
  header = ["policy", "objective", "estimator", "n", "k", "variance", "bias_z"]
  rows = [
    ["categorical", "max", "none", 4, 2, 1.5, 0.1],
    ["categorical", "min", "loo", 4, 2, 0.25, -2.0],
    ["categorical", "maxrl", "maxrl", 4, 2, 0.125, 9.0],
  ]
  csv_files.write_csv(tmp_path / "bandit_variance" / "results.csv", header, rows)
  check_header = ["policy", "statistic", "n", "k", "empirical_variance"]
  check_header += ["empirical_variance_stderr", "mean_estimated_variance"]
  check_header += ["mean_estimated_variance_stderr", "z"]
  check = [["gaussian", "pass_at_k", 8, 4, 0.0166, 0.004, 0.0175, 0.0033, 0.26]]
  csv_files.write_csv(tmp_path / "bandit_variance" / "variance_check.csv", check_header, check)
  found = tables.stage_tables(str(tmp_path), "bandit_variance")
  titles = [t.title for t in found]
  found_md = [index_markdown.table(t) for t in found]
  assert len(found) == 4, titles  # max@k (categorical), min, maxrl, the check; no top_m rows.
  assert "of min@k" in titles[1] and "MaxRL" in titles[2] and "maxk.max_at_k_variance" in titles[3]
  assert "| none | 1.5 | 0.1 |" in found_md[0]  # Only the max@k row in the max@k table.
  assert "| loo | 0.25 | 2 |" in found_md[1] and "loo" not in found_md[2]
  assert "| gaussian | pass_at_k | 8 | 4 | 0.0166 | 0.004 | 0.0175 | 0.0033 | 0.26 |" in found_md[3]


def _markdown(table):
  """(title, Markdown table) of a computed table."""
  assert table is not None
  return table.title, index_markdown.table(table)


def test_lm_table_shows_intervals_and_seeds():
  base = {"stage": "base", "method": "base", "k_opt": "", "max_at_k": "0.5"}
  rows = [
    {**base, "k_eval": "1", "seed": "0", "pass_at_k": "0.25", "pass_at_k_lo": "0.125"}
    | {"pass_at_k_hi": "0.375", "max_at_k_lo": "nan", "max_at_k_hi": "nan"},
    {**base, "k_eval": "1", "seed": "1", "pass_at_k": "0.5"},  # An older file: no bounds.
  ]
  title, table = _markdown(tables.lm_table(rows))
  assert "| stage | method | k_opt | seed | pass@1 | max@1 |" in table
  assert "| base | base |  | 0 | 0.25 [0.125, 0.375] | 0.5 |" in table
  assert "| base | base |  | 1 | 0.5 | 0.5 |" in table
  title, table = _markdown(tables.lm_table(rows[:1]))
  assert "seed 0" in title and "| seed |" not in table
