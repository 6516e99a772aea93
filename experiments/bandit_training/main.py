r"""Policy-gradient training on toy bandits with max@k estimators and k_opt schedules.

Usage:
  python -m experiments.bandit_training --workdir=/tmp/bandit_training
  python -m experiments.bandit_training --workdir=/tmp/bandit_training \
      --config.bandits=hard --config.k_schedules=1,8:200:1
  python -m experiments.bandit_training --workdir=/tmp/bandit_training_smoke \
      --config=experiments/bandit_training/configs/default.py:smoke

The config (--config, default experiments/bandit_training/configs/default.py) holds
every setting; --config.FIELD=VALUE overrides one. Writes results.csv, config.json,
curves.npz and curves_<bandit>.png into --workdir (alias --out_dir). A bad config
value or workdir stops the run with one line before anything is written.
"""

from __future__ import annotations

from collections.abc import Sequence

from experiments import command_line
from experiments.bandit_training import study

_CONFIG, _WORKDIR = command_line.define_flags(study.__file__)


def main(argv: Sequence[str]) -> None:
  """Runs :func:`experiments.bandit_training.study.run` on the flags' config and workdir."""
  with command_line.one_line_errors(argv):
    study.run(_CONFIG.value, _WORKDIR.value)
