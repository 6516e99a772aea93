"""python -m experiments.bandit_variance: main.py's binary; its docstring is the --help text."""

from absl import flags

from experiments import binary
from experiments.bandit_variance import main

__doc__ = main.__doc__  # absl's --help prints the started module's docstring.

# --help lists the flags main.py defines (through experiments.binary).
flags.adopt_module_key_flags(binary)

if __name__ == "__main__":
  binary.run(main.main)
