"""Tiny: end to end on 2 CPU cores in about a minute; ``tiny.py:micro`` is the tests' config.

Usage: ``--config=experiments/lm/configs/tiny.py`` or
``--config=experiments/lm/configs/tiny.py:micro`` (seconds: a smaller model, a few
steps, every feature on: k annealing, two inner epochs, the KL penalty, checkpoints
every two steps).
"""

import ml_collections


def get_config(variant: str = "") -> ml_collections.ConfigDict:
  c = ml_collections.ConfigDict()
  c.seed = 0
  c.num_devices = 0  # Data-parallel mesh size; 0 = all local (or global) devices.

  c.task = ml_collections.ConfigDict()
  c.task.name = "countdown"  # See experiments.lm.tasks.TASKS.
  c.task.kwargs = ml_collections.ConfigDict(
    {"num_numbers": 3, "max_number": 9, "min_used": 2, "target_digits": 3}
  )

  c.model = ml_collections.ConfigDict()
  c.model.d_model = 64
  c.model.num_heads = 4
  c.model.num_layers = 2
  c.model.d_ff = 256
  c.model.dtype = "float32"

  c.sft = ml_collections.ConfigDict()
  c.sft.steps = 150
  c.sft.batch_size = 64
  c.sft.learning_rate = 3e-3
  c.sft.warmup_steps = 20
  c.sft.weight_decay = 0.0
  c.sft.max_grad_norm = 1.0
  c.sft.adam_b2 = 0.95  # Adam's second-moment decay.
  # "constant" after warmup, or "cosine": decays to final_lr_fraction * learning_rate
  # at sft.steps.
  c.sft.schedule = "constant"
  c.sft.final_lr_fraction = 0.1
  # Held-out sampled pass@1 of the warm start every eval_every SFT steps (and at the
  # last), from eval_n samples per evaluation problem: the warm-start curve. 0: never.
  c.sft.eval_every = 0
  c.sft.eval_n = 16

  c.rl = ml_collections.ConfigDict()
  # Comma-separated runs, each "estimator[@k_schedule][/off_policy]" (schedule "k"
  # or "k0:t1:k1..."); estimators: max_at_k, grpo, rloo, max_minus_second.
  c.rl.runs = "max_at_k@1,max_at_k@4"
  c.rl.baseline = "loo_minus_one"  # max@k baseline (maxk.max_at_k_advantages).
  c.rl.reward = "binary"  # "binary" or "continuous".
  c.rl.steps = 10
  c.rl.prompts_per_step = 16
  c.rl.n = 8  # Samples per prompt.
  c.rl.learning_rate = 1e-3
  c.rl.warmup_steps = 0
  c.rl.max_grad_norm = 1.0
  c.rl.adam_b2 = 0.95  # Adam's second-moment decay.
  c.rl.inner_epochs = 2
  c.rl.off_policy = "exact"  # Runs' default: exact, first_order, surrogate or ppo_clip.
  c.rl.clip_eps = 0.2
  c.rl.kl_coef = 0.0
  c.rl.temperature = 1.0  # The policy optimised is softmax(logits / temperature).
  c.rl.top_p = 1.0  # Must be 1 for RL (see rl.py); eval.top_p may be lower.

  c.eval = ml_collections.ConfigDict()
  c.eval.num_prompts = 32
  c.eval.n = 16
  c.eval.every = 5  # RL steps; the last step is always evaluated.
  c.eval.temperature = 1.0
  c.eval.top_p = 1.0
  c.eval.chunk_prompts = 0
  # Samples per problem of the base model's binning evaluation (difficulty bins and
  # base-unsolved problems); 0: eval.n.
  c.eval.bin_n = 0

  c.log_every = 1
  c.checkpoint_every = 5

  if variant == "micro":
    c.task.name = "addition"  # Random digits already earn partial credit.
    c.task.kwargs = ml_collections.ConfigDict({"num_digits": 2})
    c.model.d_model = 32
    c.model.d_ff = 64
    c.sft.steps = 6
    c.sft.batch_size = 16
    c.rl.runs = "max_at_k@2:3:1,grpo"
    c.rl.steps = 4
    c.rl.prompts_per_step = 8  # 4 drew only zero rewards: no gradient to test.
    c.rl.n = 4
    c.rl.kl_coef = 0.05
    c.rl.reward = "continuous"  # Untrained: non-zero advantages all the same.
    c.sft.eval_every = 3  # The warm-start curve at SFT steps 3 and 6.
    c.sft.eval_n = 4
    c.eval.num_prompts = 8  # 32 rows, as in training: one sampler compilation.
    c.eval.n = 4
    c.eval.bin_n = 8  # Binning with more samples than the evaluations, as the study.
    c.eval.every = 2
    c.checkpoint_every = 2
  elif variant:
    raise ValueError(f"Unknown tiny config variant {variant!r}; valid: '', 'micro'.")
  return c
