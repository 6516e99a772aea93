"""The benchmark's NumPy implementations compute the same transforms as maxk."""

import numpy as np
import pytest

from benchmarks import estimators
import maxk
from tests import REPO_ROOT


@pytest.mark.parametrize("n", [5, 16])
def test_numpy_references_agree_with_maxk(n):
  rng = np.random.default_rng(n)
  r = rng.random((3, n))
  lr = 0.1 * rng.standard_normal((3, n))
  for k in sorted({1, 2, 4, n}):
    for name in ("none", "loo", "loo_centered", "loo_minus_one", "mean_std"):
      want = np.asarray(maxk.max_at_k_advantages(r.astype(np.float32), k, baseline=name))
      np.testing.assert_allclose(estimators._numpy_matrix(r, lr, k, name), want, atol=1e-5)
      np.testing.assert_allclose(estimators._numpy_loop(r, lr, k, name), want, atol=1e-5)
    want = np.asarray(
      maxk.max_at_k_advantages_off_policy(
        r.astype(np.float32), lr.astype(np.float32), k, method="first_order"
      )
    )
    np.testing.assert_allclose(
      estimators._numpy_matrix(r, lr, k, "off_policy_first_order"), want, atol=1e-5
    )


def test_lm_benchmark_runs_and_prints_mfu_given_a_peak():
  """The MFU column (printed on GPU from the device's known peak) also appears on
  CPU when --peak_tflops is given, so the GPU code path is exercised here."""
  import os
  import subprocess
  import sys

  root = REPO_ROOT
  out = subprocess.run(
    [
      sys.executable,
      "-m",
      "benchmarks.lm",
      "--d_model=32",
      "--num_layers=1",
      "--num_heads=2",
      "--batch=4",
      "--gen_lens=8",
      "--repeats=1",
      "--peak_tflops=1",
    ],
    cwd=root,
    env=dict(os.environ, JAX_PLATFORMS="cpu"),
    capture_output=True,
    text=True,
    check=True,
    timeout=300,
  ).stdout
  header = next(line for line in out.splitlines() if line.startswith("what"))
  assert "MFU" in header and "tokens/s" in header
  assert sum("%" in line for line in out.splitlines()) == 3  # train, cached, uncached
