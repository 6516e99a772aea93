"""The reproduction's stages: the commands each stage runs."""

import sys

from experiments.reproduce import runner
from experiments.reproduce import stages as stages_lib


def test_stage_commands():
  full = {s.name: s for s in stages_lib.stages(seed=3, smoke=False)}
  assert tuple(full) == stages_lib.STAGE_NAMES
  assert full["lm"].command("/w") == [
    sys.executable,
    "-m",
    "experiments.lm.main",
    "--workdir=/w",
    "--config=experiments/lm/configs/tiny.py",
    "--config.seed=3",
  ]
  assert full["best_of_n"].arguments("/o") == ["--out_dir=/o", "--seed=3"]
  assert full["notebooks"].command("/o")[1:] == ["-m", "notebooks", "--out_dir=/o"]


def test_smoke_and_full_notebooks_are_different_stages(tmp_path):
  # Both run `python -m notebooks --out_dir=DIR`: the sizes come from MAXK_SMOKE.
  smoke = next(s for s in stages_lib.stages(seed=0, smoke=True) if s.name == "notebooks")
  full = next(s for s in stages_lib.stages(seed=0, smoke=False) if s.name == "notebooks")
  assert smoke.command("/o") == full.command("/o")
  assert smoke.shown_command("notebooks") == "MAXK_SMOKE=1 python -m notebooks --out_dir=notebooks"
  assert full.shown_command("notebooks") == "MAXK_SMOKE=0 python -m notebooks --out_dir=notebooks"
  assert smoke.smoke and not full.smoke
  env = {"JAX_PLATFORMS": "cpu"}
  assert runner.identity(smoke, str(tmp_path), env) != runner.identity(full, str(tmp_path), env)
  # Every stage's identity says its sizes.
  for stage in stages_lib.stages(seed=0, smoke=True):
    assert "smoke=True" in runner.identity(stage, str(tmp_path), env).splitlines()
