"""python -m experiments.reproduce: main.py's binary; its docstring is the --help text."""

from absl import flags

from experiments import command_line
from experiments.reproduce import main

__doc__ = main.__doc__  # absl's --help prints the started module's docstring.

# --help lists the flags defined in main.py, not only this module's.
flags.adopt_module_key_flags(main)

if __name__ == "__main__":
  command_line.run(main.main)
