"""Every notebook runs top to bottom in a fresh kernel at smoke size (MAXK_SMOKE=1).

The committed notebooks carry their full-size outputs; this test re-executes each one
(without saving) so that a notebook can never rot.
"""

import os

import nbformat
import pytest

from notebooks import execute
from tests import WAIT_S

# Integration: every notebook in a fresh kernel (README's second test step, `-m slow`).
pytestmark = pytest.mark.slow

_NOTEBOOKS = execute.notebook_paths()


def test_there_are_notebooks():
  names = {os.path.basename(p) for p in _NOTEBOOKS}
  assert {
    "pkpo.ipynb",
    "best_of_n.ipynb",
    "max_at_k.ipynb",
    "lm.ipynb",
    "prompt_weights.ipynb",
  } <= names


@pytest.mark.parametrize("path", _NOTEBOOKS, ids=os.path.basename)
def test_notebook_runs_in_smoke_mode(path):
  committed = nbformat.read(path, as_version=4)
  # Committed with outputs (a figure at least, except where no data exist yet).
  outputs = [o for c in committed.cells if c.cell_type == "code" for o in c.get("outputs", [])]
  assert outputs, f"{path} is committed without outputs."
  nb = execute.execute_notebook(path, timeout=WAIT_S, smoke=True)
  errors = [
    o
    for c in nb.cells
    if c.cell_type == "code"
    for o in c.get("outputs", [])
    if o.get("output_type") == "error"
  ]
  assert not errors
  text = "".join(
    o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
  )
  assert "SMOKE = True" in text
