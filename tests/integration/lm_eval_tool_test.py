"""lm-evaluation-harness, installed and run afresh (tests/integration/eval_tools.py):
``lm_eval --model dummy --log_samples`` with ``repeats: 4``; the reader recovers every
repeat of the fresh files (its first repeat equal to lm-eval's own metric, which the
reader checks on each line) and reads lm-eval's aggregate beside them."""

import glob
import os

import pytest

from docs.evaluate.real import make_real
from maxk._src import evaluate as evaluate_lib
from maxk._src import records
from tests.integration import eval_tools

pytestmark = pytest.mark.slow  # installs lm-eval (README's second test step, `-m slow`)


@pytest.fixture(scope="module")
def fresh(tmp_path_factory):
  out = tmp_path_factory.mktemp("lm_eval")
  version = eval_tools.run_tool("lm_eval", str(out))
  return version, os.path.join(out, "lm_eval")


def test_version_is_the_pinned_one(fresh):
  assert fresh[0] == make_real.PINS["lm_eval"][0].split("==")[1]


@pytest.mark.parametrize(
  "task, docs", [("maxk_mc", len(make_real.LM_EVAL_QUESTIONS)), ("maxk_gen", 3)]
)
def test_fresh_samples_give_every_repeat_and_the_tools_aggregate(fresh, task, docs):
  (path,) = glob.glob(os.path.join(fresh[1], f"samples_{task}_*.jsonl"))
  assert records.detect_format(path, "auto") == "lm_eval"
  source = records.read_source(path)
  assert [r["problem_id"] for r in source.records] == [d for d in range(docs) for _ in range(4)]
  assert [r["sample_id"] for r in source.records] == list(range(4)) * docs
  evaluation = evaluate_lib.evaluate_sources([source], columns={}, metrics=["pass@k"])
  assert evaluation.ks == (1, 2, 4)
  (score,) = evaluation.tool_scores
  assert score.tool == f"lm-eval {fresh[0]}" and score.metric == "pass@k" and score.k == 1
  first = [r["correct"] for r in source.records if r["sample_id"] == 0]
  assert score.value == pytest.approx(sum(first) / len(first))
  assert "The tool's own number beside maxk's" in evaluation.to_markdown()
