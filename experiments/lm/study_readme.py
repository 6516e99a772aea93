r"""Writes the repository README's LM-study block from a study's committed files.

Usage::

  python -m experiments.lm.study_readme --contrasts=docs/lm_study_8seed/contrasts.csv \
    --readme=README.md [--check]

The block between README's "<!-- lm-study:begin" and "<!-- lm-study:end" lines
is generated text (experiments.lm.study.readme_section: the declared-contrast table,
counts and verdict sentences from contrasts.csv; the other numbers from the CSV
files beside it, the runs' launch records, the first study's contrasts.csv and the
null-simulation test). Without --check the block is rewritten in place; with
--check nothing is written, and a block that differs from the generated one exits
with code 1 and one line saying where.
"""

from __future__ import annotations

from collections.abc import Sequence

from absl import app
from absl import flags

from experiments import binary
from experiments.lm.study import readme_section

_CONTRASTS = flags.DEFINE_string(
  "contrasts", "docs/lm_study_8seed/contrasts.csv", "The study's contrasts.csv."
)
_README = flags.DEFINE_string("readme", "README.md", "The README holding the block.")
_CHECK = flags.DEFINE_bool(
  "check", False, "Write nothing; exit 1 with one line if the committed block differs."
)


def main(argv: Sequence[str]) -> None:
  """Rewrites or checks the block (module docstring)."""
  if len(argv) > 1:
    raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
  try:
    sources = readme_section.read_sources(_CONTRASTS.value, _README.value)
    with open(_README.value) as f:
      readme = f.read()
    body = readme_section.block_text(sources)
    if _CHECK.value:
      difference = readme_section.first_difference(readme_section.block_of(readme), body)
      if difference:
        raise SystemExit(f"experiments.lm.study_readme: {_README.value}: {difference}")
      return
    updated = readme_section.replace_block(readme, body)
  except (OSError, ValueError, KeyError) as e:
    raise SystemExit(f"experiments.lm.study_readme: {e}") from None
  if updated != readme:
    with open(_README.value, "w") as f:
      f.write(updated)


if __name__ == "__main__":
  binary.run(main)
