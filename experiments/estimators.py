"""The gradient estimators compared in the experiments, by the names their results use.

One registry serves the bandit studies and the LM experiment. Every estimator is a
reward transform: it maps a group of ``n`` rewards (samples on the last axis) to
advantages ``a [..., n]``, and ``sum_i a_i grad log pi(y_i)`` is the policy-gradient
estimate. The names are the ``estimator`` column of the bandit studies:

* ``none``, ``loo``, ``loo_centered``, ``loo_minus_one``, ``mean_std``: the baselines
  of :func:`maxk.max_at_k_advantages` (gradient scale; unbiased for grad max@k except
  ``mean_std``). The LM's ``max_at_k`` runs use the one named by ``rl.baseline``.
* ``grpo``, ``rloo``, ``max_minus_second``, ``pass_at_k_training``: the peer
  estimators ``maxk.<name>_advantages``. They target other objectives or scales, so
  their bias against grad max@k is reported as measured.
  ``pass_at_k_training`` is defined for binary rewards: it is fed the binarised reward
  ``correct = reward >= pass_threshold`` (for every policy, continuous or not).
* ``off_policy_exact``, ``off_policy_first_order``: the two methods of
  :func:`maxk.max_at_k_advantages_off_policy`. They use samples from a sampling
  policy ``pi_old`` and ``log_ratio = log pi_theta(y) - log pi_old(y)``; the
  estimate is of grad max@k at the target ``pi_theta``. The on-policy estimators
  ignore ``log_ratio``.

References: PKPO, arXiv 2505.15201 (Eqs. 18-34); max@k, arXiv 2510.23393 (Sec. 3.2,
App. E); Pass@k Training, arXiv 2508.10751; Tang et al. 2025 (max minus second).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
import dataclasses

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

import maxk

BASELINES = tuple(maxk.BASELINES)
PEERS = ("grpo", "rloo", "max_minus_second", "pass_at_k_training")
OFF_POLICY = ("off_policy_exact", "off_policy_first_order")
ESTIMATOR_NAMES = BASELINES + PEERS + OFF_POLICY
# Peers whose advantages do not depend on k.
K_FREE = ("grpo", "rloo", "max_minus_second")

# (rewards [..., n], k, log_ratio [..., n], pass_threshold) -> advantages [..., n].
AdvantageFn = Callable[[jax.Array, int, jax.Array, float], jax.Array]


@dataclasses.dataclass(frozen=True)
class Estimator:
  """One gradient estimator.

  Attributes:
    name: the ``estimator`` column value.
    off_policy: whether it consumes samples from a sampling policy via ``log_ratio``.
    fn: ``(rewards, k, log_ratio, pass_threshold) -> advantages``.
  """

  name: str
  off_policy: bool
  fn: AdvantageFn

  def __call__(
    self,
    rewards: ArrayLike,
    k: int,
    *,
    log_ratio: ArrayLike | None = None,
    pass_threshold: float = 0.5,
  ) -> jax.Array:
    """Advantages ``[..., n]`` for ``rewards [..., n]`` (samples on the last axis).

    Args:
      rewards: ``[..., n]`` rewards of each group.
      k: the k of max@k (static); ignored by the k-free peers.
      log_ratio: ``[..., n]`` log pi_theta(y) - log pi_old(y) (off-policy estimators
        only; default 0, i.e. on-policy).
      pass_threshold: ``correct = reward >= pass_threshold`` for ``pass_at_k_training``.
    """
    rewards = jnp.asarray(rewards, jnp.float32)
    if log_ratio is None:
      log_ratio = jnp.zeros_like(rewards)
    return self.fn(rewards, k, jnp.asarray(log_ratio, jnp.float32), pass_threshold)

  def expected_unbiased(self, n: int, k: int, shift: float = 0.0) -> bool:
    """Whether the estimate is unbiased for grad max@k (gradient scale) at (n, k, shift).

    ``max_minus_second`` equals ``loo_minus_one`` when ``k == n``;
    ``off_policy_first_order`` is exact on-policy (``shift == 0``) and at ``k == 1``
    (where its weight ``1 + (rho_i - 1)`` is the exact importance weight).
    """
    if self.name in ("none", "loo", "loo_centered", "loo_minus_one", "off_policy_exact"):
      return True
    if self.name == "max_minus_second":
      return k == n
    if self.name == "off_policy_first_order":
      return shift == 0.0 or k == 1
    return False

  @property
  def uses_k(self) -> bool:
    """Whether the advantages depend on ``k`` (GRPO, RLOO, max-minus-second do not)."""
    return self.name not in K_FREE


def _baseline(name: str) -> AdvantageFn:
  def fn(rewards: jax.Array, k: int, log_ratio: jax.Array, pass_threshold: float) -> jax.Array:
    del log_ratio, pass_threshold
    return maxk.max_at_k_advantages(rewards, k, baseline=name)

  return fn


def _grpo(rewards: jax.Array, k: int, log_ratio: jax.Array, pass_threshold: float) -> jax.Array:
  del k, log_ratio, pass_threshold
  return maxk.grpo_advantages(rewards)


def _rloo(rewards: jax.Array, k: int, log_ratio: jax.Array, pass_threshold: float) -> jax.Array:
  del k, log_ratio, pass_threshold
  return maxk.rloo_advantages(rewards)


def _max_minus_second(
  rewards: jax.Array, k: int, log_ratio: jax.Array, pass_threshold: float
) -> jax.Array:
  del k, log_ratio, pass_threshold
  return maxk.max_minus_second_advantages(rewards)


def _pass_at_k_training(
  rewards: jax.Array, k: int, log_ratio: jax.Array, pass_threshold: float
) -> jax.Array:
  del log_ratio
  correct = (rewards >= pass_threshold).astype(jnp.float32)
  return maxk.pass_at_k_training_advantages(correct, k)


def _off_policy(method: str) -> AdvantageFn:
  def fn(rewards: jax.Array, k: int, log_ratio: jax.Array, pass_threshold: float) -> jax.Array:
    del pass_threshold
    return maxk.max_at_k_advantages_off_policy(rewards, log_ratio, k, method=method)

  return fn


ESTIMATORS: dict[str, Estimator] = {
  **{name: Estimator(name, False, _baseline(name)) for name in BASELINES},
  "grpo": Estimator("grpo", False, _grpo),
  "rloo": Estimator("rloo", False, _rloo),
  "max_minus_second": Estimator("max_minus_second", False, _max_minus_second),
  "pass_at_k_training": Estimator("pass_at_k_training", False, _pass_at_k_training),
  "off_policy_exact": Estimator("off_policy_exact", True, _off_policy("exact")),
  "off_policy_first_order": Estimator("off_policy_first_order", True, _off_policy("first_order")),
}


def get(name: str) -> Estimator:
  """The estimator called ``name``; ``ValueError`` listing the valid names otherwise."""
  if name not in ESTIMATORS:
    raise ValueError(f"Unknown estimator={name!r}; valid options are {list(ESTIMATOR_NAMES)}.")
  return ESTIMATORS[name]


def parse_names(names: Sequence[str]) -> tuple[str, ...]:
  """Validates a list of estimator names (``["all"]`` means every estimator).

  Raises:
    ValueError: on an unknown or repeated name, or an empty list.
  """
  names = tuple(names)
  if names == ("all",):
    return ESTIMATOR_NAMES
  if not names:
    raise ValueError("estimators must name at least one estimator.")
  for name in names:
    get(name)
  if len(set(names)) != len(names):
    raise ValueError(f"estimators={list(names)} must not repeat a name.")
  return names
