"""Reproduces every CPU-feasible headline figure and table into one folder.

Runs the experiment binaries (as subprocesses, exactly as a user would) at settings
that finish in minutes on 2 CPU cores, executes the notebooks, and writes an index
page (index.md and index.html) showing every figure and the key tables with one
line of explanation each.

Usage:
  python -m experiments.reproduce --workdir=out/reproduce     # about 5 minutes
  python -m experiments.reproduce --workdir=/tmp/r --smoke   # tiny sizes, about 1.7 minutes

(on 2 idle CPU cores, as measured for each stage's expected_s in stages.py; a
shared machine takes longer.)

A stage's finished outputs are reused when it is run again with the same identity
(its command, environment settings, sizes and the outputs of earlier stages it
reads; paths relative to the folder and the checkout, so a copied or moved folder is
reused too); --force reruns them. Finished outputs are never replaced silently: when a
selected stage's folder holds finished outputs of another identity (a full run's,
then --smoke or another --seed, or an edited config), the run is refused before
anything is written, naming those stages; --force replaces them. A stage that failed
or was interrupted has no finished outputs: it runs again without --force (so does a
stage whose input an earlier stage of the same run has just rewritten). The page shows
each stage's seconds from when it ran, also when reused. Stages have no time limit
unless --stage_timeout sets one. Each stage's output goes to WORKDIR/<stage>/ (its log
in WORKDIR/<stage>/log.txt). Exits 1 when a stage fails, saying how to go on; on
Ctrl-C stops the running stage and exits 130 with one line naming it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
import os
import sys
from typing import Any

from absl import flags

from experiments import outputs
from experiments.reproduce import reproduction
from experiments.reproduce import stages as stages_lib

_WORKDIR = flags.DEFINE_string("workdir", "out/reproduce", "Output folder (index.md/.html).")
flags.DEFINE_alias("out_dir", "workdir")
_SEED = flags.DEFINE_integer("seed", 0, "Seed passed to every stage.")
_SMOKE_S = sum(stage.expected_s for stage in stages_lib.stages(seed=0, smoke=True))
_SMOKE = flags.DEFINE_bool(
  "smoke",
  False,
  f"Tiny sizes (for tests; ~{_SMOKE_S} s in all on 2 idle CPU cores): not the headline numbers.",
)
_LM = flags.DEFINE_bool("lm", True, "Run the small-LM experiment (experiments/lm, tiny config).")
_NOTEBOOKS = flags.DEFINE_bool(
  "notebooks", True, "Execute notebooks/*.ipynb and collect their figures."
)
_STAGES = flags.DEFINE_list(
  "stages", ["all"], f"Stages to run ('all' or a subset of {list(stages_lib.STAGE_NAMES)})."
)
_FORCE = flags.DEFINE_bool(
  "force", False, "Rerun stages whose finished outputs of the same command already exist."
)
_TIMEOUT = flags.DEFINE_integer(
  "stage_timeout", 0, "Seconds before a stage is killed (0: no limit, the default)."
)

flags.register_validator(
  "stages",
  lambda names: set(names) <= {"all", *stages_lib.STAGE_NAMES},
  message=f"--stages must be 'all' or a subset of {list(stages_lib.STAGE_NAMES)}.",
)
flags.register_validator(
  "stage_timeout", lambda s: s >= 0, message="--stage_timeout must be >= 0 seconds (0: no limit)."
)


def _selects_a_stage(values: Mapping[str, Any]) -> bool:
  error = reproduction.selection_error(
    values["stages"], lm=values["lm"], notebooks=values["notebooks"]
  )
  if error:
    raise flags.ValidationError(error)
  return True


flags.register_multi_flags_validator(["stages", "lm", "notebooks"], _selects_a_stage)


def how_to_continue(failed: Mapping[str, str]) -> str:
  """The message for failed stages (name -> status): what failed, and how to go on."""
  lines = [f"{name}: {status}" for name, status in failed.items()]
  lines.append(
    "To continue, rerun the same command: finished stages are reused and only the failed "
    "ones run again (--force reruns every selected stage)."
  )
  if any("--stage_timeout" in status for status in failed.values()):
    lines.append(
      "A stage ran out of time: raise --stage_timeout=SECONDS, or set --stage_timeout=0 (no limit)."
    )
  return "\n".join(lines)


def refusal(workdir: str, replaced: Sequence[str]) -> str:
  """The one line refusing to replace the finished outputs of the stages ``replaced``."""
  return (
    f"{outputs.binary_name()}: {workdir} holds finished results of {', '.join(replaced)} "
    "made with other settings (sizes, seed, config, command or inputs); this run would "
    "replace them: nothing was changed. Rerun with --force to replace them, or choose "
    "another --workdir."
  )


def interrupted(stage: str | None) -> str:
  """The one line after Ctrl-C (``stage``: the stage it stopped, or None)."""
  where = f" while stage {stage} ran (stopped; its folder is not kept as finished)" if stage else ""
  return (
    f"{outputs.binary_name()}: interrupted{where}. To go on, rerun the same command: "
    "finished stages are reused."
  )


def main(argv: Sequence[str]) -> None:
  """Runs the selected stages into ``--workdir``; exits 1 naming the failed ones, or
  refusing (before anything is written) to replace finished outputs of another identity
  without ``--force``; exits 130 on Ctrl-C, naming the stage it stopped."""
  try:
    _run(argv)
  except KeyboardInterrupt as e:
    if sys.stdout.isatty():  # End the stage's live progress line.
      print(flush=True)
    stage = e.stage if isinstance(e, reproduction.Interrupted) else None
    print(interrupted(stage), file=sys.stderr, flush=True)
    raise SystemExit(130) from None


def _run(argv: Sequence[str]) -> None:
  stages = reproduction.select_stages(
    _STAGES.value,
    seed=_SEED.value,
    smoke=_SMOKE.value,
    lm=_LM.value,
    notebooks=_NOTEBOOKS.value,
  )
  # Stray positional arguments are start_run's usage error, before this check.
  if not _FORCE.value and len(argv) <= 1:
    replaced = reproduction.replaced_stages(
      os.path.abspath(_WORKDIR.value), stages, base_env=os.environ
    )
    if replaced:
      raise SystemExit(refusal(_WORKDIR.value, replaced))
  workdir = outputs.start_run(argv, _WORKDIR.value)
  statuses, _ = reproduction.run(
    workdir,
    stages,
    seed=_SEED.value,
    smoke=_SMOKE.value,
    force=_FORCE.value,
    timeout=_TIMEOUT.value or None,
    base_env=os.environ,
  )
  failed = {
    stage.name: statuses[stage.name][0]
    for stage in stages
    if statuses[stage.name][0].startswith("FAILED")
  }
  if failed:
    print(how_to_continue(failed), file=sys.stderr)
    sys.exit(1)
