"""README's "Adding an estimator" recipe followed as written, in a copy of the repository.

The recipe says a new estimator is one record in ``experiments/estimators/builtin.py``
and that the tests read the registry. Here README's record (its
``estimators.Estimator(...)`` call, taken from README.md, with a function for its
``fn=my_fn``) is appended to ``builtin.py`` in a copy of the tracked files, and the
registry's tests and the configs' checks run there: they must pass with the new
estimator among the built-ins, as they do here.
"""

import os
import re
import shutil
import subprocess
import sys

import pytest

from tests import REPO_ROOT
from tests import WAIT_S

# Integration: README's recipe in a copy of the repository (README's second test step, `-m slow`).
pytestmark = pytest.mark.slow

# The tests that list, check or run the registry's estimators.
_REGISTRY_TESTS = (
  "tests/experiments/estimators_test.py",
  "tests/experiments/bandit_variance/validation_test.py",
  "tests/experiments/bandit_training/validation_test.py",
)


def _readme_record():
  """README's ``estimators.Estimator(...)`` call of "Adding an estimator", as written."""
  with open(os.path.join(REPO_ROOT, "README.md")) as f:
    readme = f.read()
  section = readme[readme.index("### Adding an estimator") :]
  block = re.search(r"```python\n(.*?)```", section, flags=re.S).group(1)
  start = block.index("estimators.Estimator(")
  depth, end = 0, start
  for end in range(start, len(block)):  # The call ends at its matching parenthesis.
    depth += {"(": 1, ")": -1}.get(block[end], 0)
    if depth == 0 and block[end] == ")":
      break
  return block[start : end + 1]


def _copy_tracked_files(dest):
  listed = subprocess.run(
    ["git", "ls-files", "-z"], cwd=REPO_ROOT, capture_output=True, check=True
  ).stdout.decode()
  for rel in filter(None, listed.split("\0")):
    if rel.startswith(("docs/", "notebooks/")) or not os.path.isfile(os.path.join(REPO_ROOT, rel)):
      continue  # The committed results and notebooks play no part in these tests.
    os.makedirs(os.path.dirname(os.path.join(dest, rel)) or dest, exist_ok=True)
    shutil.copyfile(os.path.join(REPO_ROOT, rel), os.path.join(dest, rel))


def test_adding_an_estimator_as_readme_says_keeps_the_registry_tests_green(tmp_path):
  record = _readme_record()
  assert 'name="my_estimator"' in record
  copy = tmp_path / "repo"
  _copy_tracked_files(copy)
  builtin = copy / "experiments" / "estimators" / "builtin.py"
  # builtin.py imports Estimator and the unbiasedness rules by name, so the record's
  # `estimators.` prefixes go; my_fn is README's placeholder for the new function.
  text = builtin.read_text().replace("BUILTIN = tuple(_ENTRIES)", "")
  text += (
    "\n\ndef my_fn(rewards, k, log_ratio=None, weights=None):\n"
    "  return 2.0 * maxk.max_at_k_advantages(rewards, k, baseline='loo_minus_one')\n\n\n"
    f"_ENTRIES.append(\n  {record.replace('estimators.', '')}\n)\n\n"
    "BUILTIN = tuple(_ENTRIES)\n"
  )
  builtin.write_text(text)
  check = "from experiments import estimators; print(estimators.names()[-1])"
  env = {**os.environ, "PYTHONPATH": str(copy)}
  named = subprocess.run(
    [sys.executable, "-c", check], cwd=copy, env=env, capture_output=True, text=True, timeout=WAIT_S
  )
  assert named.stdout.strip() == "my_estimator", named.stderr
  tests = subprocess.run(
    [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *_REGISTRY_TESTS],
    cwd=copy,
    env=env,
    capture_output=True,
    text=True,
    timeout=WAIT_S,
  )
  assert tests.returncode == 0, tests.stdout[-3000:] + tests.stderr[-2000:]
