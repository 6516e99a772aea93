"""Paper-scale: sized for one GPU (bfloat16 activations, a harder countdown).

Compares the base policy with max@k at k_opt = 1, 4, 16, an annealed 16 -> 1
schedule (PKPO Fig. 3) and GRPO; multi-host: add ``--distributed``.
"""

import ml_collections

from experiments.lm.configs import tiny


def get_config() -> ml_collections.ConfigDict:
  c = tiny.get_config()
  c.task.kwargs = ml_collections.ConfigDict(
    {"num_numbers": 4, "max_number": 25, "min_used": 3, "target_digits": 3}
  )

  c.model.d_model = 512
  c.model.num_heads = 8
  c.model.num_layers = 8
  c.model.d_ff = 2048
  c.model.dtype = "bfloat16"

  c.sft.steps = 3000
  c.sft.batch_size = 256
  c.sft.learning_rate = 1e-3
  c.sft.warmup_steps = 200

  c.rl.runs = "max_at_k@1,max_at_k@4,max_at_k@16,max_at_k@16:300:1,grpo"
  c.rl.reward = "binary"
  c.rl.steps = 500
  c.rl.prompts_per_step = 64
  c.rl.n = 32
  c.rl.learning_rate = 1e-5
  c.rl.warmup_steps = 20
  c.rl.inner_epochs = 2
  c.rl.kl_coef = 0.0

  c.eval.num_prompts = 512
  c.eval.n = 64
  c.eval.every = 50
  c.eval.chunk_prompts = 128
  c.checkpoint_every = 50
  return c
