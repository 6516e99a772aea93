"""``python -m experiments.bandit_training``: runs :func:`experiments.bandit_training.main.main`."""

from absl import app
from absl import flags

from experiments.bandit_training import main

# --help lists the flags defined in main.py, not only this module's.
flags.adopt_module_key_flags(main)

if __name__ == "__main__":
  app.run(main.main)
