"""Tests of experiments.lm_study.commits: the study summary's checks of its runs' code
(run.json), provenance.csv and the README's Provenance table, on the synthetic study
folders of study_summary_test.py."""

import csv
import json
import os

import pytest

from experiments.lm.configs import study_8seed as study_config
from experiments.lm_study import commits
from experiments.lm_study import figures
from experiments.lm_study import files
from experiments.lm_study import loading
from experiments.lm_study import summarize as summary_lib
from tests.experiments.lm_study import summary_test as synthetic

A = "a" * 40  # The study's commit.
B = "b" * 7 + "c" * 33  # Another commit.
DESIGN = "d" * 40
DESIGNED = "2026-01-01T00:00:00+00:00"  # The design note's commit time.


@pytest.fixture(autouse=True)
def _a_new_study(monkeypatch):
  """The synthetic study's seeds, and a study config that requires provenance."""
  monkeypatch.setattr(study_config, "SEEDS", synthetic.SEEDS)
  monkeypatch.setattr(study_config, "REQUIRE_PROVENANCE", True)
  monkeypatch.setattr(study_config, "EQUIVALENT_COMMITS", ())


def _session(start, end, *, commit=A, dirty=False, design=DESIGN, designed=DESIGNED, kind="cpu"):
  return {
    "started_utc": start,
    "ended_utc": end,
    "status": "finished" if end else "killed",
    "commit": commit,
    "dirty": dirty,
    "provenance_error": None if commit else "git rev-parse HEAD: not a git repository",
    "device_kind": kind,
    "study_design": "docs/DESIGN.md",
    "design_commit": design,
    "design_committed_utc": designed if design else None,
  }


def _write_sessions(study, name, *sessions):
  with open(os.path.join(study, name, "run.json"), "w") as f:
    json.dump({"sessions": list(sessions)}, f)


def _hour(day, hour):
  return f"2026-02-{day:02d}T{hour:02d}:00:00+00:00"


@pytest.fixture(name="study")
def _study(tmp_path):
  """The synthetic study, each run one session at commit A (seed s: 2 + s hours on day
  s + 1, from 10:00 UTC), except countdown seed 1: a killed session, then a finished
  one of 30 minutes on another device."""
  root = synthetic._make_study(str(tmp_path / "study"))
  for task in synthetic.TASKS:
    for seed in synthetic.SEEDS:
      _write_sessions(
        root, f"{task}_seed{seed}", _session(_hour(seed + 1, 10), _hour(seed + 1, 12 + seed))
      )
  _write_sessions(
    root,
    "countdown_seed1",
    _session(_hour(2, 10), None),
    _session(_hour(2, 11), "2026-02-02T11:30:00+00:00", kind="TPU v5 lite"),
  )
  return root


def test_a_study_of_one_clean_commit_gives_its_table(study, tmp_path, monkeypatch):
  monkeypatch.setattr(figures, "write_figures", lambda *args: [])  # Not read here.
  out = str(tmp_path / "out")
  summary_lib.summarize(study, out, synthetic._config())
  with open(os.path.join(out, "provenance.csv"), newline="") as f:
    rows = {(r["task"], r["seed"]): r for r in csv.DictReader(f)}
  assert len(rows) == 6
  # Hours by hand: seed s ran 2 + s hours; countdown seed 1 half an hour (the killed
  # session has no end).
  expected_hours = {("countdown", "1"): 0.5}
  for task in synthetic.TASKS:
    for seed in synthetic.SEEDS:
      row = rows[task, str(seed)]
      assert float(row["hours"]) == expected_hours.get((task, str(seed)), 2.0 + seed)
      assert (row["commit"], row["dirty"], row["design_commit"]) == (A, "False", DESIGN)
  one = rows["countdown", "1"]
  assert (one["sessions"], one["device_kind"]) == ("2", "cpu; TPU v5 lite")
  assert (one["started_utc"], one["ended_utc"]) == (_hour(2, 10), "2026-02-02T11:30:00+00:00")
  with open(os.path.join(out, "README.md")) as f:
    report = f.read()
  section = report[report.index("## Provenance") : report.index("## Declared contrasts")]
  # One commit: 6 runs, first start day 1 10:00, last end day 3 14:00 (seed 2 ran 4
  # hours), hours 2 + 0.5 + 4 (countdown) + 2 + 3 + 4 (program) = 15.5.
  row = (
    "| `aaaaaaa` | no | 6 | 2026-02-01T10:00:00+00:00 | 2026-02-03T14:00:00+00:00 | "
    "cpu, TPU v5 lite | 15.5 | `ddddddd` |"
  )
  assert row in section.splitlines(), section


def _damaged(study, name, *sessions):
  _write_sessions(study, name, *sessions)
  return study


@pytest.mark.parametrize(
  "damage, expected",
  [
    (
      lambda d: os.remove(os.path.join(d, "program_seed2", "run.json")),
      "Runs without run.json, so with no record of their code's commit: program seed 2",
    ),
    (
      lambda d: _damaged(d, "program_seed2", _session(_hour(3, 10), _hour(3, 11), commit=B)),
      r"used 2 commits: aaaaaaa \(countdown seed 0, countdown seed 1, countdown seed 2, "
      r"program seed 0, program seed 1\); bbbbbbb \(program seed 2\)",
    ),
    (  # A run resumed at another commit.
      lambda d: _damaged(
        d,
        "countdown_seed0",
        _session(_hour(1, 10), None),
        _session(_hour(1, 11), _hour(1, 12), commit=B),
      ),
      r"used 2 commits: aaaaaaa \(countdown seed 0, .*\); bbbbbbb \(countdown seed 0\)",
    ),
    (
      lambda d: _damaged(d, "program_seed0", _session(_hour(1, 10), _hour(1, 11), dirty=True)),
      r"uncommitted changes to tracked files: program seed 0 \(aaaaaaa\)",
    ),
    (
      lambda d: _damaged(d, "program_seed0", _session(_hour(1, 10), _hour(1, 11), commit=None)),
      r"commit git could not tell: program seed 0 \(git rev-parse HEAD: not a git",
    ),
    (  # The design note committed after the run started.
      lambda d: _damaged(
        d,
        "program_seed1",
        _session("2025-12-31T23:59:59+00:00", _hour(2, 11)),
      ),
      r"started before their design note was committed \(ddddddd at "
      r"2026-01-01T00:00:00\+00:00\): program seed 1",
    ),
    (
      lambda d: _damaged(d, "program_seed1", _session(_hour(2, 10), _hour(2, 11), design=None)),
      r"record no design note \(config.study_design\): program seed 1",
    ),
    (  # The design changed while the study ran.
      lambda d: _damaged(
        d,
        "program_seed1",
        _session(_hour(2, 10), _hour(2, 11), design="e" * 40, designed=_hour(1, 0)),
      ),
      r"2 commits of the design note: ddddddd \(countdown seed 0, .*\); eeeeeee \(program seed 1\)",
    ),
    (
      lambda d: _damaged(d, "program_seed1", {"started_utc": "yesterday"}),
      r"program_seed1/run.json, session 1 is not a session",
    ),
  ],
)
def test_a_study_whose_code_is_not_accounted_for_stops(study, damage, expected):
  damage(study)
  with pytest.raises(files.StudyError, match=expected):
    loading.load_study(study, synthetic._config())


def test_declared_equivalent_commits_pass(study, monkeypatch):
  _write_sessions(study, "program_seed2", _session(_hour(3, 10), _hour(3, 11), commit=B))
  monkeypatch.setattr(study_config, "EQUIVALENT_COMMITS", (("1234567",), (A[:12], B[:7])))
  assert len(loading.load_study(study, synthetic._config()).runs) == 6
  monkeypatch.setattr(study_config, "EQUIVALENT_COMMITS", ((A,), (B,)))  # Not one group.
  with pytest.raises(files.StudyError, match="used 2 commits"):
    loading.load_study(study, synthetic._config())
  monkeypatch.setattr(study_config, "EQUIVALENT_COMMITS", (("abc",),))  # Too short a prefix.
  with pytest.raises(files.StudyError, match="EQUIVALENT_COMMITS=.*must be a tuple of tuples"):
    loading.load_study(study, synthetic._config())


def test_equivalent_group_matches_hashes_and_prefixes():
  groups = (("1111111", "2222222aaaa"), (A, B[:9]))
  assert commits.equivalent_group([A, B], groups) == groups[1]
  assert (
    commits.equivalent_group(["1111111" + "0" * 33, "2222222aaaa" + "0" * 29], groups)
    == (groups[0])
  )
  assert commits.equivalent_group([A, "1111111" + "0" * 33], groups) is None  # Two groups.
  assert commits.equivalent_group(["2222222b" + "0" * 32], groups) is None  # Prefix differs.
  assert commits.equivalent_group([A], ()) is None
  for bad in ("1111111", (("111111",),), (("G111111",),), ((1111111,),)):
    with pytest.raises(files.StudyError, match="EQUIVALENT_COMMITS"):
      commits.equivalent_group([A], bad)


def test_without_required_provenance_runs_lacking_it_are_listed(study, monkeypatch):
  monkeypatch.setattr(study_config, "REQUIRE_PROVENANCE", False)
  os.remove(os.path.join(study, "program_seed2", "run.json"))
  _write_sessions(study, "program_seed1", _session(_hour(2, 10), _hour(2, 11), design=None))
  # No design check, a run without run.json.
  loaded = loading.load_study(study, synthetic._config())
  rows = commits.provenance_rows(loaded.provenance)
  assert [(r["task"], r["seed"], r["commit"]) for r in rows][-1] == ("program", 2, "")
  section = "\n".join(commits.provenance_section(rows, len(rows)))
  assert "| no `run.json` |  | 1 |" in section
  # Dirty trees and mixed commits are refused all the same.
  _write_sessions(study, "program_seed1", _session(_hour(2, 10), _hour(2, 11), dirty=True))
  with pytest.raises(files.StudyError, match="uncommitted changes"):
    loading.load_study(study, synthetic._config())
  # A study none of whose runs has run.json: no provenance.csv, and the README says so.
  for task in synthetic.TASKS:
    for seed in synthetic.SEEDS:
      path = os.path.join(study, f"{task}_seed{seed}", "run.json")
      if os.path.exists(path):
        os.remove(path)
  loaded = loading.load_study(study, synthetic._config())
  assert commits.provenance_rows(loaded.provenance) == []
  assert "None of the 6 runs records its code" in " ".join(commits.provenance_section([], 6))
