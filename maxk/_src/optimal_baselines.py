"""Variance-optimal baselines weighted by the samples' squared score norms.

For the score-function estimate ĝ = Σ_i (r_i − b) ∇log π(y_i) of ∇E[r], the constant
baseline that minimises E‖ĝ‖² is

  b* = E[r ‖∇log π(y)‖²] / E[‖∇log π(y)‖²]

(Greensmith, Bartlett & Baxter, "Variance reduction techniques for gradient
estimates in reinforcement learning", JMLR 5 (2004): each outcome's reward
weighted by the squared norm of its score).  For a softmax over arms with logits θ,
∇_θ log π(y) = e_y − π and ‖e_y − π‖² = 1 − 2π_y + ‖π‖².  A trainer estimates b*
from its group: with weights w_i = ‖∇log π(y_i)‖² (or a proxy of them),

  plug-in:        b = Σ_j w_j r_j / Σ_j w_j                (all n samples, i's own too),
  leave-one-out:  b_i = Σ_{j≠i} w_j r_j / Σ_{j≠i} w_j      (the other n − 1 samples).

The plug-in baseline depends on y_i, so Σ_i (r_i − b) ∇log π(y_i) is biased for
∇E[r]; the leave-one-out baseline does not, and the estimate stays unbiased
(:func:`maxk.testing.gradient_bias` measures both exactly).

The same formula ships under two other names:

* OPO (Hao et al., "On-Policy RL with Optimal Reward Baseline", arXiv 2505.23585):
  w_i = L_i, the length of response i (the paper's proxy for the squared score norm
  of a sequence, a sum of L_i per-token terms), in the plug-in form.
* verl's ``optimal_token_baseline`` (``compute_optimal_token_baseline_advantage``;
  arXiv 2602.07078): per token t, B_t = Σ_i G_t^i W_t^i / (Σ_i W_t^i + ε) over the
  group's responses still alive at t, with W_t^i = Σ_{j<=t} (1 − 2π(y_j^i) + Σπ²)
  the cumulative per-token squared score norm and G_t^i the reward-to-go (the
  plug-in form, own sample included).  For an outcome reward (G_t^i = r_i) on a
  one-step policy (a bandit: L = 1), W^i = ‖e_{y_i} − π‖² and B is the plug-in b
  above with ``eps = ε``.  Its per-token form (a baseline per position, with its
  ``handle_zero_tail`` rule) needs per-token inputs and is not provided here.
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


def _check_nonnegative(value: object, name: str) -> None:
  """A concrete ``value`` must be >= 0 where it is not NaN (traced values are not checked)."""
  if not checks.is_concrete(value):
    return
  arr = np.asarray(value)
  if np.any(arr < 0):
    raise ValueError(f"{name} must be >= 0; got a minimum of {np.nanmin(arr)}.")


def optimal_baseline_advantages(
  rewards: ArrayLike,
  score_sq_norms: ArrayLike,
  *,
  leave_one_out: bool = True,
  eps: float = 0.0,
  where: ArrayLike | None = None,
) -> jax.Array:
  """a_i = r_i − b_i with the score-norm-weighted baseline of Greensmith et al. (2004).

  With w_i = ``score_sq_norms[i]`` (‖∇log π(y_i)‖², or a proxy of it):

  * ``leave_one_out=True`` (default): b_i = Σ_{j≠i} w_j r_j / (Σ_{j≠i} w_j + eps),
    the sample estimate of b* = E[r ‖∇log π‖²] / E[‖∇log π‖²] from the other
    samples.  It does not depend on y_i, so Σ_i a_i ∇log π(y_i) is unbiased for
    ∇E[r] (on RLOO's scale: it estimates n ∇E[r]); with equal w it is RLOO.
  * ``leave_one_out=False``: b = Σ_j w_j r_j / (Σ_j w_j + eps) over all samples, the
    plug-in form that OPO (arXiv 2505.23585, w_i = response length L_i, eps = 0) and
    verl's ``optimal_token_baseline`` for an outcome reward on a one-step policy
    (w_i = 1 − 2π(y_i) + Σπ², eps = 1e-8) ship.  Biased: b depends on y_i through
    w_i r_i.  With equal w it is r_i − mean(r) (Dr. GRPO's advantage).

  For a softmax policy over arms, ‖∇_logits log π(y)‖² = 1 − 2π_y + ‖π‖².  Where the
  denominator is 0 (all weights 0, eps = 0) the baseline is 0.  Computed on rewards
  measured from the group maximum (b is shift-equivariant when eps = 0), with the
  leave-one-out sums as prefix plus suffix sums (no total − own cancellation).

  Args:
    rewards: ``[..., n]`` rewards, samples on the last axis (n >= 2 for
      ``leave_one_out``).
    score_sq_norms: the shape of ``rewards`` (or broadcastable to it): the weights
      w_i >= 0 (checked when concrete).
    leave_one_out: keyword-only, see above.
    eps: keyword-only, added to the denominator; must be >= 0.
    where: keyword-only, optional bool, broadcastable to the input: the valid
      samples of each group (ragged groups; n is each group's number m of valid
      samples); the others get 0, as does every sample of a group with too few
      (m < 2 for ``leave_one_out``, m < 1 otherwise).

  Returns:
    ``[..., n]`` advantages.  A NaN in a group's rewards or weights makes that whole
    group NaN.

  Raises:
    ValueError: negative weights, a bad ``eps``, a non-bool ``leave_one_out``,
      shapes that do not broadcast, or n < 2 with ``leave_one_out``.
  """
  if not isinstance(leave_one_out, (bool, np.bool_)):
    raise ValueError(f"leave_one_out={leave_one_out!r} must be a bool.")
  rewards = checks.as_float_array(rewards, "rewards")
  weights = checks.as_float_array(score_sq_norms, "score_sq_norms", min_ndim=0)
  try:
    weights = jnp.broadcast_to(weights, rewards.shape).astype(rewards.dtype)
  except ValueError as e:
    raise ValueError(
      f"score_sq_norms of shape {weights.shape} must broadcast to the rewards' shape "
      f"{rewards.shape}."
    ) from e
  _check_nonnegative(score_sq_norms, "score_sq_norms")
  _check_nonnegative(eps, "eps")
  if leave_one_out:
    checks.check_int(rewards.shape[-1], "n (rewards.shape[-1])", low=2)
  valid = ragged.as_valid(where, rewards.shape)
  if valid is None:
    valid = jnp.ones(rewards.shape, bool)
  return _optimal_baseline(
    rewards, weights, valid, jnp.asarray(eps, rewards.dtype), bool(leave_one_out)
  )


def _exclusive_sum(x: jax.Array) -> jax.Array:
  """Σ_{j≠i} x_j along the last axis as a prefix plus a suffix sum (no cancellation)."""
  zero = jnp.zeros_like(x[..., :1])
  before = jnp.concatenate([zero, jnp.cumsum(x, axis=-1)[..., :-1]], axis=-1)
  after = jnp.concatenate([jnp.flip(jnp.cumsum(jnp.flip(x, -1), axis=-1), -1)[..., 1:], zero], -1)
  return before + after


@functools.partial(jax.jit, static_argnums=4)
def _optimal_baseline(
  rewards: jax.Array, weights: jax.Array, valid: jax.Array, eps: jax.Array, leave_one_out: bool
) -> jax.Array:
  m = ragged.count(valid)
  poisoned = jnp.where(jnp.isnan(weights), jnp.nan, rewards)  # NaN rule over both inputs.
  top = jnp.max(jnp.where(valid, rewards, -jnp.inf), axis=-1, keepdims=True)
  shift = sorted_kernels.finite_or_zero(top)
  x = jnp.where(valid, rewards - shift, 0)
  w = jnp.where(valid & ~jnp.isnan(weights), weights, 0)
  if leave_one_out:
    num, den = _exclusive_sum(w * x), _exclusive_sum(w)
    enough = m >= 2
  else:
    num = jnp.sum(w * x, axis=-1, keepdims=True)
    den = jnp.sum(w, axis=-1, keepdims=True)
    enough = m >= 1
  den = den + eps
  positive = den > 0
  safe = jnp.where(positive, den, 1)
  b_x = jnp.where(positive, num / safe, 0)
  # b(r) = b(x) + shift·Σw/(Σw + eps) (0 where the denominator is 0), so
  # a = x − b(x) + shift·(1 − Σw/(Σw + eps)): exactly x − b(x) when eps = 0.
  kept = jnp.where(positive, (den - eps) / safe, 0)
  out = x - b_x + shift * (1 - kept)
  out = jnp.where(valid & enough, out, 0)
  return ragged.nan_group(poisoned, valid, out)
