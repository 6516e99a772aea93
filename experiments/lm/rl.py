r"""RL objective: maxk advantages, PPO-style clipped inner epochs, KL to the warm start.

Per prompt we draw n completions y_1..y_n from pi_old and score them, r [P, n].

**Which policy.** The sampler draws each token from softmax(logits / tau) at the
temperature tau = ``rl.temperature`` (``sampling.generate``), so the policy being
optimised is that *tempered* distribution pi(y) = prod_t softmax(logits_t / tau)[y_t]:
every log-prob below (the score function, the importance ratios, the KL) is computed
at tau (``UpdateSpec.temperature``, ``model.token_logprobs``). Scoring samples drawn
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
start at the same temperature), through :func:`kl_penalty`. Its gradient is
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

from flax import nnx
import jax
import jax.numpy as jnp
import optax

from experiments import estimators as estimators_lib
from experiments import schedules
from experiments.lm import model as model_lib
import maxk

# A run spec names "max_at_k" (the registry's max@k baseline named by ``rl.baseline``)
# or one of the registry's max@k peers (:func:`estimator_choices`).
MAX_AT_K = "max_at_k"
BASELINES = tuple(e.name for e in estimators_lib.entries(kind="baseline"))
# Inner-epoch methods: the registry's off-policy estimators by their method name
# ("exact", "first_order"), and two that are no estimator of the registry.
OFF_POLICY = (
  *(e.method for e in estimators_lib.entries(kind="off_policy") if e.method),
  "surrogate",
  "ppo_clip",
)
# The estimators other than max@k weigh each sample by its own ratio only.
PEER_METHOD = "ppo_clip"
# A completion is correct exactly when its reward is 1 (binary or continuous, see
# ``tasks``): the threshold of the binary estimators (``pass_at_k_training``).
PASS_THRESHOLD = 1.0


def estimator_choices() -> tuple[str, ...]:
  """The estimators a run spec may name: ``"max_at_k"`` and every registered max@k
  peer (on-policy, objective ``max``), k-dependent or not."""
  return (MAX_AT_K, *(e.name for e in estimators_lib.entries(kind="peer")))


def estimator_entry(estimator: str, baseline: str) -> estimators_lib.Estimator:
  """The registry entry of a run-spec estimator: ``baseline``'s for ``"max_at_k"``.

  Raises:
    ValueError: on an estimator outside :func:`estimator_choices` or a baseline
      outside :data:`BASELINES`.
  """
  if estimator == MAX_AT_K:
    if baseline not in BASELINES:
      raise ValueError(f"Unknown baseline={baseline!r}; valid: {BASELINES}.")
    return estimators_lib.get(baseline)
  if estimator not in estimator_choices():
    raise ValueError(f"Unknown estimator {estimator!r}; valid: {estimator_choices()}.")
  return estimators_lib.get(estimator)


def uses_k(estimator: str) -> bool:
  """Whether a run-spec estimator's advantages depend on k (then it takes a schedule)."""
  return estimator == MAX_AT_K or estimators_lib.get(estimator).uses_k


@dataclasses.dataclass(frozen=True)
class RunLabels:
  """Every name of one run, derived from its :class:`RunSpec` by :meth:`RunSpec.labels`.

  Attributes:
    name: the run's name (folders, logs, checkpoints), e.g. ``max_at_k_k8-60-1``.
    k_opt: its k schedule, e.g. ``8:60:1``; ``n/a`` for a k-free estimator.
    method: the ``method`` column, e.g. ``max_at_k/loo_minus_one/anneal/exact``.
  """

  name: str
  k_opt: str
  method: str


@dataclasses.dataclass(frozen=True)
class RunSpec:
  """One RL run: an estimator, its k_opt schedule (see :mod:`experiments.schedules`)
  and its off-policy method for inner epochs after the first (one of ``OFF_POLICY``;
  always ``"ppo_clip"`` for estimators other than ``max_at_k``)."""

  name: str
  estimator: str
  schedule: schedules.Schedule
  off_policy: str = "exact"

  def k_at(self, step: int) -> int:
    """k_opt of RL step ``step``, numbered from 1 as the training loop counts them.

    Step ``step`` has schedule index ``step - 1``: ``"8:50:1"`` uses k=8 for steps
    1-50 (the first 50 steps) and k=1 from step 51 on.
    """
    return self.schedule.k_at(step - 1)

  @property
  def k_label(self) -> str:
    """The run's ``k_opt`` label (``labels().k_opt``)."""
    return self.schedule.spec if uses_k(self.estimator) else "n/a"

  def labels(self, baseline: str, inner_epochs: int) -> RunLabels:
    """The run's name and labels. ``method`` is the estimator (``max_at_k/<baseline>``),
    then ``/anneal`` for a k schedule that changes k, then the off-policy method when
    it applies (``inner_epochs > 1``): e.g. ``max_at_k/loo_minus_one/anneal/exact``,
    ``grpo/ppo_clip``."""
    method = f"{MAX_AT_K}/{baseline}" if self.estimator == MAX_AT_K else self.estimator
    if uses_k(self.estimator) and len(set(self.schedule.ks)) > 1:
      method += "/anneal"
    if inner_epochs > 1:
      method += f"/{self.off_policy}"
    return RunLabels(self.name, self.k_label, method)


def parse_runs(
  text: str, n: int, *, num_steps: int | None = None, off_policy: str = "exact"
) -> list[RunSpec]:
  """Parses ``"max_at_k@1,max_at_k@8:50:1,max_at_k@4/ppo_clip,grpo"`` into run specs.

  Each entry is ``estimator[@schedule][/method]``, the estimator one of
  :func:`estimator_choices`. A schedule (default ``1``) is ``k`` or
  ``k0:t1:k1[:t2:k2...]``: k0 for the first t1 RL steps, then k1 until step t2, and
  so on (:func:`experiments.schedules.parse_schedule`; PKPO Fig. 3 anneals k this
  way). k-free estimators (GRPO, RLOO, max-minus-second) take no schedule. The
  method (one of ``OFF_POLICY``; default ``off_policy``, i.e. ``rl.off_policy``) sets
  the run's inner-epoch weights; estimators other than ``max_at_k`` accept only
  ``ppo_clip``. A run is named ``<estimator>_k<schedule>`` (``:`` written ``-``), or
  ``<estimator>`` when k-free, plus ``_<method>`` when the entry names one
  (``max_at_k_k4_ppo_clip``).

  Args:
    text: the comma-separated run specs (``rl.runs``).
    n: samples per prompt; every k must satisfy ``1 <= k <= n``.
    num_steps: the number of RL steps when known (``rl.steps``): switch steps must
      then be smaller.
    off_policy: the method of runs that name none (``rl.off_policy``).

  Raises:
    ValueError: on an unknown estimator or method, a bad schedule, k outside [1, n],
      switch steps that do not strictly increase inside (0, num_steps), or a repeated
      run.
  """
  if off_policy not in OFF_POLICY:
    raise ValueError(f"Unknown off_policy={off_policy!r}; valid: {OFF_POLICY}.")
  specs = []
  for entry in [e.strip() for e in text.split(",") if e.strip()]:
    head, slash, method = entry.partition("/")
    estimator, _, schedule_text = head.partition("@")
    if estimator not in estimator_choices():
      raise ValueError(
        f"Unknown estimator {estimator!r} in runs={text!r}; valid: {estimator_choices()}."
      )
    if slash and method not in OFF_POLICY:
      raise ValueError(f"run {entry!r}: unknown off-policy method {method!r}; valid: {OFF_POLICY}.")
    if estimator != MAX_AT_K and slash and method != PEER_METHOD:
      raise ValueError(f"run {entry!r}: {estimator} supports only the {PEER_METHOD} method.")
    method = method if slash else (off_policy if estimator == MAX_AT_K else PEER_METHOD)
    suffix = f"_{method}" if slash else ""
    if not uses_k(estimator):
      if schedule_text:
        raise ValueError(f"run {entry!r}: {estimator} does not depend on k; drop '@'.")
      specs.append(RunSpec(estimator + suffix, estimator, schedules.constant(1), method))
      continue
    try:
      schedule = schedules.parse_schedule(schedule_text or "1", num_steps=num_steps, n=n)
    except ValueError as e:
      raise ValueError(f"run {entry!r}: {e}") from None
    name = f"{estimator}_k{schedule.spec}{suffix}".replace(":", "-")
    specs.append(RunSpec(name, estimator, schedule, method))
  if not specs:
    raise ValueError("rl.runs must name at least one run.")
  names = [s.name for s in specs]
  same = [(s.estimator, s.schedule.spec, s.off_policy) for s in specs]
  if len(set(names)) != len(names) or len(set(same)) != len(same):
    raise ValueError(f"rl.runs={text!r} repeats a run.")
  return specs


def advantages(estimator: str, rewards_Pxn: jax.Array, k: int, baseline: str) -> jax.Array:
  """On-policy advantages [P, n] of a run-spec estimator (gradient scale): the
  registry entry of :func:`estimator_entry`, binary estimators at
  :data:`PASS_THRESHOLD`."""
  entry = estimator_entry(estimator, baseline)
  return entry(rewards_Pxn, k, pass_threshold=PASS_THRESHOLD)


@dataclasses.dataclass(frozen=True)
class UpdateSpec:
  """Static settings of one jitted RL update (``temperature``: the sampler's)."""

  estimator: str
  k: int
  baseline: str = "loo_minus_one"
  off_policy: str = "exact"
  inner_epochs: int = 1
  clip_eps: float = 0.2
  kl_coef: float = 0.0
  n: int = 8
  prompt_len: int = 1
  temperature: float = 1.0

  def __post_init__(self):
    if self.off_policy not in OFF_POLICY:
      raise ValueError(f"Unknown off_policy={self.off_policy!r}; valid: {OFF_POLICY}.")
    if self.baseline not in BASELINES:
      raise ValueError(f"Unknown baseline={self.baseline!r}; valid: {BASELINES}.")
    if self.inner_epochs < 1:
      raise ValueError(f"inner_epochs={self.inner_epochs} must be >= 1.")
    if not self.temperature > 0:
      raise ValueError(f"temperature={self.temperature} must be > 0.")

  @property
  def method(self) -> str:
    """The inner-epoch method actually used (estimators other than max@k always use
    ``ppo_clip``)."""
    return self.off_policy if self.estimator == MAX_AT_K else PEER_METHOD


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
    (see the module docstring).
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
  or ``ppo_clip`` (see the module docstring); ``shift = adv - S`` is the max@k
  estimator's baseline term (zero for the k-free estimators)."""
  rho_Pxn = jnp.exp(log_ratio_Pxn)
  if method == "ppo_clip":
    return adv_Pxn * rho_Pxn
  # The registry's off-policy estimator of this method (ValueError if none).
  weights_Pxn = estimators_lib.by_method(method)(rewards_Pxn, k, log_ratio=log_ratio_Pxn)
  return weights_Pxn + shift_Pxn * rho_Pxn


def _relative_gap(w_Pxn: jax.Array, reference_Pxn: jax.Array) -> jax.Array:
  norm = jnp.sqrt(jnp.sum(reference_Pxn**2))
  gap = jnp.sqrt(jnp.sum((w_Pxn - reference_Pxn) ** 2))
  return jnp.where(norm > 0, gap / jnp.where(norm > 0, norm, 1.0), 0.0)


def _sequence_logp(graphdef, params, tokens_BxT, mask_BxC, spec):
  logp_BxC, entropy_BxC = model_lib.token_logprobs(
    graphdef, params, tokens_BxT, spec.prompt_len, spec.temperature
  )
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
  method = spec.method
  metrics = importance_diagnostics(log_ratio_Pxn)
  if spec.estimator == "max_at_k":
    weights = {
      m: off_policy_weights(m, rewards_Pxn, log_ratio_Pxn, adv_Pxn, shift_Pxn, spec.k)
      for m in ("exact", "first_order", "ppo_clip")
    }
    for m in ("first_order", "ppo_clip"):
      metrics[f"gap_{m}"] = _relative_gap(weights[m], weights["exact"])
  if method == "surrogate":
    objective = jnp.sum(
      maxk.max_at_k_surrogate(seq_Pxn, seq_old_Pxn, rewards_Pxn, spec.k)
    ) + jnp.sum(shift_Pxn * jnp.exp(seq_Pxn - seq_old_Pxn))
    pg_loss = -objective / num_prompts
    clip_frac = jnp.zeros(())
  else:
    if spec.estimator == "max_at_k":
      w_Pxn = weights[method]
    else:
      w_Pxn = off_policy_weights(method, rewards_Pxn, log_ratio_Pxn, adv_Pxn, shift_Pxn, spec.k)
    clipped_Pxn = ((w_Pxn > 0) & (log_ratio_Pxn > jnp.log1p(spec.clip_eps))) | (
      (w_Pxn < 0) & (log_ratio_Pxn < jnp.log1p(-spec.clip_eps))
    )
    w_Pxn = jax.lax.stop_gradient(jnp.where(clipped_Pxn, 0.0, w_Pxn))
    pg_loss = -jnp.sum(w_Pxn * seq_Pxn) / num_prompts
    clip_frac = jnp.mean(clipped_Pxn.astype(jnp.float32))
  if spec.kl_coef > 0:
    kl = jnp.mean(kl_penalty(logp_BxC, logp_ref_BxC, mask_BxC, jnp.exp(log_ratio_Pxn).reshape(-1)))
  else:
    kl = jnp.zeros(())
  loss = pg_loss + spec.kl_coef * kl
  return loss, {
    "pg_loss": pg_loss,
    "kl": jax.lax.stop_gradient(kl),
    "clip_frac": clip_frac,
    "abs_log_ratio": jnp.mean(jnp.abs(log_ratio_Pxn)),
    **metrics,
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


def make_update(
  graphdef: nnx.GraphDef,
  optimizer: optax.GradientTransformation,
  spec: UpdateSpec,
  state_sharding=None,
):
  """A jitted RL update: (params, opt_state, ref_params, tokens, mask, rewards) -> new state.

  ``tokens_BxT`` holds B = P * n rows (prompt + completion; row p * n + i is sample
  i of prompt p), ``mask_BxC`` marks completion tokens up to and including EOS,
  ``rewards_Pxn`` the rewards. ``ref_params`` (the warm start) enters the loss only
  when ``kl_coef > 0``; every run logs ``kl_to_warm_start`` from it.
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
    # The warm start's log-probs: the KL penalty's reference, and in every run the
    # logged distance of the sampling policy from the warm start.
    logp_ref_BxC, _ = model_lib.token_logprobs(
      graphdef, ref_params, tokens_BxT, spec.prompt_len, spec.temperature
    )
    logp_ref_BxC = jax.lax.stop_gradient(logp_ref_BxC)
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
    metrics = {}
    for name, x in per_epoch.items():
      if name not in LAST_EPOCH_METRICS or name in _FIRST_EPOCH_ALSO:
        metrics[name] = x[0]
      if name in LAST_EPOCH_METRICS:
        metrics[f"last_{name}"] = x[-1]
    metrics["adv_abs_mean"] = jnp.mean(jnp.abs(adv_Pxn))
    metrics["grad_norm_max"] = jnp.max(per_epoch["grad_norm"])
    # KL(pi_old || pi_ref) of whole completions, estimated without bias by the mean
    # over the batch's samples (drawn from pi_old) of log pi_old(y) - log pi_ref(y).
    metrics["kl_to_warm_start"] = jnp.mean(
      jnp.sum((jax.lax.stop_gradient(logp_old_BxC) - logp_ref_BxC) * mask_BxC, axis=-1)
    )
    return params, opt_state, metrics

  return jax.jit(
    update, donate_argnums=(0, 1), out_shardings=(state_sharding, state_sharding, state_sharding)
  )


def make_optimizer(
  learning_rate: float,
  warmup_steps: int,
  max_grad_norm: float,
  weight_decay: float = 0.0,
  *,
  decay_steps: int = 0,
  final_lr_fraction: float = 1.0,
) -> optax.GradientTransformation:
  """Adam(W) with global-norm clipping and linear warmup over ``warmup_steps`` updates
  (none if 0: the first update already uses ``learning_rate``), then a constant rate,
  or with ``decay_steps > 0`` a cosine decay reaching ``final_lr_fraction *
  learning_rate`` at update ``decay_steps`` (warmup included) and staying there.
  Each inner epoch of an RL step is one update."""
  if decay_steps > 0:
    schedule = optax.warmup_cosine_decay_schedule(
      0.0 if warmup_steps else learning_rate,
      learning_rate,
      warmup_steps,
      max(decay_steps, warmup_steps + 1),
      final_lr_fraction * learning_rate,
    )
  elif warmup_steps:
    schedule = optax.linear_schedule(0.0, learning_rate, warmup_steps)
  else:
    schedule = learning_rate
  return optax.chain(
    optax.clip_by_global_norm(max_grad_norm),
    optax.adamw(schedule, b1=0.9, b2=0.95, weight_decay=weight_decay),
  )
