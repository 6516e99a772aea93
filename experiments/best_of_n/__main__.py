"""python -m experiments.best_of_n: main.py's binary; its docstring is the --help text."""

from absl import flags

from experiments import binary
from experiments.best_of_n import main

__doc__ = main.__doc__  # absl's --help prints the started module's docstring.

# --help lists the flags main.py defines (through experiments.binary).
flags.adopt_module_key_flags(binary)

if __name__ == "__main__":
  binary.run(main.main)
