"""Executes the notebooks and collects their figures (the reproduction's notebooks stage).

Usage:
  python -m notebooks --workdir=DIR [--notebooks=pkpo,lm]

Executes each notebooks/*.ipynb in a fresh kernel (MAXK_SMOKE is passed through),
saves the executed copies and every PNG output into DIR and lists the figures in
DIR/results.csv (columns notebook, figure, title, caption). --out_dir is the old name of
--workdir.
"""

from collections.abc import Sequence
import os

from absl import app
from absl import flags

from experiments import command_line
from notebooks import execute

_WORKDIR = flags.DEFINE_string("workdir", None, "Folder for executed notebooks and figures.")
flags.DEFINE_alias("out_dir", "workdir")
_NOTEBOOKS = flags.DEFINE_list("notebooks", [], "Notebook names to run (default: every one).")


def _validate_names(names: list[str]) -> bool:
  known = {os.path.splitext(os.path.basename(p))[0] for p in execute.notebook_paths()}
  return set(names) <= known


flags.mark_flag_as_required("workdir")
flags.register_validator(
  "notebooks",
  _validate_names,
  message="--notebooks: names must be notebooks in notebooks/ (e.g. pkpo,lm).",
)


def main(argv: Sequence[str]) -> None:
  if len(argv) > 1:
    raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
  names = _NOTEBOOKS.value
  paths = [os.path.join(execute.NOTEBOOK_DIR, f"{name}.ipynb") for name in names] or None
  execute.run_notebooks(_WORKDIR.value, paths)


if __name__ == "__main__":
  command_line.run(main)
