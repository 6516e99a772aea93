"""The committed design of the LM study (experiments/lm/configs/study.py, docs/lm_study)
is what its declared rules compute from its committed pilot and the 8-seed study."""

import json
import os

import pytest

from experiments.lm import validation
from experiments.lm.configs import study
from experiments.lm_study import design_markdown
from experiments.lm_study import design_note

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
DOCS = os.path.join(_ROOT, "docs", "lm_study")


@pytest.fixture(name="result", scope="module")
def _result():
  cwd = os.getcwd()
  os.chdir(_ROOT)  # The config names its files relative to the repository.
  try:
    return design_note.compute(study)
  finally:
    os.chdir(cwd)


@pytest.mark.slow  # Recomputes the whole design (~17 s; README's second test step).
def test_the_config_holds_the_values_the_rules_compute(result):
  assert design_note.check_config(study, result) == []
  assert study.MATCHED_RUN in {r.replace("[lr=", "_lr").rstrip("]") for r in study.RUNS}


@pytest.mark.slow  # Recomputes the whole design (~17 s; README's second test step).
def test_the_committed_note_and_tables_are_the_computed_ones(result):
  with open(os.path.join(DOCS, "DESIGN.md")) as f:
    assert f.read() == design_markdown.render(study, result)
  with open(os.path.join(DOCS, "design.json")) as f:
    design = json.load(f)
  assert design["design"] == result["design"]
  assert design["matched_learning_rate"] == result["matched_learning_rate"]


def test_the_primary_family_and_the_sweep_follow_the_design():
  primary = [c for c in study.CONTRASTS if c.family == "primary"]
  assert len(primary) == study.FAMILY_SIZE == 4
  assert all(c.margin == study.MARGIN for c in primary)
  assert {c.at_kl for c in primary} == {None, study.KL_LEVEL}
  assert len({c.question for c in study.CONTRASTS}) == len(study.CONTRASTS)
  with open(os.path.join(_ROOT, "launch", "sweeps", "lm_study.json")) as f:
    sweep = json.load(f)
  assert sweep["grid"]["config"] == [study.CONFIG_PATH]
  assert sweep["grid"]["config.seed"] == list(study.SEEDS) == list(range(study.NUM_SEEDS))


def test_the_config_is_valid_and_names_its_design_note():
  config = study.get_config()
  valid = validation.validate_config(config, device_count=1)
  assert [r.name for r in valid.runs] == ["grpo", "max_at_k_k8", study.MATCHED_RUN]
  assert config.study_design == "docs/lm_study/DESIGN.md"
  assert config.eval.kl and config.eval.common_keys and config.task.novel_answers
  assert config.eval.num_prompts == study.NUM_PROBLEMS
