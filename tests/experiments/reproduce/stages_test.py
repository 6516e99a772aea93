"""The reproduction's stages: the commands each stage runs."""

import os
import sys

from experiments.reproduce import runner
from experiments.reproduce import stages as stages_lib
from tests import REPO_ROOT


def test_stage_commands():
  full = {s.name: s for s in stages_lib.stages(seed=3, smoke=False)}
  assert tuple(full) == stages_lib.STAGE_NAMES
  assert full["lm"].command("/w") == [
    sys.executable,
    "-m",
    "experiments.lm",
    "--workdir=/w",
    "--config=experiments/lm/configs/tiny.py",
    "--config.seed=3",
  ]
  assert full["best_of_n"].arguments("/o") == [
    "--workdir=/o",
    "--config=experiments/best_of_n/configs/default.py",
    "--config.seed=3",
  ]
  smoke = {s.name: s for s in stages_lib.stages(seed=0, smoke=True)}
  for name in ("best_of_n", "bandit_variance", "bandit_training"):
    # The smoke sizes are the binary's own "smoke" config (its tests check that it
    # validates); the file is where the stage runs it from, the repository root.
    config = f"experiments/{name}/configs/default.py"
    assert smoke[name].flags == (f"--config={config}:smoke", "--config.seed=0")
    assert os.path.isfile(os.path.join(REPO_ROOT, config))
  assert smoke["lm"].flags == ("--config=experiments/lm/configs/tiny.py:micro", "--config.seed=0")
  assert full["notebooks"].command("/o")[1:] == ["-m", "notebooks", "--workdir=/o"]


def test_smoke_and_full_notebooks_are_different_stages(tmp_path):
  # Both run `python -m notebooks --workdir=DIR`: the sizes come from MAXK_SMOKE.
  smoke = next(s for s in stages_lib.stages(seed=0, smoke=True) if s.name == "notebooks")
  full = next(s for s in stages_lib.stages(seed=0, smoke=False) if s.name == "notebooks")
  assert smoke.command("/o") == full.command("/o")
  assert smoke.shown_command("notebooks") == "MAXK_SMOKE=1 python -m notebooks --workdir=notebooks"
  assert full.shown_command("notebooks") == "MAXK_SMOKE=0 python -m notebooks --workdir=notebooks"
  assert smoke.smoke and not full.smoke
  env = {"JAX_PLATFORMS": "cpu"}
  assert runner.identity(smoke, str(tmp_path), env) != runner.identity(full, str(tmp_path), env)
  # Every stage's identity says its sizes.
  for stage in stages_lib.stages(seed=0, smoke=True):
    assert "smoke=True" in runner.identity(stage, str(tmp_path), env).splitlines()
