"""README.md stays true: its commands and its training-step example."""

import os
import re
import shlex
import subprocess
import sys

import jax
import numpy as np
import pytest

import maxk
from tests import WAIT_S

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _readme():
  with open(os.path.join(_ROOT, "README.md")) as f:
    return f.read()


def test_training_step_example_runs_and_learns():
  blocks = re.findall(r"```python\n(.*?)```", _readme(), flags=re.S)
  example = next(b for b in blocks if "def train_step" in b)
  namespace = {}
  exec(compile(example, "README.md", "exec"), namespace)  # pylint: disable=exec-used
  # Starting from uniform logits max@4 of linspace(0, 1, 10) is 0.7533; training
  # must move the policy towards the best answer.
  probs = jax.nn.softmax(namespace["logits_PxA"])
  values = np.broadcast_to(np.linspace(0, 1, 10, dtype=np.float32), probs.shape)
  assert float(np.mean(maxk.max_at_k_exact(probs, values, 4))) > 0.9


@pytest.mark.parametrize(
  "marker", ["maxk.lift_rank_weights", "maxk.pass_at_k_variance", "maxk.selected_at_k("]
)
def test_rank_objective_and_uncertainty_examples_run(marker):
  """The examples run as written (the rank one asserts the MaxRL mixture identity)."""
  blocks = re.findall(r"```python\n(.*?)```", _readme(), flags=re.S)
  (example,) = [b for b in blocks if marker in b]
  exec(compile(example, "README.md", "exec"), {})  # pylint: disable=exec-used


def test_bias_check_example_prints_what_its_comment_says(capsys):
  blocks = re.findall(r"```python\n(.*?)```", _readme(), flags=re.S)
  (example,) = [b for b in blocks if "maxk.testing.gradient_bias" in b]
  exec(compile(example, "README.md", "exec"), {})  # pylint: disable=exec-used
  verdict, size = capsys.readouterr().out.split()
  claimed = re.search(r"# (\w+) ([\d.]+):", example)
  assert verdict == claimed.group(1) and f"{float(size):.2f}" == claimed.group(2)


def test_covariance_and_floor_example_prints_what_its_comment_says(capsys):
  blocks = re.findall(r"```python\n(.*?)```", _readme(), flags=re.S)
  (example,) = [b for b in blocks if "maxk.testing.variance_floor(" in b]
  code = [line for line in example.strip().splitlines() if line and not line.startswith("import")]
  assert len(code) == 5  # README says "in five lines after the import"
  exec(compile(example, "README.md", "exec"), {})  # pylint: disable=exec-used
  printed = capsys.readouterr().out.strip()
  claimed = re.search(r"# (\(\d+, \d+\) [\d.]+):", example).group(1)
  assert printed == claimed


@pytest.mark.parametrize(
  "marker",
  [
    "maxk.soft_bon_pmf",  # Best-of-n, Best-of-Poisson, the tilt and soft best-of-n at one KL.
    "maxk.chi2_kl",  # Best-of-n against the χ² optimum at matched KL; best n under a proxy.
  ],
)
def test_example_prints_what_its_comment_says(capsys, marker):
  blocks = re.findall(r"```python\n(.*?)```", _readme(), flags=re.S)
  (example,) = [b for b in blocks if marker in b]
  exec(compile(example, "README.md", "exec"), {})  # pylint: disable=exec-used
  printed = capsys.readouterr().out.strip().splitlines()
  claimed = example.split("# Prints:\n", 1)[1].strip().splitlines()
  assert printed == [line.removeprefix("# ") for line in claimed]


def test_ci_runs_readme_test_command():
  """README's command 2 is install, the fast tests, then the integration tests (`-m slow`),
  and .ci/run runs each of its steps in that order."""
  readme = _readme()
  test_line = next(
    line for line in readme.splitlines() if "pytest" in line and line.startswith("python3")
  )
  steps = [step.strip() for step in test_line.split("&&")]
  pytest_steps = [step for step in steps if " pytest " in step]
  assert len(pytest_steps) == 2 and pytest_steps[1] == pytest_steps[0] + " -m slow"
  with open(os.path.join(_ROOT, ".ci", "run")) as f:
    ci = f.read()
  install = steps[steps.index(pytest_steps[0]) - 1]
  positions = [ci.index(install + "\n")] + [ci.index(step + "\n") for step in pytest_steps]
  assert positions == sorted(positions)


def test_reproduction_time_is_the_sum_of_the_stage_estimates():
  from experiments.reproduce import stages as stages_lib  # pylint: disable=g-import-not-at-top

  # The stages' expected seconds were measured on 2 idle cores (README's command 1 on a
  # fresh clone); README's times are theirs, rounded to minutes.
  first = next(line for line in _readme().splitlines() if "experiments.reproduce" in line)
  assert "out/reproduce" in first
  times = re.search(
    r"~(\d+) min on 2 idle CPU cores: install ~(\d+) min, reproduction ~(\d+) min", _readme()
  )
  total, install, reproduction = (int(g) for g in times.groups())
  full_s = sum(s.expected_s for s in stages_lib.stages(seed=0, smoke=False))
  assert reproduction == round(full_s / 60) and total == install + reproduction
  smoke_s = sum(s.expected_s for s in stages_lib.stages(seed=0, smoke=True))
  smoke_min = re.search(r"`--smoke` runs tiny sizes \(~(\d+(?:\.\d)?) min in all", _readme())
  assert float(smoke_min.group(1)) == round(smoke_s / 60, 1)


@pytest.mark.slow  # the commands in subprocesses (README's second test step)
def test_evaluating_samples_tables_are_what_the_commands_print():
  """Each `python -m maxk.evaluate` command of the section, and the text block after it."""
  section = _readme().split("## Evaluating samples", 1)[1].split("\n## ", 1)[0]
  pairs = re.findall(
    r"```bash\n(python -m maxk\.evaluate [^\n]*)\n```\s*```text\n(.*?)```", section, flags=re.S
  )
  assert len(pairs) == 2 == section.count("python -m maxk.evaluate ")  # made-up, then lm-eval's
  for command, printed in pairs:
    result = subprocess.run(
      [sys.executable, *shlex.split(command)[1:]],
      cwd=_ROOT,
      env={**os.environ, "PYTHONPATH": _ROOT, "JAX_PLATFORMS": "cpu"},  # this checkout's maxk
      capture_output=True,
      text=True,
      timeout=WAIT_S,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == printed, command
