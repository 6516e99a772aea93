"""MFU arithmetic: one device timed, one device's peak."""

import pytest

from experiments.lm import mfu
from experiments.lm import model as model_lib


def test_peak_is_one_devices_whatever_the_device_count():
  # The timed functions run on one device; the peak was once multiplied by
  # jax.device_count(), which divided MFU by 8 on an 8-GPU host.
  assert mfu.peak_flops("NVIDIA H100 80GB HBM3") == 989e12
  assert mfu.peak_flops("NVIDIA A100-SXM4-80GB") == 312e12
  assert mfu.peak_flops("TPU v5 lite") == 197e12
  assert mfu.peak_flops("NVIDIA L40S") is None  # Not the L4.
  assert mfu.peak_flops("cpu") is None
  assert mfu.peak_flops("cpu", peak_tflops=2.0) == 2e12
  assert mfu.peak_flops("NVIDIA H100 80GB HBM3", peak_tflops=500.0) == 500e12


def test_mfu_arithmetic():
  # d = 8, 1 layer, d_ff = 16, vocab 10, context 4: matmul params per token
  # 4*64 + 2*8*16 + 8*10 = 592, forward FLOPs 2*592 + 2*1*4*8 = 1248.
  cfg = model_lib.ModelConfig(
    vocab_size=10, max_len=4, d_model=8, num_heads=2, num_layers=1, d_ff=16
  )
  forward = model_lib.flops_per_token(cfg, 4)
  assert forward == 1248.0
  # 1e9 tokens/s on a 1e13 FLOP/s device: sampling 1248e9 / 1e13, training 3x that.
  assert mfu.mfu(forward, 1e9, 1e13, train=False) == pytest.approx(0.1248)
  assert mfu.mfu(forward, 1e9, 1e13, train=True) == pytest.approx(0.3744)


def test_rl_step_throughput():
  # 8 rows of 3 prompt + 5 generated tokens, 2 inner epochs: 40 tokens sampled in
  # 2 s, 8 * 8 * 2 = 128 positions trained in 0.5 s.
  args = dict(rows=8, prompt_len=3, completion_len=5, inner_epochs=2, forward_flops_per_token=100.0)
  out = mfu.rl_step_throughput(
    **args, sample_seconds=2.0, update_seconds=0.5, peak=None, num_devices=1
  )
  assert out == pytest.approx(
    {"tokens_per_s": 40 / 2.5, "sample_tokens_per_s": 20.0, "train_tokens_per_s": 256.0}
  )
  # With a peak: per device, over 4 devices; training counts 3x the forward FLOPs.
  out = mfu.rl_step_throughput(
    **args, sample_seconds=2.0, update_seconds=0.5, peak=1e4, num_devices=4
  )
  assert out["sample_mfu"] == pytest.approx(20.0 / 4 * 100.0 / 1e4)
  assert out["train_mfu"] == pytest.approx(3 * 256.0 / 4 * 100.0 / 1e4)
  with pytest.raises(ValueError, match="update_seconds=0"):
    mfu.rl_step_throughput(**args, sample_seconds=1.0, update_seconds=0, peak=None, num_devices=1)
