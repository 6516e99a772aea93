"""The reproduction: runs the selected stages in order, then writes the index page.

Each stage is a subprocess run by :func:`experiments.reproduce.runner.run_stage`
(outputs in ``OUT_DIR/<stage>/``); stages finished earlier in the same folder with the
same identity (command, environment settings, sizes and inputs) are reused unless
``force``. Stages not run now but run earlier stay on the index page, each with its
own command, sizes and status, and each with the seconds it took when it ran.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
import os
import time

from experiments.reproduce import index_page
from experiments.reproduce import page as page_lib
from experiments.reproduce import runner
from experiments.reproduce import stages as stages_lib

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def selected_names(names: Sequence[str], *, lm: bool, notebooks: bool) -> list[str]:
  """The stage names ``names`` select ("all": every stage), less "lm" / "notebooks"
  where ``lm`` / ``notebooks`` is off, in the reproduction's order (may be empty)."""
  wanted = set(stages_lib.STAGE_NAMES) if "all" in names else set(names)
  if not lm:
    wanted.discard("lm")
  if not notebooks:
    wanted.discard("notebooks")
  return [name for name in stages_lib.STAGE_NAMES if name in wanted]


def selection_error(names: Sequence[str], *, lm: bool, notebooks: bool) -> str | None:
  """Why ``--stages=names`` with ``--lm`` / ``--notebooks`` selects no stage (or names
  an unknown one), or None."""
  choices = f"'all' or some of {list(stages_lib.STAGE_NAMES)}"
  unknown = sorted(set(names) - {"all", *stages_lib.STAGE_NAMES})
  if unknown:
    return f"--stages: unknown stages {unknown}; name {choices}."
  if not names:
    return f"--stages is empty: name {choices}."
  if selected_names(names, lm=lm, notebooks=notebooks):
    return None
  off = [f"--no{name}" for name, on in (("lm", lm), ("notebooks", notebooks)) if not on]
  return f"--stages={','.join(names)} with {' '.join(off)} selects no stage."


def select_stages(
  names: Sequence[str], *, seed: int, smoke: bool, lm: bool, notebooks: bool
) -> list[stages_lib.Stage]:
  """The stages ``names`` select (see :func:`selected_names`), in the reproduction's order.

  Raises:
    ValueError: where they select no stage (see :func:`selection_error`).
  """
  error = selection_error(names, lm=lm, notebooks=notebooks)
  if error:
    raise ValueError(error)
  wanted = selected_names(names, lm=lm, notebooks=notebooks)
  return [stage for stage in stages_lib.stages(seed=seed, smoke=smoke) if stage.name in wanted]


def stage_env(
  stage: stages_lib.Stage, workdir: str, *, base: Mapping[str, str], root: str = ROOT
) -> dict[str, str]:
  """The environment of ``stage``'s subprocess: ``base`` plus the repository on the
  path, the CPU backend by default, the stage's own settings (``Stage.env``), and each
  of its inputs that exists (``Stage.inputs``; an absent one is unset, so that a value
  in ``base`` never stands in for this run's)."""
  env = dict(base)
  for name, rel in stage.inputs:
    path = os.path.join(workdir, rel)
    if os.path.exists(path):
      env[name] = path
    else:
      env.pop(name, None)
  env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
  env.setdefault("JAX_PLATFORMS", "cpu")
  env.update(stage.env)
  return env


class Interrupted(KeyboardInterrupt):
  """Ctrl-C stopped the reproduction while stage ``stage`` ran (and the stage with it)."""

  def __init__(self, stage: str):
    super().__init__(stage)
    self.stage = stage


def replaced_stages(
  workdir: str,
  stages: Sequence[stages_lib.Stage],
  *,
  base_env: Mapping[str, str],
  root: str = ROOT,
) -> list[str]:
  """Names of ``stages`` whose finished outputs in ``workdir`` running them now (without
  ``force``) would replace: their folder holds a finished stage of another identity
  (another command, config, sizes, seed, backend or inputs; see
  ``runner.would_replace``). A folder of a failed or interrupted stage is not finished.
  Only reads the file system."""
  return [
    stage.name
    for stage in stages
    if runner.would_replace(
      stage, workdir, stage_env(stage, workdir, base=base_env, root=root), cwd=root
    )
  ]


def _ran(record: runner.StageRecord) -> str:
  """When a stage's outputs were made and how long it took: "ran DATE, N s"."""
  return f"ran {record.ended}, {record.seconds:.0f} s" if record.ended else "ran earlier"


def shown_stages(
  workdir: str,
  catalogue: Sequence[stages_lib.Stage],
  statuses: Mapping[str, tuple[str, float]],
) -> tuple[list[page_lib.ShownStage], list[str]]:
  """The stages of the index page, in ``catalogue``'s order, and the names skipped.

  A stage run now shows ``statuses``' status; one reused shows "reused (ran DATE, N s)";
  one run earlier in ``workdir`` shows "from an earlier run (ran DATE, N s)" or its
  failure; each shows the command, sizes and seconds of its own record
  (``runner.StageRecord``: the wall time of the run that made its outputs), not this
  run's flags.
  """
  shown, skipped = [], []
  for stage in catalogue:
    record = runner.read_record(os.path.join(workdir, stage.name))
    if stage.name in statuses and (statuses[stage.name][0] != "reused" or record is None):
      status, seconds = statuses[stage.name]
    elif record is None:
      skipped.append(stage.name)
      continue
    elif stage.name in statuses:
      status, seconds = f"reused ({_ran(record)})", record.seconds
    elif record.ok:
      status, seconds = f"from an earlier run ({_ran(record)})", record.seconds
    else:
      status = record.status.replace("FAILED", "FAILED in an earlier run", 1)
      seconds = record.seconds
    command = record.command if record else stage.shown_command(stage.name)
    smoke = record.smoke if record else stage.smoke
    shown.append(page_lib.ShownStage(stage.name, stage.title, command, smoke, status, seconds))
  return shown, skipped


def run(
  workdir: str,
  stages: Sequence[stages_lib.Stage],
  *,
  seed: int,
  smoke: bool,
  force: bool,
  timeout: float | None,
  base_env: Mapping[str, str],
) -> tuple[dict[str, tuple[str, float]], tuple[str, str]]:
  """Runs ``stages`` into ``workdir`` and writes its index page.

  ``timeout``: seconds before a stage is killed (None: no limit).

  Returns:
    ``(statuses, (index_md, index_html))``: per stage shown on the page, its status
    ("ok", "reused (ran DATE, N s)", "FAILED (...)", "from an earlier run (ran DATE,
    N s)", "FAILED in an earlier run (...)") and the seconds it took when it ran.

  Raises:
    Interrupted: Ctrl-C while a stage ran (naming it; the stage is stopped, and its
      folder is not taken for finished outputs).
  """
  total_start = time.time()
  statuses: dict[str, tuple[str, float]] = {}
  print(f"Reproducing {len(stages)} stages into {workdir}", flush=True)
  for i, stage in enumerate(stages, 1):
    print(
      f"[{i}/{len(stages)}] {stage.name}: {stage.title} (expected ~{stage.expected_s} s"
      f"{', smoke' if stage.smoke else ''}) ...",
      flush=True,
    )
    try:
      status, seconds = runner.run_stage(
        stage,
        workdir,
        cwd=ROOT,
        env=stage_env(stage, workdir, base=base_env),
        force=force,
        timeout=timeout,
      )
    except KeyboardInterrupt:
      raise Interrupted(stage.name) from None
    statuses[stage.name] = (status, seconds)
    elapsed = time.time() - total_start
    record = runner.read_record(os.path.join(workdir, stage.name))
    done = f"reused ({_ran(record)})" if status == "reused" and record else status
    print(
      f"[{i}/{len(stages)}] {stage.name}: {done} in {seconds:.0f} s (total {elapsed:.0f} s)",
      flush=True,
    )
  shown, skipped = shown_stages(workdir, stages_lib.stages(seed=seed, smoke=smoke), statuses)
  index = index_page.write_index(
    workdir, shown, skipped=skipped, total_seconds=time.time() - total_start
  )
  print(
    f"Done in {time.time() - total_start:.0f} s. Index: {index[0]}\n{' ' * 18}{index[1]}",
    flush=True,
  )
  return {s.name: (s.status, s.seconds) for s in shown}, index
