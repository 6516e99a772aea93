"""Tests of experiments.lm.provenance: run.json's sessions, git failures, design notes.

A real run's run.json (every field, a session appended per invocation, killed
sessions) is checked by end_to_end_test.py on its module's runs."""

import json
import os
import subprocess
import sys

import pytest

from experiments import config_checks
from experiments.lm import provenance
from experiments.lm import train
from experiments.lm import validation
from experiments.lm import workdir as workdir_lib
from experiments.lm.configs import study_8seed as study_config
from experiments.lm.configs import tiny
from tests import REPO_ROOT
from tests import WAIT_S

# Every field of a session (the module docstring's schema).
SESSION_FIELDS = {
  "started_utc",
  "ended_utc",
  "status",
  "commit",
  "dirty",
  "provenance_error",
  "maxk_version",
  "jax_version",
  "python_version",
  "host",
  "platform",
  "device_kind",
  "num_devices",
  "argv",
  "study_design",
  "design_commit",
  "design_committed_utc",
}


def _git(repo, *args, **env):
  return subprocess.run(
    ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
    cwd=repo,
    check=True,
    capture_output=True,
    text=True,
    env={**os.environ, **env},
  ).stdout.strip()


@pytest.fixture(name="repo")
def _repo(tmp_path, monkeypatch):
  """A git checkout standing in for the code's repository, with one committed note."""
  repo = tmp_path / "repo"
  (repo / "docs").mkdir(parents=True)
  _git(repo, "init", "-q")
  (repo / "docs" / "DESIGN.md").write_text("the design\n")
  _git(repo, "add", ".")
  # Committer time 03:04:05 at UTC+2: 01:04:05 in UTC.
  _git(repo, "commit", "-qm", "design", GIT_COMMITTER_DATE="2026-01-02T03:04:05+02:00")
  monkeypatch.setattr(provenance, "code_dir", lambda: str(repo))
  return repo


def test_a_committed_design_note_is_recorded(repo):
  note = provenance.design_note("docs/DESIGN.md")
  assert note == provenance.DesignNote(
    "docs/DESIGN.md", _git(repo, "rev-parse", "HEAD"), "2026-01-02T01:04:05+00:00"
  )
  assert provenance.design_note("") is None
  # A later commit that does not touch the note leaves its commit as it was.
  (repo / "other.txt").write_text("x")
  _git(repo, "add", ".")
  _git(repo, "commit", "-qm", "other")
  assert provenance.design_note("docs/DESIGN.md") == note
  session = provenance.new_session(note)
  assert set(session) == SESSION_FIELDS
  assert (session["study_design"], session["design_commit"]) == ("docs/DESIGN.md", note.commit)
  assert session["design_committed_utc"] == "2026-01-02T01:04:05+00:00"
  assert session["commit"] == _git(repo, "rev-parse", "HEAD") != note.commit
  assert session["dirty"] is False and session["provenance_error"] is None


def _stage_new_note(repo):
  (repo / "docs" / "NOPE.md").write_text("staged, never committed")
  _git(repo, "add", ".")


@pytest.mark.parametrize(
  "change, expected",
  [
    (lambda repo: None, "no such file"),
    (lambda repo: (repo / "docs" / "NOPE.md").write_text("untracked"), "is not committed"),
    (_stage_new_note, "is not committed"),
  ],
)
def test_an_absent_or_uncommitted_design_note_is_refused(repo, change, expected):
  change(repo)
  with pytest.raises(
    config_checks.ConfigError, match=rf"config\.study_design='docs/NOPE.md'.*{expected}"
  ):
    provenance.design_note("docs/NOPE.md")


@pytest.mark.parametrize("staged", [False, True])
def test_a_modified_design_note_is_refused(repo, staged):
  (repo / "docs" / "DESIGN.md").write_text("the design, changed after the fact\n")
  if staged:
    _git(repo, "add", ".")
  with pytest.raises(config_checks.ConfigError, match="has uncommitted changes"):
    provenance.design_note("docs/DESIGN.md")


def test_untracked_files_leave_the_tree_clean_and_tracked_edits_dirty_it(repo):
  (repo / "out").mkdir()
  (repo / "out" / "metrics.jsonl").write_text("{}")
  assert provenance.code_state()["dirty"] is False
  (repo / "docs" / "DESIGN.md").write_text("edited\n")
  assert provenance.code_state()["dirty"] is True


def test_without_git_the_fields_are_none_with_a_reason(tmp_path, monkeypatch):
  monkeypatch.setattr(provenance, "code_dir", lambda: str(tmp_path))  # Not a checkout.
  monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
  state = provenance.code_state()
  assert state["commit"] is None and state["dirty"] is None
  assert "not a git repository" in state["provenance_error"]

  def no_git(*args, **kwargs):
    raise FileNotFoundError(2, "No such file or directory", "git")

  monkeypatch.setattr(provenance.subprocess, "run", no_git)
  state = provenance.code_state()
  assert state["commit"] is None and "git rev-parse HEAD" in state["provenance_error"]
  session = provenance.new_session(None)
  assert set(session) == SESSION_FIELDS and session["commit"] is None
  with pytest.raises(config_checks.ConfigError, match="cannot check that the design note"):
    provenance.design_note("docs/DESIGN.md")


def _sessions(workdir):
  with open(os.path.join(workdir, provenance.RUN_FILE)) as f:
    return json.load(f)["sessions"]


def test_each_invocation_appends_a_session_with_its_end(tmp_path):
  workdir = str(tmp_path)
  with provenance.recorded(workdir, None):
    (running,) = _sessions(workdir)
    assert running["status"] == "running" and running["ended_utc"] is None
  with pytest.raises(ValueError):
    with provenance.recorded(workdir, None):
      raise ValueError("boom")
  with pytest.raises(KeyboardInterrupt):
    with provenance.recorded(workdir, None):
      raise KeyboardInterrupt
  sessions = _sessions(workdir)
  assert [s["status"] for s in sessions] == ["finished", "failed: ValueError", "interrupted"]
  for s in sessions:
    assert set(s) == SESSION_FIELDS
    assert s["started_utc"] <= s["ended_utc"] and s["ended_utc"].endswith("+00:00")
  # A session that never ended (its process was killed) is marked by the next one.
  sessions[-1].update(status="running", ended_utc=None)
  with open(os.path.join(workdir, provenance.RUN_FILE), "w") as f:
    json.dump({"sessions": sessions}, f)
  with provenance.recorded(workdir, None):
    pass
  statuses = [s["status"] for s in _sessions(workdir)]
  assert statuses == ["finished", "failed: ValueError", "killed", "finished"]
  # Other processes of a multi-host run write nothing.
  with provenance.recorded(str(tmp_path / "other"), None, writer=False):
    pass
  assert not (tmp_path / "other").exists()


def test_a_damaged_run_file_is_refused(tmp_path):
  (tmp_path / provenance.RUN_FILE).write_text('{"sessions": [')
  with pytest.raises(workdir_lib.WorkdirError, match="run.json cannot be read"):
    with provenance.recorded(str(tmp_path), None):
      pass


def test_a_run_with_an_uncommitted_design_note_writes_nothing(tmp_path):
  config = tiny.get_config("micro")
  config.study_design = "docs/no_such_design_note.md"
  with pytest.raises(config_checks.ConfigError, match="no such file"):
    train.run(config, str(tmp_path / "w"))
  assert not (tmp_path / "w").exists()


@pytest.mark.parametrize("path", ["/abs/DESIGN.md", "../DESIGN.md", "docs/../../x.md", 3])
def test_study_design_must_be_a_repository_path(path):
  config = tiny.get_config("micro")
  with config.ignore_type():
    config.study_design = path
  with pytest.raises(config_checks.ConfigError, match=r"config\.study_design="):
    validation.validate_config(config)


def micro_metrics_at(commit, folder, cache_dir):
  """metrics.jsonl of ``configs/tiny.py:micro`` run by the code of ``commit`` (its
  tracked files, extracted with ``git archive`` into ``folder``: the repository and
  its worktrees are left as they are), on one CPU device."""
  tree, archive = os.path.join(folder, "code"), os.path.join(folder, "code.tar")
  os.makedirs(tree)
  subprocess.run(["git", "archive", f"--output={archive}", commit], cwd=REPO_ROOT, check=True)
  subprocess.run(["tar", "-xf", archive, "-C", tree], check=True)
  workdir = os.path.join(folder, "run")
  env = {
    **os.environ,
    "PYTHONPATH": tree,
    "JAX_PLATFORMS": "cpu",
    "JAX_COMPILATION_CACHE_DIR": str(cache_dir),
  }
  subprocess.run(
    [
      sys.executable,
      "-m",
      "experiments.lm",
      "--config=experiments/lm/configs/tiny.py:micro",
      f"--workdir={workdir}",
    ],
    cwd=tree,
    env=env,
    check=True,
    capture_output=True,
    timeout=WAIT_S,
  )
  with open(os.path.join(workdir, "metrics.jsonl"), "rb") as f:
    return f.read()


def equivalent_pairs(groups):
  """(first, other) for every other commit of each declared group."""
  return [(group[0], other) for group in groups for other in group[1:]]


# The test each EQUIVALENT_COMMITS declaration of the study config needs (its
# docstring): none declared, none run.
@pytest.mark.parametrize("a, b", equivalent_pairs(study_config.EQUIVALENT_COMMITS))
def test_declared_equivalent_commits_write_the_same_metrics(a, b, tmp_path):
  cache = tmp_path / "jax_cache"
  assert micro_metrics_at(a, str(tmp_path / "a"), cache) == micro_metrics_at(
    b, str(tmp_path / "b"), cache
  )
