"""``python -m experiments.reproduce``: see ``experiments.reproduce.main``."""

from absl import app

from experiments.reproduce import main

if __name__ == "__main__":
  app.run(main.main)
