"""Tests for pass@k beyond n from a Beta-binomial fit (maxk/_src/beta_binomial.py).

The closed form against numerical integration, the fit against scipy's optimiser and
against the parameters of simulated data, the model's pass@k against the unbiased
estimate at k <= n, ragged ``where=`` against the compacted call, the boundaries, and
by simulation the interval's coverage of the true pass@k at k = 4n.
"""

import json
import math
import os
import re

import numpy as np
import pytest
from scipy import integrate
from scipy import optimize
from scipy import special

import maxk
from maxk import evaluate as cli
from maxk._src import beta_binomial
from tests import REPO_ROOT


def _true_pass_at_k(a, b, k):
  return -math.expm1(special.betaln(a, b + k) - special.betaln(a, b))


def _simulate(a, b, problems, n, seed, batch=()):
  """[*batch, problems, n] bool samples: rates p ~ Beta(a, b), the first c of n correct."""
  rng = np.random.default_rng(seed)
  c = rng.binomial(n, rng.beta(a, b, (*batch, problems)))
  return np.arange(n) < c[..., None]


def _scipy_fit(c, n):
  """The Beta-binomial MLE of counts c of sizes n, by scipy's optimiser on log a, log b."""

  def nll(theta):
    a, b = np.exp(theta)
    return -np.sum(special.betaln(a + c, b + n - c) - special.betaln(a, b))

  result = optimize.minimize(
    nll, np.zeros(2), method="Nelder-Mead", options=dict(xatol=1e-10, fatol=1e-12, maxiter=20000)
  )
  return np.exp(result.x)


@pytest.mark.parametrize(
  ("a", "b", "k"), [(0.5, 2.0, 1), (0.5, 2.0, 64), (0.2, 3.0, 1000), (3.0, 0.7, 7), (1.0, 1.0, 50)]
)
def test_closed_form_equals_numerical_integration(a, b, k):
  """1 − B(a, b + k)/B(a, b) = 1 − ∫ (1 − p)^k Beta(p; a, b) dp, and its derivatives."""
  fail, d_a, d_b = beta_binomial._log_failure(np.array(a), np.array(b), [k])

  def integral(a, b):
    # p = u^(1/a) removes the density's singularity at 0: p^(a−1) dp = du/a.
    f = lambda u: (1 - u ** (1 / a)) ** (b - 1 + k) / a
    return integrate.quad(f, 0, 1, epsabs=0, epsrel=1e-12, limit=200)[0] / special.beta(a, b)

  assert np.exp(fail[0]) == pytest.approx(integral(a, b), rel=1e-8)
  h = 1e-5  # the derivatives of log E[(1 − p)^k], by central differences
  assert d_a[0] == pytest.approx(
    (math.log(integral(a + h, b)) - math.log(integral(a - h, b))) / (2 * h), rel=1e-5
  )
  assert d_b[0] == pytest.approx(
    (math.log(integral(a, b + h)) - math.log(integral(a, b - h))) / (2 * h), rel=1e-5
  )


def test_large_k_is_summed_in_chunks_and_matches_betaln():
  ks = [1, 2**16, 2**16 + 1, 300_000]
  fail, _, _ = beta_binomial._log_failure(np.array([0.3, 2.0]), np.array([1.5, 0.5]), ks)
  for i, (a, b) in enumerate([(0.3, 1.5), (2.0, 0.5)]):
    want = [special.betaln(a, b + k) - special.betaln(a, b) for k in ks]
    np.testing.assert_allclose(fail[i], want, rtol=1e-9)


@pytest.mark.parametrize("seed", [0, 1])
def test_fit_is_scipys_maximum_and_the_estimate_its_closed_form(seed):
  correct = _simulate(0.6, 1.8, 60, 10, seed)
  c = correct.sum(-1)
  a, b = maxk.fit_beta_binomial(correct)
  np.testing.assert_allclose([a, b], _scipy_fit(c, 10), rtol=1e-5)
  ks = [1, 10, 40, 1000]
  est = maxk.pass_at_k_beta_binomial(correct, ks)
  np.testing.assert_allclose(est.mean, [_true_pass_at_k(a, b, k) for k in ks], rtol=1e-6)
  assert np.all((est.lo < est.mean) & (est.mean < est.hi))


@pytest.mark.parametrize(("a", "b"), [(0.5, 2.0), (2.0, 5.0), (0.3, 0.4)])
def test_mle_recovers_the_parameters_of_large_simulated_data(a, b):
  correct = _simulate(a, b, 20_000, 16, seed=3)
  fit_a, fit_b = maxk.fit_beta_binomial(correct)
  assert fit_a == pytest.approx(a, rel=0.06) and fit_b == pytest.approx(b, rel=0.06)


@pytest.mark.parametrize(("a", "b"), [(0.5, 2.0), (1.5, 1.0)])
def test_model_pass_at_k_agrees_with_the_unbiased_estimate_at_k_le_n(a, b):
  """Data from the model: the two estimate the same pass@k, within their noise."""
  n, ks = 16, [1, 2, 4, 8, 16]
  correct = _simulate(a, b, 3000, n, seed=4)
  model = maxk.pass_at_k_beta_binomial(correct, ks)
  for i, k in enumerate(ks):
    unbiased = maxk.mean_with_interval(maxk.pass_at_k(correct, k))
    gap = abs(float(model.mean[i]) - float(unbiased.mean))
    assert gap < 4 * float(unbiased.stderr), (k, gap, float(unbiased.stderr))
    # Both near the truth (the model's error no larger than the model-free one's bound).
    assert abs(float(model.mean[i]) - _true_pass_at_k(a, b, k)) < 4 * float(unbiased.stderr)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_ragged_where_equals_the_compacted_call(seed):
  rng = np.random.default_rng(seed)
  problems, m, n = 40, 6, 11
  compact = _simulate(0.7, 1.3, problems, m, seed)
  for row in compact:
    rng.shuffle(row)
  # The m valid samples of each problem at random positions of n; the rest garbage or NaN.
  valid = np.zeros((problems, n), bool)
  for i in range(problems):
    valid[i, rng.choice(n, m, replace=False)] = True
  padded = np.where(rng.random((problems, n)) < 0.5, np.nan, 1.0)
  padded[valid] = compact.reshape(-1)
  ks = [1, 5, 50]
  want = maxk.pass_at_k_beta_binomial(compact, ks)
  got = maxk.pass_at_k_beta_binomial(padded, ks, where=valid)
  for w, g in zip(want, got):
    np.testing.assert_allclose(g, w, rtol=1e-6)
  np.testing.assert_allclose(
    maxk.fit_beta_binomial(padded, where=valid), maxk.fit_beta_binomial(compact)
  )


def test_ragged_sizes_fit_the_likelihood_of_each_problems_own_n():
  rng = np.random.default_rng(5)
  sizes = rng.integers(0, 13, 80)  # a problem with no valid sample is left out
  p = rng.beta(0.8, 1.6, 80)
  correct = rng.random((80, 12)) < p[:, None]
  valid = np.arange(12) < sizes[:, None]
  c = np.sum(correct & valid, -1)
  kept = sizes > 0
  a, b = maxk.fit_beta_binomial(correct, where=valid)
  np.testing.assert_allclose([a, b], _scipy_fit(c[kept], sizes[kept]), rtol=1e-5)
  # The order of the problems does not matter.
  order = rng.permutation(80)
  np.testing.assert_allclose(maxk.fit_beta_binomial(correct[order], where=valid[order]), [a, b])


def test_leading_axes_are_separate_fits_and_a_nan_fills_its_slice_only():
  correct = _simulate(0.5, 2.0, 30, 8, seed=6, batch=(3,)).astype(np.float32)
  correct[1, 4, 2] = np.nan
  est = maxk.pass_at_k_beta_binomial(correct, [1, 32])
  a, b = maxk.fit_beta_binomial(correct)
  assert np.all(np.isnan(a[1])) and np.all(np.isnan(np.asarray(est.lo)[1]))
  for i in (0, 2):
    one = maxk.pass_at_k_beta_binomial(correct[i], [1, 32])
    for got, want in zip(est, one):
      np.testing.assert_allclose(np.asarray(got)[i], want, rtol=1e-6)
    assert np.isfinite(a[i]) and np.all(np.isfinite(np.asarray(est.hi)[i]))


def test_boundaries():
  n = 10
  # All correct, all wrong, no valid sample: no finite maximum.
  for correct, where in [
    (np.ones((5, n)), None),
    (np.zeros((5, n)), None),
    (np.ones((5, n)), np.zeros((5, n), bool)),
  ]:
    est = maxk.pass_at_k_beta_binomial(correct, [1, 50], where=where)
    assert np.all(np.isnan(np.asarray(est.mean))) and np.all(
      np.isnan(maxk.fit_beta_binomial(correct, where=where))
    )
  # One rate for every problem, less spread than binomial: the binomial limit.
  c = np.array([3, 4, 3, 4, 3, 4, 3, 4])
  correct = np.arange(n) < c[:, None]
  a, b = maxk.fit_beta_binomial(correct)
  assert a + b == pytest.approx(1e8) and a / (a + b) == pytest.approx(c.mean() / n)
  est = maxk.pass_at_k_beta_binomial(correct, 20)
  assert float(est.mean) == pytest.approx(1 - (1 - c.mean() / n) ** 20, rel=1e-5)
  assert float(est.lo) < float(est.mean) < float(est.hi)
  # Every problem all correct or all wrong: a + b at its lower bound, pass@k = the solved share.
  correct = np.repeat(np.array([1, 0, 0, 1, 0])[:, None], n, 1)
  est = maxk.pass_at_k_beta_binomial(correct, [1, 1000])
  np.testing.assert_allclose(est.mean, [0.4, 0.4], rtol=1e-4)


@pytest.mark.parametrize(
  ("kwargs", "match"),
  [
    (dict(correct=np.ones(5), ks=1), r"\[\.\.\., P, n\]"),
    (dict(correct=np.full((3, 4), 2.0), ks=1), "0/1"),
    (dict(correct=np.ones((3, 4)), ks=0), "ks=0"),
    (dict(correct=np.ones((3, 4)), ks=[]), "ks"),
    (dict(correct=np.ones((3, 4)), ks="4"), "ks"),
    (dict(correct=np.ones((3, 4)), ks=2.0), "ks"),
    (dict(correct=np.ones((3, 4)), ks=1, confidence=1.5), "confidence"),
    (dict(correct=np.ones((3, 4)), ks=1, where=np.ones((2, 4), bool)), "where"),
    (dict(correct=np.ones((3, 4)), ks=1, where=np.ones((3, 4))), "where"),
  ],
)
def test_bad_arguments_raise_naming_them(kwargs, match):
  with pytest.raises(ValueError, match=match):
    maxk.pass_at_k_beta_binomial(**kwargs)


@pytest.mark.parametrize(("a", "b", "problems", "n"), [(0.5, 2.0, 100, 16), (0.3, 1.0, 60, 8)])
def test_interval_covers_the_true_pass_at_4n_near_nominally(a, b, problems, n):
  """When the model holds, the 95% interval covers the true pass@(4n) in 93-97% of
  2000 simulated benchmarks (binomial SE of the coverage 0.5%)."""
  k = 4 * n
  correct = _simulate(a, b, problems, n, seed=7, batch=(2000,))
  est = maxk.pass_at_k_beta_binomial(correct, [k])
  truth = _true_pass_at_k(a, b, k)
  lo, hi = np.asarray(est.lo)[:, 0], np.asarray(est.hi)[:, 0]
  coverage = np.mean((lo <= truth) & (truth <= hi))
  assert 0.93 <= coverage <= 0.97, coverage
  # Neither side misses much more often than the other's nominal 2.5%.
  assert np.mean(hi < truth) < 0.045 and np.mean(lo > truth) < 0.045


# ----------------------------------------------------------------------------
# evaluate_records(..., extrapolate=) and `python -m maxk.evaluate --extrapolate=`.
# ----------------------------------------------------------------------------


def _records(correct):
  return [{"problem_id": f"q{i}", "correct": bool(v)} for i, row in enumerate(correct) for v in row]


def test_evaluate_records_adds_the_model_rows_after_pass_at_k():
  correct = _simulate(0.5, 2.0, 25, 8, seed=8)
  evaluation = maxk.evaluate_records(
    _records(correct), k=[1, 8], metrics=["pass@k", "pass^k"], extrapolate=[64, 32]
  )
  labels = [row.label for row in evaluation.rows]
  assert labels[:4] == ["pass@1", "pass@8", "pass@32 (Beta-binomial)", "pass@64 (Beta-binomial)"]
  est = maxk.pass_at_k_beta_binomial(correct, [32, 64])
  for i, row in enumerate(evaluation.rows[2:4]):
    assert row.metric == "pass@k (Beta-binomial)" and row.problems == 25 and row.within is None
    np.testing.assert_allclose(
      [row.mean, row.stderr, row.lo, row.hi], [float(v[i]) for v in est], rtol=1e-6
    )
  assert "Beta-binomial model" in evaluation.to_markdown()
  with pytest.raises(ValueError, match="extrapolate"):
    maxk.evaluate_records([{"problem_id": 1, "reward": 0.5}] * 2, extrapolate=[4])
  with pytest.raises(ValueError, match="ks=0"):
    maxk.evaluate_records(_records(correct), k=1, metrics=["pass@k"], extrapolate=[0])


def test_command_line_extrapolate_flag(tmp_path, capsys):
  correct = _simulate(0.5, 2.0, 12, 6, seed=9)
  path = tmp_path / "r.jsonl"
  path.write_text("".join(json.dumps(r) + "\n" for r in _records(correct)))
  out_json = tmp_path / "rows.json"
  argv = [str(path), "--k=1", "--metrics=pass@k", "--extrapolate=24,100", f"--json={out_json}"]
  assert cli.main(argv) == 0
  printed = capsys.readouterr().out
  assert "| pass@24 (Beta-binomial) | 12 |" in printed and "| pass@100 (Beta-binomial) |" in printed
  rows = json.loads(out_json.read_text())["rows"]
  assert [r["k"] for r in rows] == [1, 24, 100]
  with pytest.raises(SystemExit):
    cli.main([str(path), "--extrapolate=x"])


def test_readme_example_prints_what_its_comment_says(capsys):
  with open(os.path.join(REPO_ROOT, "README.md"), encoding="utf-8") as f:
    readme = f.read()
  blocks = re.findall(r"```python\n(.*?)```", readme, flags=re.S)
  (example,) = [b for b in blocks if "maxk.pass_at_k_beta_binomial" in b]
  exec(compile(example, "README.md", "exec"), {})  # pylint: disable=exec-used
  printed = capsys.readouterr().out.strip()
  claimed = re.findall(r"^# prints: (.*)$", example, flags=re.M)
  assert printed.splitlines() == claimed
