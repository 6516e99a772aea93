"""The set-up of every notebook's first cell.

Importing this module puts the repository root on ``sys.path`` (``maxk`` and
``experiments`` importable) and runs JAX on the CPU unless ``JAX_PLATFORMS`` says
otherwise; both must happen before the cell imports them, hence at import. A notebook's
kernel runs in ``notebooks/`` (Jupyter's default, and how :mod:`notebooks.execute` runs
them) or at the repository root, so the first cell imports it either way, then its own
modules, then calls :func:`start`::

  try:
    import preamble
  except ImportError:  # The kernel runs at the repository root.
    from notebooks import preamble
  import maxk

  SMOKE = preamble.start()
"""

from __future__ import annotations

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
  sys.path.insert(0, ROOT)
os.environ.setdefault("JAX_PLATFORMS", "cpu")


def start() -> bool:
  """Applies the repository's figure style and returns whether smoke mode is on.

  The style: legible sizes, one colour per estimator (:func:`experiments.plot_style.apply`).
  Prints one line with the mode, JAX's version and devices. Smoke mode (``MAXK_SMOKE=1``)
  shrinks every size so that a notebook runs in seconds; the tests use it.
  """
  smoke = os.environ.get("MAXK_SMOKE") == "1"
  import jax  # pylint: disable=g-import-not-at-top

  from experiments import plot_style  # pylint: disable=g-import-not-at-top

  plot_style.apply()
  print("SMOKE =", smoke, "| jax", jax.__version__, "| devices", jax.devices())
  return smoke
