"""Prints every registered estimator on a small example batch.

Usage:
  python -m experiments.demo [--k=4] [--seed=0]
"""

from __future__ import annotations

from collections.abc import Sequence

from absl import flags
import numpy as np

from experiments import command_line
from experiments import demo

_K = flags.DEFINE_integer("k", 4, "k of max@k / pass@k.", lower_bound=2, upper_bound=8)
_SEED = flags.DEFINE_integer("seed", 0, "Seed for the example rewards and log-ratios.")


def main(argv: Sequence[str]) -> None:
  with command_line.one_line_errors(argv):
    np.set_printoptions(precision=4, suppress=True, linewidth=120)
    print(demo.report(_K.value, _SEED.value))


if __name__ == "__main__":
  command_line.run(main)
