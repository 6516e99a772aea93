"""Writing stage results, and the page's view of their stage, for the index-page tests."""

import csv

from experiments.reproduce import page as page_lib
from experiments.reproduce import stages as stages_lib


def write_csv(path, header, rows):
  path.parent.mkdir(parents=True, exist_ok=True)
  with open(path, "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(header)
    w.writerows(rows)


def shown_stage(name, status="ok", *, seed=0, smoke=True, seconds=1.0):
  """The index page's view of stage ``name`` run with ``seed`` and ``smoke``."""
  stage = next(s for s in stages_lib.stages(seed=seed, smoke=smoke) if s.name == name)
  return page_lib.ShownStage(name, stage.title, stage.shown_command(name), smoke, status, seconds)
