"""The code behind a study's runs: each run's ``run.json`` (sessions of
:mod:`experiments.lm.provenance`), the checks that one clean commit (or one declared
group of value-equivalent commits) ran them all after the study's design note was
committed, the per-run table ``provenance.csv`` and the README's table of commits.

The study config module (``experiments/lm/configs/study.py``) may declare

* ``REQUIRE_PROVENANCE`` (default True): every run must have a ``run.json`` whose
  sessions know their commit and record one design note, committed before the run's
  first session started. False for a study run before ``run.json`` existed: runs
  without one are listed as such, and the design is not checked;
* ``EQUIVALENT_COMMITS`` (default none): groups of commits (full hashes or prefixes of
  7 or more hex digits) declared value-equivalent, i.e. giving the same outputs for
  the same config, each with the test that shows it (the study config's docstring).

Whatever ``REQUIRE_PROVENANCE`` says, a study is refused when any session ran on a
checkout with uncommitted changes to tracked files (``dirty``), or when its sessions
used more than one commit, unless every commit they used falls in one declared group.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
import dataclasses
import datetime
import os
import re
from typing import Any

from experiments.lm_study import files
from experiments.lm_study import markdown as md
from experiments.lm_study import runs as runs_lib

RUN_FILE = "run.json"
_TIMES = ("started_utc", "ended_utc", "design_committed_utc")
_HEX = re.compile(r"[0-9a-f]{7,40}")


@dataclasses.dataclass(frozen=True)
class RunRecord:
  """A run's sessions from its ``run.json``; None when it has none."""

  task: str
  seed: int
  folder: str
  sessions: tuple[dict[str, Any], ...] | None

  @property
  def name(self) -> str:
    return f"{self.task} seed {self.seed}"


def _time(value: Any, where: str) -> datetime.datetime | None:
  if value is None:
    return None
  try:
    moment = datetime.datetime.fromisoformat(value)
  except (TypeError, ValueError):
    moment = None
  if moment is None or moment.tzinfo is None:
    raise files.StudyError(f"{where}={value!r} is not an ISO 8601 time with its offset.")
  return moment


def _session(value: Any, where: str) -> dict[str, Any]:
  """One session of ``run.json``, its times parsed; StudyError naming ``where``."""
  needed = ("started_utc", "ended_utc", "commit", "dirty", "device_kind", "design_commit")
  if not isinstance(value, dict) or any(k not in value for k in needed):
    raise files.StudyError(f"{where} is not a session with the fields {list(needed)}.")
  if not isinstance(value["commit"], (str, type(None))) or value["dirty"] not in (
    True,
    False,
    None,
  ):
    raise files.StudyError(f"{where}: commit or dirty has the wrong type.")
  session = dict(value)
  for key in _TIMES:
    session[key] = _time(value.get(key), f"{where}: {key}")
  if session["started_utc"] is None:
    raise files.StudyError(f"{where}: started_utc is missing.")
  if session["design_commit"] is not None and session["design_committed_utc"] is None:
    raise files.StudyError(f"{where}: design_commit has no design_committed_utc.")
  return session


def read_records(runs: Iterable[runs_lib.Run]) -> list[RunRecord]:
  """Each run's sessions (:class:`RunRecord`), in the order of ``runs``.

  Raises:
    StudyError: a ``run.json`` is unreadable or malformed (naming it).
  """
  records = []
  for run in runs:
    path = os.path.join(run.folder, RUN_FILE)
    sessions = None
    if os.path.exists(path):
      value = files.read_json(path)
      listed = value.get("sessions") if isinstance(value, dict) else None
      if not isinstance(listed, list) or not listed:
        raise files.StudyError(f"{path} holds no list of sessions.")
      sessions = tuple(_session(s, f"{path}, session {i + 1}") for i, s in enumerate(listed))
    records.append(RunRecord(run.task, run.seed, run.folder, sessions))
  return records


def _check_groups(groups: Any) -> tuple[tuple[str, ...], ...]:
  """``EQUIVALENT_COMMITS``, checked: a tuple of tuples of hex prefixes."""
  ok = isinstance(groups, (tuple, list)) and all(
    isinstance(g, (tuple, list)) and all(isinstance(c, str) and _HEX.fullmatch(c) for c in g)
    for g in groups
  )
  if not ok:
    raise files.StudyError(
      f"EQUIVALENT_COMMITS={groups!r} of the study config must be a tuple of tuples of "
      "commit hashes (lower-case hex, 7 to 40 digits)."
    )
  return tuple(tuple(g) for g in groups)


def equivalent_group(
  commits: Iterable[str], groups: Sequence[Sequence[str]]
) -> tuple[str, ...] | None:
  """The first declared group that holds every one of ``commits`` (each matching one
  of its hashes or prefixes), or None.

  Raises:
    StudyError: ``groups`` is not a tuple of tuples of hex prefixes.
  """
  wanted = set(commits)
  for group in _check_groups(groups):
    if all(any(c.startswith(p) for p in group) for c in wanted):
      return group
  return None


def _names(records: Iterable[RunRecord]) -> str:
  return ", ".join(r.name for r in records)


def _by_commit(records: Sequence[RunRecord]) -> dict[str, list[RunRecord]]:
  """Known commit -> the runs with a session at it, in order."""
  out: dict[str, list[RunRecord]] = {}
  for r in records:
    for commit in dict.fromkeys(s["commit"] for s in r.sessions or () if s["commit"]):
      out.setdefault(commit, []).append(r)
  return out


def _check_design(records: Sequence[RunRecord]) -> None:
  """Every session records one design note, committed before every run's first start."""
  without = [r for r in records if any(s["design_commit"] is None for s in r.sessions or ())]
  if without:
    raise files.StudyError(
      f"Runs record no design note (config.study_design): {_names(without)}. A study's "
      "design is committed before its runs; set study_design in its config and rerun them."
    )
  designs: dict[tuple[str, datetime.datetime], list[RunRecord]] = {}
  for r in records:
    for key in dict.fromkeys(
      (s["design_commit"], s["design_committed_utc"]) for s in r.sessions or ()
    ):
      designs.setdefault(key, []).append(r)
  if len(designs) > 1:
    listed = "; ".join(
      f"{c[:7]} ({_names(rs)})"
      for (c, _), rs in sorted(designs.items(), key=lambda d: _text(d[0][1]))
    )
    raise files.StudyError(
      f"The runs record {len(designs)} commits of the design note: {listed}. The design "
      "changed while the study ran; rerun the runs of the older design."
    )
  ((commit, committed),) = designs
  early = [r for r in records if r.sessions and r.sessions[0]["started_utc"] <= committed]
  if early:
    raise files.StudyError(
      f"Runs started before their design note was committed ({commit[:7]} at "
      f"{committed.isoformat()}): {_names(early)}; rerun them."
    )


def check(
  records: Sequence[RunRecord], *, require: bool = True, equivalent: Sequence[Sequence[str]] = ()
) -> None:
  """Raises StudyError, naming the runs and commits, unless the runs' code is
  accounted for (module docstring): with ``require`` (``REQUIRE_PROVENANCE``), every
  run has its ``run.json``, every session its commit and one design note committed
  before the run's first start; always, no session ran a dirty checkout, and all
  used one commit or commits of one group of ``equivalent`` (``EQUIVALENT_COMMITS``)."""
  absent = [r for r in records if r.sessions is None]
  if require and absent:
    raise files.StudyError(
      f"Runs without {RUN_FILE}, so with no record of their code's commit: {_names(absent)}. "
      "Rerun them, or (a study run before run.json existed) set REQUIRE_PROVENANCE = False "
      "in the study config."
    )
  unknown = [
    f"{r.name} ({s.get('provenance_error')})"
    for r in records
    for s in r.sessions or ()
    if s["commit"] is None
  ]
  if require and unknown:
    raise files.StudyError(f"Runs whose commit git could not tell: {'; '.join(unknown)}.")
  dirty = {
    f"{r.name} ({(s['commit'] or 'unknown')[:7]})"
    for r in records
    for s in r.sessions or ()
    if s["dirty"]
  }
  if dirty:
    raise files.StudyError(
      f"Runs ran from a checkout with uncommitted changes to tracked files: "
      f"{', '.join(sorted(dirty))}. Their code is not a commit; rerun them from a clean one."
    )
  by_commit = _by_commit(records)
  if len(by_commit) > 1 and equivalent_group(by_commit, equivalent) is None:
    listed = "; ".join(f"{c[:7]} ({_names(rs)})" for c, rs in by_commit.items())
    raise files.StudyError(
      f"The runs used {len(by_commit)} commits: {listed}. A study runs one commit: rerun "
      "the others, or declare the commits value-equivalent in EQUIVALENT_COMMITS of the "
      "study config, with the test that shows it."
    )
  if require:
    _check_design(records)


PROVENANCE_COLUMNS = (
  "task",
  "seed",
  "commit",
  "dirty",
  "sessions",
  "started_utc",
  "ended_utc",
  "hours",
  "device_kind",
  "design_commit",
)


def _text(moment: datetime.datetime | None) -> str:
  return "" if moment is None else moment.astimezone(datetime.timezone.utc).isoformat()


def _hours(sessions: Iterable[dict[str, Any]]) -> float:
  """Wall time of the sessions with a recorded end (a killed one has none), in hours."""
  seconds = sum(
    (s["ended_utc"] - s["started_utc"]).total_seconds() for s in sessions if s["ended_utc"]
  )
  return round(seconds / 3600, 4)


def provenance_rows(records: Sequence[RunRecord]) -> list[dict[str, Any]]:
  """``provenance.csv``: one row per run (none when no run has a ``run.json``): its
  commits and design note commits in session order (space-separated), whether any
  session was dirty, its sessions, its first start and last end (UTC), the hours of
  its sessions and its device kinds ("; "-separated). A run without ``run.json`` has
  its task and seed only."""
  if all(r.sessions is None for r in records):
    return []
  rows = []
  for r in records:
    row: dict[str, Any] = {c: "" for c in PROVENANCE_COLUMNS}
    row.update(task=r.task, seed=r.seed)
    if r.sessions:
      s = r.sessions
      row.update(
        commit=" ".join(dict.fromkeys(x["commit"] or "unknown" for x in s)),
        dirty=any(x["dirty"] for x in s),
        sessions=len(s),
        started_utc=_text(s[0]["started_utc"]),
        ended_utc=_text(s[-1]["ended_utc"]),
        hours=_hours(s),
        device_kind="; ".join(dict.fromkeys(str(x["device_kind"]) for x in s)),
        design_commit=" ".join(dict.fromkeys(x["design_commit"] or "none" for x in s)),
      )
    rows.append(row)
  return rows


def _short(hashes: str) -> str:
  return " ".join(f"`{h[:7]}`" for h in hashes.split()) or "–"


def provenance_section(rows: Sequence[dict[str, Any]], num_runs: int) -> list[str]:
  """The README's "Provenance" section: the runs' commits from ``provenance.csv``
  rows (:func:`provenance_rows`), one table row per commit (or commits of a resumed
  run) and dirty flag; ``num_runs`` says how many runs the study has."""
  lines = ["## Provenance", ""]
  if not rows:
    return lines + [
      f"None of the {num_runs} runs records its code (`{RUN_FILE}`, written by",
      "`experiments/lm/provenance.py`): they predate it, and the study config sets",
      "`REQUIRE_PROVENANCE = False`.",
      "",
    ]
  lines += [
    f"The code each run ran (its `{RUN_FILE}`: one session per invocation of the binary;",
    "`provenance.csv` has a row per run). Hours: the wall time of the sessions, summed",
    "(a killed session has no recorded end and counts 0). Design note: the commit of the",
    "study's design note, which preceded every run's first start.",
    "",
  ]
  groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
  for r in rows:
    key = (r["commit"], "" if r["commit"] == "" else str(r["dirty"]))
    groups.setdefault(key, []).append(r)
  table = []
  for (commit, dirty), mine in sorted(
    groups.items(), key=lambda g: min(r["started_utc"] for r in g[1])
  ):
    if not commit:
      table.append((f"no `{RUN_FILE}`", "", str(len(mine)), "", "", "", "", ""))
      continue
    table.append(
      (
        _short(commit),
        "**yes**" if dirty == "True" else "no",
        str(len(mine)),
        min(r["started_utc"] for r in mine),
        max(r["ended_utc"] for r in mine),
        ", ".join(dict.fromkeys(k for r in mine for k in r["device_kind"].split("; "))),
        f"{sum(float(r['hours']) for r in mine):.1f}",
        _short(" ".join(dict.fromkeys(h for r in mine for h in r["design_commit"].split()))),
      )
    )
  header = ("commit", "dirty", "runs", "first start (UTC)", "last end (UTC)", "devices", "hours")
  return lines + md.table((*header, "design note"), table)
