"""The index page as Markdown (``index.md``): a summary table, contents, one section per stage."""

from __future__ import annotations

from experiments.reproduce import page as page_lib
from experiments.reproduce import tables


def table(shown: tables.Table) -> str:
  """``shown``'s cells as a Markdown table ("" for a table without cells)."""
  if not shown.header:
    return ""
  lines = ["| " + " | ".join(shown.header) + " |", "|" + "---|" * len(shown.header)]
  lines += ["| " + " | ".join(row) + " |" for row in shown.rows]
  return "\n".join(lines)


def _summary(page: page_lib.Page) -> list[str]:
  """The table of stages: status, sizes, seconds and number of figures of each."""
  lines = ["| stage | status | sizes | seconds | figures |", "|---|---|---|---|---|"]
  for section in page.sections:
    stage = section.stage
    lines.append(
      f"| [{stage.name}](#{stage.name}) | {stage.status} | {stage.sizes} | {stage.seconds:.0f} "
      f"| {len(section.figures)} |"
    )
  lines += [f"| {name} | skipped | | | |" for name in page.skipped]
  return lines


def _contents(page: page_lib.Page) -> list[str]:
  """A list of the stages, each with its figures (linked to the PNGs)."""
  lines = ["Contents:", ""]
  for section in page.sections:
    lines.append(f"- [{section.stage.name}](#{section.stage.name})")
    lines += [f"  - [{f.title}]({f.path})" for f in section.figures]
  return lines


def _section(section: page_lib.Section) -> list[str]:
  """A stage's heading, command, warnings, tables and figures."""
  stage = section.stage
  lines = [f"## {stage.name}", "", f"{stage.title}. Command: `{stage.command}`", ""]
  for note in section.notes:
    lines += [f"> **{note.label}:** {note.text}", ""]
  for shown in section.tables:
    lines += [f"**{shown.title}**", "", table(shown), ""]
  for f in section.figures:
    lines += [f"![{f.title}]({f.path})", "", f"*{f.path}*: {f.caption}", ""]
  return lines


def render(page: page_lib.Page) -> str:
  """The page as Markdown text (ends with a newline)."""
  lines = [f"# {page.title}", "", page.intro, ""]
  lines += [*_summary(page), "", *_contents(page), ""]
  for section in page.sections:
    lines += _section(section)
  return "\n".join(lines) + "\n"
