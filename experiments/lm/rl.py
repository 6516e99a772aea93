r"""RL objective: maxk advantages, PPO-style clipped inner epochs, KL to the warm start.

Per prompt we draw n completions y_1..y_n from pi_old and score them, r [P, n].

**Which policy.** The sampler draws each token from softmax(logits / tau) at the
temperature tau = ``rl.temperature`` (``sampling.generate``), so the policy being
optimised is that *tempered* distribution pi(y) = prod_t softmax(logits_t / tau)[y_t]:
every log-prob below (the score function, the importance ratios, the KL) is computed
at tau (the ``policy.Policy`` that also samples, ``model.token_logprobs``). Scoring samples drawn
at tau != 1 with the temperature-1 log-probs would bias the gradient (the test
``rl_test.py`` enumerates a small model's completions and shows both facts).
Nucleus (top-p) sampling is refused for RL (``validation``: ``rl.top_p`` must be 1):
the nucleus is a parameter-dependent support, so the renormalised log-probs are not
defined for samples that leave it after an update (infinite importance ratios), and
the expected reward jumps where the nucleus changes, which no score function sees.

**On-policy gradient.** The estimator (one of :mod:`experiments.estimators`) turns
r into advantages a [P, n] on the gradient scale (sum_i a_i grad log pi(y_i)
estimates grad max@k for the max@k baselines), so the sequence-level
score-function estimator is

  loss = -(1/P) sum_p sum_i a_pi * log pi(y_pi),  log pi(y) = sum_t log pi(y_t | y_<t).

We sum log-probs over the tokens of a completion and do *not* normalise by its
length: a_i multiplies grad log pi(y_i) of the whole sequence, exactly as in the
estimator (PKPO, arXiv 2505.15201, Eq. 8-9; max@k, arXiv 2510.23393, Sec. 3.2), so
no length bias is introduced. We average over prompts.

**Inner epochs.** The batch is reused for ``inner_epochs`` full-batch updates;
after the first, pi_theta != pi_old. With rho_i = exp(log_ratio_i) and
log_ratio_i = log pi_theta(y_i) - log pi_old(y_i) (sequence level), the gradient
weight w_i of grad log pi_theta(y_i) is, by the run's off-policy method (a run's
``/method`` suffix in ``rl.runs``, else ``rl.off_policy``; so one config compares
the methods on the same prompts and sampling keys):

* ``"exact"`` / ``"first_order"`` (max@k estimators): the importance-weighted
  max@k weights ``maxk.max_at_k_advantages_off_policy(r, log_ratio, k, method)``
  (unbiased for grad max@k(pi_theta) with ``"exact"``; max@k paper App. E), plus
  the estimator's leave-one-out baseline scaled by the sample's own ratio:
  w_i += rho_i * (a_i - S_i), where S = max_at_k_advantages(r, k, baseline="none").
  For the "loo*" baselines a_i - S_i depends only on the other samples, so the term
  has zero mean under pi_old for every theta and the estimator stays unbiased; at
  rho = 1 (the first epoch) w equals the on-policy advantages exactly.
* ``"ppo_clip"`` (any estimator; always used by those other than max@k, e.g. GRPO):
  w_i = rho_i * a_i, the gradient of PPO's ratio objective (Schulman et al. 2017,
  arXiv 1707.06347, Eq. 7).
* ``"surrogate"`` (max@k estimators): maximise ``maxk.max_at_k_surrogate`` plus the
  same ratio-scaled baseline; its gradient equals ``"exact"`` without clipping.

**Clipping** (all but ``"surrogate"``), as PPO's min(rho a, clip(rho) a) does per
sample: a sample whose *own* ratio has left [1 - eps, 1 + eps] in the direction its
weight pushes gets weight 0. For ``"exact"`` this is only a partial trust region:
w_i = (1/C(n,k)) sum over k-subsets I containing i of (prod_{j in I} rho_j) max_I r,
so every term also carries the ratios of up to k - 1 *other* samples, which are
never clipped. A sample inside the region can thus get a weight scaled by a product
of k - 1 others' ratios (each possibly far outside it), and a sample whose own weight
was clipped still scales the weights of every subset it belongs to. ``"first_order"``
replaces the product by 1 + sum_j (rho_j - 1), so other samples' ratios enter
additively; ``"ppo_clip"`` uses the sample's own ratio only (biased for max@k once
pi_theta != pi_old, but bounded).

**Diagnostics** (logged per step): ``grad_norm`` (first inner epoch, before
clipping) and ``grad_norm_max`` (largest over the inner epochs: the step's gradient
was clipped when it exceeds ``rl.max_grad_norm``); ``kl_to_warm_start``, an unbiased
estimate of KL(pi_old || pi_warm) over whole completions (the mean of
log pi_old(y) - log pi_warm(y) over the batch's samples); and at the last inner
epoch: ``last_ess_frac``, the
effective sample size (sum_i rho_i)^2 / sum_i rho_i^2 of each prompt's n ratios
over n, averaged over prompts (1 on-policy); ``last_max_weight``, the largest
normalised ratio rho_i / sum_j rho_j over all prompts (1/n on-policy, 1 when one
sample carries its group); for max@k runs ``last_gap_first_order`` and
``last_gap_ppo_clip``, the relative L2 distance ||w_m - w_exact|| / ||w_exact|| of
that method's unclipped weights from the exact ones on the same batch.

**KL penalty** ``kl_coef * KL(pi_theta || pi_ref)`` (sequence level, pi_ref the warm
start at the same temperature), through :func:`off_policy.kl_penalty`. Its gradient is
E_{pi_theta}[sum_t grad log pi_theta(y_t | y_<t) sum_{s >= t} (log pi_theta(y_s | y_<s)
- log pi_ref(y_s | y_<s))] (the score function of the log-ratio, with the rewards to
go: earlier terms have zero mean), importance-weighted by rho_i in later epochs, so
its expectation under pi_old is the exact gradient of KL(pi_theta || pi_ref). The
logged value is the non-negative estimator k3 = exp(x) - 1 - x, x = log pi_ref(y_t)
- log pi_theta(y_t) (Schulman 2020, "Approximating KL divergence"), summed over
tokens and weighted by rho_i. k3 serves as the value only: used as a loss, its
gradient has, token by token, the expectation of grad KL(pi_ref || pi_theta), the
forward KL's, not the reverse one's (it omits the score-function term).
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax

from experiments.lm import off_policy
from experiments.lm import policy as policy_lib
from experiments.lm import rollouts
from experiments.lm import run_specs
import maxk

Metrics = dict[str, jax.Array]


@dataclasses.dataclass(frozen=True)
class UpdateSpec:
  """Static settings of one jitted RL update: the objective and its inner epochs (the
  sampling distribution is the policy's, ``policy.Policy``)."""

  estimator: str
  k: int
  baseline: str = "loo_minus_one"
  off_policy: str = "exact"
  inner_epochs: int = 1
  clip_eps: float = 0.2
  kl_coef: float = 0.0

  def __post_init__(self) -> None:
    if self.off_policy not in run_specs.OFF_POLICY:
      raise ValueError(f"Unknown off_policy={self.off_policy!r}; valid: {run_specs.OFF_POLICY}.")
    if self.baseline not in run_specs.BASELINES:
      raise ValueError(f"Unknown baseline={self.baseline!r}; valid: {run_specs.BASELINES}.")
    if self.inner_epochs < 1:
      raise ValueError(f"inner_epochs={self.inner_epochs} must be >= 1.")

  @property
  def method(self) -> str:
    """The inner-epoch method actually used (estimators other than max@k always use
    ``ppo_clip``)."""
    return self.off_policy if self.estimator == run_specs.MAX_AT_K else run_specs.PEER_METHOD


class Targets(NamedTuple):
  """What the inner epochs of one update hold fixed (computed once, by ``make_targets``).

  Attributes:
    seq_old_Pxn: log pi_old(y) of each sample (the sampling policy's).
    adv_Pxn: the run's on-policy advantages.
    shift_Pxn: ``adv - S``, the max@k estimator's baseline term (zero for the k-free
      estimators; see the module docstring).
    logp_ref_BxC: token log-probs under the warm start pi_ref.
  """

  seq_old_Pxn: jax.Array
  adv_Pxn: jax.Array
  shift_Pxn: jax.Array
  logp_ref_BxC: jax.Array


def sequence_logp(
  policy: policy_lib.Policy, params: Any, batch: rollouts.Batch
) -> tuple[jax.Array, jax.Array]:
  """``(logp_BxC, seq_Pxn)``: token log-probs of the completions under ``policy`` and
  their sums over each completion's tokens (log pi(y)), one row per prompt."""
  logp_BxC, _ = policy.logprobs(params, batch.tokens_BxT)
  n = batch.rewards_Pxn.shape[-1]
  return logp_BxC, jnp.sum(logp_BxC * batch.mask_BxC, axis=-1).reshape(-1, n)


def _policy_gradient_loss(
  seq_Pxn: jax.Array,
  log_ratio_Pxn: jax.Array,
  batch: rollouts.Batch,
  targets: Targets,
  spec: UpdateSpec,
) -> tuple[jax.Array, jax.Array, Metrics]:
  """``(pg_loss, clip_frac, gap metrics)`` of the run's method (module docstring)."""
  rewards_Pxn, num_prompts = batch.rewards_Pxn, seq_Pxn.shape[0]
  weights, metrics = {}, {}
  if spec.estimator == run_specs.MAX_AT_K:
    weights = {
      m: off_policy.off_policy_weights(
        m, rewards_Pxn, log_ratio_Pxn, targets.adv_Pxn, targets.shift_Pxn, spec.k
      )
      for m in ("exact", "first_order", "ppo_clip")
    }
    for m in ("first_order", "ppo_clip"):
      metrics[f"gap_{m}"] = off_policy.relative_gap(weights[m], weights["exact"])
  if spec.method == "surrogate":
    objective = jnp.sum(
      maxk.max_at_k_surrogate(seq_Pxn, targets.seq_old_Pxn, rewards_Pxn, spec.k)
    ) + jnp.sum(targets.shift_Pxn * jnp.exp(seq_Pxn - targets.seq_old_Pxn))
    return -objective / num_prompts, jnp.zeros(()), metrics
  if spec.estimator == run_specs.MAX_AT_K:
    w_Pxn = weights[spec.method]
  else:
    w_Pxn = off_policy.off_policy_weights(
      spec.method, rewards_Pxn, log_ratio_Pxn, targets.adv_Pxn, targets.shift_Pxn, spec.k
    )
  clipped_Pxn = ((w_Pxn > 0) & (log_ratio_Pxn > jnp.log1p(spec.clip_eps))) | (
    (w_Pxn < 0) & (log_ratio_Pxn < jnp.log1p(-spec.clip_eps))
  )
  w_Pxn = jax.lax.stop_gradient(jnp.where(clipped_Pxn, 0.0, w_Pxn))
  pg_loss = -jnp.sum(w_Pxn * seq_Pxn) / num_prompts
  return pg_loss, jnp.mean(clipped_Pxn.astype(jnp.float32)), metrics


def policy_loss(
  params: Any,
  policy: policy_lib.Policy,
  batch: rollouts.Batch,
  targets: Targets,
  spec: UpdateSpec,
) -> tuple[jax.Array, Metrics]:
  """Loss (to minimise) and metrics of one inner epoch; see the module docstring."""
  logp_BxC, seq_Pxn = sequence_logp(policy, params, batch)
  log_ratio_Pxn = jax.lax.stop_gradient(seq_Pxn - targets.seq_old_Pxn)
  metrics = off_policy.importance_diagnostics(log_ratio_Pxn)
  pg_loss, clip_frac, gaps = _policy_gradient_loss(seq_Pxn, log_ratio_Pxn, batch, targets, spec)
  if spec.kl_coef > 0:
    rho_B = jnp.exp(log_ratio_Pxn).reshape(-1)
    kl = jnp.mean(off_policy.kl_penalty(logp_BxC, targets.logp_ref_BxC, batch.mask_BxC, rho_B))
  else:
    kl = jnp.zeros(())
  loss = pg_loss + spec.kl_coef * kl
  return loss, {
    "pg_loss": pg_loss,
    "kl": jax.lax.stop_gradient(kl),
    "clip_frac": clip_frac,
    "abs_log_ratio": jnp.mean(jnp.abs(log_ratio_Pxn)),
    **metrics,
    **gaps,
  }


# Per-epoch metrics also logged at the last inner epoch (``last_<name>``); the rest
# are logged at the first (on-policy) epoch only, where these would be trivial
# (ratios 1) but for the first two.
LAST_EPOCH_METRICS = (
  "clip_frac",
  "abs_log_ratio",
  "ess_frac",
  "max_weight",
  "gap_first_order",
  "gap_ppo_clip",
)
_FIRST_EPOCH_ALSO = ("clip_frac", "abs_log_ratio")


def make_targets(
  policy: policy_lib.Policy,
  params: Any,
  ref_params: Any,
  batch: rollouts.Batch,
  spec: UpdateSpec,
) -> tuple[Targets, jax.Array]:
  """The update's ``Targets`` and the sampling policy's token log-probs ``logp_old_BxC``."""
  logp_old_BxC, seq_old_Pxn = sequence_logp(policy, params, batch)
  seq_old_Pxn = jax.lax.stop_gradient(seq_old_Pxn)
  rewards_Pxn = batch.rewards_Pxn
  adv_Pxn = run_specs.advantages(spec.estimator, rewards_Pxn, spec.k, spec.baseline)
  if spec.estimator == run_specs.MAX_AT_K:
    shift_Pxn = adv_Pxn - maxk.max_at_k_advantages(rewards_Pxn, spec.k, baseline="none")
  else:
    shift_Pxn = jnp.zeros_like(adv_Pxn)
  # The warm start's log-probs: the KL penalty's reference, and in every run the
  # logged distance of the sampling policy from the warm start.
  logp_ref_BxC, _ = policy.logprobs(ref_params, batch.tokens_BxT)
  logp_ref_BxC = jax.lax.stop_gradient(logp_ref_BxC)
  return Targets(seq_old_Pxn, adv_Pxn, shift_Pxn, logp_ref_BxC), logp_old_BxC


def _step_metrics(per_epoch: Metrics) -> Metrics:
  """Each metric at the first inner epoch, and those of ``LAST_EPOCH_METRICS`` at the
  last as ``last_<name>``."""
  metrics = {}
  for name, x in per_epoch.items():
    if name not in LAST_EPOCH_METRICS or name in _FIRST_EPOCH_ALSO:
      metrics[name] = x[0]
    if name in LAST_EPOCH_METRICS:
      metrics[f"last_{name}"] = x[-1]
  return metrics


def update_step(
  params: Any,
  opt_state: Any,
  ref_params: Any,
  batch: rollouts.Batch,
  *,
  policy: policy_lib.Policy,
  optimizer: optax.GradientTransformation,
  spec: UpdateSpec,
) -> tuple[Any, Any, Metrics]:
  """One RL update: ``spec.inner_epochs`` full-batch steps of ``optimizer`` on
  ``policy_loss``; returns the new parameters and optimiser state and the metrics.

  ``ref_params`` (the warm start) enters the loss only when ``kl_coef > 0``; every
  update logs ``kl_to_warm_start`` from it.
  """
  targets, logp_old_BxC = make_targets(policy, params, ref_params, batch, spec)
  grad_fn = jax.value_and_grad(policy_loss, has_aux=True)

  def epoch(carry: tuple[Any, Any], _: None) -> tuple[tuple[Any, Any], Metrics]:
    params, opt_state = carry
    (loss, aux), grads = grad_fn(params, policy, batch, targets, spec)
    updates, opt_state = optimizer.update(grads, opt_state, params)
    params = optax.apply_updates(params, updates)
    return (params, opt_state), {"loss": loss, "grad_norm": optax.global_norm(grads), **aux}

  (params, opt_state), per_epoch = jax.lax.scan(
    epoch, (params, opt_state), None, length=spec.inner_epochs
  )
  metrics = _step_metrics(per_epoch)
  metrics["adv_abs_mean"] = jnp.mean(jnp.abs(targets.adv_Pxn))
  metrics["grad_norm_max"] = jnp.max(per_epoch["grad_norm"])
  # KL(pi_old || pi_ref) of whole completions, estimated without bias by the mean
  # over the batch's samples (drawn from pi_old) of log pi_old(y) - log pi_ref(y).
  metrics["kl_to_warm_start"] = jnp.mean(
    jnp.sum((jax.lax.stop_gradient(logp_old_BxC) - targets.logp_ref_BxC) * batch.mask_BxC, axis=-1)
  )
  return params, opt_state, metrics


def make_update(
  policy: policy_lib.Policy,
  optimizer: optax.GradientTransformation,
  spec: UpdateSpec,
  state_sharding: jax.sharding.Sharding | None = None,
) -> Any:
  """``update_step`` jitted: (params, opt_state, ref_params, batch) -> (params,
  opt_state, metrics), donating the first two.

  ``state_sharding`` (e.g. replicated) pins the sharding of the returned state, so
  that the next call hits the compilation cache.

  Raises:
    ValueError: if ``policy`` samples from a nucleus (``top_p < 1``), whose
      log-probs the update cannot compute (see the module docstring).
  """
  if policy.top_p < 1:
    raise ValueError(f"RL needs policy.top_p = 1, got {policy.top_p}.")
  step = functools.partial(update_step, policy=policy, optimizer=optimizer, spec=spec)
  return jax.jit(
    step, donate_argnums=(0, 1), out_shardings=(state_sharding, state_sharding, state_sharding)
  )
