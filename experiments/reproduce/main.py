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
import time

from absl import flags

from experiments import outputs
from experiments.reproduce import index_page
from experiments.reproduce import runner
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

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _selected() -> list[stages_lib.Stage]:
  names = stages_lib.STAGE_NAMES if "all" in _STAGES.value else _STAGES.value
  excluded = {"lm"} if not _LM.value else set()
  excluded |= {"notebooks"} if not _NOTEBOOKS.value else set()
  return [
    stage
    for stage in stages_lib.stages(seed=_SEED.value, smoke=_SMOKE.value)
    if stage.name in names and stage.name not in excluded
  ]


def _env(stage: str, out_dir: str) -> dict[str, str]:
  env = dict(os.environ)
  lm_results = os.path.join(out_dir, "lm", "results.csv")
  if stage == "notebooks" and os.path.exists(lm_results):
    env["MAXK_LM_RESULTS"] = lm_results  # lm.ipynb plots this run's LM outputs.
  env["PYTHONPATH"] = _ROOT + os.pathsep + env.get("PYTHONPATH", "")
  env.setdefault("JAX_PLATFORMS", "cpu")
  if _SMOKE.value:
    env["MAXK_SMOKE"] = "1"
  return env


def main(argv):
  out_dir = outputs.start_run(argv, _OUT_DIR.value)
  stages = _selected()
  total_start = time.time()
  statuses = {}
  print(f"Reproducing {len(stages)} stages into {out_dir}", flush=True)
  for i, stage in enumerate(stages, 1):
    print(
      f"[{i}/{len(stages)}] {stage.name}: {stage.title} (expected ~{stage.expected_s} s"
      f"{', smoke' if _SMOKE.value else ''}) ...",
      flush=True,
    )
    status, seconds = runner.run_stage(
      stage,
      out_dir,
      cwd=_ROOT,
      env=_env(stage.name, out_dir),
      force=_FORCE.value,
      timeout=_TIMEOUT.value,
    )
    statuses[stage.name] = (status, seconds)
    elapsed = time.time() - total_start
    print(
      f"[{i}/{len(stages)}] {stage.name}: {status} in {seconds:.0f} s (total {elapsed:.0f} s)",
      flush=True,
    )
  # Stages not run now but finished earlier in this folder stay on the index page.
  shown, skipped = [], []
  for stage in stages_lib.stages(seed=_SEED.value, smoke=_SMOKE.value):
    if stage.name in statuses:
      shown.append(stage)
    elif os.path.exists(os.path.join(out_dir, stage.name, runner.DONE_FILE)):
      shown.append(stage)
      statuses[stage.name] = ("from an earlier run", 0.0)
    else:
      skipped.append(stage.name)
  md, html = index_page.write_index(
    out_dir,
    shown,
    statuses,
    skipped=skipped,
    total_seconds=time.time() - total_start,
    smoke=_SMOKE.value,
  )
  print(
    f"Done in {time.time() - total_start:.0f} s. Index: {md}\n                  {html}", flush=True
  )
  failed = [name for name, (status, _) in statuses.items() if status.startswith("FAILED")]
  if failed:
    print(f"Failed stages: {failed}", file=sys.stderr)
    sys.exit(1)
