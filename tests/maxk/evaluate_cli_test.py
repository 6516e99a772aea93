"""Tests for the command line ``python -m maxk.evaluate`` (maxk/evaluate.py).

In process through ``main(argv)``, except one test through a subprocess (slow).
Malformed input exits with status 2 and one line on stderr naming the file, the line
and the column, and writes nothing.
"""

import csv
import importlib.util
import json
import os
import subprocess
import sys

import pytest
import tomllib

from docs.evaluate import make_example
import maxk
from maxk import evaluate as cli
from tests import REPO_ROOT
from tests import WAIT_S

GOOD = (
  '{"problem_id": 1, "sample_id": 0, "correct": true, "reward": 1.0}\n'
  '{"problem_id": 1, "sample_id": 1, "correct": false, "reward": 0.5}\n'
  "\n"
  '{"problem_id": 2, "sample_id": 0, "correct": false, "reward": 0.25}\n'
  '{"problem_id": 2, "sample_id": 1, "correct": false, "reward": 0.0}\n'
  '{"problem_id": 3, "sample_id": 0, "correct": true, "reward": 1.0}\n'
  '{"problem_id": 3, "sample_id": 1, "correct": true, "reward": 1.0}\n'
)
GOOD_CSV = (
  "problem_id,sample_id,correct,reward\n"
  "1,0,true,1.0\n1,1,false,0.5\n2,0,false,0.25\n2,1,false,0\n3,0,true,1\n3,1,true,1\n"
)
FAST = ["--metrics=pass@k,max@k"]  # the metrics whose programs compile quickly

# (name, files {name: text}, flags, what stderr holds)
MALFORMED = [
  (
    "missing_column",
    {"r.jsonl": '{"problem_id": 1, "correct": 1}\n{"problem_id": 1}\n'},
    [],
    "r.jsonl:2: column 'correct': missing",
  ),
  (
    "named_column_missing",
    {"r.jsonl": GOOD},
    ["--reward=gain"],
    "r.jsonl:1: column 'gain': missing",
  ),
  (
    "mixed_types",
    {"r.jsonl": '{"problem_id": 1, "correct": 1}\n{"problem_id": "1", "correct": 0}\n'},
    [],
    "r.jsonl:2: column 'problem_id': '1' is a string, but line 1 holds a number",
  ),
  (
    "mixed_types_csv",
    {"r.csv": "problem_id,correct\na,true\na,0\n"},
    [],
    "r.csv:3: column 'correct': '0' is a number, but line 2 holds a boolean",
  ),
  (
    "correct_not_0_1",
    {"r.jsonl": '{"problem_id": 1, "correct": 1}\n\n{"problem_id": 1, "correct": 0.5}\n'},
    [],
    "r.jsonl:3: column 'correct': 0.5 is not 0/1 or true/false",
  ),
  (
    "correct_not_0_1_csv",
    {"r.csv": 'problem_id,correct\n"a\nb",2\n'},
    [],
    "r.csv:2: column 'correct': '2' is not 0/1 or true/false",
  ),
  (
    "duplicate_sample_id",
    {"r.jsonl": GOOD.replace('"problem_id": 1, "sample_id": 1', '"problem_id": 1, "sample_id": 0')},
    ["--sample_id=sample_id"],
    "r.jsonl:2: column 'sample_id': 0 repeats the sample id of line 1 in problem 1",
  ),
  ("empty_file", {"r.jsonl": ""}, [], "r.jsonl: no records (the file is empty)"),
  ("blank_lines_only", {"r.jsonl": "\n  \n"}, [], "r.jsonl: no records"),
  ("header_only_csv", {"r.csv": "problem_id,correct\n"}, [], "r.csv: no records"),
  (
    "bad_json",
    {"r.jsonl": '{"problem_id": 1, "correct": 1}\n{"problem_id": 1, "correct": }\n'},
    [],
    "r.jsonl:2: not valid JSON",
  ),
  ("not_an_object", {"r.jsonl": "[1, 2]\n"}, [], "r.jsonl:1: a record must be a JSON object"),
  (
    "csv_fields",
    {"r.csv": "problem_id,correct\na,1\na,1,2\n"},
    [],
    "r.csv:3: 3 fields, but the header has 2",
  ),
  (
    "non_finite_reward",
    {"r.jsonl": '{"problem_id": 1, "reward": 1}\n{"problem_id": 1, "reward": NaN}\n'},
    [],
    "r.jsonl:2: column 'reward': nan is not a finite number",
  ),
  (
    "answer_correct_and_incorrect",
    {
      "r.jsonl": '{"problem_id": 1, "answer": "7", "correct": 1}\n'
      '{"problem_id": 1, "answer": "8", "correct": 0}\n'
      '{"problem_id": 1, "answer": "7", "correct": 0}\n'
    },
    [],
    "r.jsonl:3: column 'correct': answer '7' of problem 1 is incorrect here but correct at line 1",
  ),
  ("unknown_extension", {"r.txt": GOOD}, [], "r.txt: cannot tell the format"),
  (
    "second_file",
    {"a.jsonl": GOOD, "b.jsonl": '{"problem_id": 1, "correct": true, "reward": "high"}\n'},
    [],
    "b.jsonl:1: column 'reward': 'high' is a string, but a.jsonl:1 holds a number",
  ),
  ("k_above_every_problem", {"r.jsonl": GOOD}, ["--k=1,3"], "k=3 exceeds"),
  ("metric_without_its_column", {"r.jsonl": GOOD}, ["--metrics=maj@k"], "maj@k needs the answer"),
]


@pytest.mark.parametrize(
  ("files", "flags", "message"), [case[1:] for case in MALFORMED], ids=[c[0] for c in MALFORMED]
)
def test_malformed_input_exits_2_with_one_line_and_writes_nothing(
  tmp_path, monkeypatch, capsys, files, flags, message
):
  monkeypatch.chdir(tmp_path)
  for name, text in files.items():
    with open(name, "w", encoding="utf-8") as f:
      f.write(text)
  os.mkdir("out")
  outputs = ["--csv=out/t.csv", "--json=out/t.json"]
  if importlib.util.find_spec("matplotlib") is not None:
    # Without matplotlib --figure is refused before any file is read (tested below).
    outputs.append("--figure=out/t.png")
  code = cli.main([*files, *flags, *outputs])
  captured = capsys.readouterr()
  assert code == 2
  assert captured.out == ""
  assert captured.err.count("\n") == 1 and captured.err.startswith(
    "python -m maxk.evaluate: error:"
  )
  assert message in captured.err, captured.err
  assert os.listdir("out") == []


def test_a_missing_file_or_output_folder_exits_2(tmp_path, capsys):
  assert cli.main([str(tmp_path / "nope.jsonl")]) == 2
  assert "nope.jsonl: cannot read the file" in capsys.readouterr().err
  (tmp_path / "r.jsonl").write_text(GOOD)
  assert cli.main([str(tmp_path / "r.jsonl"), f"--csv={tmp_path / 'no' / 't.csv'}"]) == 2
  assert "does not exist" in capsys.readouterr().err


def test_figure_without_matplotlib_exits_2_before_reading(tmp_path, monkeypatch, capsys):
  find_spec = cli.importlib.util.find_spec
  monkeypatch.setattr(
    cli.importlib.util, "find_spec", lambda name: None if name == "matplotlib" else find_spec(name)
  )
  (tmp_path / "r.jsonl").write_text(GOOD)
  assert cli.main([str(tmp_path / "r.jsonl"), f"--figure={tmp_path / 't.png'}"]) == 2
  assert "--figure needs matplotlib" in capsys.readouterr().err
  assert not (tmp_path / "t.png").exists()


def test_table_csv_and_json_hold_the_library_rows(tmp_path, monkeypatch, capsys):
  monkeypatch.chdir(tmp_path)
  (tmp_path / "r.jsonl").write_text(GOOD)
  (tmp_path / "r.csv").write_text(GOOD_CSV)
  assert cli.main(["r.jsonl", *FAST, "--k=1,2", "--csv=t.csv", "--json=t.json"]) == 0
  table = capsys.readouterr().out
  records = [json.loads(line) for line in GOOD.splitlines() if line]
  want = maxk.evaluate_records(records, k=[1, 2], metrics=["pass@k", "max@k"])
  assert table == want.to_markdown().replace("from records.", "from r.jsonl.") + "\n"
  assert "3 problems, 2 samples each (6 samples) from r.jsonl." in table
  with open("t.csv", newline="") as f:
    rows = list(csv.DictReader(f))
  with open("t.json") as f:
    data = json.load(f)
  assert (
    [r["label"] for r in rows] == [r.label for r in want.rows] == [r["label"] for r in data["rows"]]
  )
  for row, line, entry in zip(want.rows, rows, data["rows"]):
    assert float(line["mean"]) == row.mean == entry["mean"]
    assert float(line["hi"]) == row.hi == entry["hi"]
    assert (line["bayes_lo"] == "") == (row.bayes_lo is None) == (entry["bayes_lo"] is None)
  assert data["problems"] == [{"id": str(i), "samples": 2} for i in (1, 2, 3)]
  # The same records as CSV: the same rows (the ids are text there).
  assert cli.main(["r.csv", *FAST, "--k=1,2"]) == 0
  assert capsys.readouterr().out == table.replace("from r.jsonl.", "from r.csv.")


def test_figure_is_written(tmp_path, capsys):
  pytest.importorskip("matplotlib")
  (tmp_path / "r.jsonl").write_text(GOOD)
  path = tmp_path / "curves.png"
  assert cli.main([str(tmp_path / "r.jsonl"), *FAST, f"--figure={path}"]) == 0
  with open(path, "rb") as f:
    assert f.read(8) == b"\x89PNG\r\n\x1a\n"


def test_figure_has_a_band_per_curve_and_an_error_bar_for_a_single_k():
  pytest.importorskip("matplotlib")
  from matplotlib.container import ErrorbarContainer  # pylint: disable=g-import-not-at-top

  evaluation = maxk.evaluate_records(
    [json.loads(line) for line in GOOD.splitlines() if line],
    metrics=["pass@k"],
    k=(1, 2),
    extrapolate=8,
  )
  fig = cli.curves_figure(evaluation)
  curve, extrapolated = [ax for ax in fig.axes if ax.get_visible()]
  assert curve.get_title() == "pass@k" and len(curve.collections) == 2  # t band, Bayes@N
  assert not any(isinstance(c, ErrorbarContainer) for c in curve.containers)
  assert extrapolated.get_title() == "pass@k (Beta-binomial)"
  (bar,) = [c for c in extrapolated.containers if isinstance(c, ErrorbarContainer)]
  (row,) = [r for r in evaluation.rows if r.k == 8]
  (segment,) = bar.lines[2][0].get_segments()
  assert segment[:, 1].tolist() == pytest.approx([row.lo, row.hi])


def test_console_script_runs_main():
  with open(os.path.join(REPO_ROOT, "pyproject.toml"), "rb") as f:
    project = tomllib.load(f)["project"]
  assert project["scripts"]["maxk-evaluate"] == "maxk.evaluate:main"
  assert project["optional-dependencies"]["figure"] == ["matplotlib"]


def test_example_file_is_what_its_script_writes():
  with open(make_example.PATH, encoding="utf-8") as f:
    assert f.read() == make_example.text()


@pytest.mark.slow  # a binary in a subprocess (README's second test step)
def test_module_runs_as_a_command(tmp_path):
  (tmp_path / "r.jsonl").write_text(GOOD)
  env = {**os.environ, "PYTHONPATH": REPO_ROOT, "JAX_PLATFORMS": "cpu"}  # this checkout
  run = lambda *args: subprocess.run(
    [sys.executable, "-m", "maxk.evaluate", *args],
    cwd=tmp_path,
    env=env,
    capture_output=True,
    text=True,
    timeout=WAIT_S,
  )
  ok = run("r.jsonl", *FAST)
  assert ok.returncode == 0, ok.stderr
  assert ok.stdout.startswith("3 problems, 2 samples each") and "| pass@2 | 3 |" in ok.stdout
  (tmp_path / "bad.jsonl").write_text('{"problem_id": 1, "correct": 3}\n')
  bad = run("bad.jsonl", "--json=t.json")
  assert bad.returncode == 2 and bad.stdout == ""
  assert bad.stderr.splitlines() == [
    "python -m maxk.evaluate: error: bad.jsonl:1: column 'correct': 3 is not 0/1 or true/false"
  ]
  assert not (tmp_path / "t.json").exists()
