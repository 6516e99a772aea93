r"""KL divergence and win rate of the best-of-n policy (Beirami et al., arXiv 2401.01879).

Usage:
  python -m experiments.best_of_n --workdir=/tmp/best_of_n
  python -m experiments.best_of_n --workdir=/tmp/best_of_n \
      --config.n_max=1000 --config.uniform_sizes=10,100
  python -m experiments.best_of_n --workdir=/tmp/best_of_n_smoke \
      --config=experiments/best_of_n/configs/default.py:smoke

The config (--config, default experiments/best_of_n/configs/default.py) holds every
setting; --config.FIELD=VALUE overrides one. Writes results.csv, config.json,
summary.json (also printed), proxy.csv, proxy_peaks.csv and five PNG figures into
--workdir (alias --out_dir).
"""

from absl import app
from absl import flags

from experiments import binary
from experiments.best_of_n import main

# --help lists the flags main.py defines (through experiments.binary).
flags.adopt_module_key_flags(binary)

if __name__ == "__main__":
  app.run(main.main)
