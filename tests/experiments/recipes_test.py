"""README's recipes followed as written, in a copy of the repository.

*Adding an estimator.*
The recipe says a new estimator is one record in ``experiments/estimators/builtin.py``
and that the tests read the registry. Here README's record (its
``estimators.Estimator(...)`` call, taken from README.md, with a function for its
``fn=my_fn``) is appended to ``builtin.py`` in a copy of the tracked files, and the
registry's tests and the configs' checks run there: they must pass with the new
estimator among the built-ins, as they do here.

*Adding a task.* README's three steps, each done as it says: the toy task of
``tests/experiments/lm/toy_task.py`` becomes ``experiments/lm/tasks/reverse.py`` with
``registry.register`` at its end (step 1 and 2), its import goes into the package's
``__init__.py`` (step 2), and it joins ``TASK_CASES``, ``NEAR_RULES`` and the
near-signature cases of ``tests/experiments/lm/tasks_test.py`` (step 3); that test file
then passes in the copy with the new task among the three shipped ones.
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
# The tests that README's "Adding a task" has a new task join.
_TASK_TESTS = "tests/experiments/lm/tasks_test.py"


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


def _python_in(copy, *args):
  """Python with ``args`` in the copy, importing the copy's packages."""
  return subprocess.run(
    [sys.executable, *args],
    cwd=copy,
    env={**os.environ, "PYTHONPATH": str(copy)},
    capture_output=True,
    text=True,
    timeout=WAIT_S,
  )


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
  named = _python_in(
    copy, "-c", "from experiments import estimators; print(estimators.names()[-1])"
  )
  assert named.stdout.strip() == "my_estimator", named.stderr
  tests = _python_in(copy, "-m", "pytest", "-q", "-p", "no:cacheprovider", *_REGISTRY_TESTS)
  assert tests.returncode == 0, tests.stdout[-3000:] + tests.stderr[-2000:]


def _insert_after(text, anchor, addition):
  assert text.count(anchor) == 1, anchor
  return text.replace(anchor, anchor + addition)


def test_adding_a_task_as_readme_says_passes_the_task_tests(tmp_path):
  readme = open(os.path.join(REPO_ROOT, "README.md")).read()
  recipe = readme[readme.index("### Adding a task") :]
  recipe = recipe[: recipe.index("\n## ")]
  for step in (
    "experiments/lm/tasks/NAME.py",
    'registry.register("NAME", TheTask)',
    "TASK_CASES",
    "NEAR_RULES",
    _TASK_TESTS,
  ):
    assert step in recipe, step  # The steps this test follows are the ones README gives.
  copy = tmp_path / "repo"
  _copy_tracked_files(copy)
  toy = open(os.path.join(REPO_ROOT, "tests", "experiments", "lm", "toy_task.py")).read()
  # Step 1: the task's module, the toy task's class as it is (its imports and the class).
  module = toy[
    toy.index("from experiments.lm import tasks") : toy.index("@contextlib.contextmanager")
  ]
  module = (
    '"""Reverse the digits of a number."""\n\nimport dataclasses\nfrom typing import ClassVar\n\n'
    "import numpy as np\n\n"
    + module.replace(
      "from experiments.lm import tasks\n", "from experiments.lm.tasks import base\n"
    )
    .replace(
      "from experiments.lm.configs import tiny\n", "from experiments.lm.tasks import registry\n"
    )
    .replace("tasks.Example", "base.Example")
    .replace("tasks.Score", "base.Score")
    # Step 2: the registration at the end of the module.
    + 'registry.register("reverse", Reverse)\n'
  )
  (copy / "experiments" / "lm" / "tasks" / "reverse.py").write_text(module)
  # Step 2: its import in the package.
  init = copy / "experiments" / "lm" / "tasks" / "__init__.py"
  init.write_text(
    _insert_after(
      init.read_text(),
      "from experiments.lm.tasks.registry import register\n",
      "from experiments.lm.tasks.reverse import Reverse  # noqa: F401\n",
    )
  )
  # Step 3: the task in TASK_CASES, its pairwise rule in NEAR_RULES and its near cases.
  tasks_test = copy / _TASK_TESTS
  text = _insert_after(
    tasks_test.read_text(), '  ("program", {}),\n', '  ("reverse", {"num_digits": 3}),\n'
  )
  text = _insert_after(
    text,
    '  "program": _program_near,\n',
    '  "reverse": lambda task, a, b: a[0] // 10 == b[0] // 10,\n',
  )
  text = _insert_after(
    text, '\n    ("addition", {"num_digits": 1}),\n', '    ("reverse", {"num_digits": 3}),\n'
  )
  tasks_test.write_text(text)
  named = _python_in(copy, "-c", "from experiments.lm import tasks; print(sorted(tasks.TASKS))")
  assert "'reverse'" in named.stdout, named.stderr
  tests = _python_in(copy, "-m", "pytest", "-v", "-p", "no:cacheprovider", _TASK_TESTS)
  assert tests.returncode == 0, tests.stdout[-3000:] + tests.stderr[-2000:]
  # The new task ran in the tests over every task and in the near-signature test.
  ran = [line for line in tests.stdout.splitlines() if "[reverse-" in line]
  assert len(ran) == 2 and all("PASSED" in line for line in ran), tests.stdout[-3000:]
