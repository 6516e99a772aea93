"""The committed notebooks are generated from their plain-Python sources and cannot drift."""

import base64
import hashlib
import os
import re
import struct
import subprocess
import sys
import tempfile

import jupytext
import nbformat
import pytest

from notebooks import execute
from notebooks import make_notebooks
from tests import REPO_ROOT
from tests import WAIT_S

_EXPECTED = ["best_of_n", "evaluate", "lm", "max_at_k", "pkpo", "prompt_weights"]


def _cells(nb):
  return [(c.cell_type, c.source, c.metadata.get("caption")) for c in nb.cells]


def test_every_notebook_has_a_source_and_every_source_a_notebook():
  assert execute.source_names() == _EXPECTED
  committed = sorted(os.path.basename(p)[: -len(".ipynb")] for p in execute.notebook_paths())
  assert committed == _EXPECTED


@pytest.mark.parametrize("name", _EXPECTED)
def test_committed_notebook_cells_equal_its_source(name):
  source = execute.read_source(os.path.join(execute.NOTEBOOK_DIR, f"{name}.py"))
  committed = nbformat.read(os.path.join(execute.NOTEBOOK_DIR, f"{name}.ipynb"), as_version=4)
  assert _cells(committed) == _cells(source), (
    f"notebooks/{name}.ipynb differs from notebooks/{name}.py: run "
    f"`python notebooks/make_notebooks.py {name}`."
  )


def test_cell_ids_come_from_the_content():
  cells = [
    nbformat.v4.new_markdown_cell("# Title"),
    nbformat.v4.new_code_cell("x = 1"),
    nbformat.v4.new_code_cell("x = 1"),
    nbformat.v4.new_markdown_cell("x = 1"),
  ]
  ids = execute.stable_cell_ids(cells)
  code = hashlib.sha256(b"code\x00x = 1").hexdigest()[:8]
  assert ids[1:3] == [code, f"{code}-2"]  # A repeated cell gets a suffix: ids are unique.
  assert ids[0] == hashlib.sha256(b"markdown\x00# Title").hexdigest()[:8]
  assert ids[3] not in ids[:3]  # The same text in a markdown cell is another cell.
  cells[0].source = "# Another title"  # Editing a cell changes its id only.
  edited = execute.stable_cell_ids(cells)
  assert edited[0] != ids[0] and edited[1:] == ids[1:]
  nb = nbformat.v4.new_notebook(cells=cells)
  for cell, cell_id in zip(nb.cells, ids):
    cell.id = cell_id
  nbformat.validate(nb)  # The ids fit nbformat's pattern and are unique.


@pytest.mark.parametrize("name", _EXPECTED)
def test_rebuilding_a_notebook_changes_no_byte_of_its_cells(name):
  """make_notebooks builds the same file from an unchanged source, with the committed
  notebook's cell ids (its outputs aside: they come from executing it)."""
  first, second = (make_notebooks.build(name, run=False) for _ in range(2))
  assert nbformat.writes(first) == nbformat.writes(second)
  path = os.path.join(execute.NOTEBOOK_DIR, f"{name}.ipynb")
  committed = nbformat.read(path, as_version=4)
  assert [(c.id, c.cell_type, c.source, c.metadata) for c in committed.cells] == [
    (c.id, c.cell_type, c.source, c.metadata) for c in first.cells
  ], f"notebooks/{name}.ipynb: run `python notebooks/make_notebooks.py {name}`."
  with open(path) as f:  # Written as nbformat writes it (make_notebooks writes so).
    assert f.read() == nbformat.writes(committed) + "\n"


# The canonical source: no notebook metadata, and cells keep only their caption.
_JUPYTEXT = {"notebook_metadata_filter": "-all", "cell_metadata_filter": "caption,-all"}


@pytest.mark.parametrize("name", _EXPECTED)
def test_source_is_in_the_canonical_percent_format(name, tmp_path):
  # Writing the parsed source back gives the same text: no cell or caption is lost.
  path = os.path.join(execute.NOTEBOOK_DIR, f"{name}.py")
  nb = nbformat.from_dict(execute.read_source(path))
  nb.metadata = {"jupytext": dict(_JUPYTEXT)}
  with open(path) as f:
    assert jupytext.writes(nb, fmt="py:percent") == f.read()


# Every committed figure is at least this wide (pixels), as plot_style's minimum widths
# intend: legible on a screen without zooming.
_MIN_FIGURE_PX = 900


def _png_size(data: bytes) -> tuple[int, int]:
  # The IHDR chunk follows the 8-byte signature: length, type, then width and height.
  assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
  width, height = struct.unpack(">II", data[16:24])
  return width, height


@pytest.mark.parametrize("name", _EXPECTED)
def test_committed_figures_are_at_least_900_px_wide(name):
  nb = nbformat.read(os.path.join(execute.NOTEBOOK_DIR, f"{name}.ipynb"), as_version=4)
  widths = [
    _png_size(base64.b64decode(o["data"]["image/png"]))[0]
    for c in nb.cells
    if c.cell_type == "code"
    for o in c.get("outputs", [])
    if "image/png" in o.get("data", {})
  ]
  assert widths, f"notebooks/{name}.ipynb is committed without a figure."
  narrow = [w for w in widths if w < _MIN_FIGURE_PX]
  assert not narrow, f"notebooks/{name}.ipynb: figures {narrow} px wide (< {_MIN_FIGURE_PX})."


def test_figure_cells_keep_their_captions_in_paper_order():
  source = execute.read_source(os.path.join(execute.NOTEBOOK_DIR, "pkpo.py"))
  captions = [c.metadata["caption"] for c in source.cells if "caption" in c.metadata]
  assert [c.split(":")[0] for c in captions] == [
    "PKPO Fig. 1",
    "PKPO Fig. 2",
    "PKPO Fig. 4",
    "PKPO Fig. 5",
  ]


def test_committed_figures_have_complete_distinct_titles():
  # The page once titled figures with a caption's first six words: "Prompt weights w(p)
  # at n =", and "lm: Small LM" twice.
  titles = []
  for path in execute.notebook_paths():
    nb = nbformat.read(path, as_version=4)
    stem = os.path.splitext(os.path.basename(path))[0]
    with tempfile.TemporaryDirectory() as tmp:
      rows = execute.extract_figures(nb, stem, tmp)
    headings = [
      line.lstrip("#").strip()
      for cell in nb.cells
      if cell.cell_type == "markdown"
      for line in cell.source.splitlines()
      if line.startswith("#")
    ]
    for row in rows:  # Each title is a whole heading of its notebook (perhaps numbered).
      assert re.sub(r" \(\d+\)$", "", row["title"]) in headings, row
    titles += [(row["notebook"], row["title"]) for row in rows]
  assert len(titles) == len(set(titles)) and len(titles) >= 11


def test_extract_figures_names_and_captions_each_png(tmp_path):
  png = "iVBORw0KGgo="  # Base64 of the PNG signature: enough for a file to be written.
  nb = nbformat.v4.new_notebook(
    cells=[
      nbformat.v4.new_markdown_cell("## A heading\nmore text"),
      nbformat.v4.new_code_cell("plot()"),
      nbformat.v4.new_code_cell("plot()", metadata={"caption": "Own caption."}),
    ]
  )
  for cell in nb.cells[1:]:
    cell.outputs = [nbformat.v4.new_output("display_data", data={"image/png": png})]
  rows = execute.extract_figures(nb, "demo", str(tmp_path))
  assert rows == [
    {
      "notebook": "demo.ipynb",
      "figure": "demo_01.png",
      "title": "A heading",
      "caption": "[demo.ipynb] A heading",
    },
    {
      "notebook": "demo.ipynb",
      "figure": "demo_02.png",
      "title": "A heading (2)",
      "caption": "[demo.ipynb] Own caption.",
    },
  ]
  assert (tmp_path / "demo_02.png").read_bytes() == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize(
  "args, flag",
  [(["--out_dir={out}", "--notebooks=pkpo,nope"], "--notebooks"), ([], "--workdir")],
)
def test_binary_rejects_bad_flags(args, flag, tmp_path):
  out = tmp_path / "out"
  proc = subprocess.run(
    [sys.executable, "-m", "notebooks", *(a.format(out=out) for a in args)],
    cwd=REPO_ROOT,
    capture_output=True,
    text=True,
    timeout=WAIT_S,
  )
  assert proc.returncode != 0
  assert flag in proc.stderr
  assert not out.exists()
