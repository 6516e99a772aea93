"""Tiny: end to end on 2 CPU cores in about a minute; ``tiny.py:micro`` is the tests' config.

Usage: ``--config=experiments/lm/configs/tiny.py`` or
``--config=experiments/lm/configs/tiny.py:micro`` (seconds: a smaller model, a few
steps, every feature on: k annealing, two inner epochs, the KL penalty, checkpoints
every two steps, the held-out KL with checkpoints.csv and common evaluation keys).
"""

import ml_collections


def _task() -> ml_collections.ConfigDict:
  """The task (``tasks.TASKS``) and its difficulty."""
  t = ml_collections.ConfigDict()
  t.name = "countdown"  # See experiments.lm.tasks.TASKS.
  t.kwargs = ml_collections.ConfigDict(
    {"num_numbers": 3, "max_number": 9, "min_used": 2, "target_digits": 3}
  )
  return t


def _model() -> ml_collections.ConfigDict:
  """The transformer."""
  m = ml_collections.ConfigDict()
  m.d_model = 64
  m.num_heads = 4
  m.num_layers = 2
  m.d_ff = 256
  m.dtype = "float32"
  return m


def _sft() -> ml_collections.ConfigDict:
  """The supervised warm start and its held-out curve."""
  s = ml_collections.ConfigDict()
  s.steps = 150
  s.batch_size = 64
  s.learning_rate = 3e-3
  s.warmup_steps = 20
  s.weight_decay = 0.0
  s.max_grad_norm = 1.0
  s.adam_b2 = 0.95  # Adam's second-moment decay.
  # "constant" after warmup, or "cosine": decays to final_lr_fraction * learning_rate
  # at sft.steps.
  s.schedule = "constant"
  s.final_lr_fraction = 0.1
  # Held-out sampled pass@1 of the warm start every eval_every SFT steps (and at the
  # last), from eval_n samples per evaluation problem: the warm-start curve. 0: never.
  s.eval_every = 0
  s.eval_n = 16
  return s


def _rl() -> ml_collections.ConfigDict:
  """The RL runs and their shared settings."""
  r = ml_collections.ConfigDict()
  # The runs, each "estimator[@k_schedule][/off_policy][[lr=X,kl=Y]]" (schedule "k" or
  # "k0:t1:k1..."; the options set the run's own learning rate and KL coefficient);
  # estimators: max_at_k, grpo, rloo, max_minus_second. Command line: comma-separated,
  # --config.rl.runs=max_at_k@1,grpo[lr=3e-5,kl=0.01] (commas inside [...] do not split).
  r.runs = ("max_at_k@1", "max_at_k@4")
  r.baseline = "loo_minus_one"  # max@k baseline (maxk.max_at_k_advantages).
  r.reward = "binary"  # "binary" or "continuous".
  r.steps = 10
  r.prompts_per_step = 16
  r.n = 8  # Samples per prompt.
  r.learning_rate = 1e-3
  r.warmup_steps = 0
  r.max_grad_norm = 1.0
  r.adam_b2 = 0.95  # Adam's second-moment decay.
  r.inner_epochs = 2
  r.off_policy = "exact"  # Runs' default: exact, first_order, surrogate or ppo_clip.
  r.clip_eps = 0.2
  r.kl_coef = 0.0
  r.temperature = 1.0  # The policy optimised is softmax(logits / temperature).
  r.top_p = 1.0  # Must be 1 for RL (see rl.py); eval.top_p may be lower.
  return r


def _eval() -> ml_collections.ConfigDict:
  """The held-out evaluations."""
  e = ml_collections.ConfigDict()
  e.num_prompts = 32
  e.n = 16
  e.every = 5  # RL steps; the last step is always evaluated.
  e.temperature = 1.0
  e.top_p = 1.0
  e.chunk_prompts = 0
  # Samples per problem of the base model's binning evaluation (difficulty bins and
  # base-unsolved problems); 0: eval.n.
  e.bin_n = 0
  # The checkpoint frontier: with kl, every evaluation (the base model's and each RL
  # run's every eval.every steps) logs the KL of the evaluated policy to the warm start
  # on the held-out prompts and per-prompt counts, and the run writes checkpoints.csv.
  # The KL uses the first kl_samples samples of each prompt (0: all eval.n): two
  # forward passes over each, about 2 * kl_samples / eval.n of the sampling's time
  # (see held_out_kl).
  e.kl = False
  e.kl_samples = 16
  # Every evaluation (base and each RL run at every step) samples with one key: the
  # arms and checkpoints are compared on common random numbers (streams.eval_key).
  e.common_keys = False
  # Each evaluation's per-prompt rewards in checkpoints.csv too (needs kl; larger logs).
  e.checkpoint_rewards = False
  return e


def _micro(c: ml_collections.ConfigDict) -> None:
  """The tests' variant: a smaller model, a few steps, every feature on."""
  c.task.name = "addition"  # Random digits already earn partial credit.
  c.task.kwargs = ml_collections.ConfigDict({"num_digits": 2})
  c.model.d_model = 32
  c.model.d_ff = 64
  c.sft.steps = 6
  c.sft.batch_size = 16
  c.rl.runs = ("max_at_k@2:3:1", "grpo")
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
  c.eval.kl = True  # The checkpoint frontier: KL at every evaluation, checkpoints.csv.
  c.eval.kl_samples = 2  # Of eval.n = 4.
  c.eval.common_keys = True
  c.checkpoint_every = 2


def get_config(variant: str = "") -> ml_collections.ConfigDict:
  """The tiny config, or with ``variant="micro"`` the tests' config."""
  c = ml_collections.ConfigDict()
  c.seed = 0
  c.num_devices = 0  # Data-parallel mesh size; 0 = all local (or global) devices.
  c.task = _task()
  c.model = _model()
  c.sft = _sft()
  c.rl = _rl()
  c.eval = _eval()
  c.log_every = 1
  c.checkpoint_every = 5
  # A study's design note, relative to the repository root (e.g. "docs/lm_study/DESIGN.md"):
  # the run starts only when it is committed, and records its commit in run.json
  # (experiments/lm/provenance.py). "": none.
  c.study_design = ""
  if variant == "micro":
    _micro(c)
  elif variant:
    raise ValueError(f"Unknown tiny config variant {variant!r}; valid: '', 'micro'.")
  return c
