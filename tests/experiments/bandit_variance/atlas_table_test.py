"""experiments.bandit_variance.atlas_table on small hand-made atlases: which estimators
the table keeps, the Monte Carlo mark, ties, large ratios and the README block."""

import pytest

from experiments.bandit_variance import atlas_table


def _row(estimator, n, variance, *, floor=1.0, unbiased="always", biased=False, method="exact"):
  return {
    "bandit": "hard",
    "n": str(n),
    "k": "4",
    "estimator": estimator,
    "unbiased": unbiased,
    "method": method,
    "variance": str(variance),
    "variance_to_floor": str(variance / floor),
    "floor": str(floor),
    "constant_floor": str(2 * floor),
    "biased": str(biased),
    "direction_error": "0.25" if biased else "0.0",
  }


def _atlas():
  return [
    _row("a", 8, 3.0),
    _row("b", 8, 2.0),
    _row("c", 8, 2.0 * (1 + 1e-12)),  # Ties b within rounding.
    _row("a", 16, 1.5),
    _row("b", 16, 4.0e14),
    _row("c", 16, 2.5),
    _row("grpo", 8, 0.5, unbiased="never", biased=True),
    _row("grpo", 16, 0.4, unbiased="never", biased=True),
    _row("mc", 8, 1.25, method="monte_carlo"),
  ]


def test_table_keeps_the_unbiased_estimators_and_marks_monte_carlo():
  header, body = atlas_table.cells(_atlas())
  assert header == ["bandit", "k", "estimator", "n = 8", "n = 16"]
  names = [row[2] for row in body]
  assert names == ["a", "b", "c", "mc", atlas_table.CONSTANT]
  assert body[names.index("mc")][3:] == ["1.250*", ""]
  assert body[names.index(atlas_table.CONSTANT)][3:] == ["2.000", "2.000"]
  assert body[names.index("a")][3:] == ["3.000", "1.500"]


def test_summary_shares_ties_and_writes_large_ratios_readably():
  lines = atlas_table.summary(_atlas())
  by_name = {line.split("`")[1]: line for line in lines if line.startswith("`")}
  # n = 8: b and c tie for the least; n = 16: a alone. "mc" is Monte Carlo: not ranked.
  assert "in 1 of 2" in by_name["a"]
  assert "in 1 of 2" in by_name["b"] and "in 1 of 2" in by_name["c"]
  assert "2.00 to 4e+14" in by_name["b"]
  assert "not ranked" in by_name["mc"]
  assert "biased for max@k in 2 of 2 cells" in by_name["grpo"]
  assert "up to 25%" in by_name["grpo"]


def test_readme_block_round_trip():
  block = atlas_table.readme_block(_atlas())
  assert block.startswith(atlas_table.BEGIN) and block.endswith(atlas_table.END)
  text = f"before\n{atlas_table.BEGIN}\nold\n{atlas_table.END}\nafter\n"
  assert atlas_table.replace_block(text, block) == f"before\n{block}\nafter\n"
  with pytest.raises(ValueError, match="variance-atlas block"):
    atlas_table.replace_block("no markers", block)
