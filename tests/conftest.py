"""Test configuration: CPU only, JAX at its default dtype.

JAX runs with ``jax_enable_x64`` off, so the library computes in float32 (its
default); the brute-force references in ``tests/maxk/enumeration.py`` and the
exact checks compute in NumPy float64 or exact rationals.
"""

import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")
