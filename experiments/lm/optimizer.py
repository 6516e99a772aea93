"""The optimiser of both stages: Adam(W) with global-norm clipping and a warmup schedule."""

from __future__ import annotations

import optax


def make_optimizer(
  learning_rate: float,
  warmup_steps: int,
  max_grad_norm: float,
  weight_decay: float = 0.0,
  *,
  decay_steps: int = 0,
  final_lr_fraction: float = 1.0,
  b2: float = 0.95,
) -> optax.GradientTransformation:
  """Adam(W) (b1 = 0.9, second-moment decay ``b2``) with global-norm clipping and
  linear warmup over ``warmup_steps`` updates (none if 0: the first update already
  uses ``learning_rate``), then a constant rate, or with ``decay_steps > 0`` a cosine
  decay reaching ``final_lr_fraction * learning_rate`` at update ``decay_steps``
  (warmup included) and staying there. Each inner epoch of an RL step is one update."""
  schedule: optax.ScalarOrSchedule
  if decay_steps > 0:
    schedule = optax.warmup_cosine_decay_schedule(
      0.0 if warmup_steps else learning_rate,
      learning_rate,
      warmup_steps,
      max(decay_steps, warmup_steps + 1),
      final_lr_fraction * learning_rate,
    )
  elif warmup_steps:
    schedule = optax.linear_schedule(0.0, learning_rate, warmup_steps)
  else:
    schedule = learning_rate
  return optax.chain(
    optax.clip_by_global_norm(max_grad_norm),
    optax.adamw(schedule, b1=0.9, b2=b2, weight_decay=weight_decay),
  )
