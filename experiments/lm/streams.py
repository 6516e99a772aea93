"""Every random stream of the LM experiment and the training problems drawn from them.

A run is a deterministic function of its config: each stage draws from its own
stream, indexed by (seed, stream id, step), so a resumed run repeats an
uninterrupted one and the split (``splits.make_split``) replays the training draws
without a model through the very functions the trainer calls (``sft_problems``,
``rl_problems``).

Stream ids (the second entry of a NumPy seed sequence, or a ``fold_in`` of the
seed's JAX key):

* ``SFT_STREAM`` (NumPy): SFT step s's batch of problems.
* ``EVAL_STREAM`` (JAX): the sampling keys of the held-out evaluations (the base
  model's at step 0, RL step s's; with ``eval.common_keys`` every evaluation uses
  step 0's, so the base model and every RL run at every evaluated step share their
  keys: see ``eval_key``).
* ``RL_STREAM``: RL step s's prompts (NumPy) and the sampling key of its completions
  (JAX), both shared by every RL run (common random numbers).
* ``BIN_STREAM`` (JAX): the base model's binning evaluation, independent of its results.
* ``WARM_STREAM`` (JAX): the warm-start curve's held-out evaluations during SFT.

Two draws use streams of their own outside this module: the evaluation problems
(``tasks.heldout_problems``, NumPy ``[seed, 7919]``) and the initial parameters
(``model.create``, ``nnx.Rngs(seed)``).
"""

from __future__ import annotations

from collections.abc import Callable, Collection

import jax
import ml_collections
import numpy as np

from experiments.lm import tasks as tasks_lib

SFT_STREAM = 0
EVAL_STREAM = 1
RL_STREAM = 2
BIN_STREAM = 3
WARM_STREAM = 4


def sft_rng(seed: int, step: int) -> np.random.Generator:
  """The generator of SFT step ``step``'s batch."""
  return np.random.default_rng([seed, SFT_STREAM, step])


def rl_rng(seed: int, step: int) -> np.random.Generator:
  """The generator of RL step ``step``'s prompts (the same for every RL run)."""
  return np.random.default_rng([seed, RL_STREAM, step])


def sampling_key(seed: int, stream: int, step: int) -> jax.Array:
  """The JAX key of ``stream``'s samples at ``step``: ``fold_in(fold_in(key(seed),
  stream), step)``."""
  return jax.random.fold_in(jax.random.fold_in(jax.random.key(seed), stream), step)


def eval_key(config: ml_collections.ConfigDict, step: int) -> jax.Array:
  """The sampling key of the held-out evaluation at RL step ``step`` (0: the base
  model's): (``EVAL_STREAM``, ``step``), or (``EVAL_STREAM``, 0) for every step with
  ``eval.common_keys``, so that all arms and checkpoints draw with common random
  numbers (their differences come from the policies, not from the draws)."""
  return sampling_key(config.seed, EVAL_STREAM, 0 if config.eval.common_keys else step)


def sft_problems(
  task: tasks_lib.Task,
  seed: int,
  step: int,
  batch_size: int,
  exclude: Collection[int] | np.ndarray,
  *,
  reject: Callable[[np.ndarray], np.ndarray] | None = None,
) -> np.ndarray:
  """The ``batch_size`` problem rows of SFT step ``step`` (no key in ``exclude``; with
  ``reject``, none that it rejects: ``answer_overlap.sft_reject``)."""
  return tasks_lib.draw_problems(
    task, sft_rng(seed, step), batch_size, exclude=exclude, reject=reject
  )


def rl_problems(
  task: tasks_lib.Task,
  seed: int,
  step: int,
  prompts_per_step: int,
  exclude: Collection[int] | np.ndarray,
) -> np.ndarray:
  """The ``prompts_per_step`` problem rows of RL step ``step`` (no key in ``exclude``)."""
  return tasks_lib.draw_problems(task, rl_rng(seed, step), prompts_per_step, exclude=exclude)


def training_problems(
  task: tasks_lib.Task,
  config: ml_collections.ConfigDict,
  exclude: Collection[int] | np.ndarray,
  *,
  sft_reject: Callable[[np.ndarray], np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
  """Rows of every problem the run draws: ``(sft [steps * batch, F], rl [steps * prompts,
  F])``, in step order, from ``sft_problems`` and ``rl_problems`` as the trainer calls
  them (``sft_reject``: the SFT draws' ``reject``)."""
  excluded = np.sort(np.fromiter(exclude, np.int64))
  c = config
  sft = [
    sft_problems(task, c.seed, s, c.sft.batch_size, excluded, reject=sft_reject)
    for s in range(1, c.sft.steps + 1)
  ]
  rl = [
    rl_problems(task, c.seed, s, c.rl.prompts_per_step, excluded) for s in range(1, c.rl.steps + 1)
  ]
  width = task.sample_problems(np.random.default_rng(0), 1).shape[1]  # Of a stage with no steps.
  empty = np.zeros((0, width), np.int64)
  return np.concatenate(sft or [empty]), np.concatenate(rl or [empty])


def training_keys(
  task: tasks_lib.Task,
  config: ml_collections.ConfigDict,
  exclude: Collection[int] | np.ndarray,
  *,
  sft_reject: Callable[[np.ndarray], np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
  """Keys of every problem the run draws: ``(sft [steps * batch], rl [steps * prompts])``,
  in step order (the keys of ``training_problems``)."""
  sft, rl = training_problems(task, config, exclude, sft_reject=sft_reject)
  return task.problem_keys(sft), task.problem_keys(rl)
