r"""Policy-gradient training on toy bandits with max@k estimators and k_opt schedules.

Usage:
  python -m experiments.bandit_training --workdir=/tmp/bandit_training
  python -m experiments.bandit_training --workdir=/tmp/bandit_training \
      --config.bandits=hard --config.k_schedules=1,8:200:1
  python -m experiments.bandit_training --workdir=/tmp/bandit_training_smoke \
      --config=experiments/bandit_training/configs/default.py:smoke

The config (--config, default experiments/bandit_training/configs/default.py) holds
every setting; --config.FIELD=VALUE overrides one. Writes results.csv, config.json,
curves.npz and curves_<bandit>.png into --workdir (alias --out_dir).
"""

from absl import app
from absl import flags

from experiments import binary
from experiments.bandit_training import main

# --help lists the flags main.py defines (through experiments.binary).
flags.adopt_module_key_flags(binary)

if __name__ == "__main__":
  app.run(main.main)
