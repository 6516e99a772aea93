"""Tests of experiments.demo: it prints every registered estimator."""

import dataclasses

import numpy as np
import pytest

from experiments import demo
from experiments import estimators as estimators_lib
from tests import binaries


def test_report_covers_the_registry():
  toy = dataclasses.replace(estimators_lib.get("loo"), name="toy_demo", label="a toy estimator")
  with estimators_lib.registered(toy):
    text = demo.report(4, 0)
  for e in [*estimators_lib.ESTIMATORS.values(), toy]:
    assert f"\n{e.objective}/{e.name}: {e.label}; unbiased: {e.unbiased.rule}" in text, e.name
  # The toy repeats loo's advantages (same function) under its own name.
  blocks = text.split("\n\n")
  loo = next(b for b in blocks if b.startswith("max/loo:"))
  toy_block = next(b for b in blocks if b.startswith("max/toy_demo:"))
  assert loo.split("\n", 1)[1] == toy_block.split("\n", 1)[1]
  rewards, _ = demo.example_batch(0)
  assert np.all((rewards[1] == 0) | (rewards[1] == 1))
  with pytest.raises(ValueError, match="k=9"):
    demo.report(9, 0)


@pytest.mark.slow  # Integration: a binary in a subprocess (README's second test step).
def test_binary_runs_and_refuses_a_bad_k():
  proc = binaries.run("experiments.demo", "--k=3")
  assert "maxrl/maxrl_no_cv" in proc.stdout and "top_m/loo_centered" in proc.stdout
  errors = binaries.flag_errors("experiments.demo.__main__", [["--k=1"], ["--k=9"], ["--k=8"]])
  assert "--k" in errors[0] and "--k" in errors[1] and errors[2] is None
