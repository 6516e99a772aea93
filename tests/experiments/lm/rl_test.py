"""Tests of experiments.lm.rl: run parsing, k schedules and the policy-gradient weights."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from experiments import estimators as estimators_lib
from experiments import schedules
from experiments.lm import model as model_lib
from experiments.lm import off_policy
from experiments.lm import optimizer as optimizer_lib
from experiments.lm import policy as policy_lib
from experiments.lm import rl
from experiments.lm import rollouts
from experiments.lm import run_specs
from experiments.lm import sampling
from experiments.lm import tasks
import maxk


def test_parse_runs_and_schedules():
  runs = run_specs.parse_runs("max_at_k@1, max_at_k@8:50:1:80:2,grpo", n=8)
  assert [r.name for r in runs] == ["max_at_k_k1", "max_at_k_k8-50-1-80-2", "grpo"]
  annealed = runs[1]
  assert annealed.k_label == "8:50:1:80:2"
  assert runs[2].k_label == "n/a" and runs[0].k_at(7) == 1 and runs[0].k_label == "1"
  assert run_specs.parse_runs("max_at_k", n=8)[0].k_label == "1"
  for bad, match in [
    ("max_at_k@9", "1 <= k <= n=8"),
    ("ppo", "Unknown estimator"),
    ("max_at_k@2:3", "k0"),
    ("max_at_k@a", "integers"),
    ("max_at_k@8:50:1:40:2", "strictly increasing"),
    ("max_at_k@8:0:1", "positive"),
    ("grpo,grpo", "repeats"),
    ("", "at least one"),
  ]:
    with pytest.raises(ValueError, match=match):
      run_specs.parse_runs(bad, n=8)
  with pytest.raises(ValueError, match="off_policy"):
    rl.UpdateSpec(estimator="max_at_k", k=2, off_policy="magic")


def test_parse_runs_reads_per_run_learning_rate_and_kl_options():
  runs = run_specs.parse_runs(
    "grpo[lr=3e-5], max_at_k@8[kl=0.05],grpo[kl=0.01, lr=3e-5],max_at_k@4/ppo_clip[kl=0],grpo",
    n=8,
  )
  assert [r.name for r in runs] == [
    "grpo_lr3e-05",
    "max_at_k_k8_kl0.05",
    "grpo_lr3e-05_kl0.01",  # lr before kl, whatever the order written.
    "max_at_k_k4_ppo_clip_kl0.0",
    "grpo",
  ]
  assert [(r.learning_rate, r.kl_coef) for r in runs] == [
    (3e-5, None),
    (None, 0.05),
    (3e-5, 0.01),
    (None, 0.0),
    (None, None),
  ]
  assert [r.labels("loo", 2).method for r in runs] == [
    "grpo/lr3e-05/ppo_clip",
    "max_at_k/loo/kl0.05/exact",
    "grpo/lr3e-05/kl0.01/ppo_clip",
    "max_at_k/loo/kl0.0/ppo_clip",
    "grpo/ppo_clip",
  ]
  assert runs[1].k_label == "8" and runs[1].k_at(3) == 8
  for bad, match in [
    ("grpo[lr=0]", r"run 'grpo\[lr=0\]': lr='0' must be a finite number > 0"),
    ("grpo[lr=-1e-3]", "lr='-1e-3' must be a finite number > 0"),
    ("max_at_k@2[kl=-0.1]", r"run 'max_at_k@2\[kl=-0.1\]': kl='-0.1' must be .* >= 0"),
    ("grpo[lr=nan]", "finite"),
    ("grpo[lr=abc]", "finite"),
    ("grpo[beta=1]", r"run 'grpo\[beta=1\]': unknown option 'beta=1'"),
    ("grpo[lr]", "unknown option 'lr'"),
    ("grpo[]", "unknown option ''"),
    ("grpo[lr=1e-3,lr=2e-3]", "repeats option 'lr'"),
    ("grpo[lr=1e-3]/ppo_clip", "options go last"),
    ("grpo[lr=1e-3", "unbalanced"),
    ("grpo],max_at_k", "unbalanced"),
    ("grpo[lr=1e-3],grpo[lr=0.001]", "repeats"),
  ]:
    with pytest.raises(ValueError, match=match):
      run_specs.parse_runs(bad, n=8)


def test_schedule_switches_after_the_first_t1_steps():
  # RL steps are numbered from 1; "8:50:1:80:2" is k=8 for the first 50 steps
  # (steps 1-50), k=1 for steps 51-80, then k=2: steps 50 and 80 still belong to
  # the earlier segment, as in the bandit runs.
  annealed = run_specs.parse_runs("max_at_k@8:50:1:80:2", n=8)[0]
  ks = [annealed.k_at(step) for step in range(1, 101)]
  assert ks == [8] * 50 + [1] * 30 + [2] * 20
  assert annealed.schedule == schedules.parse_schedule("8:50:1:80:2")


def test_parse_runs_checks_switch_steps_against_the_run_length():
  run_specs.parse_runs("max_at_k@2:3:1", n=4, num_steps=4)
  with pytest.raises(ValueError, match="smaller than num_steps=3"):
    run_specs.parse_runs("max_at_k@2:3:1", n=4, num_steps=3)


def test_advantages_come_from_the_shared_registry():
  rewards_np = np.random.default_rng(0).random((2, 5)).astype(np.float32)
  rewards = jnp.asarray(rewards_np)
  for baseline in run_specs.BASELINES:
    np.testing.assert_array_equal(
      run_specs.advantages("max_at_k", rewards, 3, baseline),
      maxk.max_at_k_advantages(rewards, 3, baseline=baseline),
    )
  np.testing.assert_array_equal(
    run_specs.advantages("grpo", rewards, 3, "loo"), estimators_lib.get("grpo")(rewards, 3)
  )
  np.testing.assert_array_equal(
    run_specs.advantages("max_minus_second", rewards, 3, "loo"),
    maxk.max_minus_second_advantages(rewards),
  )
  # Every registered max@k peer, k-dependent or not; the LM's binary threshold is 1.
  assert run_specs.estimator_choices() == (
    "max_at_k",
    *(e.name for e in estimators_lib.entries(kind="peer")),
  )
  assert "pass_at_k_training" in run_specs.estimator_choices()
  rewards_np[0, 1] = 1.0  # (NumPy: no compilation for the test's bookkeeping.)
  rewards = jnp.asarray(rewards_np)
  np.testing.assert_array_equal(
    run_specs.advantages("pass_at_k_training", rewards, 3, "loo"),
    maxk.pass_at_k_training_advantages(jnp.asarray((rewards_np == 1.0).astype(np.float32)), 3),
  )
  with pytest.raises(ValueError, match="Unknown estimator"):
    run_specs.advantages("loo", rewards, 3, "loo")
  with pytest.raises(ValueError, match="Unknown baseline"):
    run_specs.advantages("max_at_k", rewards, 3, "grpo")


P, N, K = 3, 4, 2
CFG = model_lib.ModelConfig(
  vocab_size=tasks.VOCAB_SIZE, max_len=16, d_model=16, num_heads=2, num_layers=1, d_ff=32
)


@pytest.fixture(scope="module")
def batch():
  graphdef, params = model_lib.create(CFG, seed=0)
  prompts = tasks.encode_prompts(["12+34=", "55+01=", "90+09="])
  rows = jnp.asarray(sampling.repeat_prompts(prompts, N))
  out = sampling.generate(graphdef, params, rows, jax.random.key(0), cfg=CFG, max_new=6)
  tokens = jnp.concatenate([rows, out["tokens"]], axis=1)
  rewards = jnp.asarray(np.random.default_rng(0).random((P, N)).astype(np.float32))
  return graphdef, params, tokens, out["mask"], rewards, prompts.shape[1]


def _policy(graphdef, prompt_len, temperature=1.0):
  return policy_lib.Policy(graphdef, CFG, prompt_len, temperature=temperature)


def _grad(params, policy, spec, old_params, data):
  _, seq_old = rl.sequence_logp(policy, old_params, data)
  adv = run_specs.advantages(spec.estimator, data.rewards_Pxn, spec.k, spec.baseline)
  shift = adv - maxk.max_at_k_advantages(data.rewards_Pxn, spec.k, baseline="none")
  targets = rl.Targets(seq_old, adv, shift, jnp.zeros(data.mask_BxC.shape))
  return jax.grad(lambda p: rl.policy_loss(p, policy, data, targets, spec)[0])(params)


@functools.partial(jax.jit, static_argnums=(1, 2))
def _grads(params, policy, specs, old_params, data):
  """``_grad`` of each spec, in one program (one compilation for them all)."""
  return [_grad(params, policy, spec, old_params, data) for spec in specs]


# Parameter-tree helpers, jitted once: eagerly each op compiles once per leaf shape.
_copy = jax.jit(lambda tree: jax.tree.map(jnp.copy, tree))
_sign_perturbed = jax.jit(
  lambda tree: jax.tree.map(lambda x: x + 0.05 * jnp.sign(jnp.sin(1e3 * x)), tree)
)
_sin_perturbed = jax.jit(
  lambda tree: jax.tree.map(lambda x: x + 0.05 * jnp.sin(jnp.arange(x.size).reshape(x.shape)), tree)
)


def _close(a, b):
  for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)):
    np.testing.assert_allclose(x, y, rtol=2e-4, atol=1e-6)


def test_first_epoch_gradient_is_the_on_policy_estimator(batch):
  # (The surrogate is checked against "exact" off-policy below.)
  graphdef, params, tokens, mask, rewards, prompt_len = batch
  policy, data = _policy(graphdef, prompt_len), rollouts.Batch(tokens, mask, rewards)
  spec = lambda m: rl.UpdateSpec(estimator="max_at_k", k=K, off_policy=m)
  methods = ("exact", "first_order", "ppo_clip")
  grads = dict(zip(methods, _grads(params, policy, tuple(map(spec, methods)), params, data)))
  for m in ("first_order", "ppo_clip"):
    _close(grads[m], grads["exact"])


def test_surrogate_gradient_equals_unclipped_exact_weights_off_policy(batch):
  graphdef, params, tokens, mask, rewards, prompt_len = batch
  old = _sign_perturbed(params)
  policy, data = _policy(graphdef, prompt_len), rollouts.Batch(tokens, mask, rewards)
  spec = lambda m: rl.UpdateSpec(estimator="max_at_k", k=K, off_policy=m, clip_eps=1e6)
  _close(*_grads(params, policy, (spec("surrogate"), spec("exact")), old, data))


def test_runs_name_their_off_policy_method():
  runs = run_specs.parse_runs(
    "max_at_k@4/exact, max_at_k@4/first_order, max_at_k@4/ppo_clip, max_at_k@4:2:1, rloo",
    n=8,
    off_policy="first_order",
  )
  assert [r.name for r in runs] == [
    "max_at_k_k4_exact",
    "max_at_k_k4_first_order",
    "max_at_k_k4_ppo_clip",
    "max_at_k_k4-2-1",
    "rloo",
  ]
  assert [r.off_policy for r in runs] == ["exact", "first_order", "ppo_clip", "first_order"] + [
    "ppo_clip"
  ]
  labels = [r.labels("loo", inner_epochs=2).method for r in runs]
  assert labels == [
    "max_at_k/loo/exact",
    "max_at_k/loo/first_order",
    "max_at_k/loo/ppo_clip",
    "max_at_k/loo/anneal/first_order",
    "rloo/ppo_clip",
  ]
  # One epoch is on-policy: no method applies.
  assert [r.labels("loo", inner_epochs=1).method for r in runs][3:] == [
    "max_at_k/loo/anneal",
    "rloo",
  ]
  assert run_specs.parse_runs("grpo/ppo_clip", n=4)[0].name == "grpo_ppo_clip"
  for bad, match in [
    ("max_at_k@4/magic", "unknown off-policy method 'magic'"),
    ("grpo/exact", "supports only the ppo_clip"),
    ("grpo@4", "does not depend on k"),
    ("pass_at_k_training@4/first_order", "supports only the ppo_clip"),
    ("max_at_k@4,max_at_k@4/exact", "repeats"),  # The default method is exact.
  ]:
    with pytest.raises(ValueError, match=match):
      run_specs.parse_runs(bad, n=8)
  with pytest.raises(ValueError, match="off_policy='magic'"):
    run_specs.parse_runs("grpo", n=8, off_policy="magic")


def test_a_k_dependent_peer_takes_a_schedule_and_ppo_clip():
  (run,) = run_specs.parse_runs("pass_at_k_training@4:2:1", n=8, num_steps=4)
  labels = run.labels("loo", inner_epochs=2)
  assert (labels.name, labels.k_opt, labels.method) == (
    "pass_at_k_training_k4-2-1",
    "4:2:1",
    "pass_at_k_training/anneal/ppo_clip",
  )
  assert run.k_label == labels.k_opt and [run.k_at(s) for s in (1, 2, 3)] == [4, 4, 1]
  spec = rl.UpdateSpec(estimator=run.estimator, k=4, off_policy=run.off_policy)
  assert spec.method == "ppo_clip"
  # The study's run names stay what its committed outputs use.
  (study_run,) = run_specs.parse_runs("max_at_k@8:60:1", n=8, num_steps=100)
  assert study_run.labels("loo_minus_one", inner_epochs=2) == run_specs.RunLabels(
    "max_at_k_k8-60-1", "8:60:1", "max_at_k/loo_minus_one/anneal/exact"
  )


_importance_diagnostics = jax.jit(off_policy.importance_diagnostics)


def test_importance_diagnostics():
  n = 4
  on_policy = _importance_diagnostics(np.zeros((3, n), np.float32))
  assert on_policy["ess_frac"] == pytest.approx(1.0)
  assert on_policy["max_weight"] == pytest.approx(1 / n)
  # Ratios (1, 1, 2, 0): ESS = 4^2 / 6 of 4 samples, largest weight 2 / 4; and one
  # prompt on-policy: the mean ESS fraction is (2/3 + 1) / 2.
  with np.errstate(divide="ignore"):  # log(0) = -inf.
    log_ratio = np.log(np.array([[1.0, 1.0, 2.0, 0.0], [3.0, 3.0, 3.0, 3.0]], np.float32))
  out = _importance_diagnostics(log_ratio)
  assert out["ess_frac"] == pytest.approx((16 / 6 / 4 + 1) / 2)
  assert out["max_weight"] == pytest.approx(0.5)
  degenerate = _importance_diagnostics(np.array([[80.0, 0.0, 0.0, 0.0]], np.float32))
  assert degenerate["ess_frac"] == pytest.approx(1 / n) and degenerate["max_weight"] == 1.0


# A tabular two-token policy small enough to enumerate: token 1 from softmax(a),
# token 2 from softmax(b[token 1]); token 0 is EOS and ends the completion.
V_TOY = 4


def _toy_outcomes():
  rows = [(0, 0)] + [(x, y) for x in range(1, V_TOY) for y in range(V_TOY)]
  tokens = np.array(rows)
  mask = np.ones(tokens.shape, np.float32)
  mask[0, 1] = 0.0  # After EOS: padding.
  return jnp.asarray(tokens), jnp.asarray(mask)


def _toy_logp(theta, tokens, mask):
  first = jax.nn.log_softmax(theta["a"])[tokens[:, 0]]
  logz = jax.nn.log_softmax(theta["b"][tokens[:, 0]], axis=-1)
  second = jnp.take_along_axis(logz, tokens[:, 1:], axis=-1)[:, 0]
  return jnp.stack([first, second], axis=-1) * mask


def _toy_theta(seed):
  rng = np.random.default_rng(seed)
  return {
    "a": jnp.asarray(rng.normal(size=V_TOY).astype(np.float32)),
    "b": jnp.asarray(rng.normal(size=(V_TOY, V_TOY)).astype(np.float32)),
  }


@jax.jit
def _kl_penalty_gradients(theta, ref, old):
  """The test's quantities for rows drawn from pi_old, in one program."""
  tokens, mask = _toy_outcomes()
  logp_ref = _toy_logp(ref, tokens, mask)
  seq = lambda t: jnp.sum(_toy_logp(t, tokens, mask), axis=-1)

  def reverse_kl(t):  # KL(pi_theta || pi_ref) over every completion.
    return jnp.sum(jnp.exp(seq(t)) * (seq(t) - jnp.sum(logp_ref, axis=-1)))

  exact = jax.grad(reverse_kl)(theta)
  p_old = jnp.exp(seq(old))
  rho = jnp.exp(seq(theta) - seq(old))

  def expected_penalty(t):
    return jnp.sum(p_old * off_policy.kl_penalty(_toy_logp(t, tokens, mask), logp_ref, mask, rho))

  value, grad = jax.value_and_grad(expected_penalty)(theta)

  # The k3 value as a loss (the former penalty) has another expected gradient.
  def expected_k3(t):
    x = logp_ref - _toy_logp(t, tokens, mask)
    return jnp.sum(p_old * rho * jnp.sum((jnp.exp(x) - 1 - x) * mask, axis=-1))

  k3_grad = jax.grad(expected_k3)(theta)
  return jnp.sum(jnp.exp(seq(theta))), reverse_kl(theta), exact, value, grad, k3_grad


def test_kl_penalty_gradient_is_that_of_the_reverse_kl():
  theta, ref = _toy_theta(0), _toy_theta(1)
  # Rows drawn from pi_old: the first epoch (old = theta) and a later one (old != theta).
  for old in (theta, _toy_theta(2)):
    out = jax.device_get(_kl_penalty_gradients(theta, ref, old))
    total_prob, reverse_kl, exact, value, grad, k3_grad = out
    assert float(total_prob) == pytest.approx(1.0, abs=1e-5)
    assert value == pytest.approx(float(reverse_kl), rel=1e-4)
    for name in exact:
      np.testing.assert_allclose(grad[name], exact[name], rtol=1e-4, atol=1e-6)
    gap = sum(float(np.sum((k3_grad[m] - exact[m]) ** 2)) for m in exact) ** 0.5
    assert gap > 0.1 * sum(float(np.sum(exact[m] ** 2)) for m in exact) ** 0.5


# The transformer's completions of length 2 after one prompt, enumerated: EOS first
# (then padding), or any other token followed by any token.
TEMPERATURE = 0.5


def _model_outcomes(prompt_len_tokens):
  v = tasks.VOCAB_SIZE
  completions = [(tasks.EOS_ID, tasks.PAD_ID)] + [
    (x, y) for x in range(v) if x != tasks.EOS_ID for y in range(v)
  ]
  completions = np.array(completions, np.int32)
  mask = np.ones(completions.shape, np.float32)
  mask[0, 1] = 0.0
  prompts = np.repeat(prompt_len_tokens[None], len(completions), axis=0)
  return jnp.asarray(np.concatenate([prompts, completions], axis=1)), jnp.asarray(mask)


def _peaked(params, scale):
  """Sharper logits, so that the temperature matters."""
  params = _copy(params)
  params["head"]["kernel"] = params["head"]["kernel"] * scale
  return params


def test_score_function_gradient_is_unbiased_at_the_sampling_temperature():
  graphdef, params = model_lib.create(CFG, seed=0)
  theta, old = _peaked(params, 60.0), _peaked(params, 50.0)
  prompt = tasks.encode_prompts(["7"])[0]
  prompt_len = len(prompt)
  tokens, mask = _model_outcomes(prompt)
  num = tokens.shape[0]
  reward = jnp.asarray(np.random.default_rng(0).random(num).astype(np.float32))

  @jax.jit
  def sampler_logp(p):  # log-prob of each completion under softmax(logits / tau).
    logits = model_lib.apply(graphdef, p, tokens[:, :-1])[0][:, prompt_len - 1 :]
    logz = jax.nn.log_softmax(logits / TEMPERATURE, axis=-1)
    logp = jnp.take_along_axis(logz, tokens[:, prompt_len:, None], axis=-1)[..., 0]
    return jnp.sum(logp * mask, axis=-1)

  sampler_p = jax.jit(lambda p: jnp.exp(sampler_logp(p)))
  assert float(np.sum(sampler_p(theta))) == pytest.approx(1.0, abs=1e-4)
  # The exact gradient of the expected reward under the sampler's distribution.
  exact = jax.jit(jax.grad(lambda p: jnp.sum(jnp.exp(sampler_logp(p)) * reward)))(theta)

  @functools.partial(jax.jit, static_argnums=(0, 1))
  def expected_estimate(policy, spec, p, old_p, p_draw):
    # E_{y ~ pi_old}[w(y) grad log pi(y)] with k = 1, no baseline: each completion
    # is its own group, its reward scaled by the chance that the sampler draws it.
    rewards = (p_draw * reward)[:, None]
    data = rollouts.Batch(tokens, mask, rewards)
    _, seq_old = rl.sequence_logp(policy, old_p, data)
    adv = run_specs.advantages("max_at_k", rewards, 1, "none")
    targets = rl.Targets(seq_old, adv, jnp.zeros_like(adv), jnp.zeros(mask.shape))
    loss = lambda q: rl.policy_loss(q, policy, data, targets, spec)[0]
    return jax.tree.map(lambda g: -num * g, jax.grad(loss)(p))

  def relative_error(grads):
    pairs = zip(jax.tree.leaves(jax.device_get(grads)), jax.tree.leaves(jax.device_get(exact)))
    diff = sum(float(np.sum((g - e) ** 2)) for g, e in pairs)
    return (diff / sum(float(np.sum(e**2)) for e in jax.tree.leaves(jax.device_get(exact)))) ** 0.5

  for temperature, unbiased in ((TEMPERATURE, True), (1.0, False)):
    # The policy's temperature: the learner's log-probs, the sampler's distribution.
    policy = _policy(graphdef, prompt_len, temperature)
    spec = rl.UpdateSpec(estimator="max_at_k", k=1, baseline="none", clip_eps=1e6)
    # On-policy (the first epoch), then with importance ratios (samples from old).
    for old_params in (theta, old):
      p_draw = sampler_p(old_params)
      error = relative_error(expected_estimate(policy, spec, theta, old_params, p_draw))
      if unbiased:
        assert error < 1e-3
      else:  # The temperature-1 log-probs: the former update's bias.
        assert error > 0.2


def test_update_logs_off_policy_diagnostics(batch):
  graphdef, params, tokens, mask, rewards, prompt_len = batch
  spec = rl.UpdateSpec(
    estimator="max_at_k",
    k=K,
    off_policy="first_order",
    inner_epochs=3,
    kl_coef=0.1,
  )
  optimizer = optimizer_lib.make_optimizer(3e-2, 0, 1.0)
  start = _copy(params)
  update = rl.make_update(_policy(graphdef, prompt_len, 0.7), optimizer, spec)
  new, _, metrics = update(
    _copy(params),
    jax.jit(optimizer.init)(params),
    start,
    rollouts.Batch(tokens, mask, rewards),
  )
  metrics = jax.device_get(metrics)
  assert "ess_frac" not in metrics  # Trivial (1) at the first epoch.
  assert 1 / N <= metrics["last_max_weight"] <= 1 and metrics["last_max_weight"] > 1 / N
  assert 1 / N <= metrics["last_ess_frac"] < 1
  assert metrics["last_abs_log_ratio"] > 0 and metrics["abs_log_ratio"] == 0
  assert metrics["last_gap_first_order"] > 0 and metrics["last_gap_ppo_clip"] > 0
  assert metrics["kl"] == 0  # The first epoch starts at the reference.
  assert metrics["kl_to_warm_start"] == 0  # The samples' policy is the reference.
  assert metrics["grad_norm_max"] >= metrics["grad_norm"] > 0
  assert not np.allclose(new["head"]["kernel"], start["head"]["kernel"])


def test_kl_to_warm_start_is_the_mean_sequence_log_ratio(batch):
  graphdef, params, tokens, mask, rewards, prompt_len = batch
  spec = rl.UpdateSpec(estimator="grpo", k=1)
  warm = _sin_perturbed(params)
  optimizer = optimizer_lib.make_optimizer(1e-3, 0, 1.0)
  update = rl.make_update(_policy(graphdef, prompt_len, 0.7), optimizer, spec)
  _, _, metrics = update(
    _copy(params),
    jax.jit(optimizer.init)(params),
    warm,
    rollouts.Batch(tokens, mask, rewards),
  )
  token_logprobs = jax.jit(model_lib.token_logprobs, static_argnums=(0, 3, 4))
  logp, _ = token_logprobs(graphdef, params, tokens, prompt_len, 0.7)
  logp_warm, _ = token_logprobs(graphdef, warm, tokens, prompt_len, 0.7)
  expected = np.mean(np.sum((np.asarray(logp) - np.asarray(logp_warm)) * np.asarray(mask), -1))
  assert abs(expected) > 1e-3
  np.testing.assert_allclose(float(metrics["kl_to_warm_start"]), expected, rtol=1e-4)


@pytest.mark.parametrize("binary", [True, False])
def test_rloo_is_n_times_max_at_1_with_the_loo_minus_one_baseline(binary):
  """The identity behind dropping RLOO from the study: a constant factor n apart."""
  rng = np.random.default_rng(3)
  for n in (2, 5, 16):
    r = rng.random((7, n))
    r = (r < 0.4).astype(np.float32) if binary else r.astype(np.float32)
    by_hand = n / (n - 1) * (r - r.mean(-1, keepdims=True))  # r_i - mean of the others.
    rloo = run_specs.advantages("rloo", jnp.asarray(r), 1, "loo_minus_one")
    max1 = run_specs.advantages("max_at_k", jnp.asarray(r), 1, "loo_minus_one")
    np.testing.assert_allclose(rloo, by_hand, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(rloo, n * np.asarray(max1), rtol=1e-5, atol=1e-6)


def test_optimizer_cosine_decay():
  """Adam's update under a constant gradient is -lr(t) exactly, so it reads the schedule."""
  params, grads = {"w": np.zeros(2, np.float32)}, {"w": np.ones(2, np.float32)}
  peak, warmup, decay, final = 1e-2, 3, 10, 0.1
  opt = optimizer_lib.make_optimizer(peak, warmup, 10.0, decay_steps=decay, final_lr_fraction=final)
  state, update = jax.jit(opt.init)(params), jax.jit(opt.update)
  for t in range(14):
    if t < warmup:
      expected = peak * t / warmup
    elif t < decay:
      expected = final * peak + (1 - final) * peak * 0.5 * (
        1 + np.cos(np.pi * (t - warmup) / (decay - warmup))
      )
    else:
      expected = final * peak
    updates, state = update(grads, state, params)
    np.testing.assert_allclose(updates["w"], -expected, rtol=1e-4, atol=1e-9)


def test_optimizer_warmup():
  params = {"w": np.zeros(3, np.float32)}
  grads = {"w": np.ones(3, np.float32)}
  for warmup, first_step in ((0, 1e-2), (4, 0.0)):
    opt = optimizer_lib.make_optimizer(1e-2, warmup, max_grad_norm=10.0)
    updates, _ = jax.jit(lambda g, p, opt=opt: opt.update(g, opt.init(p), p))(grads, params)
    # Adam's first step is -lr * sign(g) (bias-corrected moments).
    np.testing.assert_allclose(updates["w"], -first_step, rtol=1e-4)


def test_optimizer_second_moment_decay():
  """Adam's second step, by hand: m and v are b1- and b2-averages of g1 = 1, g2 = 3."""
  params = {"w": np.zeros((), np.float32)}
  lr, b1 = 1e-2, 0.9
  for b2 in (0.95, 0.5):
    opt = optimizer_lib.make_optimizer(lr, 0, max_grad_norm=100.0, b2=b2)

    @jax.jit
    def second_update(p, opt=opt):
      _, state = opt.update({"w": jnp.ones(())}, opt.init(p), p)
      return opt.update({"w": jnp.full((), 3.0)}, state, p)[0]

    updates = second_update(params)
    m = (b1 * (1 - b1) * 1 + (1 - b1) * 3) / (1 - b1**2)
    v = (b2 * (1 - b2) * 1 + (1 - b2) * 9) / (1 - b2**2)
    np.testing.assert_allclose(updates["w"], -lr * m / (np.sqrt(v) + 1e-8), rtol=1e-5)


def test_the_update_refuses_a_nucleus_policy():
  graphdef, _ = model_lib.create(CFG, seed=0)
  nucleus = policy_lib.Policy(graphdef, CFG, 3, top_p=0.9)
  with pytest.raises(ValueError, match="top_p"):
    rl.make_update(nucleus, optimizer_lib.make_optimizer(1e-3, 0, 1.0), rl.UpdateSpec("grpo", 1))
  for bad in ({"temperature": 0.0}, {"top_p": 0.0}, {"prompt_len": CFG.max_len}):
    with pytest.raises(ValueError, match=next(iter(bad))):
      policy_lib.Policy(**{"graphdef": graphdef, "cfg": CFG, "prompt_len": 3, **bad})
