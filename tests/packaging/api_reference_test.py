"""The API reference (docs/api, Sphinx) builds without warnings and covers the public API."""

import html
import os
import re
import subprocess
import sys

import pytest

from docs.api import maxk_docstrings
import maxk
from tests import WAIT_S

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.mark.slow  # Integration: a binary in a subprocess (README's second test step).
def test_reference_builds_without_warnings_and_documents_every_public_name(tmp_path):
  out = tmp_path / "html"
  cmd = [sys.executable, "-m", "sphinx", "-E", "-W", "--keep-going", "-q", "-b", "html"]
  cmd += ["-d", str(tmp_path / "doctrees"), os.path.join(_ROOT, "docs", "api"), str(out)]
  result = subprocess.run(cmd, capture_output=True, text=True, timeout=WAIT_S)
  assert result.returncode == 0, result.stdout + result.stderr
  assert "WARNING" not in result.stderr and "ERROR" not in result.stderr, result.stderr
  pages = {p.name: p.read_text(encoding="utf-8") for p in out.glob("*.html")}
  public = [f"maxk.{name}" for name in maxk.__all__]
  public += [f"maxk.testing.{name}" for name in maxk.testing.__all__]
  for name in public:
    anchor = f'id="{name}"'
    holders = [page for page, text in pages.items() if anchor in text]
    assert len(holders) == 1, (name, holders)
    # The entry's description (the docstring) is not empty.
    text = pages[holders[0]]
    body = re.search(re.escape(anchor) + r".*?</dt>\s*<dd>(.*?)</dd>", text, flags=re.S)
    assert body and html.unescape(re.sub(r"<[^>]+>", "", body.group(1))).strip(), name


def test_displayed_formulas_become_literal_blocks_and_bars_are_escaped():
  lines = [
    "Summary with |x|, Pass@k-Training and ``a|b@c``.",
    "",
    "The estimate is",
    "",
    "  S(i) = Σ_{|I|=k} max_I r",
    "       = Σ_j w_j r_(j),",
    "",
    "and the rest.",
    "",
    "Args:",
    "  k: static int.",
    "",
    "    More about k.",
    "",
    "* a list item",
    "  continued.",
  ]
  rst = maxk_docstrings.to_rst(lines)
  assert rst[0] == "Summary with \\|x\\|, Pass\\@k-Training and ``a|b@c``."
  start = rst.index("::")
  assert rst[start - 1] == "" and rst[start - 2] == "The estimate is" and rst[start + 1] == ""
  # The formula's lines, alignment and bars unchanged inside the literal block.
  assert rst[start + 2 : start + 4] == lines[4:6]
  assert rst.count("::") == 1  # section bodies and list items are not formulas
  assert rst[rst.index("Args:") :] == lines[lines.index("Args:") :]


def test_formula_right_after_a_paragraph_is_separated():
  rst = maxk_docstrings.to_rst(["so that", "  a = b", "holds."])
  assert rst == ["so that", "", "::", "", "  a = b", "", "holds."]
  assert maxk_docstrings.to_rst(["See also:", "  a = b"]) == ["See also:", "  a = b"]


def test_missing_names_and_constant_docstrings_are_found():
  documented = ["maxk.pass_at_k", "maxk.max_at_k"]
  assert maxk_docstrings.missing_from_reference(["max_at_k", "pass_at_k"], documented) == []
  assert maxk_docstrings.missing_from_reference(["bon_pmf", "max_at_k"], documented) == ["bon_pmf"]
  doc = maxk_docstrings.constant_docstring("BASELINES", maxk.BASELINES)
  assert "max_at_k_advantages" in " ".join(doc)
  assert maxk_docstrings.constant_docstring("BASELINES", ("none",)) == []
