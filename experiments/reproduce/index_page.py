"""The reproduction's index page: ``index.md`` and ``index.html`` in its folder.

The page's content is computed once (:func:`experiments.reproduce.page.build_page`)
and rendered by ``index_markdown`` and ``index_html``. The HTML page is static and
self-contained (its figures are the PNGs next to it, by relative path), so it works
opened from the file system: a table of contents down to each figure, the figures of
a stage in a grid with their explanation beneath them, click-to-enlarge without
scripts (a CSS ``:target`` overlay), and wide tables that scroll inside their own box.
"""

from __future__ import annotations

from collections.abc import Sequence
import os
import shutil

from experiments.reproduce import index_html
from experiments.reproduce import index_markdown
from experiments.reproduce import page as page_lib

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def write_index(
  workdir: str,
  stages: Sequence[page_lib.ShownStage],
  *,
  skipped: Sequence[str] = (),
  total_seconds: float = 0.0,
  repo_root: str = _ROOT,
) -> tuple[str, str]:
  """Writes ``workdir/index.md`` and ``workdir/index.html``; returns their paths.

  See :func:`experiments.reproduce.page.build_page` for the arguments and what the page
  shows. First the committed figures of each shown stage
  (:data:`experiments.reproduce.page.COMMITTED_FIGURES`, from ``repo_root``) are copied
  into ``workdir``, where the stage's section picks them up; a copy whose source is gone
  is removed.
  """
  for stage in stages:
    if stage.failed:
      continue
    for source, dest in page_lib.COMMITTED_FIGURES.get(stage.name, ()):
      source_path, dest_path = os.path.join(repo_root, source), os.path.join(workdir, dest)
      if os.path.isfile(source_path):
        os.makedirs(os.path.dirname(dest_path), exist_ok=True)
        shutil.copyfile(source_path, dest_path)
      elif os.path.isfile(dest_path):
        os.remove(dest_path)
  page = page_lib.build_page(workdir, stages, skipped=skipped, total_seconds=total_seconds)
  md_path = os.path.join(workdir, "index.md")
  with open(md_path, "w") as out:
    out.write(index_markdown.render(page))
  html_path = os.path.join(workdir, "index.html")
  with open(html_path, "w") as out:
    out.write(index_html.render(page))
  return md_path, html_path
