r"""Writes one of the repository README's LM-study blocks from a study's committed files.

Usage::

  python -m experiments.lm_study.readme --contrasts=docs/lm_study_8seed/contrasts.csv \
    --readme=README.md [--check]
  python -m experiments.lm_study.readme --contrasts=docs/lm_study/contrasts.csv \
    --readme=README.md [--check]

--block chooses the block; its default, auto, takes the study of the contrasts
file: matched_kl where contrasts.csv has the at_kl, family and
num_seeds_reached columns (the matched-KL study, docs/lm_study), 8seed
otherwise.

* 8seed: the block between README's "<!-- lm-study:begin" and
  "<!-- lm-study:end" lines (experiments.lm_study.readme_8seed: the
  declared-contrast table, counts and verdict sentences from contrasts.csv; the
  other numbers from the CSV files beside it, the runs' launch records, the first
  study's contrasts.csv and the null-simulation test).
* matched_kl: the block between "<!-- lm-study-matched-kl:begin" and
  "<!-- lm-study-matched-kl:end" (experiments.lm_study.readme_matched_kl: the primary
  and secondary verdicts, matched-KL seeds and table from contrasts.csv; the design
  from design.json, the runs from provenance.csv, an exploratory frontier sentence
  from frontier.csv and whether the summary is incomplete from its README, all
  beside contrasts.csv; the 8-seed study's training reward from its runs'
  steps.csv).

Without --check the block is rewritten in place; with --check nothing is written,
and a block that differs from the generated one exits with code 1 and one line
saying where.
"""

from __future__ import annotations

from collections.abc import Sequence

from absl import flags

from experiments import command_line
from experiments.lm_study import readme_8seed
from experiments.lm_study import readme_block
from experiments.lm_study import readme_matched_kl

_CONTRASTS = flags.DEFINE_string(
  "contrasts", "docs/lm_study_8seed/contrasts.csv", "The study's contrasts.csv."
)
_README = flags.DEFINE_string("readme", "README.md", "The README holding the block.")
_BLOCK = flags.DEFINE_enum(
  "block",
  "auto",
  ["auto", "8seed", "matched_kl"],
  "The block to write: auto takes the study of --contrasts (module docstring).",
)
_CHECK = flags.DEFINE_bool(
  "check", False, "Write nothing; exit 1 with one line if the committed block differs."
)


def main(argv: Sequence[str]) -> None:
  """Rewrites or checks the block (module docstring)."""
  with command_line.one_line_errors(argv, OSError, ValueError, KeyError):
    block = _BLOCK.value
    if block == "auto":
      block = "matched_kl" if readme_matched_kl.is_matched_kl(_CONTRASTS.value) else "8seed"
    with open(_README.value) as f:
      readme = f.read()
    if block == "matched_kl":
      sources = readme_matched_kl.read_sources(_CONTRASTS.value, _README.value)
      body = readme_matched_kl.block_text(sources)
      committed = readme_matched_kl.block_of(readme) if _CHECK.value else ""
      updated = readme_matched_kl.replace_block(readme, body)
    else:
      old = readme_8seed.read_sources(_CONTRASTS.value, _README.value)
      body = readme_8seed.block_text(old)
      committed = readme_8seed.block_of(readme) if _CHECK.value else ""
      updated = readme_8seed.replace_block(readme, body)
    if _CHECK.value:
      difference = readme_block.first_difference(committed, body)
      if difference:
        raise ValueError(f"{_README.value}: {difference}")
      return
  if updated != readme:
    with open(_README.value, "w") as f:
      f.write(updated)


if __name__ == "__main__":
  command_line.run(main)
