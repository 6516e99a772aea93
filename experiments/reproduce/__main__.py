"""``python -m experiments.reproduce``: see ``experiments.reproduce.main``."""

from absl import app
from absl import flags

from experiments.reproduce import main

# --help lists the flags defined in main.py, not only this module's.
flags.adopt_module_key_flags(main)

if __name__ == "__main__":
  app.run(main.main)
