r"""KL divergence and win rate of the best-of-n policy (Beirami et al., arXiv 2401.01879).

Usage:
  python -m experiments.best_of_n --workdir=/tmp/best_of_n
  python -m experiments.best_of_n --workdir=/tmp/best_of_n \
      --config.n_max=1000 --config.uniform_sizes=10,100
  python -m experiments.best_of_n --workdir=/tmp/best_of_n_smoke \
      --config=experiments/best_of_n/configs/default.py:smoke

The config (--config, default experiments/best_of_n/configs/default.py) holds every
setting; --config.FIELD=VALUE overrides one. Writes results.csv, config.json,
summary.json (also printed), proxy.csv, proxy_peaks.csv, frontier.csv,
frontier_best_n.json and six PNG figures into
--workdir (alias --out_dir). A bad config value or workdir stops the run with one
line before anything is written.
"""

from __future__ import annotations

from collections.abc import Sequence
import json

from experiments import command_line
from experiments.best_of_n import experiment

_CONFIG, _WORKDIR = command_line.define_flags(experiment.__file__)


def main(argv: Sequence[str]) -> None:
  """Runs :func:`experiments.best_of_n.experiment.run`; prints the summary as JSON."""
  with command_line.one_line_errors(argv):
    summary = experiment.run(_CONFIG.value, _WORKDIR.value)
  print(json.dumps(summary, indent=2, sort_keys=True))
