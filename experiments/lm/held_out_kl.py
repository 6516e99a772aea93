r"""The KL of a policy to the warm start on the held-out prompts, per prompt.

For a prompt x and completions y = (y_1, ..., y_T) (T tokens up to and including EOS,
or the whole completion budget without one), the chain rule of KL divergence gives

  KL(pi(. | x) || pi_ref(. | x)) = E_{y ~ pi(. | x)} [ sum_{t <= T} KL_t(y_<t) ],
  KL_t(y_<t) = sum_v pi(v | x, y_<t) log(pi(v | x, y_<t) / pi_ref(v | x, y_<t)),

the sum over the whole vocabulary at every position the completion reaches. So the
mean of ``sum_t KL_t`` over completions drawn from pi is an unbiased estimate of the
sequence-level KL(pi || pi_ref). It is never negative, and it replaces each term of
the sampled log-ratio log pi(y) - log pi_ref(y) = sum_t log(pi / pi_ref)(y_t | y_<t)
(the training log's ``kl_to_warm_start``, see ``rl``) by that term's expectation
given the prefix, KL_t(y_<t): the noise of the token drawn at each position goes, so
its variance is typically much lower (not always: the later positions' KL still
depend on the earlier tokens).

pi and pi_ref are the tempered distributions the evaluation samples from,
softmax(logits / tau) at tau = ``eval.temperature``; a nucleus (``eval.top_p < 1``)
would make pi's support depend on the parameters, so the KL is computed only at
top-p 1 (``validation`` refuses ``eval.kl`` otherwise).

Cost: two teacher-forced forward passes (the policy's and the warm start's) over
``kl_samples`` of each prompt's samples, against the sampler's one cached decode of
each of its ``eval.n`` samples: roughly 2 x kl_samples / eval.n of the sampling's
time (the full-vocabulary log-probs, ``[rows, C, V]``, are small: the task
vocabulary).
"""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from experiments.lm import model as model_lib
from experiments.lm import parallel
from experiments.lm import policy as policy_lib
from experiments.lm import rollouts
from experiments.lm import sampling


def _token_distributions(
  policy: policy_lib.Policy, params: Any, tokens_BxT: jax.Array
) -> jax.Array:
  """``[B, C, V]`` float32 log-probs of the tempered next-token distribution at each
  completion position."""
  logits_BxTxV, _ = model_lib.apply(policy.graphdef, params, tokens_BxT[:, :-1])
  logits_BxCxV = logits_BxTxV[:, policy.prompt_len - 1 :].astype(jnp.float32)
  return jax.nn.log_softmax(logits_BxCxV / policy.temperature, axis=-1)


@functools.partial(jax.jit, static_argnames=("policy",))
def sequence_kl(
  params: Any,
  ref_params: Any,
  tokens_BxT: jax.Array,
  mask_BxC: jax.Array,
  *,
  policy: policy_lib.Policy,
) -> jax.Array:
  """``[B]``: sum_t mask_t KL(pi(. | y_<t) || pi_ref(. | y_<t)) of each row (module docstring).

  Args:
    params: pi's parameters.
    ref_params: pi_ref's (the warm start).
    tokens_BxT: prompt (``policy.prompt_len`` tokens) then completion.
    mask_BxC: 1 on the completion's tokens up to and including EOS.
    policy: the model and its temperature (``top_p`` is ignored: see the module
      docstring).
  """
  logp_BxCxV = _token_distributions(policy, params, tokens_BxT)
  logp_ref_BxCxV = _token_distributions(policy, ref_params, tokens_BxT)
  token_kl_BxC = jnp.sum(jnp.exp(logp_BxCxV) * (logp_BxCxV - logp_ref_BxCxV), axis=-1)
  return jnp.sum(token_kl_BxC * mask_BxC, axis=-1)


def prompt_kl(
  policy: policy_lib.Policy,
  params: Any,
  ref_params: Any,
  rollout: rollouts.Rollout,
  *,
  samples: int,
  mesh: jax.sharding.Mesh,
) -> np.ndarray:
  """``[P]`` float64: per prompt, the mean of :func:`sequence_kl` over its first
  ``samples`` completions of ``rollout`` (all n when 0 or more than n), drawn from
  ``policy`` at ``params``: an unbiased estimate of KL(pi(. | x) || pi_ref(. | x)).

  Rows shard over ``mesh`` (their number, prompts x samples, must divide over it).
  """
  num_prompts, n = rollout.tokens.shape[:2]
  m = min(samples or n, n)
  completions = rollout.tokens[:, :m].reshape(num_prompts * m, -1)
  tokens_BxT = np.concatenate([sampling.repeat_prompts(rollout.prompt_ids, m), completions], 1)
  mask_BxC = rollout.mask[:, :m].reshape(num_prompts * m, -1)
  kl_B = sequence_kl(
    params,
    ref_params,
    parallel.put_rows(tokens_BxT, mesh),
    parallel.put_rows(mask_BxC, mesh),
    policy=policy,
  )
  return np.mean(parallel.to_host(kl_B).astype(np.float64).reshape(num_prompts, m), axis=-1)
