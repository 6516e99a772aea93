"""The estimator record: an advantage function and what the experiments need to know of it."""

from __future__ import annotations

from collections.abc import Callable
import dataclasses
from typing import Literal

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike
import numpy as np

from experiments import objectives as objectives_lib

# (rewards [..., n], k, log_ratio [..., n], weights [k]) -> advantages [..., n]; the
# rewards are already binarised for a ``binary`` estimator, ``weights`` are the
# objective's rank weights over k draws.
AdvantageFn = Callable[[jax.Array, int, jax.Array, np.ndarray], jax.Array]
Kind = Literal["baseline", "peer", "off_policy"]


@dataclasses.dataclass(frozen=True)
class Unbiasedness:
  """When an estimator is unbiased for its objective's gradient.

  Attributes:
    rule: the condition in words (``"always"``, ``"k == n"``, ...).
    holds: ``(n, k, shift) -> bool``; ``shift`` is the distance of the sampling
      policy from the target (0 on-policy).
  """

  rule: str
  holds: Callable[[int, int, float], bool]


ALWAYS = Unbiasedness("always", lambda n, k, shift: True)
NEVER = Unbiasedness("never (measured)", lambda n, k, shift: False)
AT_K_EQUALS_N = Unbiasedness("k == n", lambda n, k, shift: k == n)
AT_K_EQUALS_N_MINUS_ONE = Unbiasedness("k == n - 1", lambda n, k, shift: k == n - 1)
# First order: the weight 1 + (rho_i - 1) is the exact importance weight at k = 1.
ON_POLICY_OR_K_ONE = Unbiasedness("shift == 0 or k == 1", lambda n, k, shift: shift == 0 or k == 1)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Estimator:
  """One gradient estimator of one objective.

  Attributes:
    name: the ``estimator`` column value.
    objective: the objective it is measured against (:data:`experiments.objectives.OBJECTIVES`).
    kind: ``"baseline"`` (a baseline of the objective's unbiased advantages),
      ``"peer"`` (another method's estimator) or ``"off_policy"``.
    fn: the advantages, see :data:`AdvantageFn`.
    uses_k: whether the advantages depend on k (GRPO's, RLOO's, MaxRL's do not).
    binary: whether it is fed ``correct = reward >= pass_threshold``.
    unbiased: when it is unbiased for the objective's gradient.
    method: for off-policy entries, the ``method`` of
      :func:`maxk.max_at_k_advantages_off_policy` (the LM's off-policy method name).
    label: a short human-readable description.
    color: its colour in every figure (hex).
    marker: its matplotlib marker in every figure.
  """

  name: str
  objective: str
  kind: Kind
  fn: AdvantageFn
  uses_k: bool
  binary: bool = False
  unbiased: Unbiasedness
  method: str | None = None
  label: str
  color: str
  marker: str

  @property
  def off_policy(self) -> bool:
    """Whether it consumes samples of a sampling policy through ``log_ratio``."""
    return self.kind == "off_policy"

  def __call__(
    self,
    rewards: ArrayLike,
    k: int,
    *,
    log_ratio: ArrayLike | None = None,
    pass_threshold: float = 0.5,
    top_m: int = 2,
  ) -> jax.Array:
    """Advantages ``[..., n]`` for ``rewards [..., n]`` (samples on the last axis).

    Args:
      rewards: ``[..., n]`` rewards of each group.
      k: the k of the objective (static); ignored when not ``uses_k``.
      log_ratio: ``[..., n]`` log pi_theta(y) - log pi_old(y) (off-policy estimators
        only; default 0, i.e. on-policy).
      pass_threshold: ``correct = reward >= pass_threshold`` for ``binary`` estimators.
      top_m: the m of the ``top_m`` objective.

    Raises:
      ValueError: when the objective is undefined at k (``top_m`` with ``k < top_m``).
    """
    weights = objectives_lib.objective_weights(self.objective, k, top_m=top_m)
    if weights is None:
      raise ValueError(f"k={k} must be >= top_m={top_m} for objective={self.objective!r}.")
    rewards = jnp.asarray(rewards, jnp.float32)
    if self.binary:
      rewards = objectives_lib.binarize(rewards, pass_threshold)
    if log_ratio is None:
      log_ratio = jnp.zeros_like(rewards)
    return self.fn(rewards, k, jnp.asarray(log_ratio, jnp.float32), weights)

  def expected_unbiased(self, n: int, k: int, shift: float = 0.0) -> bool:
    """Whether the estimate is unbiased for the objective's gradient at (n, k, shift)."""
    return self.unbiased.holds(n, k, shift)
