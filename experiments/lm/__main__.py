"""python -m experiments.lm: main.py's binary; its docstring is the --help text."""

from absl import flags

from experiments import command_line
from experiments.lm import main

__doc__ = main.__doc__  # absl's --help prints the started module's docstring.

# --help lists the flags main.py defines (--config and --workdir through
# experiments.command_line, --distributed itself).
flags.adopt_module_key_flags(command_line)
flags.adopt_module_key_flags(main)

if __name__ == "__main__":
  main.start()
