"""Tests of experiments.lm.rl: run parsing, k schedules and the policy-gradient weights."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from experiments import estimators as estimators_lib
from experiments import schedules
from experiments.lm import model as model_lib
from experiments.lm import rl
from experiments.lm import sampling
from experiments.lm import tasks
import maxk


def test_parse_runs_and_schedules():
  runs = rl.parse_runs("max_at_k@1, max_at_k@8:50:1:80:2,grpo", n=8)
  assert [r.name for r in runs] == ["max_at_k_k1", "max_at_k_k8-50-1-80-2", "grpo"]
  annealed = runs[1]
  assert annealed.k_label == "8:50:1:80:2"
  assert runs[2].k_label == "n/a" and runs[0].k_at(7) == 1 and runs[0].k_label == "1"
  assert rl.parse_runs("max_at_k", n=8)[0].k_label == "1"
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
      rl.parse_runs(bad, n=8)
  with pytest.raises(ValueError, match="off_policy"):
    rl.UpdateSpec(estimator="max_at_k", k=2, off_policy="magic")


def test_schedule_switches_after_the_first_t1_steps():
  # RL steps are numbered from 1; "8:50:1:80:2" is k=8 for the first 50 steps
  # (steps 1-50), k=1 for steps 51-80, then k=2: steps 50 and 80 still belong to
  # the earlier segment, as in the bandit runs.
  annealed = rl.parse_runs("max_at_k@8:50:1:80:2", n=8)[0]
  ks = [annealed.k_at(step) for step in range(1, 101)]
  assert ks == [8] * 50 + [1] * 30 + [2] * 20
  assert annealed.schedule == schedules.parse_schedule("8:50:1:80:2")


def test_parse_runs_checks_switch_steps_against_the_run_length():
  rl.parse_runs("max_at_k@2:3:1", n=4, num_steps=4)
  with pytest.raises(ValueError, match="smaller than num_steps=3"):
    rl.parse_runs("max_at_k@2:3:1", n=4, num_steps=3)


def test_advantages_come_from_the_shared_registry():
  rewards = jnp.asarray(np.random.default_rng(0).random((2, 5)), jnp.float32)
  for baseline in rl.BASELINES:
    np.testing.assert_array_equal(
      rl.advantages("max_at_k", rewards, 3, baseline),
      maxk.max_at_k_advantages(rewards, 3, baseline=baseline),
    )
  np.testing.assert_array_equal(
    rl.advantages("grpo", rewards, 3, "loo"), estimators_lib.get("grpo")(rewards, 3)
  )
  np.testing.assert_array_equal(
    rl.advantages("max_minus_second", rewards, 3, "loo"),
    maxk.max_minus_second_advantages(rewards),
  )
  assert rl.ESTIMATORS == ("max_at_k", "grpo", "rloo", "max_minus_second")
  with pytest.raises(ValueError, match="Unknown estimator"):
    rl.advantages("pass_at_k_training", rewards, 3, "loo")


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
  rewards = jnp.asarray(np.random.default_rng(0).random((P, N)), jnp.float32)
  return graphdef, params, tokens, out["mask"], rewards, prompts.shape[1]


@functools.partial(jax.jit, static_argnums=(1, 2))
def _grad(params, graphdef, spec, old_params, tokens, mask, rewards):
  _, seq_old, _ = rl._sequence_logp(graphdef, old_params, tokens, mask, spec)
  adv = rl.advantages(spec.estimator, rewards, spec.k, spec.baseline)
  shift = adv - maxk.max_at_k_advantages(rewards, spec.k, baseline="none")
  zeros = jnp.zeros(mask.shape)
  return jax.grad(
    lambda p: rl.policy_loss(p, graphdef, tokens, mask, rewards, seq_old, adv, shift, zeros, spec)[
      0
    ]
  )(params)


def _close(a, b):
  for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)):
    np.testing.assert_allclose(x, y, rtol=2e-4, atol=1e-6)


def test_first_epoch_gradient_is_the_on_policy_estimator(batch):
  # (The surrogate is checked against "exact" off-policy below.)
  graphdef, params, tokens, mask, rewards, prompt_len = batch
  spec = lambda m: rl.UpdateSpec(
    estimator="max_at_k", k=K, off_policy=m, n=N, prompt_len=prompt_len
  )
  grads = {
    m: _grad(params, graphdef, spec(m), params, tokens, mask, rewards)
    for m in ("exact", "first_order", "ppo_clip")
  }
  for m in ("first_order", "ppo_clip"):
    _close(grads[m], grads["exact"])


def test_surrogate_gradient_equals_unclipped_exact_weights_off_policy(batch):
  graphdef, params, tokens, mask, rewards, prompt_len = batch
  old = jax.tree.map(lambda x: x + 0.05 * jnp.sign(jnp.sin(1e3 * x)), params)
  spec = lambda m: rl.UpdateSpec(
    estimator="max_at_k", k=K, off_policy=m, n=N, prompt_len=prompt_len, clip_eps=1e6
  )
  _close(
    _grad(params, graphdef, spec("surrogate"), old, tokens, mask, rewards),
    _grad(params, graphdef, spec("exact"), old, tokens, mask, rewards),
  )
