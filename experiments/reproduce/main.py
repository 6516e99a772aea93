r"""Reproduces every CPU-feasible headline figure and table into one folder.

Runs the experiment binaries (as subprocesses, exactly as a user would) at settings
that finish in minutes on 2 CPU cores, executes the notebooks, and writes an index
page (``index.md`` and ``index.html``) showing every figure and the key tables with
one line of explanation each.

Usage:
  python -m experiments.reproduce --out_dir=out/reproduce
  python -m experiments.reproduce --out_dir=/tmp/r --smoke   # tiny sizes, < 1 minute

Finished stages (their ``results.csv`` exists and their command is unchanged) are
reused when the command is run again; ``--force`` reruns them.  Each stage's output
goes to ``OUT_DIR/<stage>/`` (its log in ``OUT_DIR/<stage>/log.txt``).
"""

from __future__ import annotations

import os
import sys

from absl import flags

from experiments import outputs
from experiments.reproduce import reproduction
from experiments.reproduce import stages as stages_lib

_OUT_DIR = flags.DEFINE_string("out_dir", "out/reproduce", "Output folder (index.md/.html).")
_SEED = flags.DEFINE_integer("seed", 0, "Seed passed to every stage.")
_SMOKE = flags.DEFINE_bool("smoke", False, "Tiny sizes (for tests): seconds, not minutes.")
_LM = flags.DEFINE_bool("lm", True, "Run the small-LM experiment (experiments/lm, tiny config).")
_NOTEBOOKS = flags.DEFINE_bool(
  "notebooks", True, "Execute notebooks/*.ipynb and collect their figures."
)
_STAGES = flags.DEFINE_list(
  "stages", ["all"], f"Stages to run ('all' or a subset of {list(stages_lib.STAGE_NAMES)})."
)
_FORCE = flags.DEFINE_bool("force", False, "Rerun stages whose outputs already exist.")
_TIMEOUT = flags.DEFINE_integer("stage_timeout", 1200, "Seconds before a stage is killed.")

flags.register_validator(
  "stages",
  lambda names: set(names) <= {"all", *stages_lib.STAGE_NAMES},
  message=f"--stages must be 'all' or a subset of {list(stages_lib.STAGE_NAMES)}.",
)
flags.register_validator(
  "stage_timeout", lambda s: s > 0, message="--stage_timeout must be positive (seconds)."
)


def main(argv):
  out_dir = outputs.start_run(argv, _OUT_DIR.value)
  stages = reproduction.select_stages(
    _STAGES.value,
    seed=_SEED.value,
    smoke=_SMOKE.value,
    lm=_LM.value,
    notebooks=_NOTEBOOKS.value,
  )
  statuses, _ = reproduction.run(
    out_dir,
    stages,
    seed=_SEED.value,
    smoke=_SMOKE.value,
    force=_FORCE.value,
    timeout=_TIMEOUT.value,
    base_env=os.environ,
  )
  failed = [name for name, (status, _) in statuses.items() if status.startswith("FAILED")]
  if failed:
    print(f"Failed stages: {failed}", file=sys.stderr)
    sys.exit(1)
