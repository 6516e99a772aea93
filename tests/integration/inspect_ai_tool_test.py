"""inspect-ai, installed and run afresh (tests/integration/eval_tools.py): ``inspect eval
--epochs 4``; the reader gives each sample's epochs, and inspect-ai's accuracy (the mean
over epochs, then over samples) is maxk's pass@1."""

import importlib.util
import os

import pytest

from docs.evaluate.real import make_real
from maxk._src import evaluate as evaluate_lib
from maxk._src import records
from tests.integration import eval_tools

pytestmark = pytest.mark.slow  # installs inspect-ai (README's second test step, `-m slow`)


def test_fresh_log_gives_each_samples_epochs_and_the_tools_accuracy(tmp_path):
  version = eval_tools.run_tool("inspect_ai", str(tmp_path))
  assert version == make_real.PINS["inspect_ai"][0].split("==")[1]
  log = os.path.join(tmp_path, "inspect_ai", "maxk_epochs.json")
  assert records.detect_format(log, "auto") == "inspect_ai"
  source = records.read_source(log)
  got = sorted((r["problem_id"], r["sample_id"]) for r in source.records)
  assert got == [(i, e) for i in range(1, 7) for e in range(1, 5)]
  # the committed log's solver is seeded by sample and epoch: the same outcomes
  committed = records.read_source(os.path.join(make_real.HERE, "inspect_ai", "maxk_epochs.json"))
  assert sorted(map(str, source.records)) == sorted(map(str, committed.records))
  evaluation = evaluate_lib.evaluate_sources([source], columns={}, metrics=["pass@k"], k=[1])
  (score,) = evaluation.tool_scores
  assert score.tool == f"inspect-ai {version}"
  assert evaluation.rows[0].mean == pytest.approx(score.value, abs=1e-6)
  eval_log = os.path.join(tmp_path, "inspect_ai", "maxk_epochs.eval")
  if importlib.util.find_spec("zstandard") is None:
    with pytest.raises(records.RecordError, match="needs the zstandard package"):
      records.read_source(eval_log)
  else:
    assert sorted(map(str, records.read_source(eval_log).records)) == sorted(
      map(str, source.records)
    )
