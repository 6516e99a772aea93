"""benchmarks.lm runs end to end (its MFU arithmetic: tests/experiments/lm/mfu_test.py)."""

import pytest

from tests import binaries

# Integration: the LM benchmark binary (README's second test step, `-m slow`).
pytestmark = pytest.mark.slow


def test_lm_benchmark_runs_and_prints_mfu_given_a_peak():
  """The MFU column (printed on GPU from the device's known peak) also appears on
  CPU when --peak_tflops is given, so the GPU code path is exercised here."""
  out = binaries.run(
    "benchmarks.lm",
    "--d_model=32",
    "--num_layers=1",
    "--num_heads=2",
    "--batch=4",
    "--gen_lens=8",
    "--repeats=1",
    "--peak_tflops=1",
  ).stdout
  header = next(line for line in out.splitlines() if line.startswith("what"))
  assert "MFU" in header and "tokens/s" in header
  assert sum("%" in line for line in out.splitlines()) == 3  # train, cached, uncached
