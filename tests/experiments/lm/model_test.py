"""Tests of experiments.lm.model and .sampling: KV-cache decoding equals full recomputation."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from experiments.lm import model as model_lib
from experiments.lm import sampling
from experiments.lm import tasks

CFG = model_lib.ModelConfig(
  vocab_size=tasks.VOCAB_SIZE, max_len=24, d_model=32, num_heads=4, num_layers=2, d_ff=64
)
MAX_NEW = 14


@pytest.fixture(scope="module")
def model():
  return model_lib.create(CFG, seed=0)


@pytest.fixture(scope="module")
def prompts():
  rng = np.random.default_rng(0)
  ids = tasks.encode_prompts([f"{a}+{b}=" for a, b in rng.integers(100, 999, size=(8, 2))])
  return jnp.asarray(sampling.repeat_prompts(ids, 4))  # [32, 9].


def test_cached_sampling_equals_uncached_logits(model, prompts):
  graphdef, params = model
  key = jax.random.key(1)
  cached = sampling.generate(
    graphdef, params, prompts, key, cfg=CFG, max_new=MAX_NEW, return_logits=True
  )
  uncached = sampling.generate(
    graphdef, params, prompts, key, cfg=CFG, max_new=MAX_NEW, use_cache=False, return_logits=True
  )
  np.testing.assert_allclose(cached["logits"], uncached["logits"], atol=1e-5)
  np.testing.assert_array_equal(cached["tokens"], uncached["tokens"])
  # And equal to one teacher-forced pass over prompt + sample.
  full = jnp.concatenate([prompts, cached["tokens"]], axis=1)
  logits, logp, entropy = jax.jit(
    lambda p, x: (
      model_lib.apply(graphdef, p, x[:, :-1])[0],
      *model_lib.token_logprobs(graphdef, p, x, prompts.shape[1]),
    )
  )(params, full)
  np.testing.assert_allclose(cached["logits"], logits[:, prompts.shape[1] - 1 :], atol=1e-5)
  np.testing.assert_allclose(entropy, cached["entropy"], atol=1e-5)
  assert logp.shape == (prompts.shape[0], MAX_NEW) and (logp <= 0).all()


def test_chunked_prefill_equals_full_forward(model, prompts):
  graphdef, params = model

  @jax.jit
  def both(params, prompts):
    cache = model_lib.init_cache(CFG, prompts.shape[0], CFG.max_len)
    first, cache = model_lib.apply(graphdef, params, prompts[:, :4], cache=cache, start=0)
    second, _ = model_lib.apply(graphdef, params, prompts[:, 4:], cache=cache, start=4)
    full, _ = model_lib.apply(graphdef, params, prompts)
    return first, second, full

  first, second, full = both(params, prompts)
  np.testing.assert_allclose(jnp.concatenate([first, second], axis=1), full, atol=1e-5)


def test_eos_mask_and_padding(model, prompts):
  graphdef, params = model
  out = sampling.generate(graphdef, params, prompts, jax.random.key(2), cfg=CFG, max_new=MAX_NEW)
  tokens, mask = np.asarray(out["tokens"]), np.asarray(out["mask"])
  saw_eos = 0
  for row_tokens, row_mask in zip(tokens, mask):
    eos = np.flatnonzero(row_tokens == tasks.EOS_ID)
    end = eos[0] + 1 if eos.size else MAX_NEW
    saw_eos += bool(eos.size)
    np.testing.assert_array_equal(row_mask, np.arange(MAX_NEW) < end)
    assert (row_tokens[end:] == tasks.PAD_ID).all()
  assert saw_eos > 0


def test_greedy_and_determinism(model, prompts):
  graphdef, params = model
  greedy = sampling.generate(
    graphdef,
    params,
    prompts,
    jax.random.key(0),
    cfg=CFG,
    max_new=MAX_NEW,
    temperature=0.0,
    return_logits=True,
  )
  first = np.asarray(greedy["logits"])[:, 0]
  np.testing.assert_array_equal(np.asarray(greedy["tokens"])[:, 0], first.argmax(-1))
  other_key = sampling.generate(
    graphdef, params, prompts, jax.random.key(5), cfg=CFG, max_new=MAX_NEW, temperature=0.0
  )
  np.testing.assert_array_equal(greedy["tokens"], other_key["tokens"])
  with pytest.raises(ValueError, match="exceeds max_len"):
    sampling.generate(graphdef, params, prompts, jax.random.key(0), cfg=CFG, max_new=20)


def test_top_p_filter():
  logits = np.log(np.array([[0.05, 0.5, 0.15, 0.3]], np.float32))
  filter_logits = jax.jit(sampling.filter_logits, static_argnums=(1, 2))
  kept = lambda p: np.isfinite(np.asarray(filter_logits(logits, 1.0, p)))[0].tolist()
  assert kept(0.1) == [False, True, False, False]
  assert kept(0.7) == [False, True, False, True]
  assert kept(0.85) == [False, True, True, True]
  assert kept(1.0) == [True, True, True, True]
  np.testing.assert_allclose(filter_logits(logits, 2.0, 1.0), logits / np.float32(2.0))


def test_param_count_and_flops():
  _, params = model_lib.create(CFG, seed=0)
  d, f, v = CFG.d_model, CFG.d_ff, CFG.vocab_size
  per_layer = 4 * d + 4 * d * d + 2 * d * f + f + d  # Norms, attention, MLP.
  n = model_lib.num_params(params)
  assert n == (v + CFG.max_len) * d + CFG.num_layers * per_layer + 2 * d + d * v
  assert model_lib.flops_per_token(CFG, context=16) > 2 * (n - CFG.max_len * CFG.d_model) * 0.5


def test_tempered_logprobs_are_those_the_sampler_draws_from(model, prompts):
  graphdef, params = model

  @jax.jit
  def peaked(params):
    params = jax.tree.map(jnp.copy, params)
    params["head"]["kernel"] = params["head"]["kernel"] * 40.0  # Peaked: tau matters.
    return params

  params = peaked(params)
  tau = 0.5
  # Jitted once per (shape, temperature), not op by op.
  token_logprobs = jax.jit(model_lib.token_logprobs, static_argnums=(0, 3, 4))
  out = sampling.generate(
    graphdef,
    params,
    prompts,
    jax.random.key(3),
    cfg=CFG,
    max_new=4,
    temperature=tau,
    return_logits=True,
  )
  full = np.concatenate([np.asarray(prompts), np.asarray(out["tokens"])], axis=1)
  logp, entropy = token_logprobs(graphdef, params, full, prompts.shape[1], tau)

  @jax.jit
  def drawn_logp(logits, tokens):
    # The sampler's own logits, tempered, at the tokens it drew (up to EOS).
    logz = jax.nn.log_softmax(logits / tau, axis=-1)
    return jnp.take_along_axis(logz, tokens[..., None], axis=-1)[..., 0]

  drawn = drawn_logp(out["logits"], out["tokens"])
  logp, entropy, drawn, out = jax.device_get((logp, entropy, drawn, out))
  np.testing.assert_allclose(logp * out["mask"], drawn * out["mask"], atol=1e-4)
  np.testing.assert_allclose(entropy * out["mask"], out["entropy"] * out["mask"], atol=1e-4)
  with pytest.raises(ValueError, match="temperature=0"):
    model_lib.token_logprobs(graphdef, params, full, prompts.shape[1], 0.0)

  # Monte Carlo: first-token frequencies of 4096 draws from one prompt against
  # exp(logp) at tau (|z| < 5 for every token), and far from the untempered ones.
  draws = 4096
  rows = np.repeat(np.asarray(prompts)[:1], draws, axis=0)
  first = sampling.generate(
    graphdef, params, rows, jax.random.key(4), cfg=CFG, max_new=1, temperature=tau
  )["tokens"][:, 0]
  counts = np.bincount(np.asarray(first), minlength=CFG.vocab_size)
  candidates = np.concatenate(
    [
      np.repeat(np.asarray(prompts)[:1], CFG.vocab_size, axis=0),
      np.arange(CFG.vocab_size, dtype=np.asarray(prompts).dtype)[:, None],
    ],
    1,
  )

  def max_z(temperature):
    probs = np.exp(
      np.asarray(token_logprobs(graphdef, params, candidates, prompts.shape[1], temperature)[0])[
        :, 0
      ],
      dtype=np.float64,
    )
    assert probs.sum() == pytest.approx(1.0, abs=1e-4)
    sd = np.sqrt(draws * probs * (1 - probs)) + 1e-9
    return np.max(np.abs(counts - draws * probs) / np.maximum(sd, 1.0))

  assert max_z(tau) < 5.0
  assert max_z(1.0) > 20.0
