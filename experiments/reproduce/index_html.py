"""The index page as a static, self-contained HTML page (``index.html``).

Its figures are the PNGs next to it, by relative path, so it works opened from the
file system: a table of contents down to each figure, the figures of a stage in a
grid with their explanation beneath them, click-to-enlarge without scripts (a CSS
``:target`` overlay), and wide tables that scroll inside their own box.
"""

from __future__ import annotations

import html
import re

from experiments.reproduce import figures
from experiments.reproduce import page as page_lib
from experiments.reproduce import tables


def inline_html(text: str) -> str:
  """``text`` as HTML: escaped, with Markdown inline code (```x```) as ``<code>x</code>``."""
  parts = text.split("`")
  if len(parts) % 2 == 0:  # An unmatched backtick: no code spans.
    return html.escape(text)
  return "".join(
    f"<code>{html.escape(p)}</code>" if i % 2 else html.escape(p) for i, p in enumerate(parts)
  )


def _short(text: str, limit: int = 64) -> str:
  """The head of a table's title for the table of contents (escaped HTML)."""
  head = re.split(r"[;:(]|\. ", text, maxsplit=1)[0].strip().rstrip(",.")
  if len(head) > limit:
    head = head[: limit - 1].rsplit(" ", 1)[0] + "…"
  return html.escape(head)


def _figure_anchor(figure: figures.Figure) -> str:
  return "fig-" + re.sub(r"[^A-Za-z0-9]+", "-", figure.path).strip("-")


def _table_anchor(stage: page_lib.ShownStage, index: int) -> str:
  return f"{stage.name}-table-{index}"


def table(shown: tables.Table) -> str:
  """``shown``'s cells as an HTML table in a scrolling box ("" for a table without cells)."""
  if not shown.header:
    return ""
  header = "".join(f"<th>{html.escape(c.strip())}</th>" for c in shown.header)
  out = ["<div class='table-wrap'><table>", f"<thead><tr>{header}</tr></thead><tbody>"]
  for row in shown.rows:
    out.append("<tr>" + "".join(f"<td>{html.escape(c.strip())}</td>" for c in row) + "</tr>")
  out.append("</tbody></table></div>")
  return "\n".join(out)


_STYLE = """
:root{--fg:#1d1d1f;--muted:#5f6368;--line:#dadce0;--bg:#fff;--accent:#1a73e8;--soft:#f6f8fa}
*{box-sizing:border-box}
body{margin:0;font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);
 background:var(--bg)}
a{color:var(--accent);text-decoration:none}a:hover{text-decoration:underline}
code,pre{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.88em;
 background:var(--soft);border-radius:4px}
code{padding:.1em .3em}
pre{padding:.6em .8em;overflow-x:auto;white-space:pre;border:1px solid var(--line)}
.layout{display:grid;grid-template-columns:17rem minmax(0,1fr);gap:2rem;max-width:110rem;
 margin:0 auto;padding:0 1.5rem}
nav.toc{position:sticky;top:0;align-self:start;max-height:100vh;overflow-y:auto;
 padding:1.5rem 0;font-size:.9em}
nav.toc ul{list-style:none;margin:0;padding-left:.9rem}nav.toc>ul{padding-left:0}
nav.toc li{margin:.15em 0}nav.toc .kind{color:var(--muted);font-size:.85em}
main{min-width:0;padding:0 0 4rem}
header{max-width:110rem;margin:0 auto;padding:1.2rem 1.5rem 0}
h1{font-size:1.9rem;margin:.2em 0 .4em}
h2{font-size:1.5rem;margin:1.6em 0 .3em;padding-top:.4em;border-top:1px solid var(--line)}
.table-title{font-weight:600;margin:1.4em 0 .3em;font-size:.95em}
.intro{color:var(--muted)}
.table-wrap{width:fit-content;max-width:100%;overflow-x:auto;border:1px solid var(--line);
 border-radius:6px;margin:.5em 0 1em}
table{border-collapse:collapse;font-size:.9em;font-variant-numeric:tabular-nums}
th,td{padding:.3em .7em;border-bottom:1px solid var(--line);text-align:right;white-space:nowrap}
th{background:var(--soft);position:sticky;top:0}
th:first-child,td:first-child{text-align:left}
tbody tr:hover{background:#f1f5fd}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(min(100%,30rem),1fr));gap:1.2rem}
figure{margin:0;border:1px solid var(--line);border-radius:8px;padding:.6rem;background:#fff;
 scroll-margin-top:1rem}
figure img{display:block;width:100%;height:auto;cursor:zoom-in}
figcaption{font-size:.9em;margin-top:.5em}
figcaption .title{font-weight:600;display:block}
figcaption .path{color:var(--muted);font-size:.85em}
.lightbox{display:none;position:fixed;inset:0;z-index:10;background:rgba(20,20,20,.93);
 padding:2vh 2vw;text-align:center}
.lightbox:target{display:flex;flex-direction:column;align-items:center;justify-content:center}
.lightbox img{max-width:96vw;max-height:88vh;background:#fff;cursor:zoom-out}
.lightbox p{color:#eee;max-width:70rem;margin:.6em auto 0;font-size:.95em}
.status-ok{color:#188038}.status-failed{color:#c5221f;font-weight:600}
.note{border-left:4px solid #f9ab00;background:#fef7e0;padding:.4em .8em;margin:.6em 0}
.note.failed{border-left-color:#c5221f;background:#fce8e6}
.note.scope,.note.repeat{border-left-color:#1a73e8;background:#e8f0fe}
@media (max-width:60rem){.layout{grid-template-columns:minmax(0,1fr)}
 nav.toc{position:static;max-height:none;border-bottom:1px solid var(--line)}}
"""

# Closes an enlarged figure with Escape (clicking it closes it without scripts).
_SCRIPT = """
document.addEventListener("keydown", function (e) {
  if (e.key === "Escape" && location.hash.indexOf("#zoom-") === 0) {
    location.hash = "#" + location.hash.slice(6);
  }
});
"""


def _status_class(status: str) -> str:
  if status.startswith("FAILED"):
    return "status-failed"
  return "status-ok" if status == "ok" or status.startswith("reused") else ""


def _toc(page: page_lib.Page) -> list[str]:
  """The table of contents: each stage, its tables and its figures."""
  toc = ["<nav class='toc' aria-label='Contents'><b>Contents</b><ul>"]
  toc.append("<li><a href='#stages'>Stages</a></li>")
  for section in page.sections:
    stage = section.stage
    toc.append(f"<li><a href='#{stage.name}'>{html.escape(stage.name)}</a><ul>")
    for i, shown in enumerate(section.tables, 1):
      toc.append(
        f"<li><span class='kind'>table</span> <a href='#{_table_anchor(stage, i)}'>"
        f"{_short(shown.title)}</a></li>"
      )
    toc += [
      f"<li><span class='kind'>figure</span> <a href='#{_figure_anchor(f)}'>"
      f"{html.escape(f.title)}</a></li>"
      for f in section.figures
    ]
    toc.append("</ul></li>")
  toc.append("</ul></nav>")
  return toc


def _summary(page: page_lib.Page) -> str:
  """The table of stages: status, sizes, seconds and number of figures of each."""
  rows = []
  for section in page.sections:
    stage = section.stage
    rows.append(
      f"<tr><td><a href='#{stage.name}'>{stage.name}</a></td>"
      f"<td class='{_status_class(stage.status)}'>{html.escape(stage.status)}</td>"
      f"<td>{stage.sizes}</td><td>{stage.seconds:.0f}</td>"
      f"<td>{len(section.figures)}</td></tr>"
    )
  rows += [
    f"<tr><td>{html.escape(n)}</td><td>skipped</td><td></td><td></td><td></td></tr>"
    for n in page.skipped
  ]
  return (
    "<div class='table-wrap'><table><thead><tr><th>stage</th><th>status</th><th>sizes</th>"
    "<th>seconds</th><th>figures</th></tr></thead><tbody>"
    + "".join(rows)
    + "</tbody></table></div>"
  )


def _figure(f: figures.Figure) -> str:
  """A figure in its stage's grid, linked to its enlarged view."""
  anchor, src = _figure_anchor(f), html.escape(f.path)
  return (
    f"<figure id='{anchor}'><a href='#zoom-{anchor}' title='Enlarge'>"
    f"<img src='{src}' alt='{html.escape(f.title)}'></a>"
    f"<figcaption><span class='title'>{html.escape(f.title)}</span>"
    f"{inline_html(f.caption)} <span class='path'>(<a href='{src}'>{src}</a>)</span>"
    "</figcaption></figure>"
  )


def _lightbox(f: figures.Figure) -> str:
  """A figure's enlarged view, shown while the address ends in its anchor."""
  anchor, src = _figure_anchor(f), html.escape(f.path)
  return (
    f"<div class='lightbox' id='zoom-{anchor}'><a href='#{anchor}' title='Close'>"
    f"<img src='{src}' alt='{html.escape(f.title)} (enlarged)'></a>"
    f"<p>{html.escape(f.title)}: {inline_html(f.caption)}</p></div>"
  )


def _section(section: page_lib.Section) -> list[str]:
  """A stage's heading, command, warnings, tables and grid of figures."""
  stage = section.stage
  body = [
    f"<h2 id='{stage.name}'>{html.escape(stage.name)}</h2>",
    f"<p>{inline_html(stage.title)}.</p>",
    f"<pre class='cmd'>{html.escape(stage.command)}</pre>",
  ]
  for note in section.notes:
    body.append(
      f"<p class='note {note.kind}' role='note'><b>{note.label}:</b> {inline_html(note.text)}</p>"
    )
  for i, shown in enumerate(section.tables, 1):
    body += [
      f"<p class='table-title' id='{_table_anchor(stage, i)}'>{inline_html(shown.title)}</p>",
      table(shown),
    ]
  if section.figures:
    body += ["<div class='grid'>", *(_figure(f) for f in section.figures), "</div>"]
  return body


def render(page: page_lib.Page) -> str:
  """The page as one HTML document (ends with a newline)."""
  header = (
    f"<header><h1>{html.escape(page.title)}</h1>"
    f"<p class='intro'>{inline_html(page.intro)} Click a figure to enlarge it.</p></header>"
  )
  body = ["<h2 id='stages'>Stages</h2>", _summary(page)]
  for section in page.sections:
    body += _section(section)
  lightboxes = [_lightbox(f) for section in page.sections for f in section.figures]
  return (
    "<!doctype html>\n<html lang='en'><head><meta charset='utf-8'>"
    "<meta name='viewport' content='width=device-width, initial-scale=1'>"
    f"<title>{html.escape(page.title)}</title><style>{_STYLE}</style></head><body>\n"
    f"{header}\n<div class='layout'>\n"
    + "\n".join(_toc(page))
    + "\n<main>\n"
    + "\n".join(body)
    + "\n</main></div>\n"
    + "\n".join(lightboxes)
    + f"\n<script>{_SCRIPT}</script>\n</body></html>\n"
  )
