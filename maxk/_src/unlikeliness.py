"""The unlikeliness reward: correct samples the policy finds less likely earn more.

He, Fried & Welleck, "Rewarding the Unlikely: Lifting GRPO Beyond Distribution
Sharpening", arXiv 2506.02355 (EMNLP 2025), its "unlikeliness reward", as their
released trainer computes it (``RayLeanTrainer._compute_advantages`` in
github.com/AndreHe02/rewarding-unlikely-release, with ``lean.rank_penalty=0.25`` in
its ``examples/lean/grpo.sh``): the samples of a group are ranked by their
likelihood (the trainer uses the mean per-token log-probability), rank_i = 0 for the
least likely up to n − 1 for the most likely, and each reward is scaled by

  r'_i = r_i (1 − β_rank · rank_i / n),

so among correct samples the least likely keeps its reward and the most likely loses
β_rank (n − 1)/n of it; the advantage is GRPO's z-score of r' (mean, sample std,
+ 1e-6).

What its expected gradient follows (derived here, checked exactly on bandits in
tests/maxk/unlikeliness_test.py).  On a policy over arms whose log-probabilities are
the ranking key (a bandit: each sample is one arm y with probability π_y), take
``baseline="none"`` (a_i = r'_i).  Given y_i = y, the rank of sample i is the number
of other samples on strictly less likely arms, with mean (n − 1) F(y) where
F(y) = Σ_{y': π_{y'} < π_y} π_{y'}; the rank is computed from the sampled
log-probabilities and carries no gradient, so

  E[Σ_i a_i ∇log π(y_i)] = n Σ_y π_y r_y (1 − β (n − 1)/n · F(y)) ∇log π(y),

the policy gradient of the expected *frozen* reward r̃(y) = r_y (1 − β (n − 1)/n F(y))
(evaluated at the current π and held fixed).  Is that field the gradient of some
function of the logits?  With G_y = n r̃(y) it is Jᵀ G, J = ∂π/∂logits = diag(π) − ππᵀ,
and its Jacobian is symmetric iff J (M − Mᵀ) J = 0 for M = ∂G/∂π; with distinct arm
probabilities M_{y y'} = −β (n − 1) r_y for each less likely y' and 0 otherwise, and
J kills exactly the antisymmetric matrices u1ᵀ − 1uᵀ.  That holds iff every arm other
than the most and the least likely earns 0 (always on two arms).  Otherwise (any
reward on a middle arm, e.g. two correct arms below the most likely one) the field
has a curl and follows no objective; it is then biased for every objective, E[r]
and pass@k included.  GRPO's z-score (the default) adds a data-dependent scale and
centring; its expected gradient is likewise not a gradient on such bandits.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike
import numpy as np

from maxk._src import checks
from maxk._src import ragged
from maxk._src import sorted_kernels

#: The ``baseline`` options of :func:`maxk.unlikeliness_advantages`.
UNLIKELINESS_BASELINES = ("grpo", "none")


def unlikeliness_advantages(
  rewards: ArrayLike,
  log_probs: ArrayLike,
  *,
  beta: float = 0.25,
  baseline: str = "grpo",
  eps: float = 1e-6,
  std_ddof: int = 1,
  where: ArrayLike | None = None,
) -> jax.Array:
  """Unlikeliness-reward advantages (He, Fried & Welleck, arXiv 2506.02355).

  Each reward is scaled by its sample's likelihood rank within the group,

    r'_i = r_i (1 − β · rank_i / n),   rank_i = #{j ≠ i: log_probs_j < log_probs_i},

  (0 for the least likely sample, n − 1 for the most likely; tied samples share the
  lower rank, which keeps the function permutation equivariant and matches the
  authors' trainer, ``argsort(argsort(·)) / n``, wherever the log-probabilities are
  distinct), and then

  * ``"grpo"`` (default, the paper's): a_i = (r'_i − mean r') / (std(r') + eps), the
    std with n − ``std_ddof`` in its divisor (the trainer's ``torch.std``: 1, eps 1e-6);
  * ``"none"``: a_i = r'_i.

  Not unbiased for any objective: with ``"none"``, on a bandit its expected gradient
  is n Σ_y π_y r_y (1 − β (n − 1)/n · F(y)) ∇log π(y), F(y) = the probability of the
  arms strictly less likely than y, i.e. REINFORCE on a reward that depends on the
  current policy and is held fixed.  That field is the gradient of no function of
  the logits (its Jacobian is not symmetric) unless every arm other than the most
  and the least likely earns 0; so in general it follows no objective (module
  docstring; tests/maxk/unlikeliness_test.py checks the formula, the asymmetry and
  the exception exactly).

  Cost: O(n²) comparisons per group for the ranks.

  Args:
    rewards: ``[..., n]`` rewards (the paper's are binary; any real rewards work).
    log_probs: the shape of ``rewards``: each sample's log-likelihood under the
      sampling policy (the trainer uses the mean per-token log-probability).
    beta: keyword-only, β_rank >= 0 (0.25 in the authors' released script).
    baseline: keyword-only, ``"grpo"`` or ``"none"``.
    eps: keyword-only, added to the std; must be >= 0.
    std_ddof: keyword-only, 0 or 1.
    where: keyword-only, optional bool, broadcastable to the input: the valid
      samples of each group (ragged groups; n is each group's number m of valid
      samples, and only valid samples are ranked); the others get 0, as does every
      sample of a group with m < 1.

  Returns:
    ``[..., n]`` advantages.  A NaN in a group's rewards or log-probabilities makes
    that whole group NaN.

  Raises:
    ValueError: mismatched shapes, ``beta`` or ``eps`` < 0, an unknown ``baseline``
      or a ``std_ddof`` other than 0 or 1.
  """
  rewards = checks.as_float_array(rewards, "rewards")
  log_probs = checks.as_float_array(log_probs, "log_probs")
  checks.check_same_shape(rewards, "rewards", log_probs, "log_probs")
  for value, name in ((beta, "beta"), (eps, "eps")):
    if checks.is_concrete(value) and not (np.ndim(value) == 0 and float(value) >= 0):
      raise ValueError(f"{name}={value!r} must be a real number >= 0.")
  baseline = checks.check_option(baseline, "baseline", UNLIKELINESS_BASELINES)
  std_ddof = checks.check_int(std_ddof, "std_ddof", low=0, high=1)
  valid = ragged.as_valid(where, rewards.shape)
  if valid is None:
    valid = jnp.ones(rewards.shape, bool)
  dtype = rewards.dtype
  return _unlikeliness(
    rewards,
    log_probs.astype(dtype),
    valid,
    jnp.asarray(beta, dtype),
    jnp.asarray(eps, dtype),
    baseline,
    std_ddof,
  )


@functools.partial(jax.jit, static_argnums=(5, 6))
def _unlikeliness(
  rewards: jax.Array,
  log_probs: jax.Array,
  valid: jax.Array,
  beta: jax.Array,
  eps: jax.Array,
  baseline: str,
  ddof: int,
) -> jax.Array:
  m = ragged.count(valid).astype(rewards.dtype)
  # rank_i: the valid samples strictly less likely than i ([..., n, n] comparisons).
  below = (log_probs[..., None, :] < log_probs[..., :, None]) & valid[..., None, :]
  rank = jnp.sum(below, axis=-1).astype(rewards.dtype)
  scaled = rewards * (1 - beta * rank / jnp.maximum(m, 1))
  scaled = jnp.where(valid, scaled, 0)
  if baseline == "grpo":
    out = sorted_kernels.zscore(scaled, eps=eps, ddof=ddof, valid=valid)
  else:
    out = scaled
  out = jnp.where(valid, out, 0)
  poisoned = jnp.where(jnp.isnan(log_probs), jnp.nan, rewards)
  return ragged.nan_group(poisoned, valid, out)
