"""The importance-weighted terms of an RL update's inner epochs: each off-policy
method's gradient weights (:func:`off_policy_weights`), the effective sample size and
largest weight of the sequence-level ratios (:func:`importance_diagnostics`), and the
KL penalty's loss term (:func:`kl_penalty`). The module docstring of ``rl`` derives
them; ``rl.policy_loss`` combines them.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from experiments import estimators as estimators_lib


def importance_diagnostics(log_ratio_Pxn: jax.Array) -> dict[str, jax.Array]:
  """Effective sample size and largest normalised weight of sequence-level ratios.

  Args:
    log_ratio_Pxn: log pi_theta(y) - log pi_old(y) of each prompt's n samples.

  Returns:
    ``ess_frac``: mean over prompts of (sum_i rho_i)^2 / (n sum_i rho_i^2), in
    [1/n, 1] (Kong 1992's effective sample size over n); ``max_weight``: the largest
    rho_i / sum_j rho_j over every prompt's samples, in [1/n, 1].
  """
  n = log_ratio_Pxn.shape[-1]
  # Shifting the log-ratios by a constant per prompt leaves both unchanged.
  rho_Pxn = jnp.exp(log_ratio_Pxn - jnp.max(log_ratio_Pxn, axis=-1, keepdims=True))
  total_P = jnp.sum(rho_Pxn, axis=-1)
  ess_P = total_P**2 / jnp.sum(rho_Pxn**2, axis=-1)
  return {
    "ess_frac": jnp.mean(ess_P) / n,
    "max_weight": jnp.max(rho_Pxn / total_P[:, None]),
  }


def kl_penalty(
  logp_BxC: jax.Array, logp_ref_BxC: jax.Array, mask_BxC: jax.Array, rho_B: jax.Array
) -> jax.Array:
  """Per-row loss term whose gradient estimates grad KL(pi_theta || pi_ref).

  Args:
    logp_BxC: token log-probs under pi_theta (differentiated).
    logp_ref_BxC: token log-probs under pi_ref (constant).
    mask_BxC: 1 on the completion's tokens (up to and including EOS).
    rho_B: the sequence-level ratio pi_theta(y) / pi_old(y) of each row (constant; 1
      when the rows were drawn from pi_theta).

  Returns:
    ``[B]``: the value is rho times the k3 estimate of the row's sequence KL,
    sum_t exp(x_t) - 1 - x_t with x_t = log pi_ref - log pi_theta; the gradient is
    rho * sum_t grad log pi_theta(y_t | y_<t) * sum_{s >= t} (log pi_theta - log pi_ref)(y_s),
    whose expectation over rows drawn from pi_old is exactly grad KL(pi_theta || pi_ref)
    (see the module docstring of ``rl``).
  """
  rho_B = jax.lax.stop_gradient(rho_B)
  log_ratio_BxC = jax.lax.stop_gradient((logp_BxC - logp_ref_BxC) * mask_BxC)
  to_go_BxC = jnp.flip(jnp.cumsum(jnp.flip(log_ratio_BxC, -1), axis=-1), -1)
  score_BxC = (logp_BxC - jax.lax.stop_gradient(logp_BxC)) * mask_BxC  # Value 0.
  x_BxC = -log_ratio_BxC
  k3_B = jnp.sum((jnp.exp(x_BxC) - 1.0 - x_BxC) * mask_BxC, axis=-1)
  return rho_B * (k3_B + jnp.sum(to_go_BxC * score_BxC, axis=-1))


def off_policy_weights(
  method: str,
  rewards_Pxn: jax.Array,
  log_ratio_Pxn: jax.Array,
  adv_Pxn: jax.Array,
  shift_Pxn: jax.Array,
  k: int,
) -> jax.Array:
  """Unclipped weights w [P, n] of grad log pi_theta(y_i) for ``exact``, ``first_order``
  or ``ppo_clip`` (see the module docstring of ``rl``); ``shift = adv - S`` is the max@k
  estimator's baseline term (zero for the k-free estimators)."""
  rho_Pxn = jnp.exp(log_ratio_Pxn)
  if method == "ppo_clip":
    return adv_Pxn * rho_Pxn
  # The registry's off-policy estimator of this method (ValueError if none).
  weights_Pxn = estimators_lib.by_method(method)(rewards_Pxn, k, log_ratio=log_ratio_Pxn)
  return weights_Pxn + shift_Pxn * rho_Pxn


def relative_gap(w_Pxn: jax.Array, reference_Pxn: jax.Array) -> jax.Array:
  """||w − reference|| / ||reference|| (0 where the reference is 0)."""
  norm = jnp.sqrt(jnp.sum(reference_Pxn**2))
  gap = jnp.sqrt(jnp.sum((w_Pxn - reference_Pxn) ** 2))
  return jnp.where(norm > 0, gap / jnp.where(norm > 0, norm, 1.0), 0.0)
