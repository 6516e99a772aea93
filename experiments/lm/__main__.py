"""Small-LM RL with pass@k / max@k estimators: ``python -m experiments.lm --config=...
--workdir=...`` (the binary of :mod:`experiments.lm.main`, whose docstring lists usages)."""

from experiments.lm import main

if __name__ == "__main__":
  main.start()
