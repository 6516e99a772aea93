"""Tests of experiments.bandits.atlas and its table and figure, against brute force."""

import csv
import functools
import itertools
import math

import jax
import numpy as np
import pytest

from experiments import estimators as estimators_lib
from experiments.bandit_variance import atlas_figure
from experiments.bandit_variance import atlas_table
from experiments.bandits import atlas
import maxk


def _max_at_k(logits, rewards, k):
  """max@k of softmax(logits) by its order statistics: Σ_v v (F(v)^k − F(v⁻)^k)."""
  p = np.exp(logits - logits.max())
  p /= p.sum()
  order = np.argsort(rewards)
  cdf = np.cumsum(p[order])
  below = np.concatenate([[0.0], cdf[:-1]])
  return float(np.sum(np.asarray(rewards)[order] * (cdf**k - below**k)))


def _gradient(bandit, k):
  """∇_logits max@k by central differences (distinct rewards: a smooth function)."""
  logits = np.log(np.asarray(bandit.probs))
  h = 1e-6
  out = np.zeros(logits.size)
  for a in range(logits.size):
    e = np.zeros(logits.size)
    e[a] = h
    out[a] = _max_at_k(logits + e, bandit.rewards, k) - _max_at_k(logits - e, bandit.rewards, k)
    out[a] /= 2 * h
  return out


def _tuples(probs_PxA, rewards_PxA, n):
  """Every tuple of arms of every prompt: the arms [T, P, n], their probability [T] and
  rewards [T, P, n]."""
  num_prompts, num_arms = probs_PxA.shape
  tuples = np.array(list(itertools.product(range(num_arms), repeat=num_prompts * n)))
  y = tuples.reshape(-1, num_prompts, n)
  weight = np.prod(np.take_along_axis(probs_PxA[None], y, axis=2), axis=(1, 2))
  return y, weight, np.take_along_axis(rewards_PxA[None], y, axis=2)


def _tuple_moments(advantages, tuples, probs_PxA):
  """Mean and covariance of prompt 0's ĝ over every tuple of arms of every prompt, from
  the advantages [T, P, n] of ``tuples`` (``_tuples``)."""
  y, weight, _ = tuples
  num_arms = probs_PxA.shape[1]
  a = np.asarray(advantages, np.float64)[:, 0]  # [T, n], prompt 0.
  scores = np.eye(num_arms)[y[:, 0]] - probs_PxA[0]  # [T, n, A]
  g = np.einsum("tn,tna->ta", a, scores)
  mean = weight @ g
  cov = np.einsum("t,ta,tb->ab", weight, g - mean, g - mean)
  return mean, cov


# The advantages of several estimators in one jitted program (one compilation per
# shape, not one per estimator), cached across tests.
@functools.cache
def _registry_advantages(names, k):
  fns = [estimators_lib.get(name) for name in names]
  return jax.jit(lambda x: [f(x, k, pass_threshold=0.5) for f in fns])


@functools.cache
def _jspo_advantages(variants, k):
  return jax.jit(lambda x: [maxk.jspo_max_at_k_advantages(x, k, variant=v) for v in variants])


@pytest.mark.parametrize("bandit", ["easy", "hard"])
def test_registry_rows_match_tuple_enumeration(bandit):
  b = atlas.BANDITS[bandit]
  n, k = 4, 2
  rows = {r["estimator"]: r for r in atlas.cell(b, n, k, num_samples=2000)}
  gradient = _gradient(b, k)
  p, r = np.asarray([b.probs]), np.asarray([b.rewards])
  tuples = _tuples(p, r, n)
  names = ("none", "loo", "loo_centered", "loo_minus_one", "grpo", "pass_at_k_training")
  advantages = _registry_advantages(names, k)(tuples[2][:, 0])  # Each [T, n].
  for name, a in zip(names, advantages):
    mean, cov = _tuple_moments(np.asarray(a)[:, None], tuples, p)
    row = rows[name]
    assert row["method"] == "exact"
    np.testing.assert_allclose(row["variance"], np.trace(cov), rtol=2e-5)
    scale = mean @ gradient / (gradient @ gradient)
    np.testing.assert_allclose(row["scale"], scale, rtol=1e-4)
    np.testing.assert_allclose(row["gradient_norm"], np.linalg.norm(gradient), rtol=1e-5)
    np.testing.assert_allclose(
      row["mse"], np.trace(cov) + np.sum((mean - gradient) ** 2), rtol=1e-4
    )
    ratio = np.trace(cov) / (scale**2 * row["floor"])
    np.testing.assert_allclose(row["variance_to_floor"], ratio, rtol=1e-4)
    assert row["biased"] == (name in ("grpo", "pass_at_k_training")), name
    if not row["biased"]:
      assert abs(row["scale"] - 1) < 1e-5 and row["direction_error"] < 1e-5


def test_jspo_rows_are_the_first_prompts_block_of_the_batch():
  b = atlas.BANDITS["hard"]
  n, k = 4, 1
  rows = {r["estimator"]: r for r in atlas.cell(b, n, k, jspo_prompts=2)}
  p = np.asarray([b.probs, b.probs])
  r = np.asarray([b.rewards, b.rewards])
  tuples = _tuples(p, r, n)
  advantages = _jspo_advantages(tuple(maxk.JSPO_VARIANTS), k)(tuples[2])
  for variant, a in zip(maxk.JSPO_VARIANTS, advantages):
    row = rows[variant]
    assert row["method"] == "exact" and row["kind"] == "jspo"  # 35^2 count vectors.
    mean, cov = _tuple_moments(a, tuples, p)
    np.testing.assert_allclose(row["variance"], np.trace(cov), rtol=2e-5)
    assert row["biased"] == (variant == "jspo++"), variant


def test_jspo_monte_carlo_agrees_with_the_exact_rows():
  b = atlas.BANDITS["easy"]
  exact = {r["estimator"]: r for r in atlas.cell(b, 4, 2, jspo_prompts=2)}
  sampled = atlas.cell(b, 4, 2, jspo_prompts=2, max_count_vectors=0, num_samples=100_000)
  for row in sampled:
    assert row["method"] == "monte carlo (100000 groups)"
    if row["kind"] != "jspo":
      continue
    # The sample variance of 1e5 groups: a few per cent for these bounded estimates.
    np.testing.assert_allclose(row["variance"], exact[row["estimator"]]["variance"], rtol=0.05)
    assert row["mean_se"] > 0
  assert not {r["estimator"]: r for r in sampled}["jspo"]["biased"]


@pytest.mark.parametrize("bandit", ["easy", "hard"])
def test_every_unbiased_baseline_sits_on_or_above_the_floor(bandit):
  rows = atlas.cell(atlas.BANDITS[bandit], 8, 4, num_samples=2000)
  unbiased = [r for r in rows if r["unbiased"] == "always" and r["kind"] == "baseline"]
  assert {r["estimator"] for r in unbiased} == {"none", "loo", "loo_centered", "loo_minus_one"}
  for r in unbiased:
    assert not r["biased"] and r["variance"] >= r["floor"] * (1 - 1e-6), r
    assert r["variance_to_floor"] >= 1 - 1e-6
  floor = rows[0]["floor"]
  assert all(r["floor"] == floor for r in rows)
  assert floor <= rows[0]["constant_floor"] * (1 + 1e-9)
  # The best constant baseline is one b(r_-i); the transform alone (none) another.
  direct = maxk.testing.variance_floor(
    lambda x: maxk.max_at_k_advantages(x, 4, baseline="none"),
    atlas.BANDITS[bandit].probs,
    atlas.BANDITS[bandit].rewards,
    8,
  )
  assert math.isclose(floor, direct.trace, rel_tol=1e-12)
  none = next(r for r in rows if r["estimator"] == "none")
  assert math.isclose(none["variance"], direct.none_trace, rel_tol=1e-5)


def test_floor_out_of_reach_is_nan_and_the_rest_is_kept(monkeypatch):
  def too_large(*args, **kwargs):
    raise ValueError("the least-squares system has 9 x 9 entries, more than MAX_FLOOR_ENTRIES")

  monkeypatch.setattr(maxk.testing, "variance_floor", too_large)
  rows = atlas.cell(atlas.BANDITS["hard"], 4, 1, num_samples=2000)
  assert all(math.isnan(r["floor"]) and math.isnan(r["variance_to_floor"]) for r in rows)
  assert all(r["variance"] > 0 for r in rows)


def test_run_cells_and_unknown_bandit():
  rows = atlas.run(["hard"], ns=[2, 4], ks=[1, 4], num_samples=2000)
  assert sorted({(r["n"], r["k"]) for r in rows}) == [(2, 1), (4, 1), (4, 4)]
  # JSPO needs n >= 2k.
  assert {r["estimator"] for r in rows if r["k"] == 4 and r["kind"] == "jspo"} == set()
  assert {r["estimator"] for r in rows if r["n"] == 2 and r["kind"] == "jspo"} == {"jspo", "jspo++"}
  with pytest.raises(ValueError, match="bandit='medium'"):
    atlas.run(["medium"], ns=[4], ks=[1])


def test_table_from_the_csv_and_the_figure(tmp_path):
  rows = atlas.run(["hard", "easy"], ns=[2, 4], ks=[1], num_samples=2000)
  path = tmp_path / "atlas.csv"
  with open(path, "w", newline="") as f:
    writer = csv.DictWriter(f, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
  with open(path, newline="") as f:
    from_csv = list(csv.DictReader(f))
  header, body = atlas_table.cells(from_csv)
  assert header == ["bandit", "k", "estimator", "n = 2", "n = 4"]
  listed = {row[2] for row in body}
  # Claimed and measured unbiased only (GRPO, jspo++ and the peers are left out).
  assert listed == {"none", "loo", "loo_centered", "loo_minus_one", "jspo", atlas_table.CONSTANT}
  for row in body:
    by_n = {
      n: next(
        r
        for r in rows
        if r["bandit"] == row[0]
        and r["n"] == n
        and (r["estimator"] == row[2] or row[2] == atlas_table.CONSTANT)
      )
      for n in (2, 4)
    }
    for n, cell in zip((2, 4), row[3:]):
      source = by_n[n]
      if row[2] == atlas_table.CONSTANT:
        expected = source["constant_floor"] / source["floor"]
      else:
        expected = source["variance_to_floor"]
      assert cell.rstrip("*") == f"{expected:.3f}"
      # JSPO's 4-prompt batches are Monte Carlo past n = 2 (35^4 count vectors at n = 4).
      assert cell.endswith("*") == (row[2] == "jspo" and n == 4)
  assert atlas_table.markdown(from_csv).startswith("| bandit | k | estimator | n = 2 | n = 4 |")
  out = atlas_figure.plot_atlas(from_csv, str(tmp_path / "atlas.png"))
  assert (tmp_path / "atlas.png").stat().st_size > 0 and out.endswith("atlas.png")
