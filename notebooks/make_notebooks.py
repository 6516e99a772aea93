r"""Converts the notebook sources ``notebooks/NAME.py`` to ``NAME.ipynb`` and executes them.

Usage (from the repository root):
  python notebooks/make_notebooks.py            # convert and execute every notebook
  python notebooks/make_notebooks.py pkpo lm    # only these
  python notebooks/make_notebooks.py --no-execute

Edit the ``.py`` sources (jupytext percent format), never the ``.ipynb`` files, then
rerun this script: the committed notebooks hold their outputs, executed at full size
(``MAXK_SMOKE`` unset) in place. Cell ids come from the cells' content, so rebuilding an
unchanged source changes no id.
"""

import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:  # Run as a script: make the `notebooks` package importable.
  sys.path.insert(0, ROOT)

import nbformat  # noqa: E402

from notebooks import execute  # noqa: E402


def build(name: str, *, run: bool = True) -> nbformat.NotebookNode:
  """The notebook ``NAME.ipynb`` built from its source ``notebooks/NAME.py``: its cells
  (ids from their content, ``execute.stable_cell_ids``), executed at full size in
  ``notebooks/`` when ``run``. An unchanged source builds the same cells, ids and
  metadata every time."""
  nb = execute.read_source(os.path.join(execute.NOTEBOOK_DIR, f"{name}.py"))
  if run:
    nb = execute.execute(nb, cwd=execute.NOTEBOOK_DIR, smoke=False)
    for cell in nb.cells:  # Keep committed files small and diffs quiet.
      cell.metadata.pop("execution", None)
  return nb


def main(argv: list[str]) -> None:
  names = [a for a in argv[1:] if not a.startswith("--")] or execute.source_names()
  options = [a for a in argv[1:] if a.startswith("--")]
  if set(options) - {"--no-execute"}:
    raise SystemExit(f"Unknown option(s) {sorted(set(options) - {'--no-execute'})}.")
  unknown = set(names) - set(execute.source_names())
  if unknown:
    raise SystemExit(f"Unknown notebook(s) {sorted(unknown)}; known: {execute.source_names()}.")
  for name in names:
    path = os.path.join(execute.NOTEBOOK_DIR, f"{name}.ipynb")
    start = time.time()
    nb = build(name, run="--no-execute" not in options)
    if "--no-execute" not in options:
      print(f"{name}: executed in {time.time() - start:.0f} s", flush=True)
    nbformat.write(nb, path)
    print(f"{name}: wrote {os.path.relpath(path, ROOT)}", flush=True)


if __name__ == "__main__":
  main(sys.argv)
