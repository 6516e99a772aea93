"""Tests for maxk.evaluate_records (maxk/_src/evaluate.py, records.py).

The rows are checked against maxk's array functions on the same groups, against
brute force over the k-subsets (and pairs of disjoint k-subsets, for the variance
split) of small ragged groups, and by simulation: the interval's coverage of the
population mean.
"""

from fractions import Fraction
import itertools
import math

import numpy as np
import pytest
from scipy import stats

import maxk
from maxk._src import evaluate

# A small benchmark: P problems of n samples, with every column; and ragged sizes (the
# ragged tests share this shape and k = 2, 5, so that each program compiles once; P is
# len(SIZES), so the per-problem [P] programs of the dense and ragged rows are shared).
P, N = 6, 6
SIZES = [4, 6, 5, 6, 4, 6]  # k = 2: every problem, with the split (n >= 2k); k = 5: four
KS = [2, 5]


def _records(sizes, seed=0):
  """Per-sample records of len(sizes) problems (problem i has sizes[i] samples)."""
  rng = np.random.default_rng(seed)
  out = []
  for i, size in enumerate(sizes):
    rate = rng.beta(1.0, 1.2)
    for j in range(size):
      correct = bool(rng.random() < rate)
      answer = "right" if correct else (None if rng.random() < 0.1 else f"w{rng.integers(3)}")
      out.append(
        {
          "problem_id": f"q{i}",
          "correct": correct,
          "answer": answer,
          "reward": float(correct) if rng.random() < 0.5 else round(float(rng.random()), 2),
          "score": round(float(correct + rng.normal()), 1),  # rounded: ties in score happen
          "sample_id": j,
        }
      )
  return out


def _arrays(records):
  """[P, n] arrays of the records' columns (equal sizes), answers as ids (-1: none)."""
  problems = list(dict.fromkeys(r["problem_id"] for r in records))
  rows = [[r for r in records if r["problem_id"] == p] for p in problems]
  correct = np.array([[r["correct"] for r in row] for row in rows])
  reward = np.array([[r["reward"] for r in row] for row in rows], np.float32)
  score = np.array([[r["score"] for r in row] for row in rows], np.float32)
  ids = []
  for row in rows:
    table = {}
    ids.append(
      [-1 if r["answer"] is None else table.setdefault(r["answer"], len(table)) for r in row]
    )
  return correct, reward, score, np.array(ids)


def _row(evaluation, label):
  (row,) = [r for r in evaluation.rows if r.label == label]
  return row


def test_rows_equal_maxk_array_functions_on_the_same_groups():
  records = _records([N] * P)
  got = maxk.evaluate_records(records, k=[1, 3], tie="wrong", taus=[0.5])
  correct, reward, score, ids = _arrays(records)
  assert got.ks == (1, 3) and got.sizes == (N,) * P and got.distribution == "t"
  assert got.problems == tuple(f"q{i}" for i in range(P))
  for k in (1, 3):
    cases = {
      f"pass@{k}": (maxk.pass_at_k(correct, k), maxk.pass_at_k_variance(correct, k)),
      f"pass^{k}": (maxk.pass_hat_k(correct, k), maxk.pass_at_k_variance(~correct, k)),
      f"G-Pass@{k} τ=0.5": (maxk.g_pass_at_k(correct, k, 0.5), None),
      f"mG-Pass@{k}": (maxk.mg_pass_at_k(correct, k), None),
      f"maj@{k}": (maxk.maj_at_k(ids, correct, k, tie="wrong"), None),
      f"max@{k}": (maxk.max_at_k(reward, k), maxk.max_at_k_variance(reward, k)),
      f"selected@{k}": (maxk.selected_at_k(score, reward, k), None),
    }
    for label, (estimates, variances) in cases.items():
      row = _row(got, label)
      interval = maxk.mean_with_interval(estimates, distribution="t")
      assert row.problems == P and row.left_out == ()
      assert np.float32(row.mean) == interval.mean, label
      assert np.float32(row.stderr) == interval.stderr, label
      lo, hi = float(interval.lo), float(interval.hi)
      if not label.startswith(("max", "selected")):  # probabilities: clipped to [0, 1]
        lo, hi = max(lo, 0.0), min(hi, 1.0)
      assert np.float32(row.lo) == np.float32(lo) and np.float32(row.hi) == np.float32(hi), label
      if variances is not None:
        split = maxk.variance_split(estimates, variances)
        assert np.float32(row.within) == split.within, label
        assert np.float32(row.between) == split.between, label
    bayes = maxk.bayes_at_n(correct, k)
    row = _row(got, f"pass@{k}")
    assert (np.float32(row.bayes_mean), np.float32(row.bayes_lo), np.float32(row.bayes_hi)) == (
      bayes.mean,
      bayes.lo,
      bayes.hi,
    )
    maj = _row(got, f"maj@{k}")
    assert maj.bayes_lo is None and maj.within is None and maj.between is None
    assert _row(got, f"G-Pass@{k} τ=0.5").within is not None  # brute force: below


# ----------------------------------------------------------------------------
# Brute force over k-subsets.
# ----------------------------------------------------------------------------


def _statistics(sample, k, tie, taus):
  """The k-sample statistic of every metric on one subset (a list of records)."""
  hits = sum(r["correct"] for r in sample)
  counts = {}
  for r in sample:
    if r["answer"] is not None:
      counts[r["answer"]] = counts.get(r["answer"], 0) + 1
  top = [a for a, c in counts.items() if counts and c == max(counts.values())]
  right = [a for a in top if any(r["answer"] == a and r["correct"] for r in sample)]
  if tie == "uniform":
    maj = Fraction(len(right), len(top)) if top else 0
  else:
    maj = int(len(top) == 1 and len(right) == 1)
  best = max(r["score"] for r in sample)
  selected = [r["reward"] for r in sample if r["score"] == best]
  out = {
    f"pass@{k}": int(hits >= 1),
    f"pass^{k}": int(hits == k),
    f"mG-Pass@{k}": Fraction(2, k) * max(hits - math.ceil(k / 2), 0),
    f"maj@{k}": maj,
    f"max@{k}": max(r["reward"] for r in sample),
    f"selected@{k}": sum(selected) / len(selected),
  }
  for tau in taus:
    out[f"G-Pass@{k} τ={tau:g}"] = int(hits >= max(math.ceil(tau * k), 1))
  return out


def _brute_force(group, k, tie, taus):
  """(estimate, unbiased variance or None) of every metric for one problem's records."""
  m = len(group)
  subsets = list(itertools.combinations(range(m), k))
  h = [_statistics([group[i] for i in s], k, tie, taus) for s in subsets]
  out = {}
  for label in h[0]:
    estimate = sum(x[label] for x in h) / len(h)
    variance = None
    if m >= 2 * k:  # Û² − the mean of h(I) h(J) over ordered pairs of disjoint k-subsets
      pairs = [(a, b) for a, b in itertools.permutations(range(len(subsets)), 2)]
      pairs = [(a, b) for a, b in pairs if not set(subsets[a]) & set(subsets[b])]
      cross = sum(h[a][label] * h[b][label] for a, b in pairs) / len(pairs)
      variance = estimate**2 - cross
    out[label] = (float(estimate), None if variance is None else float(variance))
  return out


@pytest.mark.parametrize("tie", ["uniform", "wrong"])
def test_ragged_rows_equal_brute_force_over_subsets(tie):
  sizes = SIZES
  records = _records(sizes, seed=1 if tie == "uniform" else 2)
  taus = (0.5, 0.75)
  got = maxk.evaluate_records(records, k=KS, tie=tie, taus=taus)
  groups = [[r for r in records if r["problem_id"] == f"q{i}"] for i in range(len(sizes))]
  for k in KS:
    kept = [g for g in groups if len(g) >= k]
    per_problem = [_brute_force(g, k, tie, taus) for g in kept]
    for label in per_problem[0]:
      row = _row(got, label)
      assert row.problems == len(kept)
      assert row.left_out == (("q0", "q4") if k == 5 else ())
      x = np.array([p[label][0] for p in per_problem])
      mean, stderr = x.mean(), x.std(ddof=1) / math.sqrt(len(x))
      crit = stats.t.ppf(0.975, len(x) - 1)
      assert row.mean == pytest.approx(mean, abs=2e-6), label
      assert row.stderr == pytest.approx(stderr, abs=2e-6), label
      lo, hi = mean - crit * stderr, mean + crit * stderr
      if not label.startswith(("max", "selected")):  # probabilities: clipped to [0, 1]
        lo, hi = max(lo, 0.0), min(hi, 1.0)
      assert (row.lo, row.hi) == pytest.approx((lo, hi), abs=1e-5), label
      variances = [p[label][1] for p in per_problem]
      splittable = not label.startswith(("maj", "selected"))
      has_split = splittable and None not in variances
      assert (row.within is not None) == has_split, label
      assert has_split == (splittable and k == 2), label  # k = 5: sizes below 2k
      if has_split:
        within = sum(variances) / len(x) ** 2
        assert row.within == pytest.approx(within, abs=2e-6), label
        assert row.between == pytest.approx(stderr**2 - within, abs=2e-6), label


@pytest.mark.parametrize("m", [6, 7])
def test_count_kernel_variance_is_the_u_statistic_variance_estimate(m):
  k = 3
  rng = np.random.default_rng(m)
  kernels = {
    "pass": [0.0, 1.0, 1.0, 1.0],
    "g_pass_2": [0.0, 0.0, 1.0, 1.0],
    "mg_pass": [2 / 3 * max(i - 2, 0) for i in range(4)],
    "arbitrary": list(rng.normal(size=4)),
  }
  for name, f in kernels.items():
    for c in range(m + 1):
      sample = np.arange(m) < c
      subsets = list(itertools.combinations(range(m), k))
      h = {s: f[int(sample[list(s)].sum())] for s in subsets}
      estimate = np.mean(list(h.values()))
      cross = [h[a] * h[b] for a in subsets for b in subsets if not set(a) & set(b)]
      want = estimate**2 - np.mean(cross)
      got = evaluate.count_kernel_variance([m], [c], k, f)[0]
      assert got == pytest.approx(want, abs=1e-12), (name, c)
      if name == "pass":
        assert got == pytest.approx(float(maxk.pass_at_k_variance(sample, k)), abs=1e-7)


def test_pass_hat_plug_in_row_is_the_mean_of_powered_rates_without_a_split():
  records = _records([N] * P)
  got = maxk.evaluate_records(records, k=[1, 2, 3], metrics=["pass^k"], pass_hat="plug_in")
  correct = _arrays(records)[0]
  for row in got.rows:
    assert row.label == f"pass^{row.k} (plug-in)" and row.within is None
    want = np.mean(correct.mean(axis=1) ** row.k)
    assert row.mean == pytest.approx(want, abs=1e-6)


def test_columns_rows_and_named_columns_give_the_same_table():
  records = _records(SIZES)
  renamed = [{("is_ok" if key == "correct" else key): v for key, v in r.items()} for r in records]
  columns = {key: [r[key] for r in records] for key in records[0]}
  a = maxk.evaluate_records(records, k=KS, metrics=["pass@k", "max@k"])
  b = maxk.evaluate_records(columns, k=KS, metrics=["pass@k", "max@k"])
  c = maxk.evaluate_records(renamed, k=KS, metrics=["pass@k", "max@k"], correct="is_ok")
  assert a.rows == b.rows == c.rows
  assert c.columns["correct"] == "is_ok"
  assert a.to_markdown() == b.to_markdown()


def test_metrics_follow_the_columns_and_default_ks_reach_the_smallest_problem():
  assert evaluate.default_ks(1) == (1,)
  assert evaluate.default_ks(6) == (1, 2, 4, 6)
  assert evaluate.default_ks(8) == (1, 2, 4, 8)
  records = [{"problem_id": i // N, "reward": i / 10} for i in range(P * N)]
  got = maxk.evaluate_records(records)
  assert {row.metric for row in got.rows} == {"max@k"} and got.ks == (1, 2, 4, 6)
  records = [{"problem_id": i // N, "correct": i % 2, "score": -i} for i in range(P * N)]
  got = maxk.evaluate_records(records, k=2, taus=[])
  assert [row.metric for row in got.rows] == ["pass@k", "pass^k", "mg_pass@k", "selected@k"]


def test_a_k_above_some_problems_names_them_in_the_rows_and_the_table():
  records = _records([2, 6, 3, 6, 6, 6])  # SIZES' shape: q0 and q2 have fewer than 5
  got = maxk.evaluate_records(records, k=KS, metrics=["pass@k"])
  assert [(r.k, r.problems, r.left_out) for r in got.rows] == [(2, 6, ()), (5, 4, ("q0", "q2"))]
  table = got.to_markdown()
  assert "k = 5: 2 problem(s) with fewer than 5 samples left out: q0 (2), q2 (3)." in table
  # One problem left: a mean, but no standard error.
  got = maxk.evaluate_records(_records([2, 3]), k=[3], metrics=["max@k"])
  (row,) = got.rows
  assert row.problems == 1 and math.isfinite(row.mean) and math.isnan(row.stderr)


@pytest.mark.parametrize(
  "kwargs, match",
  [
    ({"k": 0}, "k=0"),
    ({"k": [1, 7]}, "k=7 exceeds"),
    ({"k": 1.0}, "k=1.0"),
    ({"metrics": ["pass@k", "bogus"]}, "metrics"),
    ({"metrics": ["maj@k"], "answer": None, "correct": "nope"}, "'nope'"),
    ({"tie": "random"}, "tie"),
    ({"taus": [1.5]}, "tau"),
    ({"taus": 0.5}, "taus"),
    ({"pass_hat": "plugin"}, "pass_hat"),
    ({"confidence": 95}, "confidence"),
    ({"distribution": "z"}, "distribution"),
    ({"problem": "task_id"}, "'task_id'"),
  ],
)
def test_bad_options_raise_value_errors_naming_them(kwargs, match):
  with pytest.raises(ValueError, match=match):
    maxk.evaluate_records(_records([3, 6]), **kwargs)


@pytest.mark.parametrize(
  "records, match",
  [
    ([], "records: no records"),
    ([{"problem_id": 1, "correct": 1}, {"problem_id": 1}], r"records\[1\]: column 'correct'"),
    ([{"problem_id": 1, "correct": 1}, {"problem_id": "1", "correct": 0}], "one type"),
    ([{"problem_id": 1, "correct": 2}], r"records\[0\]: column 'correct': 2 is not 0/1"),
    ([{"problem_id": 1, "correct": True}, {"problem_id": 1, "correct": 0}], "one type"),
    ([{"problem_id": 1, "reward": float("nan")}], "not a finite number"),
    ([{"problem_id": [1], "reward": 1.0}], "not a scalar"),
    ({"problem_id": [1, 2], "correct": [1]}, "different lengths"),
    (
      [
        {"problem_id": 1, "answer": "a", "correct": 1},
        {"problem_id": 1, "answer": "a", "correct": 0},
      ],
      r"records\[1\]: column 'correct': answer 'a' of problem 1 is incorrect here but correct",
    ),
    ([{"problem_id": 1, "answer": None, "correct": 1}], "abstention"),
  ],
)
def test_malformed_records_raise_value_errors_naming_record_and_column(records, match):
  with pytest.raises(ValueError, match=match):
    maxk.evaluate_records(records)


# ----------------------------------------------------------------------------
# Coverage of the interval, by simulation.
# ----------------------------------------------------------------------------


def _coverage(a, b, k, replicates, problems=30, samples=16, seed=0):
  """(coverage, its binomial SE) of the t interval for the population mean pass@k,
  per-problem success rates p ~ Beta(a, b).

  The interval mean ± t·s/√P counts the choice of problems as well as the sampling
  noise, so its target is the population mean E[pass@k(p)] = 1 − B(a, b + k)/B(a, b)
  over p ~ Beta(a, b), not the mean over one replicate's problems.
  """
  rng = np.random.default_rng(seed)
  p = rng.beta(a, b, (replicates, problems))
  correct = rng.random((replicates, problems, samples)) < p[..., None]
  _, _, lo, hi, _, _ = evaluate.summary(maxk.pass_at_k(correct, k), None, 0.95, "t")
  log_beta = lambda x, y: math.lgamma(x) + math.lgamma(y) - math.lgamma(x + y)
  truth = 1 - math.exp(log_beta(a, b + k) - log_beta(a, b))
  coverage = float(np.mean((lo <= truth) & (truth <= hi)))
  return coverage, math.sqrt(coverage * (1 - coverage) / replicates), correct


@pytest.mark.parametrize("k", [1, 8])
def test_interval_covers_the_population_mean_at_its_level(k):
  """30 problems x 16 samples, p ~ Beta(1, 4), 16,000 replicates.

  The binomial SE of the coverage estimate is ~0.0019, so the band [0.93, 0.97] is
  over 4 SE from the nominal 0.95 on each side, and 6 SE from the coverage measured
  with 100,000 replicates (another seed): 0.9415 at k = 1, 0.9426 at k = 8 (± 0.0007).
  """
  coverage, se, correct = _coverage(1.0, 4.0, k, replicates=16_000)
  assert 0.93 + 4 * se <= 0.95 <= 0.97 - 4 * se
  assert 0.93 <= coverage <= 0.97, (coverage, se)
  # The rows of evaluate_records are this computation (one replicate).
  records = [{"problem_id": i, "correct": bool(c)} for i, row in enumerate(correct[0]) for c in row]
  (row,) = maxk.evaluate_records(records, k=[k], metrics=["pass@k"]).rows
  _, _, lo, hi, _, _ = evaluate.summary(maxk.pass_at_k(correct[:1], k), None, 0.95, "t")
  assert np.float32(row.lo) == np.float32(max(lo[0], 0))
  assert np.float32(row.hi) == np.float32(min(hi[0], 1))


def test_interval_covers_less_near_the_boundary_as_documented():
  """p ~ Beta(2, 2): most problems' pass@8 is near 1 and many estimates are exactly 1,
  so s/√P is small or 0 in many replicates: the interval covers ~0.83 (module docstring
  of maxk/_src/evaluate.py; 0.8257 with 20,000 replicates)."""
  coverage, se, _ = _coverage(2.0, 2.0, 8, replicates=16_000)  # the shapes above
  assert 0.80 <= coverage <= 0.86 and 0.02 >= 4 * se, (coverage, se)
