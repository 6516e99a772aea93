"""Tests of experiments.lm_study.significance: the floored interval over seeds, Holm, verdicts,
and a simulation of whole null studies through the summary's own code."""

import math

import numpy as np
import pytest
from scipy import special
from scipy import stats

from experiments.lm import intervals
from experiments.lm.configs import study_8seed as study_config
from experiments.lm_study import significance
import maxk

# --------------------------------------------------------------------------- Holm


def _holm_rejections(p, alpha):
  """Holm's procedure as defined: sort; reject H_(1), H_(2), ... while p_(j) <=
  alpha / (m − j + 1); stop at the first that fails. NaN p-values count in m."""
  m = len(p)
  rejected = np.zeros(m, bool)
  finite = [i for i in np.argsort(p) if not math.isnan(p[i])]
  for j, i in enumerate(finite, start=1):
    if p[i] > alpha / (m - j + 1):
      break
    rejected[i] = True
  return rejected


def test_holm_hand_example():
  # Sorted: 0.005 (x4), 0.01 (x3), 0.03 (x2), 0.04 (x1) -> 0.02, 0.03, 0.06, max(0.06, 0.04).
  adjusted = significance.holm([0.01, 0.04, 0.03, 0.005])
  np.testing.assert_allclose(adjusted, [0.03, 0.06, 0.06, 0.02], rtol=1e-12)
  np.testing.assert_allclose(significance.holm([0.3, 0.6]), [0.6, 0.6])
  np.testing.assert_allclose(significance.holm([0.5, 0.9, 0.2]), [1.0, 1.0, 0.6])  # Capped.


def test_holm_matches_its_definition_at_every_level():
  rng = np.random.default_rng(0)
  alphas = np.linspace(0.001, 0.5, 200)
  for trial in range(100):
    m = int(rng.integers(1, 17))
    p = rng.uniform(0, 0.1, m) ** rng.uniform(0.5, 2)
    if trial % 3 == 0 and m > 1:
      p[rng.integers(m)] = np.nan
    adjusted = significance.holm(p)
    assert np.all(np.isnan(adjusted) == np.isnan(p))
    finite = ~np.isnan(p)
    assert np.all(adjusted[finite] >= p[finite]) and np.all(adjusted[finite] <= 1.0)
    order = np.argsort(p[finite])  # Monotone in the raw p-values.
    assert np.all(np.diff(adjusted[finite][order]) >= 0)
    for alpha in alphas:
      np.testing.assert_array_equal(adjusted[finite] <= alpha, _holm_rejections(p, alpha)[finite])


def test_holm_works_over_the_last_axis_and_refuses_bad_input():
  p = np.array([[0.01, 0.04, 0.03, 0.005], [0.3, 0.6, 0.01, 0.5]])
  np.testing.assert_allclose(significance.holm(p)[0], significance.holm(p[0]))
  np.testing.assert_allclose(significance.holm(p)[1], significance.holm(p[1]))
  for bad in (0.5, [], [0.1, 1.5], [-0.1], [np.inf]):
    with pytest.raises(ValueError, match="p_values"):
      significance.holm(bad)


# ----------------------------------------------------------- the floored interval


def test_seeds_that_disagree_give_the_plain_t_interval():
  d, se = [0.1, -0.05, 0.2], [0.01, 0.012, 0.011]
  iv = significance.floored_interval(d, se)
  test = stats.ttest_1samp(d, 0.0)
  lo, hi = test.confidence_interval(0.95)
  assert not iv.floored
  np.testing.assert_allclose([iv.lo, iv.hi, iv.p_value], [lo, hi, test.pvalue], rtol=1e-10)
  plain = significance.plain_interval(d)
  np.testing.assert_allclose([plain.lo, plain.hi], [lo, hi], rtol=1e-10)


def test_seeds_that_agree_give_the_floor():
  d, se = np.array([0.05, 0.05, 0.05, 0.05]), np.array([0.02, 0.03, 0.02, 0.03])
  iv = significance.floored_interval(d, se)
  se_mean = math.sqrt((0.02**2 + 0.03**2) / 2 / 4)  # √(mean se² / S).
  half = stats.t.ppf(0.975, 3) * se_mean
  assert iv.floored
  np.testing.assert_allclose([iv.stderr, iv.lo, iv.hi], [se_mean, 0.05 - half, 0.05 + half])
  np.testing.assert_allclose(iv.p_value, 2 * stats.t.sf(0.05 / se_mean, 3))
  assert significance.plain_interval(d).p_value == 0.0  # No spread: the plain test is sure.


def test_the_audits_example_includes_zero():
  """PPO-clip vs exact weights at pass@1 (countdown, 3 seeds): +0.041 with the plain
  interval [0.033, 0.049] and per-seed z of 1.8, 1.9, 1.8; with the floor about
  [-0.015, 0.096]."""
  sd = 0.008 / stats.t.ppf(0.975, 2) * math.sqrt(3)  # Plain half-width 0.008.
  d = 0.041 + sd * np.array([-1.0, 0.0, 1.0])
  se = d / np.array([1.8, 1.9, 1.8])
  plain = significance.plain_interval(d)
  np.testing.assert_allclose([plain.lo, plain.hi], [0.033, 0.049], atol=1e-9)
  iv = significance.floored_interval(d, se)
  assert iv.lo < 0 < iv.hi and iv.p_value > 0.05
  np.testing.assert_allclose([iv.lo, iv.hi], [-0.015, 0.096], atol=0.002)


def test_non_finite_input_gives_nan_for_its_group_only():
  d = np.array([[0.1, 0.2, 0.3], [0.1, np.nan, 0.3], [0.1, 0.2, 0.3]])
  se = np.array([[0.01] * 3, [0.01] * 3, [0.01, np.inf, 0.01]])
  iv = significance.floored_interval(d, se)
  for field in ("mean", "stderr", "lo", "hi", "p_value"):
    values = getattr(iv, field)
    assert np.isfinite(values[0]) and np.isnan(values[1]) and np.isnan(values[2]), field
  single = significance.floored_interval(d[0], se[0])
  assert float(single.lo) == pytest.approx(float(iv.lo[0]))


def test_bad_input_is_refused():
  with pytest.raises(ValueError, match="diffs must hold S >= 2 seeds"):
    significance.floored_interval([0.1], [0.01])
  with pytest.raises(ValueError, match="stderrs has shape"):
    significance.floored_interval([0.1, 0.2], [0.01])
  with pytest.raises(ValueError, match="stderrs must be >= 0"):
    significance.floored_interval([0.1, 0.2], [0.01, -0.01])
  with pytest.raises(ValueError, match="confidence"):
    significance.floored_interval([0.1, 0.2], [0.01, 0.01], confidence=1.0)


@pytest.mark.parametrize(
  "p_holm, diff, p_eq_holm, declared",
  [
    (0.049, 0.1, math.nan, "better"),
    (0.049, -0.1, 0.01, "worse"),  # A significant difference wins over equivalence.
    (0.05, 0.01, math.nan, "not detected"),  # No margin declared: never "equivalent".
    (0.5, 0.001, 0.049, "equivalent"),
    (0.5, 0.001, 0.05, "not detected"),
    (math.nan, math.nan, math.nan, "not tested (fewer than 2 seeds)"),
  ],
)
def test_declared_verdicts(p_holm, diff, p_eq_holm, declared):
  assert significance.declared_verdict(p_holm, diff, p_eq_holm) == declared


@pytest.mark.parametrize(
  "lo, hi, exploratory",
  [
    (0.01, 0.2, "exploratory, excludes 0"),
    (-0.3, -0.01, "exploratory, excludes 0"),
    (-0.1, 0.2, "exploratory, includes 0"),
    (math.nan, math.nan, "exploratory, no interval"),
  ],
)
def test_exploratory_verdicts(lo, hi, exploratory):
  assert significance.exploratory_verdict(lo, hi) == exploratory
  # The README's claims checker reads these words in declared verdicts only.
  assert not {"better", "worse", "equivalent", "significant"} & set(exploratory.split())


# ------------------------------------------------------- equivalence and power


def test_tost_rejects_exactly_when_the_90_interval_lies_inside_the_margin():
  rng = np.random.default_rng(0)
  means = rng.uniform(-0.05, 0.05, 2000)
  ses = rng.uniform(0.001, 0.02, 2000)
  margin, df = 0.02, 7
  p = significance.equivalence_p_value(means, ses, df, margin)
  half = stats.t.ppf(0.95, df) * ses  # The (1 - 2 * 0.05) interval.
  inside = (means - half > -margin) & (means + half < margin)
  np.testing.assert_array_equal(p < 0.05, inside)


def test_tost_p_value_by_hand_and_edge_cases():
  # mean 0.005, SE 0.004, df 7, margin 0.02: the binding side is the upper one,
  # P(T <= (0.005 - 0.02) / 0.004) = P(T <= -3.75).
  p = significance.equivalence_p_value(0.005, 0.004, 7, 0.02)
  assert float(p) == pytest.approx(stats.t.cdf(-3.75, 7), rel=1e-12)
  assert float(significance.equivalence_p_value(0.01, 0.0, 3, 0.02)) == 0.0
  assert float(significance.equivalence_p_value(0.03, 0.0, 3, 0.02)) == 1.0
  assert math.isnan(float(significance.equivalence_p_value(math.nan, 0.01, 3, 0.02)))
  with pytest.raises(ValueError, match="margin"):
    significance.equivalence_p_value(0.0, 0.01, 3, 0.0)
  with pytest.raises(ValueError, match="df"):
    significance.equivalence_p_value(0.0, 0.01, 0, 0.02)


@pytest.mark.parametrize("sigma, lowest", [(0.01, 0.04), (0.03, 0.0)])
def test_tost_keeps_its_level_at_the_margin(sigma, lowest):
  """At a true difference equal to the margin the equivalence test rejects in at most
  5% of simulated studies (8 seeds, normal per-seed differences): about 5% when the
  standard error is small against the margin, fewer (conservative) when it is not."""
  rng = np.random.default_rng(1)
  S, margin = 8, 0.02
  d = rng.normal(margin, sigma, (20000, S))
  se = np.std(d, axis=1, ddof=1) / np.sqrt(S)
  rate = np.mean(significance.equivalence_p_value(d.mean(axis=1), se, S - 1, margin) < 0.05)
  assert lowest < rate <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / 20000)


@pytest.mark.parametrize("effect, S, alpha", [(0.02, 8, 0.05 / 6), (0.05, 4, 0.05), (0.0, 8, 0.05)])
def test_power_matches_a_simulated_t_test(effect, S, alpha):
  """The noncentral-t power equals the rejection rate of the plain t-test on
  simulated normal per-seed differences of known spread (within Monte Carlo error)."""
  rng = np.random.default_rng(2)
  sigma = 0.03
  d = rng.normal(effect, sigma, (40000, S))
  t = d.mean(axis=1) / (np.std(d, axis=1, ddof=1) / np.sqrt(S))
  simulated = np.mean(2 * stats.t.sf(np.abs(t), S - 1) < alpha)
  computed = significance.power(effect, sigma / math.sqrt(S), S - 1, alpha=alpha)
  assert computed == pytest.approx(simulated, abs=4 * math.sqrt(0.25 / 40000) + 1e-3)
  if effect == 0:
    assert computed == pytest.approx(alpha, rel=1e-9)


def test_power_refuses_bad_input():
  assert math.isnan(significance.power(0.02, 0.0, 7))
  with pytest.raises(ValueError, match="alpha"):
    significance.power(0.02, 0.01, 7, alpha=0.0)
  with pytest.raises(ValueError, match="df"):
    significance.power(0.02, 0.01, 0)


# ---------------------------------------------------- simulated studies, null and not

N, P = 32, 128  # The study's samples per problem and problems per seed.
RUNS = list(dict.fromkeys(r for c in study_config.CONTRASTS for r in (c.b, c.a)))


def _simulated_holm(rng, studies, seeds, tau, effect=None):
  """Holm-adjusted p-values ``[studies, 8]`` of the study's declared contrasts in
  simulated studies, and the uncorrected plain-t p-values.

  Per seed, 128 problems with base solve rates from Beta(0.7, 3); each run's solve
  rate on a problem is expit(logit(rate) + u + e + effect), with u ~ N(0, tau²) the
  run's training noise in that seed and e ~ N(0, 0.5²) its own per-problem noise;
  n = 32 binomial samples. pass@k per problem, the per-seed paired difference and
  its standard error come from the code the summary uses (maxk.pass_at_k,
  report_rows' paired difference), then significance.floored_interval and holm.
  """
  rate = np.clip(rng.beta(0.7, 3.0, (studies, seeds, 1, P)), 1e-4, 1 - 1e-4)
  u = rng.normal(0.0, tau, (studies, seeds, len(RUNS), 1))
  e = rng.normal(0.0, 0.5, (studies, seeds, len(RUNS), P))
  shift = np.array([(effect or {}).get(r, 0.0) for r in RUNS])[:, None]
  correct = rng.binomial(N, special.expit(special.logit(rate) + u + e + shift))
  # pass@k depends on the count c only: maxk's value for each c, then a look-up.
  binary = (np.arange(N)[None, :] < np.arange(N + 1)[:, None]).astype(np.float32)
  diffs, ses = [], []
  for c in study_config.CONTRASTS:
    table = np.asarray(maxk.pass_at_k(binary, c.resolve_k(N)), np.float64)
    a, b = (table[correct[:, :, RUNS.index(run)]] for run in (c.a, c.b))
    mean, se, _, _ = intervals.paired_interval(a, b)  # As in paired.csv's diff and diff_se.
    diffs.append(mean)
    ses.append(se)
  diffs, ses = np.stack(diffs, axis=1), np.stack(ses, axis=1)  # [studies, 8, seeds]
  floored = significance.floored_interval(diffs, ses)
  return significance.holm(floored.p_value), significance.plain_interval(diffs).p_value


@pytest.mark.parametrize("seeds", [3, 8])
@pytest.mark.parametrize("tau", [0.0, 0.5])
def test_null_studies_keep_the_family_wise_rate(seeds, tau):
  """No run differs in expectation: the chance that any of a study's 8 declared
  contrasts is called significant stays at or below 5%.

  600 studies measure a rate with a standard error of ~0.9%, so the bound is
  checked as a one-sided binomial test of rate <= 5% at level 1% (the measured rates
  were 0-4.5%; at tau = 0.5 the floor rarely decides and the rate approaches Holm's
  nominal one). The same studies without the floor and without Holm reject some
  contrast in ~30% of the studies: the check can see a test that does not hold its
  level.
  """
  studies = 600
  rng = np.random.default_rng(seeds * 10 + int(tau * 10))
  p_holm, p_plain = _simulated_holm(rng, studies, seeds, tau)
  rate = np.mean(np.any(p_holm < significance.ALPHA, axis=-1))
  bound = significance.ALPHA + stats.norm.ppf(0.99) * math.sqrt(0.05 * 0.95 / studies)
  assert rate <= bound, rate
  uncorrected = np.mean(np.any(p_plain < significance.ALPHA, axis=-1))
  assert uncorrected > bound + 0.1, uncorrected


def test_a_real_effect_is_found():
  """GRPO better than every other run by ~3 per-seed standard errors at pass@1: with
  8 seeds, its declared contrast against base is significant after Holm in most
  studies (all 200 here); with 3 seeds, the t quantile of 2 degrees of freedom and
  the correction over 8 contrasts leave it none (it needs ~9 standard errors)."""
  rng = np.random.default_rng(7)
  p_holm, _ = _simulated_holm(rng, 200, 8, 0.0, effect={"grpo": 0.3})
  assert np.mean(p_holm[:, 0] < significance.ALPHA) >= 0.9
  p_holm, _ = _simulated_holm(rng, 200, 3, 0.0, effect={"grpo": 0.3})
  assert np.mean(p_holm[:, 0] < significance.ALPHA) <= 0.1


def test_power_integrates_where_scipys_noncentral_t_fails(monkeypatch):
  expected = [
    significance.power(d, 0.01, df, alpha=0.01) for d in (0.0, 0.03, 0.1) for df in (2, 7)
  ]
  monkeypatch.setattr(significance.stats.nct, "sf", lambda *args: math.nan)
  got = [significance.power(d, 0.01, df, alpha=0.01) for d in (0.0, 0.03, 0.1) for df in (2, 7)]
  assert got == pytest.approx(expected, rel=1e-6, abs=1e-9)
