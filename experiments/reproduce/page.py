"""The content of the reproduction's index page, computed once for both renderings.

:func:`build_page` gathers a :class:`Page`: per stage its status, warnings, key tables
(``tables``) and figures (``figures``). ``index_markdown`` and ``index_html`` render it.
"""

from __future__ import annotations

from collections.abc import Sequence
import hashlib
import os
import time
from typing import NamedTuple

from experiments.reproduce import figures as figures_lib
from experiments.reproduce import tables as tables_lib

TITLE = "maxk: reproduced figures and tables"


class ShownStage(NamedTuple):
  """One stage's section of the page: what ran in its folder, and how it ended.

  Attributes:
    name: the stage's name (its folder).
    title: one line on what it reproduces.
    command: the command that wrote its outputs, as a user types it.
    smoke: whether it ran at smoke sizes (marked on the page).
    status: "ok", "reused (ran DATE, N s)", "from an earlier run (ran DATE, N s)", or
      "FAILED ..." (then its partial outputs are not shown).
    seconds: the wall time of the run that made its outputs (measured when it ran,
      also when its outputs are reused now).
  """

  name: str
  title: str
  command: str
  smoke: bool
  status: str
  seconds: float

  @property
  def failed(self) -> bool:
    """Whether the stage failed (now or in an earlier run)."""
    return self.status.startswith("FAILED")

  @property
  def sizes(self) -> str:
    """ "smoke" or "full", as the page's summary table says."""
    return "smoke" if self.smoke else "full"


class Note(NamedTuple):
  """A note at the top of a stage's section.

  Attributes:
    kind: "failed" or "smoke" (warnings), "scope" (what the stage can and cannot show)
      or "repeat" (figures not shown again).
    text: the note, with Markdown inline code (```x```).
  """

  kind: str
  text: str

  @property
  def label(self) -> str:
    """The word before the note: "Warning" or "Note"."""
    return "Warning" if self.kind in ("failed", "smoke") else "Note"


# What a stage's numbers can and cannot say, where a reader would otherwise over-read them.
SCOPE_NOTES = {
  "lm": (
    "This tiny run checks the LM pipeline end to end (a tiny model, few RL steps, one "
    "seed): its RL runs may end below the base model, and it says nothing about which "
    "estimator is better. For that, see the multi-seed studies in README's *Small-LM RL* "
    "section (`docs/lm_study_8seed`, and the matched-KL study designed in "
    "`docs/lm_study/DESIGN.md`)."
  ),
}


# Figures of the studies that take hours (committed under docs/, not re-run here), shown
# in their stage's section from the committed copy: (file in the repository, path in the
# reproduction's folder). ``index_page.write_index`` copies each one that exists.
COMMITTED_FIGURES = {
  "lm": (("docs/lm_study/frontier_countdown.png", "lm/committed/lm_study_frontier_countdown.png"),),
}


class Section(NamedTuple):
  """Everything one stage's section shows (a failed stage: no tables or figures)."""

  stage: ShownStage
  notes: tuple[Note, ...]
  tables: tuple[tables_lib.Table, ...]
  figures: tuple[figures_lib.Figure, ...]


class Page(NamedTuple):
  """The index page's content, rendered by ``index_markdown`` and ``index_html``.

  Attributes:
    title: the page's title.
    intro: one paragraph (Markdown inline code) on how the page was made.
    sections: one per stage shown, in order.
    skipped: names of stages neither run nor found, listed as skipped.
  """

  title: str
  intro: str
  sections: tuple[Section, ...]
  skipped: tuple[str, ...]


def _notes(stage: ShownStage) -> tuple[Note, ...]:
  """The warnings and notes of a stage's section."""
  notes = []
  if stage.failed:
    notes.append(Note("failed", f"{stage.status}: this stage's partial outputs are not shown."))
  if stage.smoke:
    notes.append(Note("smoke", "SMOKE sizes (`--smoke`): tiny settings, not the headline numbers."))
  if stage.name in SCOPE_NOTES and not stage.failed:
    notes.append(Note("scope", SCOPE_NOTES[stage.name]))
  return tuple(notes)


def _digest(path: str) -> str:
  """The SHA-256 of the file at ``path``."""
  with open(path, "rb") as f:
    return hashlib.sha256(f.read()).hexdigest()


def _section(workdir: str, stage: ShownStage, shown: dict[str, str]) -> Section:
  """A stage's section: never tables or figures from a failed stage's partial outputs,
  nor a figure byte for byte equal to one shown earlier (``shown``: content hash ->
  path, updated here); a note names the figures left out and where they are shown."""
  if stage.failed:
    return Section(stage, _notes(stage), (), ())
  shown_tables = tuple(tables_lib.stage_tables(workdir, stage.name))
  shown_figures, repeats = [], []
  for figure in figures_lib.stage_figures(workdir, stage.name):
    path = os.path.join(workdir, figure.path)
    digest = _digest(path) if os.path.isfile(path) else figure.path
    if digest in shown:
      repeats.append(f"`{figure.path}` (= `{shown[digest]}`)")
    else:
      shown[digest] = figure.path
      shown_figures.append(figure)
  notes = _notes(stage)
  if repeats:
    text = f"Not shown again, equal byte for byte to a figure above: {', '.join(repeats)}."
    notes += (Note("repeat", text),)
  return Section(stage, notes, shown_tables, tuple(shown_figures))


def _intro(stages: Sequence[ShownStage], total_seconds: float, when: str) -> str:
  """The paragraph under the title: when, how long this run took and how long the
  stages shown took when they ran, how many stages ran at smoke sizes."""
  compute = sum(stage.seconds for stage in stages if not stage.failed)
  num_smoke = sum(stage.smoke for stage in stages)
  smoke_note = (
    f" {num_smoke} of {len(stages)} stages ran at SMOKE sizes (marked): not the headline numbers."
    if num_smoke
    else ""
  )
  return (
    f"Generated by `python -m experiments.reproduce` on {when} in "
    f"{total_seconds:.0f} s; the results shown took {compute:.0f} s when their stages "
    f"ran.{smoke_note} "
    "Each section is one stage; its folder holds `results.csv`, `config.json` "
    "(every flag) and `log.txt`."
  )


def build_page(
  workdir: str,
  stages: Sequence[ShownStage],
  *,
  skipped: Sequence[str] = (),
  total_seconds: float = 0.0,
  when: str | None = None,
) -> Page:
  """The page showing ``stages``, whose outputs are in ``workdir/<stage name>``.

  A failed stage's section holds its warning and no tables or figures; a smoke
  stage's section says "smoke", and the intro counts the smoke stages. A figure equal
  byte for byte to one of an earlier section (the LM notebook plots the LM stage's
  results with the stage's own plotting code) is named in a note, not shown twice.

  Args:
    workdir: the reproduction's folder.
    stages: the stages shown, in order.
    skipped: names of stages neither run nor found.
    total_seconds: the wall time of this run of the reproduction (reused stages take
      none of it; the intro adds up the stages' own seconds too).
    when: the time shown as the page's date (default: now, to the minute).
  """
  when = time.strftime("%Y-%m-%d %H:%M") if when is None else when
  shown: dict[str, str] = {}
  return Page(
    title=TITLE,
    intro=_intro(stages, total_seconds, when),
    sections=tuple(_section(workdir, stage, shown) for stage in stages),
    skipped=tuple(skipped),
  )
