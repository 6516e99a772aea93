r"""Bias and variance of every max@k gradient estimator on toy bandits (PKPO Fig. 4).

Usage:
  python -m experiments.bandit_variance --workdir=/tmp/bandit_variance
  python -m experiments.bandit_variance --workdir=/tmp/bandit_variance \
      --config.num_replicates=10000 --config.policies=categorical
  python -m experiments.bandit_variance --workdir=/tmp/bandit_variance_smoke \
      --config=experiments/bandit_variance/configs/default.py:smoke

The config (--config, default experiments/bandit_variance/configs/default.py) holds
every setting; --config.FIELD=VALUE overrides one. Writes results.csv,
variance_check.csv, config.json and the figures into --workdir (alias --out_dir).
A bad config value or workdir stops the run with one line before anything is written.
"""

from __future__ import annotations

from collections.abc import Sequence

from experiments import command_line
from experiments.bandit_variance import study

_CONFIG, _WORKDIR = command_line.define_flags(study.__file__)


def main(argv: Sequence[str]) -> None:
  """Runs :func:`experiments.bandit_variance.study.run` on the flags' config and workdir."""
  with command_line.one_line_errors(argv):
    study.run(_CONFIG.value, _WORKDIR.value)
