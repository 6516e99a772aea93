"""Shared by the evaluation tools' integration tests (``*_tool_test.py``).

Each tool is installed by ``docs/evaluate/real/make_real.py`` in an environment of
its own under ``out/eval-tools`` (pinned in ``make_real.PINS``, reused while the pins
and the Python version stay the same, built in a temporary folder and renamed when
complete), then run into a temporary folder.  As with tunix
(tests/integration/tunix_test.py): where pip cannot install the tool (no network, no
wheel for this Python) the test is skipped with pip's error, unless
``MAXK_REQUIRE_EVAL_TOOLS=1`` (as in CI) makes that a failure; every failure after
the install is a failure.
"""

import os

import pytest

from docs.evaluate.real import make_real

REQUIRE_ENV = "MAXK_REQUIRE_EVAL_TOOLS"
ENVS = make_real.ENVS


def _skip_or_fail(reason: str) -> None:
  if os.environ.get(REQUIRE_ENV) == "1":
    pytest.fail(f"{reason}; {REQUIRE_ENV}=1 requires it.")
  pytest.skip(f"{reason}; {REQUIRE_ENV}=1 makes this a failure (as in CI).")


def run_tool(tool: str, out: str) -> str:
  """Installs ``tool`` (or reuses its environment), runs it into ``out``; its version."""
  try:
    bin_dir = make_real.install(tool, ENVS)
  except make_real.InstallError as e:
    _skip_or_fail(str(e))
  make_real.MAKERS[tool](bin_dir, out)
  return make_real.version(tool, bin_dir)
