"""Planting false statements into generated README text, for the checkers' tests."""

import re


def plant(text, old, new):
  """``text`` with the first occurrence of ``old`` (whitespace-insensitive, so across
  line breaks) replaced by ``new``."""
  pattern = r"\s+".join(re.escape(w) for w in old.split())
  planted, count = re.subn(pattern, new, text, count=1)
  assert count == 1, old
  return planted
