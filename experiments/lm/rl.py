r"""RL objective: maxk advantages, PPO-style clipped inner epochs, KL to the warm start.

Per prompt we draw n completions y_1..y_n from pi_old and score them, r [P, n].

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
weight w_i of grad log pi_theta(y_i) is, by ``off_policy``:

* ``"exact"`` / ``"first_order"`` (max@k estimators): the importance-weighted
  max@k weights ``maxk.max_at_k_advantages_off_policy(r, log_ratio, k, method)``
  (unbiased for grad max@k(pi_theta) with ``"exact"``; max@k paper App. E), plus
  the estimator's leave-one-out baseline scaled by the sample's own ratio:
  w_i += rho_i * (a_i - S_i), where S = max_at_k_advantages(r, k, baseline="none").
  For the "loo*" baselines a_i - S_i depends only on the other samples, so the term
  has zero mean under pi_old for every theta and the estimator stays unbiased; at
  rho = 1 (the first epoch) w equals the on-policy advantages exactly.
* ``"ppo_clip"`` (any estimator; always used by k-independent ones such as GRPO):
  w_i = rho_i * a_i, the gradient of PPO's ratio objective (Schulman et al. 2017).
* ``"surrogate"`` (max@k estimators): maximise ``maxk.max_at_k_surrogate`` plus the
  same ratio-scaled baseline; its gradient equals ``"exact"`` without clipping.

Clipping (all but ``"surrogate"``), as PPO's min(rho a, clip(rho) a) does per
sample: a sample whose ratio has left [1 - eps, 1 + eps] in the direction its
weight pushes gets weight 0.

**KL penalty.** ``kl_coef * mean_i sum_t k3_t`` with the non-negative estimator
k3 = exp(x) - 1 - x, x = log pi_ref(y_t) - log pi_theta(y_t) (Schulman 2020,
"Approximating KL divergence"), pi_ref the warm-start policy.
"""

from __future__ import annotations

import dataclasses

from flax import nnx
import jax
import jax.numpy as jnp
import optax

from experiments import estimators as estimators_lib
from experiments import schedules
from experiments.lm import model as model_lib
import maxk

# Run-spec estimators: "max_at_k" (its baseline is ``rl.baseline``) or a k-free peer.
K_FREE_ESTIMATORS = estimators_lib.K_FREE
ESTIMATORS = ("max_at_k", *K_FREE_ESTIMATORS)
OFF_POLICY = ("exact", "first_order", "surrogate", "ppo_clip")
BASELINES = estimators_lib.BASELINES


@dataclasses.dataclass(frozen=True)
class RunSpec:
  """One RL run: an estimator and its k_opt schedule (see :mod:`experiments.schedules`)."""

  name: str
  estimator: str
  schedule: schedules.Schedule

  def k_at(self, step: int) -> int:
    """k_opt of RL step ``step``, numbered from 1 as the training loop counts them.

    Step ``step`` has schedule index ``step - 1``: ``"8:50:1"`` uses k=8 for steps
    1-50 (the first 50 steps) and k=1 from step 51 on.
    """
    return self.schedule.k_at(step - 1)

  @property
  def k_label(self) -> str:
    return "n/a" if self.estimator in K_FREE_ESTIMATORS else self.schedule.spec


def parse_runs(text: str, n: int, *, num_steps: int | None = None) -> list[RunSpec]:
  """Parses ``"max_at_k@1,max_at_k@4,max_at_k@8:50:1,grpo"`` into run specs.

  Each entry is ``estimator`` or ``estimator@schedule``; a schedule (default ``1``) is
  ``k`` or ``k0:t1:k1[:t2:k2...]``: k0 for the first t1 RL steps, then k1 until step
  t2, and so on (:func:`experiments.schedules.parse_schedule`; PKPO Fig. 3 anneals k
  this way). k-free estimators (GRPO, RLOO, max-minus-second) take no schedule.

  Args:
    text: the comma-separated run specs (``rl.runs``).
    n: samples per prompt; every k must satisfy ``1 <= k <= n``.
    num_steps: the number of RL steps when known (``rl.steps``): switch steps must
      then be smaller.

  Raises:
    ValueError: on an unknown estimator, a bad schedule, k outside [1, n], switch
      steps that do not strictly increase inside (0, num_steps), or a repeated run.
  """
  specs = []
  for entry in [e.strip() for e in text.split(",") if e.strip()]:
    estimator, _, schedule_text = entry.partition("@")
    if estimator not in ESTIMATORS:
      raise ValueError(f"Unknown estimator {estimator!r} in runs={text!r}; valid: {ESTIMATORS}.")
    if estimator in K_FREE_ESTIMATORS:
      specs.append(RunSpec(estimator, estimator, schedules.constant(1)))
      continue
    try:
      schedule = schedules.parse_schedule(schedule_text or "1", num_steps=num_steps, n=n)
    except ValueError as e:
      raise ValueError(f"run {entry!r}: {e}") from None
    name = f"{estimator}_k{schedule.spec}".replace(":", "-")
    specs.append(RunSpec(name, estimator, schedule))
  if not specs:
    raise ValueError("rl.runs must name at least one run.")
  names = [s.name for s in specs]
  if len(set(names)) != len(names):
    raise ValueError(f"rl.runs={text!r} repeats a run.")
  return specs


def advantages(estimator: str, rewards_Pxn: jax.Array, k: int, baseline: str) -> jax.Array:
  """On-policy advantages [P, n] of a run-spec estimator (gradient scale).

  ``"max_at_k"`` is the registry estimator named ``baseline``
  (:func:`maxk.max_at_k_advantages`); the k-free peers are looked up by name.
  """
  if estimator not in ESTIMATORS:
    raise ValueError(f"Unknown estimator {estimator!r}; valid: {ESTIMATORS}.")
  name = baseline if estimator == "max_at_k" else estimator
  return estimators_lib.get(name)(rewards_Pxn, k)


@dataclasses.dataclass(frozen=True)
class UpdateSpec:
  """Static settings of one jitted RL update."""

  estimator: str
  k: int
  baseline: str = "loo_minus_one"
  off_policy: str = "exact"
  inner_epochs: int = 1
  clip_eps: float = 0.2
  kl_coef: float = 0.0
  n: int = 8
  prompt_len: int = 1

  def __post_init__(self):
    if self.off_policy not in OFF_POLICY:
      raise ValueError(f"Unknown off_policy={self.off_policy!r}; valid: {OFF_POLICY}.")
    if self.baseline not in BASELINES:
      raise ValueError(f"Unknown baseline={self.baseline!r}; valid: {BASELINES}.")
    if self.inner_epochs < 1:
      raise ValueError(f"inner_epochs={self.inner_epochs} must be >= 1.")

  @property
  def method(self) -> str:
    """The inner-epoch method actually used (k-free estimators always use ppo_clip)."""
    return "ppo_clip" if self.estimator in K_FREE_ESTIMATORS else self.off_policy


def _sequence_logp(graphdef, params, tokens_BxT, mask_BxC, spec):
  logp_BxC, entropy_BxC = model_lib.token_logprobs(graphdef, params, tokens_BxT, spec.prompt_len)
  return logp_BxC, jnp.sum(logp_BxC * mask_BxC, axis=-1).reshape(-1, spec.n), entropy_BxC


def policy_loss(
  params,
  graphdef,
  tokens_BxT,
  mask_BxC,
  rewards_Pxn,
  seq_old_Pxn,
  adv_Pxn,
  shift_Pxn,
  logp_ref_BxC,
  spec: UpdateSpec,
):
  """Loss (to minimise) and metrics of one inner epoch; see the module docstring."""
  logp_BxC, seq_Pxn, _ = _sequence_logp(graphdef, params, tokens_BxT, mask_BxC, spec)
  num_prompts = seq_Pxn.shape[0]
  log_ratio_Pxn = jax.lax.stop_gradient(seq_Pxn - seq_old_Pxn)
  rho_Pxn = jnp.exp(log_ratio_Pxn)
  method = spec.method
  if method == "surrogate":
    objective = jnp.sum(
      maxk.max_at_k_surrogate(seq_Pxn, seq_old_Pxn, rewards_Pxn, spec.k)
    ) + jnp.sum(shift_Pxn * jnp.exp(seq_Pxn - seq_old_Pxn))
    pg_loss = -objective / num_prompts
    clip_frac = jnp.zeros(())
  else:
    if method == "ppo_clip":
      w_Pxn = adv_Pxn * rho_Pxn
    else:
      w_Pxn = (
        maxk.max_at_k_advantages_off_policy(rewards_Pxn, log_ratio_Pxn, spec.k, method=method)
        + shift_Pxn * rho_Pxn
      )
    clipped_Pxn = ((w_Pxn > 0) & (log_ratio_Pxn > jnp.log1p(spec.clip_eps))) | (
      (w_Pxn < 0) & (log_ratio_Pxn < jnp.log1p(-spec.clip_eps))
    )
    w_Pxn = jax.lax.stop_gradient(jnp.where(clipped_Pxn, 0.0, w_Pxn))
    pg_loss = -jnp.sum(w_Pxn * seq_Pxn) / num_prompts
    clip_frac = jnp.mean(clipped_Pxn.astype(jnp.float32))
  if spec.kl_coef > 0:
    x_BxC = logp_ref_BxC - logp_BxC
    kl = jnp.mean(jnp.sum((jnp.exp(x_BxC) - 1.0 - x_BxC) * mask_BxC, axis=-1))
  else:
    kl = jnp.zeros(())
  loss = pg_loss + spec.kl_coef * kl
  return loss, {
    "pg_loss": pg_loss,
    "kl": kl,
    "clip_frac": clip_frac,
    "abs_log_ratio": jnp.mean(jnp.abs(log_ratio_Pxn)),
  }


def make_update(
  graphdef: nnx.GraphDef,
  optimizer: optax.GradientTransformation,
  spec: UpdateSpec,
  state_sharding=None,
):
  """A jitted RL update: (params, opt_state, ref_params, tokens, mask, rewards) -> new state.

  ``tokens_BxT`` holds B = P * n rows (prompt + completion; row p * n + i is sample
  i of prompt p), ``mask_BxC`` marks completion tokens up to and including EOS,
  ``rewards_Pxn`` the rewards. ``ref_params`` is only read when ``kl_coef > 0``.
  ``state_sharding`` (e.g. replicated) pins the sharding of the returned state, so
  that the next call hits the compilation cache.
  """

  def update(params, opt_state, ref_params, tokens_BxT, mask_BxC, rewards_Pxn):
    logp_old_BxC, seq_old_Pxn, _ = _sequence_logp(graphdef, params, tokens_BxT, mask_BxC, spec)
    seq_old_Pxn = jax.lax.stop_gradient(seq_old_Pxn)
    adv_Pxn = advantages(spec.estimator, rewards_Pxn, spec.k, spec.baseline)
    if spec.estimator == "max_at_k":
      shift_Pxn = adv_Pxn - maxk.max_at_k_advantages(rewards_Pxn, spec.k, baseline="none")
    else:
      shift_Pxn = jnp.zeros_like(adv_Pxn)
    if spec.kl_coef > 0:
      logp_ref_BxC, _ = model_lib.token_logprobs(graphdef, ref_params, tokens_BxT, spec.prompt_len)
    else:
      logp_ref_BxC = jnp.zeros_like(logp_old_BxC)
    grad_fn = jax.value_and_grad(policy_loss, has_aux=True)

    def epoch(carry, _):
      params, opt_state = carry
      (loss, aux), grads = grad_fn(
        params,
        graphdef,
        tokens_BxT,
        mask_BxC,
        rewards_Pxn,
        seq_old_Pxn,
        adv_Pxn,
        shift_Pxn,
        logp_ref_BxC,
        spec,
      )
      updates, opt_state = optimizer.update(grads, opt_state, params)
      params = optax.apply_updates(params, updates)
      return (params, opt_state), {"loss": loss, "grad_norm": optax.global_norm(grads), **aux}

    (params, opt_state), per_epoch = jax.lax.scan(
      epoch, (params, opt_state), None, length=spec.inner_epochs
    )
    metrics = {name: x[0] for name, x in per_epoch.items()}
    metrics.update(
      last_clip_frac=per_epoch["clip_frac"][-1],
      last_abs_log_ratio=per_epoch["abs_log_ratio"][-1],
      adv_abs_mean=jnp.mean(jnp.abs(adv_Pxn)),
    )
    return params, opt_state, metrics

  return jax.jit(
    update, donate_argnums=(0, 1), out_shardings=(state_sharding, state_sharding, state_sharding)
  )


def make_optimizer(
  learning_rate: float, warmup_steps: int, max_grad_norm: float, weight_decay: float = 0.0
) -> optax.GradientTransformation:
  """Adam(W) with linear warmup to a constant rate and global-norm clipping."""
  schedule = optax.linear_schedule(0.0, learning_rate, max(warmup_steps, 1))
  return optax.chain(
    optax.clip_by_global_norm(max_grad_norm),
    optax.adamw(schedule, b1=0.9, b2=0.95, weight_decay=weight_decay),
  )
