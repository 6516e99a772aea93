"""Binaries start clean: JAX's failed probe for a TPU library is dropped, every other
backend message is kept, and the platform JAX picks is left alone."""

import logging
import os
import subprocess
import sys

import pytest

from experiments import startup_logs
from tests import REPO_ROOT
from tests import WAIT_S

# JAX's report on a machine without a TPU, as jax 0.10 words it.
_NO_LIBTPU = (
  "Unable to initialize backend 'tpu': INTERNAL: Failed to open libtpu.so: libtpu.so: "
  "cannot open shared object file: No such file or directory"
)


class _Records(logging.Handler):
  def __init__(self):
    super().__init__()
    self.messages = []

  def emit(self, record):
    self.messages.append(record.getMessage())


@pytest.fixture
def backend_logger():
  logger = logging.getLogger(startup_logs.BACKEND_LOGGER)
  handler = _Records()
  filters, level = list(logger.filters), logger.level
  logger.addHandler(handler)
  logger.setLevel(logging.DEBUG)
  yield logger, handler.messages
  logger.removeHandler(handler)
  logger.filters[:] = filters
  logger.setLevel(level)


def test_only_the_missing_libtpu_line_is_dropped(backend_logger):
  logger, messages = backend_logger
  startup_logs.quiet_startup_noise()
  startup_logs.quiet_startup_noise()  # Twice: still one filter.
  kept = [
    # A TPU that is there but busy, a GPU backend that fails, the CPU fallback warning.
    "Unable to initialize backend 'tpu': ABORTED: The TPU is already in use by process 7",
    "Unable to initialize backend 'cuda': FAILED_PRECONDITION: No visible GPU devices.",
    "An NVIDIA GPU may be present on this machine, but a CUDA-enabled jaxlib is not "
    "installed. Falling back to cpu.",
  ]
  logger.info(_NO_LIBTPU)
  logger.info("Unable to initialize backend '%s': %s", "tpu", "Failed to open libtpu.so")
  for message in kept:
    logger.warning(message)
  assert messages == kept


# Binaries that start JAX's backends, each at a size that runs in seconds.
_BINARIES = {
  "experiments.demo": ["--k=3"],
  "benchmarks.best_of_n": ["--sizes=1000", "--repeats=1", "--n=16"],
  "experiments.best_of_n": [
    "--config=experiments/best_of_n/configs/default.py:smoke",
    *(
      f"--config.{field}={value}"
      for field, value in dict(
        n_max=8,
        num_n=3,
        uniform_sizes=4,
        dirichlet_alphas=1.0,
        dirichlet_size=5,
        cherry_size=5,
        num_mc_draws=4,
        num_thresholds=2,
        proxy_arms=8,
        proxy_n_max=4,
        proxy_num_n=2,
        proxy_mc_draws=4,
      ).items()
    ),
    "--workdir={tmp}/best_of_n",
  ],
}


@pytest.mark.slow  # Integration: every binary in a subprocess (README's second test step).
def test_binaries_start_without_the_tpu_probe_line(tmp_path):
  # JAX_PLATFORMS unset, as a user runs them: JAX probes every backend it knows.
  env = {k: v for k, v in os.environ.items() if k != "JAX_PLATFORMS"}
  env["PYTHONPATH"] = REPO_ROOT
  procs = {
    module: subprocess.Popen(
      [sys.executable, "-m", module, *(a.format(tmp=tmp_path) for a in args)],
      cwd=REPO_ROOT,
      env=env,
      stdout=subprocess.PIPE,
      stderr=subprocess.PIPE,
      text=True,
    )
    for module, args in _BINARIES.items()
  }
  for module, proc in procs.items():
    out, err = proc.communicate(timeout=WAIT_S)
    assert proc.returncode == 0, (module, err)
    assert "libtpu" not in out + err and "Unable to initialize backend 'tpu'" not in err, (
      module,
      err,
    )
