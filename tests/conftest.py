"""Test configuration: float32 everywhere (the library's default), CPU only."""

import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")
