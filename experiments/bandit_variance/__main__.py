"""python -m experiments.bandit_variance: main.py's binary; its docstring is the --help text."""

from absl import flags

from experiments import command_line
from experiments.bandit_variance import main

__doc__ = main.__doc__  # absl's --help prints the started module's docstring.

# --help lists the flags main.py defines (through experiments.command_line).
flags.adopt_module_key_flags(command_line)

if __name__ == "__main__":
  command_line.run(main.main)
