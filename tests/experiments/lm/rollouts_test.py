"""Tests of experiments.lm.rollouts: the update's batch layout and joined chunks."""

import numpy as np
import pytest

from experiments.lm import rollouts


def _rollout(num_prompts, n, offset=0):
  rng = np.random.default_rng(offset)
  c = 3
  return rollouts.Rollout(
    prompts=[f"p{offset + p}" for p in range(num_prompts)],
    prompt_ids=np.arange(num_prompts * 2).reshape(num_prompts, 2) + 100 * offset,
    tokens=rng.integers(0, 9, (num_prompts, n, c)),
    mask=(rng.random((num_prompts, n, c)) < 0.7).astype(np.float32),
    entropy=rng.random((num_prompts, n, c)),
    binary=(rng.random((num_prompts, n)) < 0.5).astype(np.float32),
    continuous=rng.random((num_prompts, n)).astype(np.float32),
  )


def test_batch_rows_are_prompt_major():
  rollout = _rollout(num_prompts=3, n=4)
  batch = rollout.batch("continuous")
  assert batch.tokens_BxT.shape == (12, 2 + 3) and batch.mask_BxC.shape == (12, 3)
  for p in range(3):
    for i in range(4):
      row = p * 4 + i
      np.testing.assert_array_equal(batch.tokens_BxT[row, :2], rollout.prompt_ids[p])
      np.testing.assert_array_equal(batch.tokens_BxT[row, 2:], rollout.tokens[p, i])
      np.testing.assert_array_equal(batch.mask_BxC[row], rollout.mask[p, i])
  assert batch.rewards_Pxn is rollout.continuous
  assert rollout.batch("binary").rewards_Pxn is rollout.binary
  with pytest.raises(ValueError, match="reward="):
    rollout.rewards("graded")


def test_concatenate_joins_prompt_chunks_in_order():
  a, b = _rollout(2, 4, offset=0), _rollout(1, 4, offset=1)
  joined = rollouts.concatenate([a, b])
  assert joined.prompts == ["p0", "p1", "p1"] and joined.n == 4
  np.testing.assert_array_equal(joined.tokens, np.concatenate([a.tokens, b.tokens]))
  np.testing.assert_array_equal(joined.prompt_ids[2], b.prompt_ids[0])
  np.testing.assert_array_equal(joined.continuous[:2], a.continuous)
