"""evalscope, installed and run afresh (tests/integration/eval_tools.py): general_mcq with
``repeats=4`` and a mock model answering from a seeded list; the reader gives every repeat
of the fresh reviews, and evalscope's accuracy (its report) is maxk's pass@1."""

import os

import pytest

from docs.evaluate.real import make_real
from maxk._src import evaluate as evaluate_lib
from maxk._src import records
from tests.integration import eval_tools

pytestmark = pytest.mark.slow  # installs evalscope (README's second test step, `-m slow`)


def test_fresh_reviews_give_every_repeat_and_the_tools_accuracy(tmp_path):
  version = eval_tools.run_tool("evalscope", str(tmp_path))
  assert version == make_real.PINS["evalscope"][0].split("==")[1]
  reviews = os.path.join("evalscope", "reviews", "mock", "general_mcq_default.jsonl")
  fresh = os.path.join(tmp_path, reviews)
  assert records.detect_format(fresh, "auto") == "evalscope"
  source = records.read_source(fresh)
  committed = records.read_source(os.path.join(make_real.HERE, reviews))
  # the mock model's answers are seeded: the same records
  assert list(source.records) == list(committed.records)
  got = [(r["problem_id"], r["sample_id"]) for r in source.records]
  assert got == [(p, s) for p in range(len(make_real.EVALSCOPE_QUESTIONS)) for s in range(4)]
  evaluation = evaluate_lib.evaluate_sources([source], columns={}, metrics=["pass@k"], k=[1])
  (score,) = evaluation.tool_scores
  assert evaluation.rows[0].mean == pytest.approx(score.value, abs=5e-5)
