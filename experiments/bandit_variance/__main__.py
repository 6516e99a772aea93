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
"""

from absl import app
from absl import flags

from experiments import binary
from experiments.bandit_variance import main

# --help lists the flags main.py defines (through experiments.binary).
flags.adopt_module_key_flags(binary)

if __name__ == "__main__":
  app.run(main.main)
