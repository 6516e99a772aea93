"""Brute-force references: every definition written as an explicit sum over subsets.

These are deliberately naive (Python loops over ``itertools.combinations`` in
float64) and share no code with :mod:`maxk`; the tests compare the library
against them on small inputs.
"""

from __future__ import annotations

import itertools
import math

import numpy as np


def subsets(n: int, k: int):
  return list(itertools.combinations(range(n), k))


def max_at_k(r, k: int) -> float:
  """(1/C(n,k)) Σ_{|I|=k} max_I r."""
  r = np.asarray(r, np.float64)
  return float(np.mean([r[list(s)].max() for s in subsets(len(r), k)]))


def pass_at_k(correct, k: int) -> float:
  """Fraction of k-subsets containing at least one correct sample."""
  c = np.asarray(correct, bool)
  return float(np.mean([c[list(s)].any() for s in subsets(len(c), k)]))


def s_values(r, k: int) -> np.ndarray:
  """S(i) = (1/C(n,k)) Σ_{I∋i} max_I r."""
  r = np.asarray(r, np.float64)
  n = len(r)
  out = np.zeros(n)
  for s in subsets(n, k):
    out[list(s)] += r[list(s)].max()
  return out / math.comb(n, k)


def advantages(r, k: int, baseline: str) -> np.ndarray:
  """DESIGN.md definitions of every ``max_at_k_advantages`` baseline, by subsets."""
  r = np.asarray(r, np.float64)
  n = len(r)
  s = s_values(r, k)
  if baseline == "none":
    return s
  if baseline == "mean_std":
    return (s - s.mean()) / (s.std() + 1e-6)
  if baseline in ("loo", "loo_centered"):
    if n == k:
      return s
    scale = k / (n - 1) if baseline == "loo" else k / n
    return np.array([s[i] - scale * max_at_k(np.delete(r, i), k) for i in range(n)])
  if baseline == "loo_minus_one":
    if k == 1:
      return advantages(r, k, "loo_centered")
    out = np.zeros(n)
    for sub in subsets(n, k):
      sub = list(sub)
      top = r[sub].max()
      for i in sub:
        out[i] += top - r[[j for j in sub if j != i]].max()
    return out / math.comb(n, k)
  raise ValueError(baseline)


def off_policy(r, log_ratio, k: int, method: str) -> np.ndarray:
  """a_i = (1/C(n,k)) Σ_{I∋i} w(I) max_I r with exact or first-order w(I)."""
  r = np.asarray(r, np.float64)
  rho = np.exp(np.asarray(log_ratio, np.float64))
  n = len(r)
  out = np.zeros(n)
  for sub in subsets(n, k):
    sub = list(sub)
    if method == "exact":
      w = np.prod(rho[sub])
    else:
      w = 1.0 + np.sum(rho[sub] - 1.0)
    out[sub] += w * r[sub].max()
  return out / math.comb(n, k)


def surrogate(r, log_ratio, k: int) -> float:
  r = np.asarray(r, np.float64)
  rho = np.exp(np.asarray(log_ratio, np.float64))
  return float(np.mean([np.prod(rho[list(s)]) * r[list(s)].max() for s in subsets(len(r), k)]))


def pass_at_k_training(correct, k: int) -> np.ndarray:
  """Pass@k Training (arXiv 2508.10751 App. B.3): each response's advantage is the
  average, over the k-subsets ("groups") containing it, of the group's normalised
  pass@k reward (max_I c − R̄)/σ, R̄ the mean group reward, σ = sqrt(R̄(1−R̄))."""
  c = np.asarray(correct, np.float64)
  n = len(c)
  groups = subsets(n, k)
  rewards = np.array([c[list(g)].max() for g in groups])
  mean = rewards.mean()
  std = np.sqrt(mean * (1 - mean))
  if std == 0:
    return np.zeros(n)
  out = np.zeros(n)
  count = np.zeros(n)
  for g, rew in zip(groups, rewards):
    out[list(g)] += (rew - mean) / std
    count[list(g)] += 1
  return out / count


def rloo(r) -> np.ndarray:
  r = np.asarray(r, np.float64)
  return np.array([r[i] - np.delete(r, i).mean() for i in range(len(r))])


def max_minus_second(r) -> np.ndarray:
  """max(r) − max(r_{−i}) for each i (nonzero only at an untied top sample)."""
  r = np.asarray(r, np.float64)
  return np.array([r.max() - np.delete(r, i).max() for i in range(len(r))])


def tuples(num_outcomes: int, n: int):
  """All outcome tuples (y_1..y_n) of n draws from num_outcomes outcomes."""
  return np.array(list(itertools.product(range(num_outcomes), repeat=n)), dtype=np.int64)


def softmax(logits):
  z = np.exp(np.asarray(logits, np.float64) - np.max(logits))
  return z / z.sum()


def exact_max_at_k(probs, values, k: int) -> float:
  """E[max of k i.i.d. draws] by enumerating all k-tuples of outcomes."""
  probs = np.asarray(probs, np.float64)
  values = np.asarray(values, np.float64)
  total = 0.0
  for t in itertools.product(range(len(probs)), repeat=k):
    total += np.prod(probs[list(t)]) * values[list(t)].max()
  return total


def exact_max_at_k_grad(logits, values, k: int, h: float = 1e-6) -> np.ndarray:
  """∇_logits max@k(softmax(logits)) by central differences of the exact value (float64)."""
  logits = np.asarray(logits, np.float64)
  grad = np.zeros_like(logits)
  for i in range(len(logits)):
    e = np.zeros_like(logits)
    e[i] = h
    grad[i] = (
      exact_max_at_k(softmax(logits + e), values, k)
      - exact_max_at_k(softmax(logits - e), values, k)
    ) / (2 * h)
  return grad


def expected_score_estimate(estimator, logits_sample, logits_target, values, n: int):
  """E_{y ~ π_sample^n}[Σ_i a_i ∇_logits log π_target(y_i)], exactly, over all tuples.

  ``estimator(rewards [T, n], log_ratio [T, n]) -> a [T, n]`` is called once on the
  batch of every outcome tuple (T = L^n), so it also exercises leading batch axes.
  """
  p_sample = softmax(logits_sample)
  p_target = softmax(logits_target)
  values = np.asarray(values, np.float64)
  ys = tuples(len(values), n)
  rewards = values[ys]
  log_ratio = np.log(p_target[ys]) - np.log(p_sample[ys])
  a = np.asarray(estimator(rewards.astype(np.float32), log_ratio.astype(np.float32)), np.float64)
  weights = np.prod(p_sample[ys], axis=1)
  scores = np.eye(len(values))[ys] - p_target  # ∇_logits log softmax(y) = e_y − p
  per_tuple = np.einsum("tn,tnl->tl", a, scores)
  return weights @ per_tuple
