"""The reproduction: runs the selected stages in order, then writes the index page.

Each stage is a subprocess run by :func:`experiments.reproduce.runner.run_stage`
(outputs in ``OUT_DIR/<stage>/``); stages finished earlier in the same folder with the
same command are reused unless ``force``. Stages not run now but finished earlier
stay on the index page.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
import os
import time

from experiments.reproduce import index_page
from experiments.reproduce import runner
from experiments.reproduce import stages as stages_lib

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def select_stages(
  names: Sequence[str], *, seed: int, smoke: bool, lm: bool, notebooks: bool
) -> list[stages_lib.Stage]:
  """The stages named in ``names`` ("all": every stage), less the LM and notebook
  stages where ``lm`` / ``notebooks`` is off, in the reproduction's order."""
  wanted = set(stages_lib.STAGE_NAMES) if "all" in names else set(names)
  if not lm:
    wanted.discard("lm")
  if not notebooks:
    wanted.discard("notebooks")
  return [stage for stage in stages_lib.stages(seed=seed, smoke=smoke) if stage.name in wanted]


def stage_env(
  stage: str, out_dir: str, *, smoke: bool, base: Mapping[str, str], root: str = ROOT
) -> dict[str, str]:
  """The environment of ``stage``'s subprocess: ``base`` plus the repository on the
  path, the CPU backend by default, ``MAXK_SMOKE`` for smoke runs, and for the
  notebooks this run's LM results (``lm.ipynb`` plots them)."""
  env = dict(base)
  lm_results = os.path.join(out_dir, "lm", "results.csv")
  if stage == "notebooks" and os.path.exists(lm_results):
    env["MAXK_LM_RESULTS"] = lm_results
  env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
  env.setdefault("JAX_PLATFORMS", "cpu")
  if smoke:
    env["MAXK_SMOKE"] = "1"
  return env


def run(
  out_dir: str,
  stages: Sequence[stages_lib.Stage],
  *,
  seed: int,
  smoke: bool,
  force: bool,
  timeout: float,
  base_env: Mapping[str, str],
) -> tuple[dict[str, tuple[str, float]], tuple[str, str]]:
  """Runs ``stages`` into ``out_dir`` and writes its index page.

  Returns:
    ``(statuses, (index_md, index_html))``: per stage shown on the page, its status
    ("ok", "reused", "FAILED (...)", "from an earlier run") and seconds.
  """
  total_start = time.time()
  statuses: dict[str, tuple[str, float]] = {}
  print(f"Reproducing {len(stages)} stages into {out_dir}", flush=True)
  for i, stage in enumerate(stages, 1):
    print(
      f"[{i}/{len(stages)}] {stage.name}: {stage.title} (expected ~{stage.expected_s} s"
      f"{', smoke' if smoke else ''}) ...",
      flush=True,
    )
    status, seconds = runner.run_stage(
      stage,
      out_dir,
      cwd=ROOT,
      env=stage_env(stage.name, out_dir, smoke=smoke, base=base_env),
      force=force,
      timeout=timeout,
    )
    statuses[stage.name] = (status, seconds)
    elapsed = time.time() - total_start
    print(
      f"[{i}/{len(stages)}] {stage.name}: {status} in {seconds:.0f} s (total {elapsed:.0f} s)",
      flush=True,
    )
  shown, skipped = [], []
  for stage in stages_lib.stages(seed=seed, smoke=smoke):
    if stage.name in statuses:
      shown.append(stage)
    elif os.path.exists(os.path.join(out_dir, stage.name, runner.DONE_FILE)):
      shown.append(stage)
      statuses[stage.name] = ("from an earlier run", 0.0)
    else:
      skipped.append(stage.name)
  index = index_page.write_index(
    out_dir,
    shown,
    statuses,
    skipped=skipped,
    total_seconds=time.time() - total_start,
    smoke=smoke,
  )
  print(
    f"Done in {time.time() - total_start:.0f} s. Index: {index[0]}\n{' ' * 18}{index[1]}",
    flush=True,
  )
  return statuses, index
