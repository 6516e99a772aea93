"""The policy: a model with its sampling distribution, shared by the sampler and the learner.

A :class:`Policy` is the model (graph definition and config), the number of prompt
tokens before each completion, and the distribution completions are drawn from:
softmax(logits / ``temperature``), nucleus-filtered to mass ``top_p``. The sampler
(:meth:`Policy.sample`) and the RL update (``rl.make_update``, through
:meth:`Policy.logprobs`) read the temperature from the same object, so the update
scores the samples under the distribution that drew them (see ``rl``). The object
is hashable: it is a static argument of jitted functions.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from flax import nnx
import jax

from experiments.lm import model as model_lib
from experiments.lm import sampling


@dataclasses.dataclass(frozen=True)
class Policy:
  """A model and its sampling distribution.

  Attributes:
    graphdef: the model's graph definition (parameters are passed separately).
    cfg: the model config; completions fill the rest of its context,
      ``cfg.max_len - prompt_len`` tokens.
    prompt_len: tokens before each completion (BOS + prompt).
    temperature: completions are drawn from softmax(logits / temperature), > 0.
    top_p: nucleus mass in (0, 1]; 1 draws from the whole tempered distribution,
      the only setting whose log-probs :meth:`logprobs` computes.
  """

  graphdef: nnx.GraphDef[Any]
  cfg: model_lib.ModelConfig
  prompt_len: int
  temperature: float = 1.0
  top_p: float = 1.0

  def __post_init__(self) -> None:
    if not self.temperature > 0:
      raise ValueError(f"temperature={self.temperature} must be > 0.")
    if not 0 < self.top_p <= 1:
      raise ValueError(f"top_p={self.top_p} must be in (0, 1].")
    if not 1 <= self.prompt_len < self.cfg.max_len:
      raise ValueError(
        f"prompt_len={self.prompt_len} must be in [1, cfg.max_len={self.cfg.max_len})."
      )

  @property
  def completion_len(self) -> int:
    """Tokens sampled after each prompt."""
    return self.cfg.max_len - self.prompt_len

  def sample(self, params: Any, prompts_BxL: jax.Array, key: jax.Array) -> dict[str, jax.Array]:
    """``completion_len`` tokens after each prompt row (``sampling.generate``)."""
    return sampling.generate(
      self.graphdef,
      params,
      prompts_BxL,
      key,
      cfg=self.cfg,
      max_new=self.completion_len,
      temperature=self.temperature,
      top_p=self.top_p,
    )

  def logprobs(self, params: Any, tokens_BxT: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``(logp_BxC, entropy_BxC)`` of the completion tokens under the tempered
    distribution (``model.token_logprobs``; top-p is not applied)."""
    return model_lib.token_logprobs(
      self.graphdef, params, tokens_BxT, self.prompt_len, self.temperature
    )
