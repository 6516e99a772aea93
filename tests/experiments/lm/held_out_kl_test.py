"""Tests of experiments.lm.held_out_kl against the exact KL of every completion, enumerated."""

import functools
import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from experiments.lm import held_out_kl
from experiments.lm import model as model_lib
from experiments.lm import parallel
from experiments.lm import policy as policy_lib
from experiments.lm import rollouts
from experiments.lm import sampling
from experiments.lm import tasks

TEMPERATURE = 0.5
COMPLETION = 3  # Completions of up to 3 tokens: few enough to enumerate.
PROMPT = tasks.encode_prompts(["7"])[0]
CFG = model_lib.ModelConfig(
  vocab_size=tasks.VOCAB_SIZE,
  max_len=len(PROMPT) + COMPLETION,
  d_model=16,
  num_heads=2,
  num_layers=1,
  d_ff=32,
)


def _completions():
  """Every completion the sampler can return, with its mask: tokens up to the first
  EOS (included), PAD after it."""
  seen = {}
  for tokens in itertools.product(range(tasks.VOCAB_SIZE), repeat=COMPLETION):
    tokens, mask = list(tokens), [1.0] * COMPLETION
    if tasks.EOS_ID in tokens:
      end = tokens.index(tasks.EOS_ID) + 1
      tokens[end:] = [tasks.PAD_ID] * (COMPLETION - end)
      mask[end:] = [0.0] * (COMPLETION - end)
    seen[tuple(tokens)] = mask
  completions = np.array(list(seen), np.int32)
  rows = np.concatenate([np.repeat(PROMPT[None], len(completions), 0), completions], 1)
  return jnp.asarray(rows), jnp.asarray(np.array(list(seen.values()), np.float32))


@jax.jit  # One compilation, not one per op and leaf shape.
def _sharper(params, scale, shift):
  """Sharper logits (so that the temperature matters), moved by ``shift``."""
  out = jax.tree.map(lambda x: x + shift * jnp.cos(jnp.arange(x.size).reshape(x.shape)), params)
  out["head"]["kernel"] = out["head"]["kernel"] * scale
  return out


@pytest.fixture(scope="module")
def models():
  graphdef, params = model_lib.create(CFG, seed=0)
  policy = policy_lib.Policy(graphdef, CFG, len(PROMPT), temperature=TEMPERATURE)
  return policy, _sharper(params, 10.0, 0.0), _sharper(params, 10.0, 0.01)


@functools.partial(jax.jit, static_argnums=0)
def _tempered_logz(graphdef, params, tokens):
  logits = model_lib.apply(graphdef, params, tokens[:, :-1])[0][:, len(PROMPT) - 1 :]
  return jax.nn.log_softmax(logits / TEMPERATURE, axis=-1)


def _sequence_logp(policy, params, tokens, mask):
  """log pi(y) of each whole completion, float64, by its own formula."""
  logz = np.asarray(_tempered_logz(policy.graphdef, params, tokens), np.float64)
  targets = np.asarray(tokens[:, len(PROMPT) :])
  picked = np.take_along_axis(logz, targets[..., None], axis=-1)[..., 0]
  return np.sum(picked * np.asarray(mask), axis=-1)


def test_expected_chain_rule_kl_is_the_exact_sequence_kl(models):
  policy, params, ref = models
  tokens, mask = _completions()
  logp, logp_ref = (_sequence_logp(policy, p, tokens, mask) for p in (params, ref))
  prob = np.exp(logp)
  assert np.sum(prob) == pytest.approx(1.0, abs=1e-5)  # Every completion, once.
  exact = float(np.sum(prob * (logp - logp_ref)))  # sum_y pi(y) log pi(y) / pi_ref(y).
  assert exact > 0.5  # About 0.8 nats: a realistic distance.
  kl_B = np.asarray(held_out_kl.sequence_kl(params, ref, tokens, mask, policy=policy), np.float64)
  assert np.all(kl_B >= 0)
  assert float(np.sum(prob * kl_B)) == pytest.approx(exact, abs=1e-5)
  # At temperature 1 the same parameters give another distribution and KL.
  hot = policy_lib.Policy(policy.graphdef, CFG, len(PROMPT), temperature=1.0)
  kl_hot = np.asarray(held_out_kl.sequence_kl(params, ref, tokens, mask, policy=hot))
  assert abs(float(np.sum(prob * kl_hot)) - exact) > 0.1 * exact
  # The warm start itself: exactly 0 on every completion.
  np.testing.assert_array_equal(
    held_out_kl.sequence_kl(ref, ref, tokens, mask, policy=policy), np.zeros(len(prob))
  )


def test_prompt_kl_of_samples_estimates_the_exact_kl(models):
  policy, params, ref = models
  tokens, mask = _completions()
  logp, logp_ref = (_sequence_logp(policy, p, tokens, mask) for p in (params, ref))
  exact = float(np.sum(np.exp(logp) * (logp - logp_ref)))
  num_prompts, n = 4, 512
  prompt_ids = np.repeat(PROMPT[None], num_prompts, 0)
  rows = jnp.asarray(sampling.repeat_prompts(prompt_ids, n))
  out = policy.sample(params, rows, jax.random.key(3))
  shape = (num_prompts, n, COMPLETION)
  rollout = rollouts.Rollout(
    prompts=["7"] * num_prompts,
    prompt_ids=prompt_ids,
    tokens=np.asarray(out["tokens"]).reshape(shape),
    mask=np.asarray(out["mask"]).reshape(shape),
    entropy=np.zeros(shape, np.float32),
    binary=np.zeros((num_prompts, n), np.float32),
    continuous=np.zeros((num_prompts, n), np.float32),
  )
  mesh = parallel.make_mesh(1)
  kl_P = held_out_kl.prompt_kl(policy, params, ref, rollout, samples=0, mesh=mesh)
  assert kl_P.shape == (num_prompts,) and kl_P.dtype == np.float64
  # Each prompt's mean over n samples, within 4 standard errors of the exact KL.
  sample_rows = jnp.asarray(np.concatenate([np.asarray(rows), np.asarray(out["tokens"])], 1))
  per_sample = np.asarray(
    held_out_kl.sequence_kl(params, ref, sample_rows, out["mask"], policy=policy)
  )
  se = np.std(per_sample) / np.sqrt(n)
  np.testing.assert_allclose(kl_P, per_sample.reshape(num_prompts, n).mean(-1), rtol=1e-6)
  assert np.all(np.abs(kl_P - exact) < 4 * se)
  # Less noisy than the sampled sequence log-ratio (the training log's estimator).
  log_ratio = _sequence_logp(policy, params, sample_rows, out["mask"]) - _sequence_logp(
    policy, ref, sample_rows, out["mask"]
  )
  assert np.mean(log_ratio) == pytest.approx(exact, abs=4 * np.std(log_ratio) / np.sqrt(n * 4))
  assert np.std(per_sample) < 0.5 * np.std(log_ratio)
  # samples=m: the first m samples of each prompt.
  first = held_out_kl.prompt_kl(policy, params, ref, rollout, samples=16, mesh=mesh)
  np.testing.assert_allclose(first, per_sample.reshape(num_prompts, n)[:, :16].mean(-1), rtol=1e-6)
  np.testing.assert_array_equal(
    held_out_kl.prompt_kl(policy, ref, ref, rollout, samples=16, mesh=mesh), np.zeros(num_prompts)
  )
