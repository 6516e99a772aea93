"""Default: base, GRPO and max@k with k_opt = 1, 8 and annealed 8 -> 1 on countdown.

Sized for CPU cores: a 3-layer model, a 300-step warm start and 80 RL steps
of 16 prompts x 16 samples. The warm start is deliberately short, so the base
policy's pass@1 is well below its pass@16; the RL runs see the same prompts and
sampling keys. Two inner epochs per batch, with the exact off-policy max@k weights
(GRPO: PPO's clipped ratio).
"""

import ml_collections

from experiments.lm.configs import tiny


def get_config() -> ml_collections.ConfigDict:
  c = tiny.get_config()
  c.model.d_model = 96
  c.model.num_heads = 4
  c.model.num_layers = 3
  c.model.d_ff = 384

  c.sft.steps = 300
  c.sft.batch_size = 64

  c.rl.runs = ("grpo", "max_at_k@1", "max_at_k@8", "max_at_k@8:40:1")
  c.rl.reward = "binary"
  c.rl.steps = 80
  c.rl.prompts_per_step = 16
  c.rl.n = 16
  c.rl.learning_rate = 3e-4
  c.rl.inner_epochs = 2
  c.rl.off_policy = "exact"

  c.eval.num_prompts = 64
  c.eval.n = 32
  c.eval.every = 20
  c.checkpoint_every = 20
  return c
