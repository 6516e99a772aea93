"""Rollouts (sampled and scored completions) and the batch the RL update learns from.

:func:`sample_rollout` draws n completions per prompt from a :class:`policy.Policy`
and scores them: a :class:`Rollout` of host arrays. :meth:`Rollout.batch` turns it
into the update's :class:`Batch` (a pytree of arrays: token rows, completion mask,
rewards), with row p * n + i holding sample i of prompt p.
"""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import jax
import numpy as np

from experiments.lm import parallel
from experiments.lm import policy as policy_lib
from experiments.lm import sampling
from experiments.lm import tasks as tasks_lib

REWARDS = ("binary", "continuous")


class Batch(NamedTuple):
  """What one RL update learns from (B = P * n rows; row p * n + i: sample i of prompt p).

  Attributes:
    tokens_BxT: prompt then completion tokens.
    mask_BxC: 1 on the completion's tokens up to and including EOS.
    rewards_Pxn: each sample's reward.
  """

  tokens_BxT: Any
  mask_BxC: Any
  rewards_Pxn: Any


@dataclasses.dataclass(frozen=True)
class Rollout:
  """n scored completions of each of P prompts (host arrays).

  Attributes:
    prompts: the P prompt strings.
    prompt_ids: ``[P, L]`` their token ids (BOS first).
    tokens: ``[P, n, C]`` completion tokens (PAD after the first EOS).
    mask: ``[P, n, C]`` 1 up to and including the first EOS.
    entropy: ``[P, n, C]`` the sampling distribution's entropy at each token.
    binary: ``[P, n]`` binary rewards (correct or not).
    continuous: ``[P, n]`` continuous rewards (partial credit).
  """

  prompts: list[str]
  prompt_ids: np.ndarray
  tokens: np.ndarray
  mask: np.ndarray
  entropy: np.ndarray
  binary: np.ndarray
  continuous: np.ndarray

  @property
  def n(self) -> int:
    """Samples per prompt."""
    return int(self.binary.shape[1])

  def rewards(self, reward: str) -> np.ndarray:
    """``[P, n]``: the ``"binary"`` or ``"continuous"`` rewards."""
    if reward not in REWARDS:
      raise ValueError(f"reward={reward!r} must be one of {REWARDS}.")
    return self.binary if reward == "binary" else self.continuous

  def batch(self, reward: str) -> Batch:
    """The update's batch (host arrays) with the ``reward`` rewards."""
    rows = self.tokens.shape[0] * self.n
    tokens_BxT = np.concatenate(
      [np.repeat(self.prompt_ids, self.n, axis=0), self.tokens.reshape(rows, -1)], axis=1
    )
    return Batch(tokens_BxT, self.mask.reshape(rows, -1), self.rewards(reward))


def concatenate(parts: list[Rollout]) -> Rollout:
  """The rollouts of consecutive prompt chunks as one (prompts in order)."""
  fields = [f.name for f in dataclasses.fields(Rollout) if f.name != "prompts"]
  joined = {name: np.concatenate([getattr(p, name) for p in parts]) for name in fields}
  return Rollout(prompts=[s for p in parts for s in p.prompts], **joined)


def sample_rollout(
  policy: policy_lib.Policy,
  params: Any,
  task: tasks_lib.Task,
  prompts: list[str],
  key: jax.Array,
  *,
  n: int,
  mesh: jax.sharding.Mesh,
) -> Rollout:
  """Samples n completions of each prompt from ``policy`` (rows sharded over ``mesh``)
  and scores them with ``task``."""
  prompt_ids = tasks_lib.encode_prompts(prompts)
  rows = parallel.put_rows(sampling.repeat_prompts(prompt_ids, n), mesh)
  out = policy.sample(params, rows, key)
  host = {name: parallel.to_host(x).reshape(len(prompts), n, -1) for name, x in out.items()}
  binary, continuous = tasks_lib.score_batch(task, prompts, host["tokens"])
  return Rollout(
    prompts=list(prompts),
    prompt_ids=prompt_ids,
    tokens=host["tokens"],
    mask=host["mask"],
    entropy=host["entropy"],
    binary=binary,
    continuous=continuous,
  )
