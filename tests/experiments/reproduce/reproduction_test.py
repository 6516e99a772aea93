"""Stage selection and the stage subprocesses' environment."""

import os

from experiments.reproduce import reproduction


def test_select_stages_keeps_the_reproduction_order_and_honours_lm_and_notebooks():
  def names(stage_names, **kwargs):
    selected = reproduction.select_stages(stage_names, seed=0, smoke=True, **kwargs)
    return [s.name for s in selected]

  every = ["best_of_n", "bandit_variance", "bandit_training", "lm", "notebooks"]
  assert names(["all"], lm=True, notebooks=True) == every
  assert names(["all"], lm=False, notebooks=True) == [n for n in every if n != "lm"]
  assert names(["notebooks", "best_of_n"], lm=True, notebooks=False) == ["best_of_n"]
  assert names(["lm"], lm=False, notebooks=True) == []


def test_stage_env(tmp_path):
  base = {"PYTHONPATH": "/elsewhere", "JAX_PLATFORMS": "tpu"}
  env = reproduction.stage_env("notebooks", str(tmp_path), smoke=True, base=base, root="/repo")
  assert env["PYTHONPATH"] == "/repo" + os.pathsep + "/elsewhere"
  assert env["JAX_PLATFORMS"] == "tpu"  # The caller's choice stands.
  assert env["MAXK_SMOKE"] == "1" and "MAXK_LM_RESULTS" not in env
  (tmp_path / "lm").mkdir()
  (tmp_path / "lm" / "results.csv").write_text("stage\n")
  env = reproduction.stage_env("notebooks", str(tmp_path), smoke=False, base={}, root="/repo")
  assert env["MAXK_LM_RESULTS"] == str(tmp_path / "lm" / "results.csv")
  assert env["JAX_PLATFORMS"] == "cpu" and "MAXK_SMOKE" not in env
  assert "MAXK_LM_RESULTS" not in reproduction.stage_env(
    "bandit_training", str(tmp_path), smoke=False, base={}, root="/repo"
  )
