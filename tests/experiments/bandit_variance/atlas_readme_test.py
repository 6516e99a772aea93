"""README's variance atlas block is the one generated from the committed atlas.csv."""

import csv
import json
import os

import pytest

from experiments import config_checks
from experiments.bandit_variance import atlas_table
from experiments.bandit_variance.configs import default

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
_DOCS = os.path.join(_ROOT, "docs", "variance_atlas")


def _rows():
  with open(os.path.join(_DOCS, "atlas.csv"), newline="") as f:
    return list(csv.DictReader(f))


def test_readme_holds_the_generated_block():
  with open(os.path.join(_ROOT, "README.md")) as f:
    readme = f.read()
  block = atlas_table.readme_block(_rows())
  assert block in readme, "run python -m experiments.bandit_variance.atlas_table"
  assert readme.count(atlas_table.BEGIN) == 1


def test_committed_atlas_is_the_default_configs():
  with open(os.path.join(_DOCS, "config.json")) as f:
    config = json.load(f)
  expected = default.get_config()
  # The committed config.json has the lists as the comma-separated strings list fields
  # were then ("atlas_ns": "8,16,32,64"); same_value reads such a string as its list.
  assert config["atlas_ns"] == "8,16,32,64"
  for field in ("atlas_bandits", "atlas_ns", "atlas_ks", "atlas_num_samples", "seed"):
    assert config_checks.same_value(config[field], expected[field]), field
  rows = _rows()
  assert {r["bandit"] for r in rows} == set(expected.atlas_bandits)
  assert {int(r["n"]) for r in rows} == set(expected.atlas_ns)
  # Every cell has its floor: the table's ratios are all defined.
  assert all(float(r["floor"]) > 0 for r in rows)


def test_replace_block_rewrites_only_the_block_and_refuses_a_readme_without_one():
  text = f"intro\n{atlas_table.BEGIN}\nold\n{atlas_table.END}\noutro\n"
  assert atlas_table.replace_block(text, "NEW") == "intro\nNEW\noutro\n"
  with pytest.raises(ValueError, match="variance-atlas block"):
    atlas_table.replace_block("no block here", "NEW")
