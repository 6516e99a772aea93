"""requirements-lowest.txt pins exactly the lower bounds pyproject.toml declares.

.ci/run installs it into its own environment and runs the library's tests there, so the
declared lower bounds are the tested ones.
"""

import os
import re

import tomllib

from tests import REPO_ROOT


def _pins(text):
  pins = {}
  for line in text.splitlines():
    line = line.split("#", 1)[0].strip()
    if line:
      name, version = line.split("==")
      pins[name.strip().lower()] = version.strip()
  return pins


def test_lowest_requirements_pin_every_declared_lower_bound():
  with open(os.path.join(REPO_ROOT, "pyproject.toml"), "rb") as f:
    dependencies = tomllib.load(f)["project"]["dependencies"]
  with open(os.path.join(REPO_ROOT, "requirements-lowest.txt")) as f:
    pins = _pins(f.read())
  bounds = {}
  for spec in dependencies:
    match = re.fullmatch(r"([A-Za-z0-9_.-]+)>=([0-9.]+)", spec)
    assert match, f"{spec!r}: every library dependency declares a lower bound (name>=version)."
    bounds[match.group(1).lower()] = match.group(2)
  assert {name: pins.get(name) for name in bounds} == bounds
  # jax pins its jaxlib exactly: the lowest jax runs with the jaxlib of its own version.
  assert pins["jaxlib"] == pins["jax"]


def test_ci_runs_the_library_tests_in_the_lowest_environment():
  with open(os.path.join(REPO_ROOT, ".ci", "run")) as f:
    ci = f.read()
  assert "-r requirements-lowest.txt" in ci
  assert re.search(r"lowest/bin/python\"? -m pytest .*tests/maxk", ci)
