"""lighteval, installed and run afresh (tests/integration/eval_tools.py): ``lighteval
custom --save-details`` with 4 samples per question; the reader gives every sample of the
fresh details (replaying lighteval's avg@n, pass@k and maj@n on each row), and
lighteval's aggregates from its results file are maxk's pass@1 and maj@4."""

import glob
import importlib.util
import os

import pytest

from docs.evaluate.real import make_real
from maxk._src import evaluate as evaluate_lib
from maxk._src import records
from tests.integration import eval_tools

pytestmark = pytest.mark.slow  # installs lighteval (README's second test step, `-m slow`)


def test_fresh_details_give_every_sample_and_the_tools_aggregates(tmp_path):
  version = eval_tools.run_tool("lighteval", str(tmp_path))
  assert version == make_real.PINS["lighteval"][0].split("==")[1]
  (path,) = glob.glob(os.path.join(tmp_path, "lighteval", "details", "*", "*", "*.parquet"))
  assert records.detect_format(path, "auto") == "lighteval"
  if importlib.util.find_spec("pyarrow") is None:
    with pytest.raises(records.RecordError, match="needs the pyarrow package"):
      records.read_source(path)
    return
  source = records.read_source(path)
  (committed,) = glob.glob(os.path.join(make_real.HERE, "lighteval", "details", "*", "*", "*"))
  # the model's samples are seeded by the question: the same records
  assert sorted(map(str, source.records)) == sorted(
    map(str, records.read_source(committed).records)
  )
  assert len(source.records) == 4 * len(make_real.LIGHTEVAL_QUESTIONS)
  evaluation = evaluate_lib.evaluate_sources(
    [source], columns={}, metrics=["pass@k", "maj@k"], k=[1, 4]
  )
  scores = {score.name: score for score in evaluation.tool_scores}
  assert set(scores) == {"avg@n:n=4", "pass@k:k=1&n=4", "maj@n:n=4"}
  rows = {(row.metric, row.k): row for row in evaluation.rows}
  for score in scores.values():
    assert rows[score.metric, score.k].mean == pytest.approx(score.value, abs=1e-6)
