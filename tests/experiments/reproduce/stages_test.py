"""The reproduction's stages: the commands each stage runs."""

import sys

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
