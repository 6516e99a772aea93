"""Tests for the readers of evaluation tools' files (maxk/_src/tool_formats.py).

Each reads the files in docs/evaluate/real/, written by the real tools
(docs/evaluate/real/make_real.py; tests/integration/eval_tools_test.py writes them
afresh), and checks: the records against the file read here independently, maxk's
numbers against maxk's array functions and brute force over subsets, the tool's own
aggregate against the tool's way of computing it, and malformed files naming the
file, the line and the field.
"""

import glob
import itertools
import json
import math
import os
import shutil

import numpy as np
import pytest

import maxk
from maxk._src import evaluate as evaluate_lib
from maxk._src import records
from tests import REPO_ROOT

REAL = os.path.join(REPO_ROOT, "docs", "evaluate", "real")
HUMAN_EVAL = os.path.join(REAL, "human_eval", "samples.jsonl_results.jsonl")


def _lm_eval(task):
  (path,) = glob.glob(os.path.join(REAL, "lm_eval", f"samples_{task}_*.jsonl"))
  return path


def _lines(path):
  with open(path, encoding="utf-8") as f:
    return [json.loads(line) for line in f if line.strip()]


def _pass_at_k_brute(outcomes, k):
  """The mean over k-subsets of 'some sample correct', in exact rationals' float."""
  subsets = list(itertools.combinations(outcomes, k))
  return sum(any(s) for s in subsets) / len(subsets)


def _evaluate(path, **kwargs):
  source = records.read_source(path)
  return evaluate_lib.evaluate_sources([source], columns={"sample_id": "sample_id"}, **kwargs)


def _row(evaluation, metric, k):
  (row,) = [r for r in evaluation.rows if r.metric == metric and r.k == k]
  return row


def test_real_files_record_their_tools_versions():
  with open(os.path.join(REAL, "tools.json"), encoding="utf-8") as f:
    versions = json.load(f)
  assert set(versions) == {"human_eval", "lm_eval", "inspect_ai", "lighteval", "evalscope"}
  assert all(isinstance(v, str) and v[0].isdigit() for v in versions.values())


# ----------------------------------------------------------------------------
# Detection.
# ----------------------------------------------------------------------------


def test_auto_detects_each_tool_and_plain_jsonl(tmp_path):
  assert records.detect_format(HUMAN_EVAL, "auto") == "human_eval"
  assert records.detect_format(_lm_eval("maxk_mc"), "auto") == "lm_eval"
  assert records.detect_format(os.path.join(REAL, "inspect_ai", "maxk_epochs.eval"), "auto") == (
    "inspect_ai"
  )
  assert records.detect_format(os.path.join(REAL, "inspect_ai", "maxk_epochs.json"), "auto") == (
    "inspect_ai"
  )
  plain = tmp_path / "r.jsonl"  # human-eval's fields beside problem_id: a plain file
  plain.write_text('{"problem_id": 1, "task_id": 1, "completion": "", "result": 1, "passed": 1}\n')
  assert records.detect_format(str(plain), "auto") == "jsonl"
  assert records.detect_format(HUMAN_EVAL, "jsonl") == "jsonl"


# ----------------------------------------------------------------------------
# human-eval.
# ----------------------------------------------------------------------------


def test_human_eval_records_are_the_files_lines_in_order():
  source = records.read_source(HUMAN_EVAL)
  lines = _lines(HUMAN_EVAL)
  assert source.format == "human_eval"
  assert [r["problem_id"] for r in source.records] == [x["task_id"] for x in lines]
  assert [r["correct"] for r in source.records] == [x["passed"] for x in lines]
  assert [r["correct"] for r in source.records] == [x["result"] == "passed" for x in lines]
  assert list(source.lines) == list(range(1, len(lines) + 1))


def test_human_eval_pass_at_k_is_maxks_brute_force_and_the_tools_own_print():
  evaluation = _evaluate(HUMAN_EVAL, metrics=["pass@k"])
  groups = {}
  for x in _lines(HUMAN_EVAL):
    groups.setdefault(x["task_id"], []).append(x["passed"])
  correct = np.array(list(groups.values()))
  with open(os.path.join(REAL, "human_eval", "tool.json"), encoding="utf-8") as f:
    printed = json.load(f)["pass_at_k"]  # what evaluate_functional_correctness printed
  assert evaluation.ks == (1, 2, 4)
  for k in evaluation.ks:
    row = _row(evaluation, "pass@k", k)
    direct = float(np.mean(maxk.pass_at_k(correct, k)))
    brute = float(np.mean([_pass_at_k_brute(c, k) for c in correct]))
    assert row.mean == pytest.approx(direct, abs=1e-6)
    assert row.mean == pytest.approx(brute, abs=1e-6)
    assert row.mean == pytest.approx(printed[f"pass@{k}"], abs=1e-6)


@pytest.mark.parametrize(
  "line, replace, message",
  [
    (4, ('"passed": false', '"passed": "no"'), "column 'passed': 'no' is not true/false"),
    (2, ('"task_id": "HumanEval/0", ', ""), "column 'task_id': missing"),
    (5, ('"passed": true}', '"passed": true'), "not valid JSON"),
  ],
)
def test_human_eval_malformed_line_names_file_line_and_field(tmp_path, line, replace, message):
  path = tmp_path / "samples.jsonl_results.jsonl"
  lines = open(HUMAN_EVAL, encoding="utf-8").read().splitlines()
  assert replace[0] in lines[line - 1]
  lines[line - 1] = lines[line - 1].replace(*replace)
  path.write_text("\n".join(lines) + "\n")
  with pytest.raises(records.RecordError) as info:
    records.read_source(str(path), format="human_eval")
  assert str(info.value).startswith(f"{path}:{line}: ")
  assert message in str(info.value)
  assert "\n" not in str(info.value)


# ----------------------------------------------------------------------------
# lm-evaluation-harness.
# ----------------------------------------------------------------------------


def _lm_eval_results():
  (path,) = glob.glob(os.path.join(REAL, "lm_eval", "results_*.json"))
  with open(path, encoding="utf-8") as f:
    return path, json.load(f)


def _mc_outcomes_here(line):
  """Each repeat's (correct, predicted choice), from the raw log-likelihoods, here."""
  lls = np.array([[float(pair[0]) for pair in request] for request in line["resps"]])  # [C, R]
  preds = np.argmax(lls, axis=0)
  return [(bool(p == int(line["target"])), str(p)) for p in preds]


def test_lm_eval_multiple_choice_recovers_every_repeat():
  path = _lm_eval("maxk_mc")
  source = records.read_source(path)
  lines = _lines(path)
  _, results = _lm_eval_results()
  repeats = results["configs"]["maxk_mc"]["repeats"]
  assert repeats == 4 and source.format == "lm_eval"
  assert len(source.records) == repeats * len(lines)
  for i, line in enumerate(lines):
    mine = source.records[repeats * i : repeats * (i + 1)]
    assert [r["problem_id"] for r in mine] == [line["doc_id"]] * repeats
    assert [r["sample_id"] for r in mine] == list(range(repeats))
    assert [(r["correct"], r["answer"]) for r in mine] == _mc_outcomes_here(line)
    assert float(mine[0]["correct"]) == line["acc"]  # lm-eval's own: the first repeat
    # take_first: the filtered responses are the first repeat's
    assert line["filtered_resps"] == [request[0] for request in line["resps"]]
  outcomes = {bool(r["correct"]) for r in source.records}
  assert outcomes == {True, False}


def test_lm_eval_aggregate_is_the_first_repeat_and_maxk_uses_all():
  path = _lm_eval("maxk_mc")
  results_path, results = _lm_eval_results()
  lines = _lines(path)
  first = np.array([line["acc"] for line in lines])
  tool = results["results"]["maxk_mc"]
  # lm-eval's aggregate, computed its way: the mean of the first repeat's acc, with its SE
  assert tool["acc,none"] == pytest.approx(first.mean())
  assert tool["acc_stderr,none"] == pytest.approx(first.std(ddof=1) / math.sqrt(len(first)))
  evaluation = _evaluate(path, metrics=["pass@k"])
  (score,) = evaluation.tool_scores
  assert (score.value, score.stderr) == (tool["acc,none"], tool["acc_stderr,none"])
  assert score.source == results_path and score.tool == "lm-eval 0.4.13"
  correct = np.array([[o[0] for o in _mc_outcomes_here(line)] for line in lines])
  for k in evaluation.ks:
    row = _row(evaluation, "pass@k", k)
    assert row.mean == pytest.approx(float(np.mean(maxk.pass_at_k(correct, k))), abs=1e-6)
    assert row.mean == pytest.approx(np.mean([_pass_at_k_brute(c, k) for c in correct]))
  table = evaluation.to_markdown()
  pass1 = _row(evaluation, "pass@k", 1)
  assert (
    f"| pass@1 | {tool['acc,none']:.4f} ± {tool['acc_stderr,none']:.4f} | lm-eval 0.4.13: acc,none"
    f" ({results_path}) | {pass1.mean:.4f} ± {pass1.stderr:.4f} |"
  ) in table
  assert "scores the first of 4 samples of each document" in table
  assert "unbiased for pass@1" in table


def test_lm_eval_generation_compares_each_repeat_with_the_target():
  path = _lm_eval("maxk_gen")
  source = records.read_source(path)
  lines = _lines(path)
  assert len(source.records) == 4 * len(lines)
  for i, line in enumerate(lines):
    mine = source.records[4 * i : 4 * (i + 1)]
    assert [r["answer"] for r in mine] == line["resps"][0]
    assert [r["correct"] for r in mine] == [a == line["target"] for a in line["resps"][0]]
    assert float(mine[0]["correct"]) == line["exact_match"]


def test_lm_eval_maj_at_k_votes_over_the_predicted_choices():
  path = _lm_eval("maxk_mc")
  evaluation = _evaluate(path, metrics=["maj@k"], k=[4])
  lines = _lines(path)
  answers = np.array([[int(o[1]) for o in _mc_outcomes_here(line)] for line in lines])
  correct = np.array([[o[0] for o in _mc_outcomes_here(line)] for line in lines])
  direct = float(np.mean(maxk.maj_at_k(answers, correct, 4)))
  assert _row(evaluation, "maj@k", 4).mean == pytest.approx(direct, abs=1e-6)


def _rewrite(tmp_path, path, index, edit):
  """A copy of an lm-eval samples file (and its results file) with line ``index`` edited."""
  for other in glob.glob(os.path.join(os.path.dirname(path), "results_*.json")):
    shutil.copy(other, tmp_path)
  lines = _lines(path)
  edit(lines[index])
  out = tmp_path / os.path.basename(path)
  out.write_text("".join(json.dumps(line) + "\n" for line in lines))
  return str(out)


def test_lm_eval_refuses_a_line_whose_metric_it_cannot_replay(tmp_path):
  def flip(line):
    line["acc"] = 1.0 - line["acc"]

  path = _rewrite(tmp_path, _lm_eval("maxk_mc"), 2, flip)
  with pytest.raises(records.RecordError, match=r"^.*:3: column 'acc': lm-eval wrote") as info:
    records.read_source(path)
  assert str(info.value).startswith(f"{path}:3: ")


def test_lm_eval_refuses_filtered_answers_it_cannot_see(tmp_path):
  def extract(line):
    line["filtered_resps"] = ["lo"]

  path = _rewrite(tmp_path, _lm_eval("maxk_gen"), 1, extract)
  with pytest.raises(records.RecordError) as info:
    records.read_source(path)
  assert str(info.value).startswith(f"{path}:2: column 'filtered_resps': the filter 'none'")


@pytest.mark.parametrize(
  "edit, message",
  [
    (lambda line: line.pop("resps"), ":4: column 'resps': missing"),
    (lambda line: line["resps"][1].pop(), ":4: column 'resps': the requests hold [3, 4]"),
    (lambda line: line.update(target="9"), ":4: column 'target': '9' is outside the"),
    (lambda line: line["resps"][0][2].__setitem__(0, "x"), ":4: column 'resps': 'x' is not a"),
  ],
)
def test_lm_eval_malformed_line_names_file_line_and_field(tmp_path, edit, message):
  path = _rewrite(tmp_path, _lm_eval("maxk_mc"), 3, edit)
  with pytest.raises(records.RecordError) as info:
    records.read_source(path)
  assert str(info.value).startswith(path + message)


# ----------------------------------------------------------------------------
# inspect-ai.
# ----------------------------------------------------------------------------

INSPECT_JSON = os.path.join(REAL, "inspect_ai", "maxk_epochs.json")
INSPECT_EVAL = os.path.join(REAL, "inspect_ai", "maxk_epochs.eval")


def test_inspect_ai_json_log_gives_each_epoch_as_a_sample():
  source = records.read_source(INSPECT_JSON)
  with open(INSPECT_JSON, encoding="utf-8") as f:
    log = json.load(f)
  assert log["eval"]["config"]["epochs"] == 4
  here = sorted(
    (s["id"], s["epoch"], s["scores"]["exact_letter"]["value"] == "C", s["output"]["completion"])
    for s in log["samples"]
  )
  mine = sorted(
    (r["problem_id"], r["sample_id"], r["correct"], r["answer"]) for r in source.records
  )
  assert mine == here and len(mine) == 6 * 4


def test_inspect_ai_accuracy_is_maxks_pass_at_1():
  evaluation = _evaluate(INSPECT_JSON, metrics=["pass@k"])
  with open(INSPECT_JSON, encoding="utf-8") as f:
    log = json.load(f)
  (score,) = evaluation.tool_scores
  (tool,) = log["results"]["scores"]
  assert score.value == tool["metrics"]["accuracy"]["value"]
  assert score.stderr == tool["metrics"]["stderr"]["value"]
  assert _row(evaluation, "pass@k", 1).mean == pytest.approx(score.value, abs=1e-6)
  assert _row(evaluation, "pass@k", 1).stderr == pytest.approx(score.stderr, abs=1e-6)
  groups = {}
  for s in log["samples"]:
    groups.setdefault(s["id"], []).append(s["scores"]["exact_letter"]["value"] == "C")
  for k in evaluation.ks:
    brute = np.mean([_pass_at_k_brute(c, k) for c in groups.values()])
    assert _row(evaluation, "pass@k", k).mean == pytest.approx(brute, abs=1e-6)


def test_inspect_ai_eval_log_reads_as_its_json_log_or_names_zstandard(monkeypatch):
  try:
    import zstandard  # noqa: F401
  except ImportError:
    with pytest.raises(records.RecordError, match="needs the zstandard package"):
      records.read_source(INSPECT_EVAL)
    return
  eval_log = records.read_source(INSPECT_EVAL)
  json_log = records.read_source(INSPECT_JSON)
  key = lambda r: (r["problem_id"], r["sample_id"])  # noqa: E731
  assert sorted(eval_log.records, key=key) == sorted(json_log.records, key=key)
  assert eval_log.tool_scores[0].value == json_log.tool_scores[0].value


def test_inspect_ai_malformed_sample_names_it(tmp_path):
  with open(INSPECT_JSON, encoding="utf-8") as f:
    log = json.load(f)
  log["samples"][5]["scores"]["exact_letter"]["value"] = 0.5
  path = tmp_path / "log.json"
  path.write_text(json.dumps(log))
  with pytest.raises(records.RecordError) as info:
    records.read_source(str(path))
  assert str(info.value) == (
    f"{path}:samples[5]: column 'scores.value': 0.5 is not C/I, 0/1 or true/false"
  )


def test_command_reads_a_tool_file_and_reports_a_malformed_one_in_one_line(tmp_path, capsys):
  from maxk import evaluate as cli  # pylint: disable=g-import-not-at-top

  written = tmp_path / "t.json"
  assert cli.main([_lm_eval("maxk_mc"), "--metrics=pass@k", "--k=1", f"--json={written}"]) == 0
  out = capsys.readouterr().out
  assert "The tool's own number beside maxk's" in out and "lm-eval 0.4.13: acc,none" in out
  (score,) = json.loads(written.read_text())["tool_scores"]
  assert score["tool"] == "lm-eval 0.4.13" and score["name"] == "acc,none" and score["k"] == 1
  bad = tmp_path / "samples.jsonl_results.jsonl"
  bad.write_text('{"task_id": "t", "completion": "", "result": "passed", "passed": 1}\n')
  assert cli.main([str(bad), "--format=human_eval"]) == 2
  err = capsys.readouterr().err.strip().splitlines()
  assert err == [f"python -m maxk.evaluate: error: {bad}:1: column 'passed': 1 is not true/false"]


def test_lm_eval_refuses_exact_match_options_it_cannot_replay(tmp_path):
  path = _rewrite(tmp_path, _lm_eval("maxk_gen"), 0, lambda line: None)
  (results,) = glob.glob(str(tmp_path / "results_*.json"))
  with open(results, encoding="utf-8") as f:
    data = json.load(f)
  data["configs"]["maxk_gen"]["metric_list"][0]["ignore_case"] = True
  with open(results, "w", encoding="utf-8") as f:
    json.dump(data, f)
  with pytest.raises(records.RecordError) as info:
    records.read_source(path)
  assert str(info.value).startswith(f"{path}: column 'exact_match': the task sets ignore_case")


# ----------------------------------------------------------------------------
# lighteval.
# ----------------------------------------------------------------------------

(LIGHTEVAL,) = glob.glob(os.path.join(REAL, "lighteval", "details", "*", "*", "*.parquet"))
(LIGHTEVAL_RESULTS,) = glob.glob(os.path.join(REAL, "lighteval", "results", "*", "*.json"))


def _lighteval_rows():
  """The details' rows, read here with pyarrow (skips where it is not installed)."""
  pq = pytest.importorskip("pyarrow.parquet")
  return pq.read_table(LIGHTEVAL).to_pylist()


def test_lighteval_detected_by_extension_or_names_pyarrow():
  assert records.detect_format(LIGHTEVAL, "auto") == "lighteval"
  try:
    import pyarrow  # noqa: F401
  except ImportError:
    with pytest.raises(records.RecordError, match="needs the pyarrow package"):
      records.read_source(LIGHTEVAL)


def test_lighteval_gives_every_sample_of_each_document():
  rows = _lighteval_rows()
  source = records.read_source(LIGHTEVAL)
  assert source.format == "lighteval"
  here = [
    (row["doc"]["id"], i, text == row["doc"]["choices"][row["doc"]["gold_index"]], text)
    for row in rows
    for i, text in enumerate(row["model_response"]["text"])
  ]
  mine = [(r["problem_id"], r["sample_id"], r["correct"], r["answer"]) for r in source.records]
  assert mine == here and len(mine) == 6 * 4
  assert {r["correct"] for r in source.records} == {True, False}
  assert list(source.lines) == [line for line in range(1, 7) for _ in range(4)]


def test_lighteval_pass_at_k_and_maj_at_k_are_maxks_and_the_tools_own():
  rows = _lighteval_rows()
  evaluation = _evaluate(LIGHTEVAL, metrics=["pass@k", "maj@k"])
  correct = np.array(
    [[t == r["doc"]["choices"][0] for t in r["model_response"]["text"]] for r in rows]
  )
  for k in evaluation.ks:
    row = _row(evaluation, "pass@k", k)
    assert row.mean == pytest.approx(float(np.mean(maxk.pass_at_k(correct, k))), abs=1e-6)
    assert row.mean == pytest.approx(np.mean([_pass_at_k_brute(c, k) for c in correct]))
  with open(LIGHTEVAL_RESULTS, encoding="utf-8") as f:
    results = json.load(f)["results"]["maxk_gen|0"]
  scores = {score.name: score for score in evaluation.tool_scores}
  assert set(scores) == {"avg@n:n=4", "pass@k:k=1&n=4", "maj@n:n=4"}
  for name, score in scores.items():
    assert (score.value, score.stderr) == (results[name], results[f"{name}_stderr"])
  # lighteval's avg@n and pass@k (n = 4, every sample) are maxk's pass@1 here
  pass1 = _row(evaluation, "pass@k", 1)
  assert pass1.mean == pytest.approx(scores["avg@n:n=4"].value, abs=1e-6)
  assert pass1.mean == pytest.approx(scores["pass@k:k=1&n=4"].value, abs=1e-6)
  assert pass1.stderr == pytest.approx(scores["avg@n:n=4"].stderr, abs=1e-6)
  answers = [[t.strip() for t in r["model_response"]["text"]] for r in rows]
  ids = np.array([[a.index(x) for x in a] for a in answers])  # first index of each answer
  direct = float(np.mean(maxk.maj_at_k(ids, correct, 4)))
  assert _row(evaluation, "maj@k", 4).mean == pytest.approx(direct, abs=1e-6)
  assert scores["maj@n:n=4"].metric == "maj@k" and scores["maj@n:n=4"].k == 4
  assert "lighteval: pass@k:k=1&n=4" in evaluation.to_markdown()


def _rewrite_lighteval(tmp_path, index, edit):
  """A copy of the details file with row ``index`` edited (a dict, as pyarrow reads it)."""
  pa = pytest.importorskip("pyarrow")
  pq = pytest.importorskip("pyarrow.parquet")
  table = pq.read_table(LIGHTEVAL)
  rows = table.to_pylist()
  edit(rows[index])
  out = tmp_path / os.path.basename(LIGHTEVAL)
  pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), str(out))
  return str(out)


@pytest.mark.parametrize(
  "edit, message",
  [
    (
      lambda row: row["metric"].update({"pass@k:k=1&n=4": 0.0}),
      ":3: column 'metric.pass@k:k=1&n=4': lighteval wrote 0, but",
    ),
    (
      lambda row: row["metric"].update({"avg@n:n=4": 0.125}),
      ":3: column 'metric.avg@n:n=4': lighteval wrote 0.125, but",
    ),
    (lambda row: row["doc"].update(id=None), ":3: column 'doc.id': None is not a document id"),
    (
      lambda row: row["doc"].update(gold_index=5),
      ":3: column 'doc.gold_index': 5 is not an index into the choices",
    ),
    (
      lambda row: row["model_response"].update(text=[]),
      ":3: column 'model_response.text': not a non-empty list of texts",
    ),
    (
      lambda row: row["metric"].update(
        {"avg@n:n=4": None, "pass@k:k=1&n=4": None, "maj@n:n=4": None}
      ),
      ":3: column 'metric': none of avg@n, pass@k or maj@n on the row",
    ),
  ],
)
def test_lighteval_malformed_row_names_file_row_and_field(tmp_path, edit, message):
  path = _rewrite_lighteval(tmp_path, 2, edit)
  with pytest.raises(records.RecordError) as info:
    records.read_source(path)
  assert str(info.value).startswith(path + message)
  assert "\n" not in str(info.value)


# ----------------------------------------------------------------------------
# evalscope.
# ----------------------------------------------------------------------------

EVALSCOPE = os.path.join(REAL, "evalscope", "reviews", "mock", "general_mcq_default.jsonl")
EVALSCOPE_REPORT = os.path.join(REAL, "evalscope", "reports", "mock", "general_mcq.json")


def test_evalscope_reviews_are_detected_and_give_each_repeat():
  assert records.detect_format(EVALSCOPE, "auto") == "evalscope"
  source = records.read_source(EVALSCOPE)
  lines = _lines(EVALSCOPE)
  here = [
    (
      x["sample_score"]["group_id"],
      x["sample_score"]["generation_index"],
      x["sample_score"]["score"]["value"]["accuracy"] == 1.0,
      x["sample_score"]["score"]["extracted_prediction"],
    )
    for x in lines
  ]
  mine = [(r["problem_id"], r["sample_id"], r["correct"], r["answer"]) for r in source.records]
  assert mine == here and len(mine) == 6 * 4
  # evalscope's accuracy is its extracted letter against the target
  assert [r["correct"] for r in source.records] == [
    x["sample_score"]["score"]["extracted_prediction"] in x["target"] for x in lines
  ]
  assert {r["correct"] for r in source.records} == {True, False}


def test_evalscope_accuracy_is_maxks_pass_at_1_and_pass_at_k_is_brute_force():
  evaluation = _evaluate(EVALSCOPE, metrics=["pass@k", "maj@k"])
  groups = {}
  for x in _lines(EVALSCOPE):
    groups.setdefault(x["sample_score"]["group_id"], []).append(
      x["sample_score"]["score"]["value"]["accuracy"] == 1.0
    )
  correct = np.array(list(groups.values()))
  for k in evaluation.ks:
    row = _row(evaluation, "pass@k", k)
    assert row.mean == pytest.approx(float(np.mean(maxk.pass_at_k(correct, k))), abs=1e-6)
    assert row.mean == pytest.approx(np.mean([_pass_at_k_brute(c, k) for c in correct]))
  with open(EVALSCOPE_REPORT, encoding="utf-8") as f:
    (metric,) = json.load(f)["metrics"]
  (score,) = evaluation.tool_scores
  assert score.tool == "evalscope" and score.value == metric["score"]
  assert _row(evaluation, "pass@k", 1).mean == pytest.approx(score.value, abs=5e-5)  # 4 decimals


@pytest.mark.parametrize(
  "edit, message",
  [
    (
      lambda x: x["sample_score"]["score"]["value"].update(accuracy=0.5),
      ":3: column 'sample_score.score.value.accuracy': 0.5 is not 0/1",
    ),
    (lambda x: x.pop("sample_score"), ":3: column 'sample_score': missing"),
    (
      lambda x: x["sample_score"].update(group_id=None),
      ":3: column 'sample_score.group_id': None is not a problem id",
    ),
  ],
)
def test_evalscope_malformed_line_names_file_line_and_field(tmp_path, edit, message):
  lines = _lines(EVALSCOPE)
  edit(lines[2])
  path = tmp_path / "general_mcq_default.jsonl"
  path.write_text("".join(json.dumps(x) + "\n" for x in lines))
  with pytest.raises(records.RecordError) as info:
    records.read_source(str(path), format="evalscope")
  assert str(info.value).startswith(f"{path}{message}")
