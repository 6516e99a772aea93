"""Independent float64 references for the tests of :mod:`maxk`.

Most are brute force: every definition written as an explicit sum over subsets
(``itertools.combinations``) or over all draws (``itertools.product``).  The rest
are closed forms in NumPy float64 (rank weights from log-gamma, best-of-n by tie
classes in log space) for sizes too large to enumerate.  None shares code with
:mod:`maxk`; the tests compare the library against them.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
from scipy import special


def reward_kinds(n: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
  """Test rewards of shape [2, 3, n] by kind: normal, tied integers in [-2, 2], binary."""
  return {
    "normal": rng.normal(size=(2, 3, n)),
    "tied": rng.integers(-2, 3, size=(2, 3, n)).astype(np.float64),
    "binary": (rng.random((2, 3, n)) < 0.4).astype(np.float64),
  }


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
  """Every ``max_at_k_advantages`` baseline from its definition, by subsets."""
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
  if baseline == "leave_two_out":
    return leave_two_out(r, k) * k / n if n > k else s
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


def leave_two_out(r, k: int) -> np.ndarray:
  """L_i = (1/(n−1)) Σ_{j≠i} D_ij, D_ij the mean over the (k−1)-subsets J of the samples
  other than i and j of max(r_i, r_J) − max(r_j, r_J) (k < n); by subsets."""
  r = np.asarray(r, np.float64)
  n = len(r)
  out = np.zeros(n)
  for i in range(n):
    for j in range(n):
      if j == i:
        continue
      rest = [m for m in range(n) if m not in (i, j)]
      d = [
        max([r[i], *r[list(sub)]]) - max([r[j], *r[list(sub)]])
        for sub in itertools.combinations(rest, k - 1)
      ]
      out[i] += np.mean(d)
  return out / (n - 1)


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


# ----------------------------------------------------------------------------
# Closed forms in float64 for large n (no enumeration).
# ----------------------------------------------------------------------------


def binom_ratio(top, bottom, n: int, k: int) -> np.ndarray:
  """C(top, bottom) / C(n, k) elementwise (0 where the binomial is 0), float64."""
  top = np.asarray(top, np.float64)
  bottom = np.asarray(bottom, np.float64)
  ok = (bottom >= 0) & (bottom <= top)
  t, b = np.where(ok, top, 0), np.where(ok, bottom, 0)
  log = (
    special.gammaln(t + 1)
    - special.gammaln(b + 1)
    - special.gammaln(t - b + 1)
    - (special.gammaln(n + 1) - special.gammaln(k + 1) - special.gammaln(n - k + 1))
  )
  return np.where(ok, np.exp(log), 0.0)


def max_at_k_float64(r, k: int) -> float:
  """Σ_j C(j-1, k-1)/C(n, k) r_(j) of one group in float64 (log-gamma weights)."""
  g = np.sort(np.asarray(r, np.float64))
  j = np.arange(1, g.size + 1)
  return float(binom_ratio(j - 1, k - 1, g.size, k) @ g)


def advantages_float64(r, k: int, baseline: str) -> np.ndarray:
  """``max_at_k_advantages`` of every row of ``r [B, n]`` in float64, group by group.

  Each group is sorted and its rank weights evaluated (PKPO Listing 1 style):
  S_(j) = [C(j-1,k-1) r_(j) + Σ_{m>j} C(m-2,k-2) r_(m)] / C(n,k) and the
  leave-one-out baselines as prefix plus suffix sums over ranks.
  """
  r = np.asarray(r, np.float64)
  out = np.empty_like(r)
  n = r.shape[-1]
  j = np.arange(1, n + 1)
  if baseline == "leave_two_out":  # = loo_centered: leave_two_out_test.py enumerates it.
    baseline = "loo_centered"
  for b in range(r.shape[0]):
    order = np.argsort(r[b], kind="stable")
    g = r[b][order]
    s = binom_ratio(j - 1, k - 1, n, k) * g
    tail = binom_ratio(j - 2, k - 2, n, k) * g
    s += np.concatenate([np.cumsum(tail[::-1])[::-1][1:], [0.0]])
    if baseline in ("loo", "loo_centered") and n > k:
      scale = k / (n - 1) if baseline == "loo" else k / n
      pre = np.cumsum(binom_ratio(j - 1, k - 1, n - 1, k) * g)
      suf = np.cumsum((binom_ratio(j - 2, k - 1, n - 1, k) * g)[::-1])[::-1]
      s -= scale * (np.concatenate([[0.0], pre[:-1]]) + np.concatenate([suf[1:], [0.0]]))
    elif baseline == "loo_minus_one" and k >= 2:
      s = binom_ratio(j - 1, k - 1, n, k) * g - np.concatenate(
        [[0.0], np.cumsum(binom_ratio(j - 1, k - 2, n, k) * g)[:-1]]
      )
    elif baseline == "loo_minus_one":
      s = (g - (g.sum() - g) / max(n - 1, 1)) / n
    elif baseline == "mean_std":
      s = (s - s.mean()) / (s.std() + 1e-6)
    out[b, order] = s
  return out


# ----------------------------------------------------------------------------
# Categorical policies and best-of-n.
# ----------------------------------------------------------------------------


def bon_pmf(p, r, n: int) -> np.ndarray:
  """Best-of-n PMF by summing over all L^n draws; ties split uniformly."""
  p = np.asarray(p, np.float64)
  r = np.asarray(r, np.float64)
  out = np.zeros(len(p))
  for draw in itertools.product(range(len(p)), repeat=n):
    weight = np.prod(p[list(draw)])
    if weight == 0:
      continue
    best = max(r[j] for j in draw)
    tied = [j for j in draw if r[j] == best]
    for j in tied:
      out[j] += weight / len(tied)
  return out


def max_at_k_of_policy(p, r, k: int) -> float:
  """E[max of k i.i.d. rewards] of a categorical policy, over all L^k draws."""
  p = np.asarray(p, np.float64)
  r = np.asarray(r, np.float64)
  total = 0.0
  for draw in itertools.product(range(len(p)), repeat=k):
    total += np.prod(p[list(draw)]) * max(r[j] for j in draw)
  return total


def bon_pmf_and_kl(p, r, n: int) -> tuple[np.ndarray, float]:
  """Best-of-n PMF and KL(π_n || π) in float64 via tie classes, in log space."""
  p = np.asarray(p, np.float64)
  p = p / p.sum()
  r = np.asarray(r, np.float64)
  values, inverse = np.unique(r, return_inverse=True)
  mass = np.bincount(inverse, weights=p, minlength=len(values))
  upper = np.cumsum(mass)
  above = np.cumsum(mass[::-1])[::-1] - mass
  below = upper - mass
  with np.errstate(divide="ignore", invalid="ignore"):
    log_f = np.where(upper < 0.5, np.log(upper), np.log1p(-above))
    log_fm = np.where(below < 0.5, np.log(below), np.log1p(-(above + mass)))
    cls = np.exp(n * log_f) * -np.expm1(n * (log_fm - log_f))
  cls = np.where(below == 0, np.exp(n * log_f), cls)
  c = mass[inverse]
  pmf = np.where(c > 0, p * cls[inverse] / np.where(c > 0, c, 1.0), 0.0)
  pos = pmf > 0
  kl = float(np.sum(pmf[pos] * np.log(pmf[pos] / p[pos])))
  return pmf, kl


def win_rate(q, p, r) -> float:
  """P(r(Y_q) > r(Y_p)) + 1/2 P(equal) by summing over all pairs of outcomes."""
  q, p, r = (np.asarray(a, np.float64) for a in (q, p, r))
  return float(
    sum(
      q[i] * p[j] * (1.0 if r[i] > r[j] else 0.5 if r[i] == r[j] else 0.0)
      for i in range(len(q))
      for j in range(len(p))
    )
  )


def kl_divergence(q, p) -> float:
  q, p = np.asarray(q, np.float64), np.asarray(p, np.float64)
  pos = q > 0
  return float(np.sum(q[pos] * np.log(q[pos] / p[pos])))


def collision_probability(p, r) -> float:
  """P(r(Y) = r(Y')) for Y, Y' i.i.d. from p, by summing over all pairs of outcomes."""
  p, r = np.asarray(p, np.float64), np.asarray(r, np.float64)
  p = p / p.sum()
  return float(sum(p[i] * p[j] for i in range(len(p)) for j in range(len(p)) if r[i] == r[j]))


def bon_kl_estimate(eps, n: int) -> np.ndarray:
  """d_n(eps) = (1-eps)^n [log n + (n-1) log(1-eps) - (n-1)/n] + b log(b/eps),
  b = 1 - (1-eps)^n, in float64."""
  eps = np.asarray(eps, np.float64)
  qn = np.exp(n * np.log1p(-eps))
  b = -np.expm1(n * np.log1p(-eps))
  return qn * (math.log(n) + (n - 1) * np.log1p(-eps) - (n - 1) / n) + b * np.log(b / eps)


def bon_kl_bound(n: int) -> float:
  return math.log(n) - (n - 1) / n


# Small references with ties and zero probabilities: (probs float32, rewards).
BON_CASES = [
  (np.array([0.25, 0.25, 0.25, 0.25], np.float32), np.array([0.0, 1.0, 2.0, 3.0])),
  (np.array([0.1, 0.2, 0.3, 0.4], np.float32), np.array([1.0, 1.0, 0.0, 2.0])),
  (np.array([0.5, 0.0, 0.3, 0.2], np.float32), np.array([2.0, 2.0, 1.0, 2.0])),
  (np.array([0.6, 0.4], np.float32), np.array([5.0, 5.0])),
  (np.array([0.7, 0.0, 0.3], np.float32), np.array([0.0, 9.0, 1.0])),
  (np.array([1.0], np.float32), np.array([3.0])),
  # Zero probability on the lowest reward (x = c/F = 1 exactly for the next class).
  (np.array([0.6, 0.0, 0.4], np.float32), np.array([1.0, -1.0, 2.0])),
  (np.array([0.3, 0.0, 0.7, 0.0], np.float32), np.array([1.0, 0.0, 1.0, 0.0])),
]


# ----------------------------------------------------------------------------
# Rank (order-statistic) objectives: Σ_j w_j X_(j:k), w over ascending ranks.
# ----------------------------------------------------------------------------


def rank_statistic(values, weights) -> float:
  """Σ_j w_j (j-th smallest of ``values``), len(values) == len(weights).

  Terms with w_j = 0 are left out, and the rest added in IEEE arithmetic, so that
  infinite values give ±inf or NaN (inf − inf) and a zero weight never 0 · inf.
  """
  ordered = np.sort(np.asarray(values, np.float64))
  w = np.asarray(weights, np.float64)
  terms = [wj * x for wj, x in zip(w, ordered) if wj != 0]
  with np.errstate(invalid="ignore"):
    return float(np.sum(terms)) if terms else 0.0


def order_stat_at_k(r, weights) -> float:
  """(1/C(n,k)) Σ_{|I|=k} Σ_j w_j (j-th smallest of I), k = len(weights)."""
  r = np.asarray(r, np.float64)
  k = len(weights)
  with np.errstate(invalid="ignore"):
    return float(np.mean([rank_statistic(r[list(s)], weights) for s in subsets(len(r), k)]))


def order_stat_advantages(r, weights, baseline: str) -> np.ndarray:
  """S(i) = (1/C(n,k)) Σ_{I∋i} L(I) minus a leave-one-out U-statistic, by subsets."""
  r = np.asarray(r, np.float64)
  n, k = len(r), len(weights)
  s = np.zeros(n)
  with np.errstate(invalid="ignore"):  # inf − inf is NaN, as it should be
    for sub in subsets(n, k):
      s[list(sub)] += rank_statistic(r[list(sub)], weights)
    s /= math.comb(n, k)
    if baseline == "none" or n == k:
      return s
    scale = {"loo": k / (n - 1), "loo_centered": k / n}[baseline]
    return np.array([s[i] - scale * order_stat_at_k(np.delete(r, i), weights) for i in range(n)])


def exact_order_stat(probs, values, weights) -> float:
  """E[Σ_j w_j X_(j:k)] for k i.i.d. draws, by enumerating all k-tuples of outcomes.

  ``probs`` is used as given (no normalisation): a polynomial in the probabilities.
  Tuples of probability 0 are left out, so infinite values count only where they
  can be drawn (IEEE arithmetic otherwise: ±inf, or NaN for inf − inf).
  """
  probs = np.asarray(probs, np.float64)
  values = np.asarray(values, np.float64)
  total = 0.0
  for t in itertools.product(range(len(probs)), repeat=len(weights)):
    weight = np.prod(probs[list(t)])
    if weight != 0:
      with np.errstate(invalid="ignore"):
        total += weight * rank_statistic(values[list(t)], weights)
  return total


def exact_order_stat_grad_probs(probs, values, weights, h: float = 1e-6) -> np.ndarray:
  """∇_probs of exact_order_stat(probs / Σ probs) by central differences (float64);
  valid at zero probabilities too, since the enumerated value is a polynomial."""
  probs = np.asarray(probs, np.float64)
  f = lambda q: exact_order_stat(q / q.sum(), values, weights)
  return np.array([(f(probs + h * e) - f(probs - h * e)) / (2 * h) for e in np.eye(len(probs))])


def exact_order_stat_grad(logits, values, weights, h: float = 1e-6) -> np.ndarray:
  """∇_logits E[Σ_j w_j X_(j:k)] under softmax(logits), by central differences."""
  logits = np.asarray(logits, np.float64)
  f = lambda z: exact_order_stat(softmax(z), values, weights)
  return np.array([(f(logits + h * e) - f(logits - h * e)) / (2 * h) for e in np.eye(len(logits))])


def _log_comb(top, bottom) -> np.ndarray:
  top = np.asarray(top, np.float64)
  bottom = np.asarray(bottom, np.float64)
  ok = (bottom >= 0) & (bottom <= top)
  t, b = np.where(ok, top, 0), np.where(ok, bottom, 0)
  return np.where(
    ok, special.gammaln(t + 1) - special.gammaln(b + 1) - special.gammaln(t - b + 1), -np.inf
  )


def _count_ratio(top1, bottom1, top2, bottom2, n: int, k: int) -> np.ndarray:
  """C(top1, bottom1) C(top2, bottom2) / C(n, k) in float64 via log-gamma."""
  return np.exp(_log_comb(top1, bottom1) + _log_comb(top2, bottom2) - _log_comb(n, k))


def order_stat_advantages_float64(r, weights, baseline: str) -> np.ndarray:
  """Every row of ``r [B, n]`` in float64 by a rank-count closed form (no subsets).

  For the sample of sorted rank q, a sample of rank m is the j-th smallest of
  #(k-subsets containing q and m with m j-th) subsets; the counts are summed as a
  dense [n, n] matrix per rank j with w_j != 0 (O(n^2) each), for sizes too large
  to enumerate.
  """
  r = np.asarray(r, np.float64)
  w = np.asarray(weights, np.float64)
  n, k = r.shape[-1], len(w)
  q = np.arange(1, n + 1)[:, None]  # the sample's rank
  m = np.arange(1, n + 1)[None, :]  # the other member's rank
  rank = np.where(m < q, m, m - 1)  # m's rank once q is left out
  coef = np.zeros((n, n))
  for j in np.flatnonzero(w) + 1:
    same = _count_ratio(q - 1, j - 1, n - q, k - j, n, k)
    above = _count_ratio(m - 2, j - 2, n - m, k - j, n, k)  # m > q
    below = _count_ratio(m - 1, j - 1, n - m - 1, k - j - 1, n, k)  # m < q
    coef += w[j - 1] * np.where(m == q, same, np.where(m > q, above, below))
    if baseline != "none" and n > k:
      scale = k / (n - 1) if baseline == "loo" else k / n
      loo = _count_ratio(rank - 1, j - 1, n - 1 - rank, k - j, n - 1, k)
      coef -= scale * w[j - 1] * np.where(m == q, 0.0, loo)
  out = np.empty_like(r)
  for b in range(r.shape[0]):
    order = np.argsort(r[b], kind="stable")
    out[b, order] = coef @ r[b][order]
  return out
