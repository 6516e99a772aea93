"""maxk.contrib.tunix against a fake tunix registry: names, reshaping, scale, errors.

tunix itself is not needed: each test puts a stand-in ``tunix.rl.function_registry``
module into ``sys.modules``.  tests/integration/tunix_test.py runs the real tunix.
"""

import itertools
import math
import subprocess
import sys
import types

import numpy as np
import pytest

import maxk
from maxk.contrib import tunix as maxk_tunix
from tests import REPO_ROOT
from tests import WAIT_S

B, G = 3, 8


class FakeRegistry(types.ModuleType):
  """The two functions of tunix.rl.function_registry that maxk uses."""

  def __init__(self):
    super().__init__("tunix.rl.function_registry")
    self.functions = {}
    self.registrations = 0

  def register_advantage_estimator(self, name):
    def decorator(fn):
      self.registrations += 1
      self.functions[name] = fn
      return fn

    return decorator

  def get_advantage_estimator(self, name):
    try:
      return self.functions[name]
    except KeyError:
      raise LookupError(name) from None


@pytest.fixture
def registry(monkeypatch):
  fake = FakeRegistry()
  monkeypatch.setitem(sys.modules, "tunix", types.ModuleType("tunix"))
  monkeypatch.setitem(sys.modules, "tunix.rl", types.ModuleType("tunix.rl"))
  monkeypatch.setitem(sys.modules, "tunix.rl.function_registry", fake)
  return fake


def _call(registry, name, rewards, g=G):
  """Calls the registered function the way tunix's GRPO learner does."""
  return registry.get_advantage_estimator(name)(rewards=rewards, num_generations=g)


def _rewards(seed=0):
  return np.random.default_rng(seed).normal(size=B * G).round(1)  # rounded: ties


def _binary(seed=0):
  c = np.random.default_rng(seed).integers(0, 2, size=B * G).astype(np.float64)
  c[:G] = 0  # one group with no success
  return c


def test_import_maxk_imports_neither_tunix_nor_contrib():
  code = (
    "import sys, maxk; "
    "tunix = lambda: [m for m in sys.modules if m.split('.')[0] == 'tunix']; "
    "assert not tunix() and 'maxk.contrib' not in sys.modules; "
    "import maxk.contrib.tunix; "
    "assert not tunix()"
  )
  subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, check=True, timeout=WAIT_S)


def test_without_tunix_registering_says_how_to_install(monkeypatch):
  for module in ("tunix", "tunix.rl", "tunix.rl.function_registry"):
    monkeypatch.setitem(sys.modules, module, None)  # None: the import fails
  with pytest.raises(ImportError, match="pip install google-tunix"):
    maxk_tunix.advantage_estimator("max_at_k", k=4)
  with pytest.raises(ImportError, match="pip install google-tunix"):
    maxk_tunix.register()


@pytest.mark.parametrize(
  "args, kwargs, name",
  [
    (("max_at_k",), {"k": 4}, "maxk_max_at_k_k4"),
    (("max_at_k",), {"k": 4, "baseline": "loo_minus_one"}, "maxk_max_at_k_k4"),
    (("max_at_k",), {"k": 4, "baseline": "loo"}, "maxk_max_at_k_k4_loo"),
    (("max_at_k",), {"k": 1, "baseline": "loo_centered"}, "maxk_max_at_k_k1_loo_centered"),
    (("max_at_k",), {"k": 16, "baseline": "none"}, "maxk_max_at_k_k16_none"),
    (("order_stat",), {"kind": "min", "k": 4}, "maxk_order_stat_min_k4"),
    (("order_stat",), {"kind": "max", "k": 2, "baseline": "loo"}, "maxk_order_stat_max_k2_loo"),
    (("order_stat",), {"kind": "top_m", "m": 2, "k": 8}, "maxk_order_stat_top_m2_k8"),
    (("order_stat",), {"kind": "bottom_m", "m": 3, "k": 4}, "maxk_order_stat_bottom_m3_k4"),
    (
      ("order_stat",),
      {"kind": "upper_tail_mean", "alpha": 0.25, "k": 8},
      "maxk_order_stat_upper_tail_mean_alpha0.25_k8",
    ),
    (("maxrl",), {}, "maxk_maxrl"),
    (("maxrl",), {"control_variate": False}, "maxk_maxrl_no_control_variate"),
    (("pass_at_k_training",), {"k": 4}, "maxk_pass_at_k_training_k4"),
    (("pass_at_k_training",), {"k": 4, "eps": 0.1}, "maxk_pass_at_k_training_k4_eps0.1"),
  ],
)
def test_names(registry, args, kwargs, name):
  assert maxk_tunix.advantage_estimator(*args, **kwargs) == name
  assert list(registry.functions) == [name]
  assert registry.functions[name].__name__ == name


def test_registers_on_first_use_only(registry):
  first = maxk_tunix.advantage_estimator("max_at_k", k=2)
  fn = registry.functions[first]
  assert maxk_tunix.advantage_estimator("max_at_k", k=2, baseline="loo_minus_one") == first
  assert registry.registrations == 1
  assert registry.functions[first] is fn


def test_register_catalogue(registry):
  names = maxk_tunix.register(k_values=(1, 4, 1))
  per_k = len(maxk_tunix.MAX_AT_K_BASELINES) + len(maxk_tunix.CATALOGUE_KINDS) + 1
  assert len(names) == len(set(names)) == 2 * per_k + 2
  assert set(names) == set(registry.functions)
  assert all(name.startswith("maxk_") for name in names)
  assert {"maxk_max_at_k_k4", "maxk_max_at_k_k4_loo", "maxk_order_stat_median_k1"} <= set(names)
  assert {"maxk_pass_at_k_training_k4", "maxk_maxrl", "maxk_maxrl_no_control_variate"} <= set(names)
  maxk_tunix.register(k_values=(1, 4))
  assert registry.registrations == len(names)


@pytest.mark.parametrize(
  "k, baseline", [(1, "none"), (2, "loo"), (5, "loo_centered"), (G, "loo_minus_one")]
)
def test_max_at_k_is_g_times_maxk(registry, k, baseline):
  r = _rewards(k)
  out = _call(registry, maxk_tunix.advantage_estimator("max_at_k", k=k, baseline=baseline), r)
  assert isinstance(out, np.ndarray) and out.dtype == np.float32 and out.shape == (B * G,)
  want = G * np.asarray(maxk.max_at_k_advantages(r.reshape(B, G), k, baseline=baseline))
  np.testing.assert_allclose(out, want.reshape(-1), rtol=1e-6, atol=1e-6)


def test_groups_are_consecutive_runs_of_g(registry):
  """Prompt-major: sample i of prompt b is at b*G + i, and only its own group moves it."""
  name = maxk_tunix.advantage_estimator("max_at_k", k=2)
  r = _rewards(9)
  out = _call(registry, name, r)
  for b in range(B):
    group = r[b * G : (b + 1) * G]
    want = G * np.asarray(maxk.max_at_k_advantages(group, 2))
    np.testing.assert_allclose(out[b * G : (b + 1) * G], want, rtol=1e-6, atol=1e-6)
  changed = r.copy()
  changed[G : 2 * G] += np.arange(G)
  moved = _call(registry, name, changed) != out
  assert np.any(moved[G : 2 * G]) and not np.any(moved[:G]) and not np.any(moved[2 * G :])


def test_k1_loo_centered_is_rloo(registry):
  """G times the k = 1 leave-one-out-centred transform is r_i − mean_{j≠i} r_j (tunix's "rloo")."""
  r = _rewards(1)
  out = _call(registry, maxk_tunix.advantage_estimator("max_at_k", k=1, baseline="loo_centered"), r)
  groups = r.reshape(B, G)
  want = groups - (groups.sum(axis=1, keepdims=True) - groups) / (G - 1)
  np.testing.assert_allclose(out, want.reshape(-1), rtol=1e-5, atol=1e-5)


def test_max_at_k_matches_subset_enumeration(registry):
  """The default entry (loo_minus_one) is G/C(G,k) Σ_{|I|=k, I∋i} (max_I r − max_{I∖i} r)."""
  k = 3
  r = _rewards(8)
  want = np.zeros(B * G)
  for start in range(0, B * G, G):
    group = r[start : start + G]
    for subset in itertools.combinations(range(G), k):
      for i in subset:
        rest = [group[j] for j in subset if j != i]
        want[start + i] += max(group[j] for j in subset) - max(rest)
  want *= G / math.comb(G, k)
  out = _call(registry, maxk_tunix.advantage_estimator("max_at_k", k=k), r)
  np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
  "kind, params, baseline",
  [
    ("max", {}, "none"),
    ("min", {}, "loo_centered"),
    ("median", {}, "loo"),
    ("top_m", {"m": 2}, "loo_centered"),
    ("upper_tail_mean", {"alpha": 0.5}, "loo"),
  ],
)
def test_order_stat_is_g_times_maxk(registry, kind, params, baseline):
  k = 4
  r = _rewards(2)
  name = maxk_tunix.advantage_estimator("order_stat", kind=kind, k=k, baseline=baseline, **params)
  weights = maxk.rank_weights(kind, k, **params)
  want = G * np.asarray(maxk.order_stat_advantages(r.reshape(B, G), weights, baseline=baseline))
  np.testing.assert_allclose(_call(registry, name, r), want.reshape(-1), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("control_variate", [True, False])
def test_maxrl_is_maxk_unscaled(registry, control_variate):
  c = _binary(3)
  name = maxk_tunix.advantage_estimator("maxrl", control_variate=control_variate)
  want = maxk.maxrl_advantages(c.reshape(B, G), control_variate=control_variate)
  out = _call(registry, name, c)
  np.testing.assert_allclose(out, np.reshape(want, -1), rtol=1e-6, atol=1e-6)
  if not control_variate:  # n c_i / K, and 0 for a group without a success
    groups = c.reshape(B, G)
    count = groups.sum(axis=1, keepdims=True)
    formula = np.where(count > 0, G * groups / np.maximum(count, 1), 0.0)
    np.testing.assert_allclose(out, formula.reshape(-1), rtol=1e-6)


@pytest.mark.parametrize("k, eps", [(1, None), (3, None), (G, None), (2, 0.1)])
def test_pass_at_k_training_is_maxk_unscaled(registry, k, eps):
  c = _binary(4)
  name = maxk_tunix.advantage_estimator("pass_at_k_training", k=k, eps=eps)
  want = maxk.pass_at_k_training_advantages(c.reshape(B, G), k, eps=eps or 0.0)
  np.testing.assert_allclose(_call(registry, name, c), np.reshape(want, -1), rtol=1e-6, atol=1e-6)


def test_binary_estimators_accept_bools_and_ints(registry):
  c = _binary(5)
  name = maxk_tunix.advantage_estimator("maxrl")
  want = _call(registry, name, c)
  np.testing.assert_array_equal(_call(registry, name, c.astype(bool)), want)
  np.testing.assert_array_equal(_call(registry, name, c.astype(np.int64).tolist()), want)


@pytest.mark.parametrize("estimator, params", [("maxrl", {}), ("pass_at_k_training", {"k": 2})])
def test_binary_estimators_reject_other_rewards(registry, estimator, params):
  name = maxk_tunix.advantage_estimator(estimator, **params)
  r = _binary(6)
  r[3] = 0.5
  with pytest.raises(ValueError, match=r"rewards must be 0 or 1 .*got values \[0\.5\]"):
    _call(registry, name, r)
  r[3] = 1 + 1e-9  # float32 would round it to 1
  with pytest.raises(ValueError, match="rewards must be 0 or 1"):
    _call(registry, name, r)


@pytest.mark.parametrize(
  "estimator, params, rewards",
  [
    ("max_at_k", {"k": 2}, _rewards(7)),
    ("order_stat", {"kind": "min", "k": 2}, _rewards(7)),
    ("maxrl", {}, _binary(7)),
    ("pass_at_k_training", {"k": 2}, _binary(7)),
  ],
)
def test_nan_reward_makes_only_its_prompt_nan(registry, estimator, params, rewards):
  r = rewards.copy()
  r[G + 3] = np.nan
  out = _call(registry, maxk_tunix.advantage_estimator(estimator, **params), r).reshape(B, G)
  assert np.all(np.isnan(out[1]))
  assert np.all(np.isfinite(out[[0, 2]]))


@pytest.mark.parametrize(
  "args, kwargs, match",
  [
    (("max@k",), {"k": 2}, "estimator='max@k'"),
    (("max_at_k",), {}, "k is required"),
    (("max_at_k",), {"k": 0}, "k=0"),
    (("max_at_k",), {"k": 2.0}, "k=2.0"),
    (("max_at_k",), {"k": True}, "k=True"),
    (("max_at_k",), {"k": 2, "baseline": "mean_std"}, "baseline='mean_std' is biased"),
    (("max_at_k",), {"k": 2, "baseline": "loo1"}, "baseline='loo1'"),
    (("max_at_k",), {"k": 2, "kind": "max"}, "kind='max' does not apply"),
    (("max_at_k",), {"k": 2, "eps": 0.1}, "eps=0.1 does not apply"),
    (("order_stat",), {"k": 2}, "kind is required"),
    (("order_stat",), {"kind": "maximum", "k": 2}, "kind='maximum'"),
    (("order_stat",), {"kind": "max", "k": 2, "baseline": "loo_minus_one"}, "baseline='loo_min"),
    (("order_stat",), {"kind": "top_m", "k": 4}, r"missing \['m'\]"),
    (("order_stat",), {"kind": "top_m", "m": 5, "k": 4}, "m=5"),
    (("order_stat",), {"kind": "max", "m": 1, "k": 4}, r"unexpected \['m'\]"),
    (("order_stat",), {"kind": "upper_tail_mean", "alpha": 1.5, "k": 4}, "alpha=1.5"),
    (("maxrl",), {"k": 2}, "k=2 does not apply"),
    (("maxrl",), {"control_variate": "yes"}, "control_variate='yes'"),
    (("pass_at_k_training",), {}, "k is required"),
    (("pass_at_k_training",), {"k": 2, "eps": -1.0}, "eps=-1.0"),
    (("pass_at_k_training",), {"k": 2, "eps": float("nan")}, "eps=nan"),
    (("pass_at_k_training",), {"k": 2, "baseline": "loo"}, "baseline='loo' does not apply"),
  ],
)
def test_bad_combinations_name_the_argument(registry, args, kwargs, match):
  with pytest.raises(ValueError, match=match):
    maxk_tunix.advantage_estimator(*args, **kwargs)
  assert not registry.functions


@pytest.mark.parametrize("k_values", [(), (2, 0), 4])
def test_register_rejects_bad_k_values(registry, k_values):
  with pytest.raises(ValueError, match="k_values"):
    maxk_tunix.register(k_values=k_values)
  assert not registry.functions


@pytest.mark.parametrize(
  "rewards, g, match",
  [
    (np.zeros(B * G), 0, "num_generations=0"),
    (np.zeros(B * G), 2.0, "num_generations=2.0"),
    (np.zeros(B * G + 1), G, r"rewards must be a flat array .*\(25,\)"),
    (np.zeros((B, G)), G, r"rewards must be a flat array .*\(3, 8\)"),
    (np.zeros(2 * 2), 2, "k=4 of maxk_max_at_k_k4 must be <= num_generations=2"),
  ],
)
def test_bad_calls_name_the_argument(registry, rewards, g, match):
  name = maxk_tunix.advantage_estimator("max_at_k", k=4)
  with pytest.raises(ValueError, match=match):
    _call(registry, name, rewards, g)
