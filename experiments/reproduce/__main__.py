"""Reproduces every CPU-feasible headline figure and table into one folder.

Runs the experiment binaries (as subprocesses, exactly as a user would) at settings
that finish in minutes on 2 CPU cores, executes the notebooks, and writes an index
page (index.md and index.html) showing every figure and the key tables with one
line of explanation each.

Usage:
  python -m experiments.reproduce --workdir=out/reproduce
  python -m experiments.reproduce --workdir=/tmp/r --smoke   # tiny sizes, < 1 minute

A stage's finished outputs are reused when it is run again with the same identity
(its command, environment settings, sizes and the outputs of earlier stages it
reads); --force reruns them. Stages have no time limit unless --stage_timeout sets
one. Each stage's output goes to WORKDIR/<stage>/ (its log in
WORKDIR/<stage>/log.txt). Exits 1 when a stage fails, saying how to go on.
"""

from absl import app
from absl import flags

from experiments.reproduce import main

# --help lists the flags defined in main.py, not only this module's.
flags.adopt_module_key_flags(main)

if __name__ == "__main__":
  app.run(main.main)
