"""Smoke test of an installed maxk, run by wheel_test.py with a fresh environment's Python.

Usage: ``python smoke.py ENV_DIR``.  Imports only maxk, its dependencies and the
standard library.  Checks that maxk comes from ENV_DIR (not a source tree), that
nothing but maxk's own dependencies is installed there, that every name in
``maxk.__all__`` imports, one jitted call of each family against values computed
here from the definitions (subsets by ``itertools``, binomials by ``math.comb``), and
that ``maxk.contrib.tunix`` imports without tunix.
"""

import importlib.metadata
import itertools
import math
import os
import re
import statistics
import sys

import jax
import jax.numpy as jnp
import numpy as np

import maxk

TOL = 1e-5


def check(name, got, want):
  got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
  if got.shape != want.shape or not np.allclose(got, want, rtol=TOL, atol=TOL):
    raise AssertionError(f"{name}: got {got}, want {want}")
  print(f"ok {name}")


def dependency_closure(root):
  """Distribution names that ``root`` requires, recursively (markers with extras skipped)."""
  seen, todo = set(), [root]
  while todo:
    name = re.sub(r"[-_.]+", "-", todo.pop()).lower()
    if name in seen:
      continue
    seen.add(name)
    for req in importlib.metadata.requires(name) or []:
      if "extra ==" not in req.replace('"', "").replace("'", ""):
        todo.append(re.match(r"[A-Za-z0-9._-]+", req).group(0))
  return seen


def main(env_dir):
  # Installed from the wheel into env_dir, and only with maxk's own dependencies.
  assert os.path.realpath(maxk.__file__).startswith(os.path.realpath(env_dir)), maxk.__file__
  assert maxk.__version__ == importlib.metadata.version("maxk"), maxk.__version__
  installed = {
    re.sub(r"[-_.]+", "-", d.metadata["Name"]).lower() for d in importlib.metadata.distributions()
  }
  extra = installed - dependency_closure("maxk") - {"pip", "setuptools"}
  assert not extra, f"installed beyond maxk's dependencies: {sorted(extra)}"

  # Every public name imports.
  namespace = {}
  exec("from maxk import *", namespace)  # noqa: S102
  missing = [name for name in maxk.__all__ if name not in namespace]
  assert not missing, missing
  print(f"ok {len(maxk.__all__)} public names import")

  r = [0.1, 0.7, 0.4, 0.9]
  n, k = len(r), 2
  subsets = list(itertools.combinations(range(n), k))
  rewards = jnp.asarray(r, jnp.float32)

  # pass@k and max@k.
  correct = jnp.asarray([1, 0, 0, 1])
  check("pass_at_k", jax.jit(lambda c: maxk.pass_at_k(c, k))(correct), 1 - 1 / math.comb(n, k))
  max_at_2 = statistics.mean(max(r[i] for i in s) for s in subsets)
  check("max_at_k", jax.jit(lambda x: maxk.max_at_k(x, k))(rewards), max_at_2)

  # max@k gradient transforms: S(i) = mean over the k-subsets of subset maxima, summed over I ∋ i.
  s_i = [sum(max(r[j] for j in s) for s in subsets if i in s) / math.comb(n, k) for i in range(n)]
  adv = jax.jit(lambda x: maxk.max_at_k_advantages(x, k, baseline="none"))(rewards)
  check("max_at_k_advantages", adv, s_i)

  # Off-policy: with log ratios 0 the weights are the on-policy S(i), the surrogate max@k.
  zeros = jnp.zeros(n)
  check(
    "max_at_k_advantages_off_policy",
    jax.jit(lambda x, lr: maxk.max_at_k_advantages_off_policy(x, lr, k))(rewards, zeros),
    s_i,
  )
  surrogate = jax.jit(lambda lp, x: maxk.max_at_k_surrogate(lp, lp, x, k))(zeros - 1.0, rewards)
  check("max_at_k_surrogate", surrogate, max_at_2)

  # Peers.
  mean, std = statistics.mean(r), statistics.pstdev(r)
  check(
    "grpo_advantages",
    jax.jit(maxk.grpo_advantages)(rewards),
    [(x - mean) / (std + 1e-6) for x in r],
  )
  others = [(sum(r) - x) / (n - 1) for x in r]
  check(
    "rloo_advantages", jax.jit(maxk.rloo_advantages)(rewards), [x - o for x, o in zip(r, others)]
  )

  # Rank objectives: min@2 is the mean over pairs of the smaller reward.
  weights = maxk.rank_weights("min", k)
  min_at_2 = statistics.mean(min(r[i] for i in s) for s in subsets)
  order_stat = jax.jit(lambda x: maxk.order_stat_at_k(x, weights))  # weights are static
  check("order_stat_at_k", order_stat(rewards), min_at_2)

  # Variance of estimates (k = 1: s²/n) and uncertainty across prompts.
  check(
    "max_at_k_variance",
    jax.jit(lambda x: maxk.max_at_k_variance(x, 1))(rewards),
    statistics.variance(r) / n,
  )
  interval = jax.jit(maxk.mean_with_interval)(rewards)
  check(
    "mean_with_interval", [interval.mean, interval.stderr], [mean, statistics.stdev(r) / n**0.5]
  )

  # A verifier selects: scores rank the samples, the true rewards are paid; score ties
  # share the mean reward of the tied top samples.
  scores = [0.0, 1.0, 1.0, 0.5]
  selected = [
    statistics.mean(r[i] for i in s if scores[i] == max(scores[j] for j in s)) for s in subsets
  ]
  check(
    "selected_at_k",
    jax.jit(lambda v, x: maxk.selected_at_k(v, x, k))(jnp.asarray(scores), rewards),
    statistics.mean(selected),
  )
  s_sel = [sum(v for v, s in zip(selected, subsets) if i in s) / math.comb(n, k) for i in range(n)]
  check(
    "selected_at_k_advantages",
    maxk.selected_at_k_advantages(jnp.asarray(scores), rewards, k, baseline="none"),
    s_sel,
  )

  # Exact values of a categorical policy: best-of-2 by score pays the reward of the
  # higher-score arm; majority of 2 draws over answers (a tie broken uniformly).
  pi, score, reward = [0.5, 0.3, 0.2], [2.0, 1.0, 0.0], [0.0, 1.0, 3.0]
  pairs = list(itertools.product(range(3), repeat=2))
  check(
    "selected_at_k_exact",
    jax.jit(lambda p: maxk.selected_at_k_exact(p, jnp.asarray(score), jnp.asarray(reward), 2))(
      jnp.asarray(pi)
    ),
    sum(pi[a] * pi[b] * reward[a if score[a] >= score[b] else b] for a, b in pairs),
  )
  is_right = [1, 0, 0]
  check(
    "maj_at_k_exact",
    jax.jit(lambda p: maxk.maj_at_k_exact(p, jnp.asarray(is_right), 2))(jnp.asarray(pi)),
    sum(pi[a] * pi[b] * (is_right[a] + is_right[b]) / 2 for a, b in pairs),
  )

  # Majority vote: the plurality answer of k draws is correct; a tie at the top earns
  # the share of correct answers among the tied ones.
  ids, right = [0, 1, 0, 2], [1, 0, 1, 0]

  def vote(s):
    counts = {a: sum(ids[i] == a for i in s) for a in {ids[i] for i in s}}
    top = [a for a, c in counts.items() if c == max(counts.values())]
    return statistics.mean(right[ids.index(a)] for a in top)

  check(
    "maj_at_k",
    jax.jit(lambda a, c: maxk.maj_at_k(a, c, k))(jnp.asarray(ids), jnp.asarray(right)),
    statistics.mean(vote(s) for s in subsets),
  )

  # Curves over every k, pass^k and G-Pass@k (c = 2 of n = 4 correct).
  check(
    "pass_at_k_curve",
    jax.jit(maxk.pass_at_k_curve)(correct),
    [1 - math.comb(n - 2, j) / math.comb(n, j) for j in range(1, n + 1)],
  )
  check(
    "max_at_k_curve",
    jax.jit(maxk.max_at_k_curve)(rewards),
    [
      statistics.mean(max(r[i] for i in s) for s in itertools.combinations(range(n), j))
      for j in range(1, n + 1)
    ],
  )
  check("pass_hat_k", jax.jit(lambda c: maxk.pass_hat_k(c, k))(correct), 1 / math.comb(n, k))
  # G-Pass@3 at tau = 1/2 needs 2 of 3 correct: 2 of the 4 triples hold both correct samples.
  check("g_pass_at_k", jax.jit(lambda c: maxk.g_pass_at_k(c, 3, 0.5))(correct), 0.5)

  # Prompt weights: max@k with an unbiased baseline weights a prompt by k(1−p)^(k−1);
  # pass@2 written in the pass@j basis gives max@2's advantages.
  p = jnp.asarray([0.0, 0.3, 1.0])
  weight = maxk.implied_prompt_weight(lambda c: maxk.max_at_k_advantages(c, k), p, n)
  check("implied_prompt_weight", weight, [k * (1 - q) ** (k - 1) for q in (0.0, 0.3, 1.0)])
  binary = jnp.asarray([1.0, 0.0, 0.0, 1.0])
  check(
    "success_objective_advantages",
    jax.jit(lambda c: maxk.success_objective_advantages(c, [0.0, 1.0]))(binary),
    maxk.max_at_k_advantages(binary, k),
  )

  # Best-of-n: unique rewards, π_n(y) = F(y)^m − F-(y)^m with F the reward CDF.
  probs, values, m = [0.2, 0.3, 0.5], [1.0, 3.0, 2.0], 3
  cdf = [sum(p for p, v in zip(probs, values) if v <= value) for value in values]
  below = [sum(p for p, v in zip(probs, values) if v < value) for value in values]
  pmf = [f**m - g**m for f, g in zip(cdf, below)]
  probs_j, values_j = jnp.asarray(probs), jnp.asarray(values)
  check("bon_pmf", jax.jit(lambda p, v: maxk.bon_pmf(p, v, m))(probs_j, values_j), pmf)
  check("bon_kl_bound", jax.jit(lambda: maxk.bon_kl_bound(m))(), math.log(m) - (m - 1) / m)
  check(
    "max_at_k_exact",
    jax.jit(lambda p, v: maxk.max_at_k_exact(p, v, m))(probs_j, values_j),
    sum(v * q for v, q in zip(values, pmf)),
  )
  # The bias checker ships in the wheel: RLOO follows n·∇E[r] exactly (n = 3 here).
  check_rloo = maxk.testing.gradient_bias(maxk.rloo_advantages, [0.5, 0.5], [0.0, 1.0], 3, [1.0])
  assert check_rloo.verdict == "unbiased up to a constant factor 3", check_rloo
  # The tunix adapter ships too and imports without tunix; registering says how to get it.
  from maxk.contrib import tunix as maxk_tunix

  try:
    maxk_tunix.advantage_estimator("max_at_k", k=2)
  except ImportError as e:
    assert "pip install google-tunix" in str(e), e
  else:
    raise AssertionError("advantage_estimator registered without tunix installed")
  print("ok maxk.contrib.tunix without tunix")
  print("smoke test passed")


if __name__ == "__main__":
  main(sys.argv[1])
