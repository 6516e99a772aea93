"""Brute-force float64 / exact references for the variance-of-estimate tests.

Every quantity is written from its definition: sums over all k-subsets, over all
ordered pairs of disjoint k-subsets, or over all outcome tuples of a small
categorical distribution.  Nothing here shares code with :mod:`maxk`.
"""

from __future__ import annotations

from fractions import Fraction
import itertools
import math

import numpy as np


def max_at_k(r, k: int) -> float:
  r = np.asarray(r, np.float64)
  return float(np.mean([r[list(s)].max() for s in itertools.combinations(range(len(r)), k)]))


def disjoint_pair_mean(r, k: int) -> float:
  """T = mean over ordered pairs of disjoint k-subsets (I, J) of max_I r · max_J r."""
  r = np.asarray(r, np.float64)
  n = len(r)
  subsets = list(itertools.combinations(range(n), k))
  total, count = 0.0, 0
  for i in subsets:
    for j in subsets:
      if set(i).isdisjoint(j):
        total += r[list(i)].max() * r[list(j)].max()
        count += 1
  assert count == math.comb(n, k) * math.comb(n - k, k)
  return total / count


def max_at_k_variance(r, k: int) -> float:
  """V̂ = M̂² − T from the definition (needs n >= 2k)."""
  return max_at_k(r, k) ** 2 - disjoint_pair_mean(r, k)


def outcome_tuples(values, probs, n: int):
  """All n-tuples of a categorical distribution: (array [m, n] of rewards, probabilities [m])."""
  idx = np.array(list(itertools.product(range(len(values)), repeat=n)))
  rewards = np.asarray(values, np.float64)[idx]
  weights = np.prod(np.asarray(probs, np.float64)[idx], axis=-1)
  return rewards, weights


def exact_variance_by_ints(r_float32, k: int) -> float:
  """V̂ = M̂² − T in exact rational arithmetic, for large n.

  Float32 rewards are exact dyadic rationals; scaled to integers, M̂ and T become
  integer sums of C(j−1,k−1) r_(j) and of C(a−1,k−1) C(b−1−k,k−1) r_(a) r_(b)
  over a < b (the count of disjoint pairs with max I = a, max J = b), and the
  difference is rounded to float once at the end.
  """
  fr = sorted(Fraction(float(x)) for x in np.asarray(r_float32, np.float32))
  den = max(f.denominator for f in fr)
  ints = [int(f * den) for f in fr]
  n = len(ints)
  total, other = math.comb(n, k), math.comb(n - k, k)
  m_num = sum(math.comb(j - 1, k - 1) * x for j, x in enumerate(ints, 1))
  t_num, prefix = 0, 0
  for b, x in enumerate(ints, 1):
    t_num += x * math.comb(b - 1 - k, k - 1) * prefix if b - 1 - k >= 0 else 0
    prefix += math.comb(b - 1, k - 1) * x
  t_num *= 2
  value = Fraction(m_num * m_num * other - t_num * total, total * total * other * den * den)
  return float(value)
