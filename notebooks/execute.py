r"""Converts the notebook sources, executes notebooks and extracts their figures.

Each notebook ``notebooks/NAME.ipynb`` is generated from its jupytext percent-format
source ``notebooks/NAME.py`` (cells start at ``# %%`` lines; a figure's caption is the
``caption`` entry of its cell header, e.g. ``# %% caption="..."``).

``python -m notebooks --workdir=DIR`` runs ``run_notebooks`` as a binary.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
import csv
import glob
import hashlib
import logging
import os
import tempfile
import time

import nbformat

NOTEBOOK_DIR = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(NOTEBOOK_DIR)
_KERNELSPEC = {"name": "python3", "display_name": "Python 3", "language": "python"}


def notebook_paths() -> list[str]:
  """The committed notebooks, ``notebooks/*.ipynb``, sorted."""
  return sorted(glob.glob(os.path.join(NOTEBOOK_DIR, "*.ipynb")))


def source_names() -> list[str]:
  """Names of the notebook sources: every ``notebooks/NAME.py`` with a ``# %%`` cell."""
  names = []
  for path in sorted(glob.glob(os.path.join(NOTEBOOK_DIR, "*.py"))):
    with open(path) as f:
      if any(line.startswith("# %%") for line in f):
        names.append(os.path.splitext(os.path.basename(path))[0])
  return names


def read_source(path: str) -> nbformat.NotebookNode:
  """The notebook (without outputs) that the percent-format source ``path`` describes,
  its cells' ids from :func:`stable_cell_ids`."""
  import jupytext  # pylint: disable=g-import-not-at-top

  nb = jupytext.read(path, fmt="py:percent")
  nb.metadata = {"kernelspec": dict(_KERNELSPEC), "language_info": {"name": "python"}}
  for cell, cell_id in zip(nb.cells, stable_cell_ids(nb.cells)):
    cell.id = cell_id
  return nb


def stable_cell_ids(cells: Sequence[nbformat.NotebookNode]) -> list[str]:
  """An id for each cell from its content: the first 8 hex digits of the SHA-256 of its
  type and source, with ``-2``, ``-3``, ... on the second, third, ... cell of the same
  content (ids must be unique within a notebook).

  Not nbformat's random ids, which would rewrite every id of a notebook at each rebuild:
  an unchanged source rebuilds with the same ids, and an edit changes the ids of the
  edited cells only (ids from the cells' positions would renumber every cell after an
  inserted one).
  """
  ids: list[str] = []
  seen: dict[str, int] = {}
  for cell in cells:
    digest = hashlib.sha256(f"{cell.cell_type}\0{cell.source}".encode()).hexdigest()[:8]
    seen[digest] = seen.get(digest, 0) + 1
    ids.append(digest if seen[digest] == 1 else f"{digest}-{seen[digest]}")
  return ids


# nbclient's log: its warnings, not its note on each notebook it starts.
_CLIENT_LOG = logging.getLogger("notebooks.execute.nbclient")
_CLIENT_LOG.setLevel(logging.WARNING)

# Per cell; a limit that only ends a hung kernel, never a slow but working machine.
CELL_TIMEOUT_S = 1800


def execute(
  nb: nbformat.NotebookNode, *, cwd: str, timeout: int = CELL_TIMEOUT_S, smoke: bool | None = None
) -> nbformat.NotebookNode:
  """Executes ``nb`` top to bottom in a fresh python3 kernel running in ``cwd``.

  The repository root is put on the kernel's ``PYTHONPATH``; ``smoke`` sets
  ``MAXK_SMOKE`` for the kernel (None: inherit the environment). Returns ``nb`` with
  its outputs; a cell that raises raises ``nbclient.exceptions.CellExecutionError``.

  The kernel talks to this process over Unix sockets in a private temporary folder
  (jupyter's IPC transport), not over TCP on localhost: nothing else can listen in, and
  the kernel does not print its warning that it is "running over TCP without
  encryption".
  """
  import nbclient  # pylint: disable=g-import-not-at-top
  from traitlets.config import Config  # pylint: disable=g-import-not-at-top

  env_before = {name: os.environ.get(name) for name in ("MAXK_SMOKE", "PYTHONPATH")}
  if smoke is not None:
    os.environ["MAXK_SMOKE"] = "1" if smoke else "0"
  old_path = env_before["PYTHONPATH"]
  os.environ["PYTHONPATH"] = ROOT + (os.pathsep + old_path if old_path else "")
  os.environ.setdefault("JAX_PLATFORMS", "cpu")
  try:
    with tempfile.TemporaryDirectory(prefix="maxk-kernel-") as sockets:
      config = Config()
      config.KernelManager.transport = "ipc"
      config.KernelManager.ip = os.path.join(sockets, "kernel")  # Sockets kernel-1, -2, ...
      client = nbclient.NotebookClient(
        nb,
        timeout=timeout,
        kernel_name="python3",
        resources={"metadata": {"path": cwd}},
        config=config,
        log=_CLIENT_LOG,
      )
      client.execute()
  finally:  # The kernel inherits the environment; the caller's is left as it was.
    for name, value in env_before.items():
      if value is None:
        os.environ.pop(name, None)
      else:
        os.environ[name] = value
  return nb


def execute_notebook(
  path: str, *, timeout: int = CELL_TIMEOUT_S, smoke: bool | None = None
) -> nbformat.NotebookNode:
  """Reads the notebook ``path`` and executes it in its own folder (see ``execute``)."""
  nb = nbformat.read(path, as_version=4)
  return execute(nb, cwd=os.path.dirname(os.path.abspath(path)), timeout=timeout, smoke=smoke)


def extract_figures(nb: nbformat.NotebookNode, stem: str, workdir: str) -> list[dict[str, str]]:
  """Saves every PNG output of ``nb`` as ``workdir/<stem>_<i>.png``; returns listing rows.

  A row has the columns notebook, figure, title, caption. The title of a figure is the
  nearest markdown heading above its cell (``## Fig. 4: gradient variance vs n``), with
  ``(2)``, ``(3)``, ... after a heading's second and later figures; its caption is the
  ``caption`` entry of its cell's metadata, else the first line of the nearest markdown
  cell above it.
  """
  rows: list[dict[str, str]] = []
  headings: list[str] = []  # The heading of each row's figure.
  last_md, heading, i = "", "", 0
  for cell in nb.cells:
    if cell.cell_type == "markdown":
      lines = [line.strip() for line in cell.source.splitlines() if line.strip()]
      text = [line.strip("# ").strip() for line in lines]
      last_md = text[0] if text else last_md
      heading = next((t for line, t in zip(lines, text) if line.startswith("#")), heading)
      continue
    for output in cell.get("outputs", []):
      data = output.get("data", {})
      if "image/png" not in data:
        continue
      i += 1
      name = f"{stem}_{i:02d}.png"
      with open(os.path.join(workdir, name), "wb") as f:
        f.write(base64.b64decode(data["image/png"]))
      cap = cell.metadata.get("caption", last_md)
      same = headings.count(heading)
      headings.append(heading)
      title = (heading or f"figure {i}") + (f" ({same + 1})" if same else "")
      rows.append(
        {
          "notebook": f"{stem}.ipynb",
          "figure": name,
          "title": title,
          "caption": f"[{stem}.ipynb] {cap}",
        }
      )
  return rows


def run_notebooks(workdir: str, paths: Sequence[str] | None = None) -> list[dict[str, str]]:
  """Executes each notebook (default: all), saving copies, figures and ``results.csv``."""
  os.makedirs(workdir, exist_ok=True)
  rows = []
  for path in paths or notebook_paths():
    stem = os.path.splitext(os.path.basename(path))[0]
    start = time.time()
    print(f"  running notebook {stem} ...", flush=True)
    nb = execute_notebook(path)
    nbformat.write(nb, os.path.join(workdir, f"{stem}.ipynb"))
    rows += extract_figures(nb, stem, workdir)
    print(f"  notebook {stem}: {time.time() - start:.0f} s", flush=True)
  with open(os.path.join(workdir, "results.csv"), "w", newline="") as f:
    writer = csv.DictWriter(f, fieldnames=["notebook", "figure", "title", "caption"])
    writer.writeheader()
    writer.writerows(rows)
  return rows
