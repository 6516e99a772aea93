r"""The design note of the LM study, written before its runs.

Usage:

  python -m experiments.lm_study.design --workdir=docs/lm_study
  python -m experiments.lm_study.design --workdir=docs/lm_study --check

From the study config (--study_config, default experiments.lm.configs.study),
its pilot's run folders and the earlier study's paired_summary.csv (both named
by the config), it computes the KL-matched learning rate, the matched-KL level, the
power of every primary test over a grid of seeds x held-out problems and the design
the declared rule picks (experiments/lm_study/design_rules.py), and writes DESIGN.md,
power.csv, pilot.csv and design.json in --workdir. It refuses (one line,
exit 1, nothing written) when the config's MATCHED_LEARNING_RATE, KL_LEVEL,
NUM_SEEDS or NUM_PROBLEMS differ from what the rules compute. --check
writes nothing and exits 1 when the committed note differs from the one computed.
"""

from __future__ import annotations

from collections.abc import Sequence
import importlib
import os

from absl import flags

from experiments import command_line
from experiments.lm_study import design_markdown
from experiments.lm_study import design_note
from experiments.lm_study import files

_WORKDIR = flags.DEFINE_string("workdir", "docs/lm_study", "Where the design note goes.")
_STUDY_CONFIG = flags.DEFINE_string(
  "study_config", "experiments.lm.configs.study", "The study config module."
)
_CHECK = flags.DEFINE_bool("check", False, "Only compare with the committed note.")
_DRAWS = flags.DEFINE_integer("draws", 0, "Simulated studies per power cell (0: the config's).")


def main(argv: Sequence[str]) -> None:
  with command_line.one_line_errors(argv, files.StudyError):
    try:
      study = importlib.import_module(_STUDY_CONFIG.value)
    except ImportError as e:
      raise files.StudyError(f"--study_config={_STUDY_CONFIG.value!r}: {e}") from None
    result = design_note.compute(study, draws=_DRAWS.value or study.DRAWS)
    note = design_markdown.render(study, result)
    path = os.path.join(_WORKDIR.value, "DESIGN.md")
    if _CHECK.value:
      committed = open(path).read() if os.path.exists(path) else ""
      if committed != note:
        raise files.StudyError(f"{path} differs from the design computed now.")
      return
    problems = design_note.check_config(study, result)
    if problems:
      raise files.StudyError("the config disagrees: " + "; ".join(problems))
    design_note.write(_WORKDIR.value, study, result, note)


if __name__ == "__main__":
  command_line.run(main)
