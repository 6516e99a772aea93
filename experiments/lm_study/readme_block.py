"""A README's generated block: the text between its marker lines, replaced or read,
and where a committed block first differs from the generated one.

Each block (:mod:`~experiments.lm_study.readme_8seed`,
:mod:`~experiments.lm_study.readme_matched_kl`) has its own markers: a begin line
starting with its ``BEGIN`` (which names the binary that writes it and the test that
checks it) and an end line starting with its ``END``.
"""

from __future__ import annotations

from collections.abc import Sequence


def replace_block(
  readme: str,
  body: str,
  *,
  begin: str,
  end: str,
  begin_line: str,
  end_line: str,
) -> str:
  """``readme`` with the text between its marker lines (lines starting with ``begin``
  and ``end``) replaced by ``body``, the markers by ``begin_line`` and ``end_line``.

  Raises:
    ValueError: unless ``readme`` has exactly one begin and one end marker line, in
      that order.
  """
  lines = readme.split("\n")
  first, last = marker_lines(lines, begin, end)
  return "\n".join(lines[:first] + [begin_line, body, end_line] + lines[last + 1 :])


def marker_lines(lines: Sequence[str], begin: str, end: str) -> tuple[int, int]:
  """The indices of ``lines``' begin and end marker lines (:func:`replace_block`).

  Raises:
    ValueError: as :func:`replace_block`.
  """
  starts = [i for i, line in enumerate(lines) if line.startswith(begin)]
  ends = [i for i, line in enumerate(lines) if line.startswith(end)]
  if len(starts) != 1 or len(ends) != 1 or ends[0] < starts[0]:
    raise ValueError(f"readme must hold one block between a {begin!r} and an {end!r} line.")
  return starts[0], ends[0]


def block_of(readme: str, *, begin: str, end: str) -> str:
  """The text between ``readme``'s marker lines (:func:`replace_block`'s ``body``).

  Raises:
    ValueError: as :func:`replace_block`.
  """
  lines = readme.split("\n")
  first, last = marker_lines(lines, begin, end)
  return "\n".join(lines[first + 1 : last])


def first_difference(committed: str, generated: str) -> str | None:
  """One line saying where ``committed`` first differs from ``generated``, or None."""
  if committed == generated:
    return None
  a, b = committed.split("\n"), generated.split("\n")
  i = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
  x = a[i] if i < len(a) else "<end>"
  y = b[i] if i < len(b) else "<end>"
  j = next((j for j, (p, q) in enumerate(zip(x, y)) if p != q), min(len(x), len(y)))
  return (
    f"line {i + 1} of the block differs from the generated one at column {j + 1}: "
    f"{x[max(0, j - 30) : j + 30]!r} vs {y[max(0, j - 30) : j + 30]!r}"
  )
