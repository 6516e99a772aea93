"""The stages of the reproduction: each one an experiment binary run as a subprocess.

An experiment stage runs its binary on the binary's own config file
(``experiments/NAME/configs/default.py``, variant ``smoke`` for the smoke run; the LM
on ``experiments/lm/configs/tiny.py``) with ``--config.seed`` set, so the sizes live
in one place: the config files.
"""

from __future__ import annotations

import dataclasses
import importlib
import os
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
  # Seconds at the sizes it runs, measured on 2 idle CPU cores (one run of command 1 of
  # README on a fresh clone, then --smoke; a shared machine takes longer).
  expected_s: int
  out_flag: str = "workdir"
  env: tuple[tuple[str, str], ...] = ()
  smoke: bool = False
  inputs: tuple[tuple[str, str], ...] = ()

  def arguments(self, workdir: str) -> list[str]:
    """The arguments after ``python -m MODULE`` that write into ``workdir``."""
    return [f"--{self.out_flag}={workdir}", *self.flags]

  def command(self, workdir: str) -> list[str]:
    """The full command line (this interpreter) that writes into ``workdir``."""
    return [sys.executable, "-m", self.module, *self.arguments(workdir)]

  def shown_command(self, workdir: str) -> str:
    """The command as a user types it: its environment settings, then ``python -m``."""
    env = [f"{name}={value}" for name, value in self.env]
    return " ".join([*env, "python", "-m", self.module, *self.arguments(workdir)])


_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def config_file(module: str) -> str:
  """The default config file of the experiment binary ``module``, relative to the
  repository root (where stages run): ``experiments/NAME/configs/default.py``."""
  path = importlib.import_module(f"{module}.configs.default").__file__
  assert path is not None
  return os.path.relpath(path, _ROOT).replace(os.sep, "/")


def stages(*, seed: int, smoke: bool) -> list[Stage]:
  """The reproduction's stages in run order; ``smoke``: tiny sizes (seconds each)."""

  def binary(name: str, title: str, module: str, seconds: tuple[int, int], *extra: str) -> Stage:
    """A binary's stage; ``seconds``: its measured time at (full, smoke) sizes."""
    if module == "experiments.lm":  # The LM's sizes: configs/tiny.py, variant micro.
      config = "experiments/lm/configs/tiny.py" + (":micro" if smoke else "")
    else:
      config = f"{config_file(module)}:smoke" if smoke else config_file(module)
    flags = (f"--config={config}", f"--config.seed={seed}", *extra)
    expected_s = seconds[1] if smoke else seconds[0]
    return Stage(name, title, module, flags, expected_s, out_flag="workdir", smoke=smoke)

  return [
    binary(
      "best_of_n",
      "best-of-n KL, bounds, estimator and win rate (Beirami et al.)",
      "experiments.best_of_n",
      (26, 11),
    ),
    binary(
      "bandit_variance",
      "bias and variance of every max@k gradient estimator (PKPO Fig. 4), of the estimators "
      "of top-m, min@k and MaxRL's mixture, a check of the variance estimators, and the "
      "variance atlas (exact variance over the floor)",
      "experiments.bandit_variance",
      (159, 32),
      *(() if smoke else ("--config.num_replicates=10000",)),
    ),
    binary(
      "bandit_training",
      "policy-gradient training with fixed / annealed k (PKPO Fig. 3)",
      "experiments.bandit_training",
      (42, 10),
    ),
    binary(
      "lm",
      "small-LM RL: pass@k after SFT and after RL with each estimator",
      "experiments.lm",
      (25, 18),
    ),
    Stage(
      "notebooks",
      "the notebooks (PKPO Figs. 1, 2, 5; best-of-n; max@k; LM; prompt weights; evaluating a "
      "real harness file) executed",
      "notebooks",
      (),
      29 if smoke else 41,
      # The notebooks read their sizes from MAXK_SMOKE; it is always set, so that a
      # value exported in the caller's shell never changes a full run.
      out_flag="workdir",
      env=(("MAXK_SMOKE", "1" if smoke else "0"),),
      smoke=smoke,
      inputs=(("MAXK_LM_RESULTS", "lm/results.csv"),),  # lm.ipynb plots this run's LM.
    ),
  ]
