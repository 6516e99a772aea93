"""License, citation, changelog and version: declared once, and consistent."""

import os
import re

import tomllib

import maxk

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _read(name):
  with open(os.path.join(_ROOT, name), encoding="utf-8") as f:
    return f.read()


def test_license_is_apache_2_and_declared_in_pyproject():
  text = _read("LICENSE")
  assert text.split()[:4] == ["Apache", "License", "Version", "2.0,"]
  assert "END OF TERMS AND CONDITIONS" in text
  project = tomllib.loads(_read("pyproject.toml"))["project"]
  assert project["license"] == "Apache-2.0"
  assert project["license-files"] == ["LICENSE"]


def test_version_is_defined_once_and_every_record_agrees():
  pyproject = tomllib.loads(_read("pyproject.toml"))
  assert "version" not in pyproject["project"]
  assert pyproject["project"]["dynamic"] == ["version"]
  attr = pyproject["tool"]["setuptools"]["dynamic"]["version"]["attr"]
  assert attr == "maxk._version.__version__"
  assert re.fullmatch(r"\d+\.\d+\.\d+", maxk.__version__)
  # The newest release in the changelog and the citation file name this version.
  changelog = _read("CHANGELOG.md")
  releases = re.findall(r"^## \[(\d+\.\d+\.\d+)\] - (\d{4}-\d{2}-\d{2})$", changelog, flags=re.M)
  assert releases[0][0] == maxk.__version__
  assert "## [Unreleased]" in changelog.split(f"## [{maxk.__version__}]")[0]
  citation = _read("CITATION.cff")
  assert re.search(r"^version: (\S+)$", citation, flags=re.M).group(1) == maxk.__version__
  released = re.search(r'^date-released: "(\S+)"$', citation, flags=re.M).group(1)
  assert released == releases[0][1]


def test_readme_citing_section_lists_every_paper_of_the_citation_file():
  readme = _read("README.md")
  citing = readme.split("## Citing", 1)[1].split("\n## ", 1)[0]
  cited = re.findall(r'value: "arXiv:(\d{4}\.\d{4,5})"', _read("CITATION.cff"))
  assert len(cited) >= 9
  assert [arxiv for arxiv in cited if arxiv not in citing] == []
  assert "CITATION.cff" in citing
