"""Stage selection and the stage subprocesses' environment."""

import os

import pytest

from experiments.reproduce import reproduction
from experiments.reproduce import stages as stages_lib


def test_select_stages_keeps_the_reproduction_order_and_honours_lm_and_notebooks():
  def names(stage_names, **kwargs):
    selected = reproduction.select_stages(stage_names, seed=0, smoke=True, **kwargs)
    return [s.name for s in selected]

  every = ["best_of_n", "bandit_variance", "bandit_training", "lm", "notebooks"]
  assert names(["all"], lm=True, notebooks=True) == every
  assert names(["all"], lm=False, notebooks=True) == [n for n in every if n != "lm"]
  assert names(["notebooks", "best_of_n"], lm=True, notebooks=False) == ["best_of_n"]


@pytest.mark.parametrize(
  "names, lm, notebooks, error",
  [
    ([], True, True, "--stages is empty"),
    (["lm"], False, True, "--stages=lm with --nolm selects no stage."),
    (["notebooks"], True, False, "--stages=notebooks with --nonotebooks selects no stage."),
    (["lm", "notebooks"], False, False, "with --nolm --nonotebooks selects no stage."),
    (["best_of_n", "nope"], True, True, "--stages: unknown stages ['nope']"),
  ],
)
def test_selecting_no_stage_is_an_error(names, lm, notebooks, error):
  assert error in reproduction.selection_error(names, lm=lm, notebooks=notebooks)
  with pytest.raises(ValueError, match="--stages"):
    reproduction.select_stages(names, seed=0, smoke=False, lm=lm, notebooks=notebooks)


def test_stage_env(tmp_path):
  stages = {s.name: s for s in stages_lib.stages(seed=0, smoke=True)}
  full = {s.name: s for s in stages_lib.stages(seed=0, smoke=False)}
  # A caller's MAXK_LM_RESULTS never stands in for this run's LM results.
  base = {"PYTHONPATH": "/elsewhere", "JAX_PLATFORMS": "tpu", "MAXK_LM_RESULTS": "/old.csv"}
  env = reproduction.stage_env(stages["notebooks"], str(tmp_path), base=base, root="/repo")
  assert env["PYTHONPATH"] == "/repo" + os.pathsep + "/elsewhere"
  assert env["JAX_PLATFORMS"] == "tpu"  # The caller's choice stands.
  assert env["MAXK_SMOKE"] == "1" and "MAXK_LM_RESULTS" not in env
  (tmp_path / "lm").mkdir()
  (tmp_path / "lm" / "results.csv").write_text("stage\n")
  # A full run's notebooks are full size even where the caller exported MAXK_SMOKE=1.
  env = reproduction.stage_env(
    full["notebooks"], str(tmp_path), base={"MAXK_SMOKE": "1"}, root="/repo"
  )
  assert env["MAXK_LM_RESULTS"] == str(tmp_path / "lm" / "results.csv")
  assert env["JAX_PLATFORMS"] == "cpu" and env["MAXK_SMOKE"] == "0"
  assert "MAXK_LM_RESULTS" not in reproduction.stage_env(
    full["bandit_training"], str(tmp_path), base={}, root="/repo"
  )
