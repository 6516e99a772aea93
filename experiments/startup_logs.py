"""Library log lines that every binary would print at start-up, dropped.

Under ``absl.app`` Python's logging shows INFO records, so JAX's probe of the backends
it was built for prints ``Unable to initialize backend 'tpu': ... Failed to open
libtpu.so ...`` as the first line of every run on a machine without a TPU: not a
problem, only the probe failing as it should. :func:`quiet_startup_noise` drops that
record and nothing else: a TPU backend that fails for another reason (a TPU in use by
another process), a GPU backend that fails, and JAX's warning that it falls back to
the CPU on a machine with an accelerator are still printed. The platform JAX picks is
untouched (``JAX_PLATFORMS`` unset still picks a GPU or TPU when one is present).
"""

from __future__ import annotations

import logging

# The logger JAX's backend probe reports on.
BACKEND_LOGGER = "jax._src.xla_bridge"


def is_missing_tpu_library(record: logging.LogRecord) -> bool:
  """Whether ``record`` is JAX's report that the TPU backend did not start because the
  TPU library (``libtpu.so``) is not installed, i.e. the machine has no TPU to use."""
  message = record.getMessage()
  return message.startswith("Unable to initialize backend 'tpu'") and "libtpu.so" in message


class _DropMissingTpuLibrary(logging.Filter):
  """Drops the records :func:`is_missing_tpu_library` recognises."""

  def filter(self, record: logging.LogRecord) -> bool:
    return not is_missing_tpu_library(record)


def quiet_startup_noise() -> None:
  """Drops JAX's missing-``libtpu.so`` line from the backend logger (idempotent)."""
  logger = logging.getLogger(BACKEND_LOGGER)
  if not any(isinstance(f, _DropMissingTpuLibrary) for f in logger.filters):
    logger.addFilter(_DropMissingTpuLibrary())
