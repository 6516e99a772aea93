"""Time to evaluate 10^6 samples with ``python -m maxk.evaluate``, end to end and by stage.

Run as ``python -m benchmarks.evaluate_time`` (``--problems=10000 --samples=100`` by
default: 10^6 records).

Writes a JSONL file of ``problems`` x ``samples`` records, one line per sample with
``problem_id`` (text), ``correct`` (true/false) and ``answer`` (one of 8 letters;
the first is the right one), shuffled so that a problem's samples are spread through
the file as a tool writes them, then measures:

  command   ``python -m maxk.evaluate FILE`` in a fresh process at its default
            metrics (every metric these columns allow: pass@k, pass^k, G-Pass@k,
            mG-Pass@k, maj@k) and default k (1, 2, 4, ..., 64, 100): the wall
            time a user waits, Python's start and JAX's compilation included;
  read      :func:`records.read_source` (parsing the file into records);
  group     :func:`records.group_records` (checking the records, padding the
            groups into [P, n] arrays);
  evaluate  :func:`evaluate.evaluate_sources` (grouping included) and the table,
            in the same process after ``read``: grouping, the estimators and their
            variances, the intervals.

Each is the median over ``--repeats`` runs (the in-process stages in one process;
its first run pays the compilation, so the command's time is the one to quote).
"""

from __future__ import annotations

from collections.abc import Sequence
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

from absl import flags
import numpy as np

from experiments import command_line


def _define_flags() -> dict[str, flags.FlagHolder[Any]]:
  """The binary's flags, defined only when it runs (a test process imports this module
  beside other benchmarks that define ``repeats``)."""
  return {
    "problems": flags.DEFINE_integer("problems", 10_000, "Problems."),
    "samples": flags.DEFINE_integer("samples", 100, "Samples per problem."),
    "repeats": flags.DEFINE_integer("repeats", 3, "Runs per stage (median reported)."),
    "file": flags.DEFINE_string("file", "", "Write the records here (default: a temporary file)."),
  }


LETTERS = "ABCDEFGH"


def write_records(path: str, problems: int, samples: int, seed: int = 0) -> None:
  """``problems`` x ``samples`` JSONL records (module docstring), in a shuffled order.

  Each problem has its own rate of the right answer 'A', drawn uniformly; a wrong
  sample answers one of the 7 other letters uniformly.
  """
  rng = np.random.default_rng(seed)
  rates = rng.random(problems)
  right = rng.random((problems, samples)) < rates[:, None]  # [P, n]
  wrong = rng.integers(1, len(LETTERS), (problems, samples))  # [P, n]
  answers = np.where(right, 0, wrong)
  order = rng.permutation(problems * samples)
  with open(path, "w", encoding="utf-8") as f:
    for chunk in np.array_split(order, max(1, len(order) // 100_000)):
      lines = []
      for i in chunk.tolist():
        p, s = divmod(i, samples)
        record = {"problem_id": f"p{p:06d}", "correct": bool(right[p, s])}
        record["answer"] = LETTERS[answers[p, s]]
        lines.append(json.dumps(record))
      f.write("\n".join(lines) + "\n")


def time_command(path: str) -> float:
  """Wall time (s) of ``python -m maxk.evaluate path`` in a fresh process."""
  env = {**os.environ, "JAX_PLATFORMS": os.environ.get("JAX_PLATFORMS", "cpu")}
  start = time.perf_counter()
  subprocess.run(
    [sys.executable, "-m", "maxk.evaluate", path],
    check=True,
    capture_output=True,
    text=True,
    env=env,
  )
  return time.perf_counter() - start


def time_stages(path: str) -> tuple[float, float, float]:
  """(read, group, evaluate + table) seconds of one run, in this process."""
  from maxk._src import evaluate as evaluate_lib  # pylint: disable=g-import-not-at-top
  from maxk._src import records  # pylint: disable=g-import-not-at-top

  start = time.perf_counter()
  source = records.read_source(path)
  read = time.perf_counter() - start
  start = time.perf_counter()
  records.group_records([source], {})
  group = time.perf_counter() - start
  start = time.perf_counter()
  evaluate_lib.evaluate_sources([source], columns={}).to_markdown()
  return read, group, time.perf_counter() - start


def main(argv: Sequence[str], flag_values: dict[str, flags.FlagHolder[Any]]) -> None:
  del argv
  problems, samples = flag_values["problems"].value, flag_values["samples"].value
  repeats = flag_values["repeats"].value
  with tempfile.TemporaryDirectory() as tmp:
    path = flag_values["file"].value or os.path.join(tmp, "records.jsonl")
    start = time.perf_counter()
    write_records(path, problems, samples)
    size = os.path.getsize(path) / 2**20
    print(
      f"{problems} problems x {samples} samples = {problems * samples} records"
      f" ({size:.0f} MiB JSONL, written in {time.perf_counter() - start:.1f} s);"
      f" median of {repeats} runs\n"
    )
    command = statistics.median(time_command(path) for _ in range(repeats))
    stages = [time_stages(path) for _ in range(repeats)]
    read, group, evaluate = (statistics.median(column) for column in zip(*stages))
    first = stages[0][2]
    total = problems * samples
    print("| stage | seconds | microseconds per record |")
    print("|:--|--:|--:|")
    for name, seconds in (
      ("command (python -m maxk.evaluate, fresh process)", command),
      ("read (records.read_source)", read),
      ("group (records.group_records)", group),
      ("evaluate + table (grouping included)", evaluate),
      ("evaluate + table, first run (compiles)", first),
    ):
      print(f"| {name} | {seconds:.2f} | {seconds / total * 1e6:.2f} |", flush=True)


if __name__ == "__main__":
  _FLAG_VALUES = _define_flags()
  command_line.run(lambda argv: main(argv, _FLAG_VALUES))
