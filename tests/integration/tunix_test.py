"""maxk's estimators in tunix's own GRPO training, with google-tunix in its own environment.

A module-scoped fixture makes a virtual environment at ``out/tunix-venv-<hash>``,
<hash> of ``tunix_requirements.txt`` and the Python version, and reuses it while
both stay the same: ``pip install --no-deps -r tunix_requirements.txt`` (every
version pinned, nothing resolved) and this checkout as an editable install, so the
environment imports the working tree's maxk and never goes stale.  It is built in a
temporary folder beside its place and renamed there only when complete.  Where pip
cannot install it (no network, no wheel for this Python) the test is skipped with
pip's error, unless ``MAXK_REQUIRE_TUNIX=1`` (as in CI) makes that a failure; every
failure after the install is a failure.

``tunix_grpo.py`` then trains tunix's ``GRPOLearner`` two steps per case with a
maxk name as ``GRPOConfig.advantage_estimator`` and reports the prompts, rewards
and advantages tunix handed its metric function.  Here they are checked against
maxk and against the definitions in float64 (subsets by ``itertools``, binomials
by ``math.comb``).
"""

import hashlib
import itertools
import json
import math
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
import pytest

import maxk
from tests import REPO_ROOT
from tests import WAIT_S

# Integration: google-tunix in its own environment (README's second test step, `-m slow`).
pytestmark = pytest.mark.slow

REQUIRE_ENV = "MAXK_REQUIRE_TUNIX"
_HERE = os.path.dirname(os.path.abspath(__file__))
_REQUIREMENTS = os.path.join(_HERE, "tunix_requirements.txt")
_OUT = os.path.join(REPO_ROOT, "out")
_VENV_PREFIX = "tunix-venv-"


def _pins() -> dict[str, str]:
  pins = {}
  with open(_REQUIREMENTS) as f:
    for line in f:
      line = line.split("#", 1)[0].strip()
      if line:
        name, version = line.split("==")
        pins[name] = version
  return pins


def _venv_dir() -> str:
  with open(_REQUIREMENTS, "rb") as f:
    key = hashlib.sha256(f.read())
  key.update(f"{sys.version_info[:2]} {platform.machine()}".encode())
  return os.path.join(_OUT, _VENV_PREFIX + key.hexdigest()[:12])


def _skip_or_fail(reason: str) -> None:
  if os.environ.get(REQUIRE_ENV) == "1":
    pytest.fail(f"{reason}; {REQUIRE_ENV}=1 requires it.")
  pytest.skip(f"{reason}; {REQUIRE_ENV}=1 makes this a failure (as in CI).")


def _install(step: str, cmd: list[str]) -> None:
  """Runs an install step; one that fails skips the test (see the module docstring)."""
  proc = subprocess.run(cmd, capture_output=True, text=True, timeout=WAIT_S)
  if proc.returncode != 0:
    tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
    _skip_or_fail(f"google-tunix could not be installed ({step} exited {proc.returncode}):\n{tail}")


def _remove_stale(keep: str) -> None:
  """Removes environments of earlier requirement files (~1 GB each) and partial builds
  older than any install may take (a killed test leaves its partial folder behind)."""
  for name in os.listdir(_OUT):
    path = os.path.join(_OUT, name)
    if not name.startswith(_VENV_PREFIX) or path == keep:
      continue
    if ".partial-" not in name or time.time() - os.path.getmtime(path) > 3 * WAIT_S:
      shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def python():
  """The Python of the cached tunix environment, built on first use."""
  if sys.version_info < (3, 11):
    _skip_or_fail("google-tunix 0.1.7 needs Python >= 3.11")
  venv = _venv_dir()
  if not os.path.isdir(venv):
    os.makedirs(_OUT, exist_ok=True)
    _remove_stale(keep=venv)
    tmp = tempfile.mkdtemp(prefix=os.path.basename(venv) + ".partial-", dir=_OUT)
    try:
      _install("python -m venv", [sys.executable, "-m", "venv", "--clear", tmp])
      pip = [os.path.join(tmp, "bin", "python"), "-m", "pip", "install", "-q", "--no-deps"]
      _install("pip install -r tunix_requirements.txt", [*pip, "-r", _REQUIREMENTS])
      _install("pip install -e maxk", [*pip, "--no-build-isolation", "-e", REPO_ROOT])
      try:
        os.rename(tmp, venv)  # atomic: the environment appears only when complete
      except OSError:
        if not os.path.isdir(venv):  # not another process having won the race
          raise
    finally:
      shutil.rmtree(tmp, ignore_errors=True)
  return os.path.join(venv, "bin", "python")


@pytest.fixture(scope="module")
def report(python, tmp_path_factory):
  """What tunix_grpo.py reports from inside the tunix environment."""
  out = tmp_path_factory.mktemp("tunix") / "report.json"
  env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
  env["JAX_PLATFORMS"] = "cpu"
  proc = subprocess.run(
    [python, os.path.join(_HERE, "tunix_grpo.py"), str(out)],
    cwd=tmp_path_factory.getbasetemp(),  # maxk must come from the environment's install
    env=env,
    capture_output=True,
    text=True,
    timeout=WAIT_S,
  )
  output = f"{proc.stdout[-5000:]}\n{proc.stderr[-10000:]}"
  assert proc.returncode == 0, f"tunix_grpo.py failed:\n{output}"
  with open(out) as f:
    return json.load(f)


def _max_at_k_brute(r: np.ndarray, k: int) -> np.ndarray:
  """(1/C(n,k)) Σ_{|I|=k, I∋i} (max_I r − max_{I∖i} r), the loo_minus_one transform, float64."""
  n = len(r)
  out = np.zeros(n)
  for subset in itertools.combinations(range(n), k):
    for i in subset:
      rest = [r[j] for j in subset if j != i]
      out[i] += max(r[j] for j in subset) - (max(rest) if rest else 0.0)
  return out / math.comb(n, k)


def _pass_at_k_training_brute(c: np.ndarray, k: int) -> np.ndarray:
  """Chen et al. (arXiv 2508.10751) Eqs. 11-15 in float64; all zeros where σ = 0."""
  n, n_neg = len(c), int(np.sum(c == 0))
  mean = 1 - math.comb(n_neg, k) / math.comb(n, k)
  sigma = math.sqrt(mean * (1 - mean))
  if sigma == 0:
    return np.zeros(n)
  pos = (1 - mean) / sigma
  neg = (1 - mean - math.comb(n_neg - 1, k - 1) / math.comb(n - 1, k - 1)) / sigma
  return np.where(c == 1, pos, neg)


def _case(report, name):
  (case,) = [c for c in report["cases"] if c["name"] == name]
  return case


def test_environment_holds_the_pinned_versions_and_this_checkout(report):
  pins = _pins()
  assert report["versions"] == {
    "tunix": pins["google-tunix"],
    "jax": pins["jax"],
    "flax": pins["flax"],
  }
  assert os.path.realpath(report["maxk_file"]).startswith(os.path.realpath(REPO_ROOT) + os.sep)


@pytest.mark.parametrize("name", ["maxk_max_at_k_k2", "maxk_pass_at_k_training_k2"])
def test_grpo_learner_trains_two_steps_on_prompt_major_groups(report, name):
  case = _case(report, name)
  g = case["num_generations"]
  assert case["trainer_steps"] == 2
  assert case["params_changed"]
  assert len(case["steps"]) == 2
  for step in case["steps"]:
    groups = np.asarray(step["prompts"]).reshape(-1, g)
    assert len(set(groups[:, 0])) == len(groups)  # one prompt per group ...
    assert np.all(groups == groups[:, :1])  # ... repeated G times in a row


def test_max_at_k_advantages_are_g_times_maxk_on_tunix_rewards(report):
  case = _case(report, "maxk_max_at_k_k2")
  g = case["num_generations"]
  for step in case["steps"]:
    rewards = np.asarray(step["rewards"]).reshape(-1, g)
    used = np.asarray(step["advantages"]).reshape(-1, g)
    assert np.any(used != 0)
    direct = np.asarray(maxk.max_at_k_advantages(rewards, 2), np.float64)
    np.testing.assert_allclose(used, g * direct, rtol=1e-6, atol=1e-6)
    brute = np.stack([_max_at_k_brute(r, 2) for r in rewards])
    np.testing.assert_allclose(used, g * brute, rtol=1e-5, atol=1e-5)


def test_pass_at_k_training_advantages_are_the_papers_on_binary_rewards(report):
  case = _case(report, "maxk_pass_at_k_training_k2")
  g = case["num_generations"]
  for step in case["steps"]:
    rewards = np.asarray(step["rewards"]).reshape(-1, g)
    assert set(np.unique(rewards)) <= {0.0, 1.0}
    used = np.asarray(step["advantages"]).reshape(-1, g)
    assert np.any(used != 0)
    direct = np.asarray(maxk.pass_at_k_training_advantages(rewards, 2), np.float64)
    np.testing.assert_allclose(used, direct, rtol=1e-6, atol=1e-6)
    brute = np.stack([_pass_at_k_training_brute(r, 2) for r in rewards])
    np.testing.assert_allclose(used, brute, rtol=1e-5, atol=1e-5)


def test_k1_loo_centered_entry_equals_tunix_rloo(report):
  """The scale G matches tunix's own footing: at k = 1 it is tunix's RLOO advantage."""
  check = report["rloo_check"]
  assert np.any(np.asarray(check["tunix_rloo"]) != 0)
  np.testing.assert_allclose(check["maxk_k1"], check["tunix_rloo"], rtol=1e-5, atol=1e-5)
