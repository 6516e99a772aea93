"""The distribution works outside the repository: build, install into a fresh venv, run.

One module-scoped fixture copies the repository's files (no .git, .venv, out/ or
caches) to a temporary folder, runs ``python -m build`` there (an sdist, and the wheel
built from that sdist), creates a fresh virtual environment outside the repository,
installs the wheel with only its own dependencies (pinned to requirements.txt's
versions through a constraints file, so pip does not fetch newer releases), and runs
``smoke.py`` with that environment's Python from a temporary working directory.
Nothing is written inside the repository.
"""

import ast
import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile

import pytest

import maxk
from tests import WAIT_S

# Integration: builds and installs the distribution (README's second test step, `-m slow`).
pytestmark = pytest.mark.slow

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_IGNORED = shutil.ignore_patterns(
  ".git", ".venv", "out", "build", "dist", "*.egg-info", "__pycache__", ".*_cache", ".hypothesis"
)
# Top-level folders of the repository that are not the library.
_NOT_LIBRARY = ("benchmarks", "docs", "experiments", "launch", "notebooks", "tests")


def _run(cmd, **kwargs):
  result = subprocess.run(cmd, capture_output=True, text=True, **kwargs)
  assert result.returncode == 0, f"{cmd} failed:\n{result.stdout}\n{result.stderr}"
  return result


@pytest.fixture(scope="module")
def dist(tmp_path_factory):
  """Paths of the built wheel and sdist, and the smoke test's output from the fresh env."""
  tmp = tmp_path_factory.mktemp("packaging")
  source, out = tmp / "source", tmp / "dist"
  shutil.copytree(_ROOT, source, ignore=_IGNORED)
  _run([sys.executable, "-m", "build", "--outdir", str(out), str(source)], timeout=WAIT_S)
  (wheel,) = out.glob("*.whl")
  (sdist,) = out.glob("*.tar.gz")

  env_dir = tmp / "env"  # no pip inside: this Python's pip installs into it (--python)
  _run([sys.executable, "-m", "venv", "--without-pip", str(env_dir)])
  env_python = env_dir / "bin" / "python"
  constraints = os.path.join(_ROOT, "requirements.txt")
  pip = [sys.executable, "-m", "pip", "--python", str(env_python), "install", "-q"]
  _run([*pip, "-c", constraints, str(wheel)], timeout=WAIT_S)

  cwd = tmp / "cwd"  # outside the repository, so `import maxk` cannot find the source
  cwd.mkdir()
  shutil.copy(os.path.join(os.path.dirname(__file__), "smoke.py"), cwd)
  env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
  env["JAX_PLATFORMS"] = "cpu"
  smoke = subprocess.run(
    [str(env_python), "smoke.py", str(env_dir)],
    cwd=cwd,
    env=env,
    capture_output=True,
    text=True,
    timeout=WAIT_S,
  )
  return {"wheel": wheel, "sdist": sdist, "smoke": smoke}


def test_build_makes_wheel_and_sdist_of_the_version(dist):
  version = maxk.__version__
  assert dist["wheel"].name == f"maxk-{version}-py3-none-any.whl"
  assert dist["sdist"].name == f"maxk-{version}.tar.gz"


def test_wheel_holds_the_library_and_nothing_else(dist):
  names = zipfile.ZipFile(dist["wheel"]).namelist()
  info = f"maxk-{maxk.__version__}.dist-info/"
  assert "maxk/py.typed" in names
  assert f"{info}licenses/LICENSE" in names
  assert all(name.startswith(("maxk/", info)) for name in names), names
  assert not [n for n in names if n.split("/")[0] in _NOT_LIBRARY]
  # Every module of the source package is in the wheel.
  library = os.path.join(_ROOT, "maxk")
  sources = {
    os.path.relpath(os.path.join(folder, f), _ROOT)
    for folder, _, files in os.walk(library)
    for f in files
    if f.endswith(".py")
  }
  assert sources <= set(names), sorted(sources - set(names))


def test_wheel_metadata_declares_license_and_only_the_imported_dependencies(dist):
  metadata = zipfile.ZipFile(dist["wheel"]).read(f"maxk-{maxk.__version__}.dist-info/METADATA")
  metadata = metadata.decode()
  assert "License-Expression: Apache-2.0" in metadata
  required = {
    re.match(r"[A-Za-z0-9._-]+", line.split(":", 1)[1].strip()).group(0).lower()
    for line in metadata.splitlines()
    if line.startswith("Requires-Dist:")
  }
  # Third-party modules that maxk/ imports (its own and the standard library aside).
  imported = set()
  for folder, _, files in os.walk(os.path.join(_ROOT, "maxk")):
    for f in (f for f in files if f.endswith(".py")):
      with open(os.path.join(folder, f)) as source:
        tree = ast.parse(source.read())
      for node in ast.walk(tree):
        if isinstance(node, ast.Import):
          imported |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
          imported.add(node.module.split(".")[0])
  third_party = imported - set(sys.stdlib_module_names) - {"maxk"}
  assert required == third_party


def test_sdist_builds_the_wheel_and_carries_license_changelog_citation(dist):
  with tarfile.open(dist["sdist"]) as sdist:
    names = {name.split("/", 1)[1] for name in sdist.getnames() if "/" in name}
  assert {"LICENSE", "CHANGELOG.md", "CITATION.cff", "README.md", "pyproject.toml"} <= names
  assert "maxk/py.typed" in names
  assert not [n for n in names if n.split("/")[0] in _NOT_LIBRARY]


def test_public_api_runs_from_the_wheel_in_a_fresh_environment(dist):
  smoke = dist["smoke"]
  assert smoke.returncode == 0, smoke.stdout + smoke.stderr
  assert f"ok {len(maxk.__all__)} public names import" in smoke.stdout
  assert smoke.stdout.rstrip().endswith("smoke test passed")
