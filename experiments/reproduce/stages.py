"""The stages of the reproduction: each one an experiment binary run as a subprocess."""

from __future__ import annotations

import dataclasses
import sys

STAGE_NAMES = ("best_of_n", "bandit_variance", "bandit_training", "lm", "notebooks")


@dataclasses.dataclass(frozen=True)
class Stage:
  """One step of the reproduction: ``ENV... python -m MODULE --OUT_FLAG=DIR FLAGS...``.

  A stage is done when its folder holds ``results.csv``.

  Attributes:
    env: environment settings the binary reads (``MAXK_SMOKE`` for the notebooks):
      part of the stage's command, shown and compared like its flags.
    smoke: whether the stage runs at smoke sizes (tiny, not the headline numbers).
    inputs: outputs of earlier stages this one reads, as (environment variable,
      path relative to the reproduction's folder): the variable is set to the file's
      path when the file exists, and the file's contents are part of the stage's
      identity (see ``runner.identity``).
  """

  name: str
  title: str
  module: str
  flags: tuple[str, ...]
  expected_s: int
  out_flag: str = "out_dir"
  env: tuple[tuple[str, str], ...] = ()
  smoke: bool = False
  inputs: tuple[tuple[str, str], ...] = ()

  def arguments(self, out_dir: str) -> list[str]:
    """The arguments after ``python -m MODULE`` that write into ``out_dir``."""
    return [f"--{self.out_flag}={out_dir}", *self.flags]

  def command(self, out_dir: str) -> list[str]:
    """The full command line (this interpreter) that writes into ``out_dir``."""
    return [sys.executable, "-m", self.module, *self.arguments(out_dir)]

  def shown_command(self, out_dir: str) -> str:
    """The command as a user types it: its environment settings, then ``python -m``."""
    env = [f"{name}={value}" for name, value in self.env]
    return " ".join([*env, "python", "-m", self.module, *self.arguments(out_dir)])


def stages(*, seed: int, smoke: bool) -> list[Stage]:
  """The reproduction's stages in run order; ``smoke``: tiny sizes (seconds each)."""
  s = (f"--seed={seed}",)
  if smoke:
    bon = (
      "--n_max=100",
      "--num_n=6",
      "--uniform_sizes=10,100",
      "--dirichlet_size=50",
      "--num_mc_draws=10",
      "--num_thresholds=4",
      "--cherry_size=20",
      "--proxy_arms=100",
      "--proxy_n_max=64",
      "--proxy_num_n=6",
      "--proxy_mc_draws=20",
    )
    var = (
      "--ns=4,8",
      "--ks=1,4",
      "--num_replicates=256",
      "--estimators=none,loo_minus_one,grpo,off_policy_exact,off_policy_first_order",
    )
    train = (
      "--num_steps=20",
      "--num_seeds=2",
      "--k_schedules=1,4",
      "--estimators=loo_minus_one,grpo",
      "--bandits=easy,gaussian",
      "--k_evals=1,4",
    )
    lm = ("--config=experiments/lm/configs/tiny.py:micro",)
  else:
    bon = ()
    var = ("--num_replicates=10000",)
    train = ()
    lm = ("--config=experiments/lm/configs/tiny.py",)  # Stages run in the repository root.
  # The notebooks read their sizes from MAXK_SMOKE; it is always set, so that a value
  # exported in the caller's shell never changes a full run.
  notebooks_env = (("MAXK_SMOKE", "1" if smoke else "0"),)
  every = [
    Stage(
      "best_of_n",
      "best-of-n KL, bounds, estimator and win rate (Beirami et al.)",
      "experiments.best_of_n",
      s + bon,
      40,
    ),
    Stage(
      "bandit_variance",
      "bias and variance of every max@k gradient estimator (PKPO Fig. 4), of the estimators "
      "of top-m, min@k and MaxRL's mixture, and a check of the variance estimators",
      "experiments.bandit_variance",
      s + var,
      110,
    ),
    Stage(
      "bandit_training",
      "policy-gradient training with fixed / annealed k (PKPO Fig. 3)",
      "experiments.bandit_training",
      s + train,
      80,
    ),
    Stage(
      "lm",
      "small-LM RL: pass@k after SFT and after RL with each estimator",
      "experiments.lm.main",
      lm + (f"--config.seed={seed}",),
      90,
      out_flag="workdir",
    ),
    Stage(
      "notebooks",
      "the notebooks (PKPO Figs. 1, 2, 5; best-of-n; max@k; LM; prompt weights) executed",
      "notebooks",
      (),
      150,
      env=notebooks_env,
      inputs=(("MAXK_LM_RESULTS", "lm/results.csv"),),  # lm.ipynb plots this run's LM.
    ),
  ]
  return [dataclasses.replace(stage, smoke=smoke) for stage in every]
