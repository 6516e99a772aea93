"""Paper-scale: sized for one H200 (bfloat16 activations, a harder countdown).

Compares the base policy with max@k at k_opt = 1, 4, 16, an annealed 16 -> 1
schedule (PKPO Fig. 3) and GRPO; multi-host: add ``--distributed``.

The model (8 layers, d_model 512, about 25M parameters) is trained from scratch by
the SFT warm start (3000 steps of 256 sequences at 1e-3, warmed up over 200).

The RL learning rate, 1e-4, is chosen by how far one update moves the policy. We
measured it on 2 CPU cores from short warm starts of shrunken models (d_model 96
with 3 layers and d_model 256 with 4: 0.34M and 3.2M parameters), 12 RL steps of 16
prompts x 16 samples with max@1 and two inner epochs, averaging over steps the mean
|log pi_new(y) - log pi_old(y)| of the sampled sequences at the second epoch:

  learning rate      1e-5    3e-5    1e-4    3e-4    1e-3
  d_model  96       0.008     -     0.050   0.111   0.226  (clip fraction 0.21)
  d_model 256         -     0.015   0.049   0.103     -

The step did not shrink with width (Adam's steps are per parameter), so 1e-5, the
former rate, would move the 25M model by about 0.01 nats per step: 500 steps would
barely leave the warm start (KL to it 0.02 after 12 steps). 1e-4 moves it by about
0.05 (clip fraction about 1%, effective sample size of the ratios >= 0.97); 3e-4,
the default config's rate for its short 80-step runs, moves it by 0.1 with 5-8%
of the samples clipped, more than a 500-step run with 2048 samples per step needs.
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

  c.rl.runs = ("max_at_k@1", "max_at_k@4", "max_at_k@16", "max_at_k@16:300:1", "grpo")
  c.rl.reward = "binary"
  c.rl.steps = 500
  c.rl.prompts_per_step = 64
  c.rl.n = 32
  c.rl.learning_rate = 1e-4  # See the docstring.
  c.rl.warmup_steps = 20
  c.rl.inner_epochs = 2
  c.rl.kl_coef = 0.0

  c.eval.num_prompts = 512
  c.eval.n = 64
  c.eval.every = 50
  c.eval.chunk_prompts = 128
  c.checkpoint_every = 50
  return c
