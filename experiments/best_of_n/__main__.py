"""KL divergence and win rate of the best-of-n policy (see :mod:`experiments.best_of_n`).

Usage:
  python -m experiments.best_of_n --out_dir=/tmp/best_of_n [FLAGS]

Writes results.csv, config.json, summary.json and four PNG figures into --out_dir.
"""

from absl import app
from absl import flags

from experiments.best_of_n import main

flags.adopt_module_key_flags(main)  # --help lists the study's flags.

if __name__ == "__main__":
  app.run(main.main)
