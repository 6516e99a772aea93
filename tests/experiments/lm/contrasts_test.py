"""Tests of experiments.lm.contrasts: the declared comparisons a study config lists
(their tests across seeds: tests/experiments/lm_study/significance_test.py)."""

import math

import pytest

from experiments.lm import contrasts
from experiments.lm.configs import study_8seed as study_config

# ----------------------------------------------------------------------- Contrast


def test_contrast_fields_are_validated():
  c = contrasts.Contrast("grpo", "base", "pass", "n", "GRPO vs base")
  assert c.metric == "pass_at_k" and c.resolve_k(32) == 32
  assert contrasts.Contrast("a", "b", "max", 4, "q").metric == "max_at_k"
  with pytest.raises(ValueError, match="Contrast.k=8 exceeds the evaluation's n=4"):
    contrasts.Contrast("a", "b", "max", 8, "q").resolve_k(4)
  for kwargs, field in (
    ({"a": ""}, "Contrast.a"),
    ({"b": 3}, "Contrast.b"),
    ({"b": "grpo"}, "Contrast.b"),  # Same as a.
    ({"measure": "mean"}, "Contrast.measure"),
    ({"k": 0}, "Contrast.k"),
    ({"k": True}, "Contrast.k"),
    ({"k": "m"}, "Contrast.k"),
    ({"k": 2.0}, "Contrast.k"),
    ({"question": " "}, "Contrast.question"),
    ({"margin": 0.0}, "Contrast.margin"),
    ({"margin": -0.02}, "Contrast.margin"),
    ({"margin": math.inf}, "Contrast.margin"),
    ({"margin": True}, "Contrast.margin"),
    ({"family": ""}, "Contrast.family"),
    ({"at_kl": 0.0}, "Contrast.at_kl"),
    ({"at_kl": math.nan}, "Contrast.at_kl"),
  ):
    fields = {"a": "grpo", "b": "base", "measure": "pass", "k": 1, "question": "q", **kwargs}
    with pytest.raises(ValueError, match=field):
      contrasts.Contrast(**fields)


def test_the_study_declares_eight_distinct_contrasts():
  declared = study_config.CONTRASTS
  assert len(declared) == 8
  assert len({c.question for c in declared}) == 8
  assert len({(c.a, c.b, c.measure, c.k) for c in declared}) == 8
