"""Toy policies with exact max@k / pass@k objectives and exact gradients.

Two policies are studied, both with a tiny parameter vector so that the exact
policy gradient of max@k is available to judge the Monte Carlo estimators:

* :class:`GaussianToy`: PKPO's toy (Walder & Karkhanis 2025, Sec. 5.1, Fig. 1 and 4).
  A sample is ``x ~ N(theta, sigma^2)`` and its reward is ``g(x) = x^2`` on ``[0, 1]``,
  else 0. The parameter is the scalar ``theta`` (``sigma`` is fixed).
* :class:`CategoricalBandit`: a softmax policy over ``L`` arms with fixed rewards.
  The parameters are the ``L`` logits.

Every policy exposes the same small interface, on arrays that may be traced:
``sample(params, key, n) -> y [n]``, ``log_prob(params, y) -> [n]``,
``score(params, y) -> [n, dim]`` (the gradient of ``log pi(y_i)`` w.r.t. the
parameters, one row per sample), ``reward(y) -> [n]``, ``max_at_k(params, k)`` and
``pass_at_k(params, k, threshold)`` (exact, differentiable), plus
``exact_gradient(params, k)``, the exact gradient of max@k as a float64 NumPy array.

max@k is E[max of k i.i.d. rewards]; pass@k is the probability that at least one
of k draws has ``reward >= threshold``.
"""

from __future__ import annotations

from collections.abc import Callable
import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
from scipy import integrate
from scipy import special
from scipy import stats

import maxk

# ------------------------------------------------------------------------------
# PKPO's Gaussian toy.
# ------------------------------------------------------------------------------


def _composite_gauss_legendre(num_panels: int, order: int) -> tuple[np.ndarray, np.ndarray]:
  """Nodes and weights of a composite Gauss-Legendre rule on [0, 1]."""
  x, w = np.polynomial.legendre.leggauss(order)
  edges = np.linspace(0.0, 1.0, num_panels + 1)
  half = 0.5 * np.diff(edges)
  mid = 0.5 * (edges[1:] + edges[:-1])
  nodes = (mid[:, None] + half[:, None] * x[None, :]).ravel()
  weights = (half[:, None] * w[None, :]).ravel()
  return nodes, weights


# 512 nodes: smooth integrands with features of width sigma >= 0.01 are integrated
# to float32 precision.
_GL_NODES, _GL_WEIGHTS = _composite_gauss_legendre(num_panels=64, order=8)


def gaussian_max_at_k_float64(theta: float, sigma: float, k: int) -> float:
  """Exact max@k of PKPO's toy by adaptive quadrature in float64.

  With ``G(u) = P(u < x <= 1) = Phi((1-theta)/sigma) - Phi((u-theta)/sigma)``, the
  CDF of the reward at ``u^2`` is ``1 - G(u)``, and substituting ``t = u^2`` in
  ``E[max] = int_0^1 (1 - P(R <= t)^k) dt`` gives
  ``max@k = int_0^1 2u [1 - (1 - G(u))^k] du``.
  """
  theta, sigma = float(theta), float(sigma)

  def integrand(u: float) -> float:
    g = special.ndtr((1.0 - theta) / sigma) - special.ndtr((u - theta) / sigma)
    return 2.0 * u * -np.expm1(k * np.log1p(-g))

  return _quad(integrand, theta, sigma)


def gaussian_max_at_k_grad_float64(theta: float, sigma: float, k: int) -> float:
  """Exact d max@k / d theta of PKPO's toy by adaptive quadrature in float64.

  Differentiating under the integral of :func:`gaussian_max_at_k_float64`:
  ``int_0^1 2u k (1 - G(u))^(k-1) dG/dtheta du`` with
  ``dG/dtheta = [phi((u-theta)/sigma) - phi((1-theta)/sigma)] / sigma``.
  Absolute accuracy is ~1e-10, far below the 1e-6 the variance study needs.
  """
  theta, sigma = float(theta), float(sigma)
  pdf_one = stats.norm.pdf((1.0 - theta) / sigma)

  def integrand(u: float) -> float:
    g = special.ndtr((1.0 - theta) / sigma) - special.ndtr((u - theta) / sigma)
    dg = (stats.norm.pdf((u - theta) / sigma) - pdf_one) / sigma
    return 2.0 * u * k * np.exp((k - 1) * np.log1p(-g)) * dg

  return _quad(integrand, theta, sigma)


def _quad(integrand: Callable[[float], float], theta: float, sigma: float) -> float:
  # Break points where the integrand varies fastest (around theta +- a few sigma).
  points = sorted({float(np.clip(theta + c * sigma, 0.0, 1.0)) for c in (-3, 0, 3)} - {0.0, 1.0})
  value, _ = integrate.quad(
    integrand, 0.0, 1.0, points=points or None, epsabs=1e-13, epsrel=1e-12, limit=500
  )
  return float(value)


@dataclasses.dataclass(frozen=True)
class GaussianToy:
  """PKPO's toy policy ``x ~ N(theta, sigma^2)`` with reward ``x^2`` on [0, 1], else 0.

  Parameters are the scalar ``theta`` (a float32 array of shape ``[]``); the
  gradient dimension is 1.
  """

  sigma: float = 0.1
  name: str = "gaussian"

  def __post_init__(self) -> None:
    if not (np.isfinite(self.sigma) and self.sigma > 0):
      raise ValueError(f"sigma={self.sigma} must be finite and > 0.")

  @property
  def dim(self) -> int:
    return 1

  def init_params(self, theta: float) -> jax.Array:
    return jnp.asarray(theta, jnp.float32)

  def sample(self, params: jax.Array, key: jax.Array, n: int) -> jax.Array:
    return params + self.sigma * jax.random.normal(key, (n,), jnp.float32)

  def log_prob(self, params: jax.Array, y: jax.Array) -> jax.Array:
    z = (y - params) / self.sigma
    return -0.5 * z**2 - np.log(self.sigma) - 0.5 * np.log(2 * np.pi)

  def score(self, params: jax.Array, y: jax.Array) -> jax.Array:
    """d log N(y; theta, sigma^2) / d theta = (y - theta) / sigma^2, shape ``[n, 1]``."""
    return ((y - params) / self.sigma**2)[:, None]

  def reward(self, y: jax.Array) -> jax.Array:
    return jnp.where((y >= 0.0) & (y <= 1.0), y**2, 0.0)

  def max_at_k(self, params: jax.Array, k: int) -> jax.Array:
    """Exact max@k by fixed Gauss-Legendre quadrature (jittable, differentiable)."""
    u = jnp.asarray(_GL_NODES, jnp.float32)
    w = jnp.asarray(_GL_WEIGHTS, jnp.float32)
    g = jax.scipy.special.ndtr((1.0 - params) / self.sigma) - jax.scipy.special.ndtr(
      (u - params) / self.sigma
    )
    g = jnp.clip(g, 0.0, 1.0)
    return jnp.sum(w * 2.0 * u * -jnp.expm1(k * jnp.log1p(-g)))

  def pass_at_k(self, params: jax.Array, k: int, threshold: float) -> jax.Array:
    """Exact P(some of k draws has x^2 >= threshold and x in [0, 1])."""
    if threshold <= 0.0:
      p = jnp.ones_like(params)
    elif threshold > 1.0:
      p = jnp.zeros_like(params)
    else:
      p = jax.scipy.special.ndtr((1.0 - params) / self.sigma) - jax.scipy.special.ndtr(
        (np.sqrt(threshold) - params) / self.sigma
      )
    return -jnp.expm1(k * jnp.log1p(-jnp.clip(p, 0.0, 1.0)))

  def exact_gradient(self, params: jax.Array, k: int) -> np.ndarray:
    """d max@k / d theta in float64 by adaptive quadrature, shape ``[1]``."""
    return np.array([gaussian_max_at_k_grad_float64(float(params), self.sigma, k)])


# ------------------------------------------------------------------------------
# Categorical softmax bandit.
# ------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, eq=False)
class CategoricalBandit:
  """A softmax policy over ``L`` arms with fixed ``rewards [L]``; parameters: logits ``[L]``."""

  rewards: np.ndarray
  name: str = "categorical"

  def __post_init__(self) -> None:
    rewards = np.asarray(self.rewards, np.float32)
    if rewards.ndim != 1 or rewards.size < 2:
      raise ValueError(f"rewards must have shape [L] with L >= 2; got {rewards.shape}.")
    object.__setattr__(self, "rewards", rewards)

  @property
  def dim(self) -> int:
    return int(self.rewards.size)

  @property
  def num_arms(self) -> int:
    return int(self.rewards.size)

  def sample(self, params: jax.Array, key: jax.Array, n: int) -> jax.Array:
    return jax.random.categorical(key, params, shape=(n,))

  def log_prob(self, params: jax.Array, y: jax.Array) -> jax.Array:
    return jax.nn.log_softmax(params)[y]

  def score(self, params: jax.Array, y: jax.Array) -> jax.Array:
    """d log softmax(logits)[y] / d logits = onehot(y) - softmax(logits), ``[n, L]``."""
    return jax.nn.one_hot(y, self.num_arms, dtype=jnp.float32) - jax.nn.softmax(params)

  def reward(self, y: jax.Array) -> jax.Array:
    return jnp.asarray(self.rewards)[y]

  def max_at_k(self, params: jax.Array, k: int) -> jax.Array:
    """Exact max@k, ``maxk.max_at_k_exact`` of ``softmax(logits)`` (differentiable)."""
    return maxk.max_at_k_exact(jax.nn.softmax(params), jnp.asarray(self.rewards), k)

  def pass_at_k(self, params: jax.Array, k: int, threshold: float) -> jax.Array:
    """Exact 1 - (1 - p_correct)^k with correct = ``reward >= threshold``."""
    correct = jnp.asarray(self.rewards >= threshold, jnp.float32)
    p = jnp.clip(jnp.sum(jax.nn.softmax(params) * correct), 0.0, 1.0)
    return -jnp.expm1(k * jnp.log1p(-p))

  def exact_gradient(self, params: jax.Array, k: int) -> np.ndarray:
    """Exact d max@k / d logits (``jax.grad`` of ``maxk.max_at_k_exact``), shape ``[L]``."""
    grad = jax.jit(jax.grad(self.max_at_k), static_argnums=1)(jnp.asarray(params), k)
    return np.asarray(grad, np.float64)


# Either policy: what the variance study and the trainer accept.
Policy = GaussianToy | CategoricalBandit


def random_bandit(
  num_arms: int, *, seed: int, logit_scale: float = 1.0
) -> tuple[CategoricalBandit, jax.Array]:
  """Rewards evenly spaced on [0, 1]; logits ``~ N(0, logit_scale^2)`` drawn from ``seed``."""
  rewards = np.linspace(0.0, 1.0, num_arms)
  logits = logit_scale * np.random.default_rng(seed).standard_normal(num_arms)
  return CategoricalBandit(rewards), jnp.asarray(logits, jnp.float32)


def easy_bandit(num_arms: int) -> tuple[CategoricalBandit, jax.Array]:
  """Rewards evenly spaced on [0, 1]; uniform initial policy."""
  return (CategoricalBandit(np.linspace(0.0, 1.0, num_arms)), jnp.zeros((num_arms,), jnp.float32))


def hard_bandit(
  num_arms: int, *, best_arm_prob: float = 0.01, decoy_reward: float = 0.6
) -> tuple[CategoricalBandit, jax.Array]:
  """A bandit whose best arm starts with small probability, next to a tempting decoy.

  Arm 0 is the best arm (reward 1) with initial probability ``best_arm_prob``;
  arm 1 is a decoy with reward ``decoy_reward``; the other ``num_arms - 2`` arms
  have rewards evenly spaced on ``[0, decoy_reward / 2]``. All arms but the best
  start with equal logits. Expected-reward (k=1) training is pulled towards the
  decoy, which further starves the best arm of samples.
  """
  if num_arms < 3:
    raise ValueError(f"num_arms={num_arms} must satisfy num_arms >= 3.")
  if not 0.0 < best_arm_prob < 1.0:
    raise ValueError(f"best_arm_prob={best_arm_prob} must satisfy 0 < best_arm_prob < 1.")
  if not 0.0 < decoy_reward < 1.0:
    raise ValueError(f"decoy_reward={decoy_reward} must satisfy 0 < decoy_reward < 1.")
  rewards = np.concatenate([[1.0, decoy_reward], np.linspace(0.0, decoy_reward / 2, num_arms - 2)])
  logits = np.zeros(num_arms)
  logits[0] = np.log(best_arm_prob * (num_arms - 1) / (1.0 - best_arm_prob))
  return CategoricalBandit(rewards), jnp.asarray(logits, jnp.float32)
