"""A task added in one place: the toy task of ``toy_task.py`` and the task registry.

Its end-to-end run (the micro config on the toy task, with a toy estimator) is
``tests/experiments/adding_an_estimator_test.py``'s, so that one LM run proves both.
"""

import os

import pytest

from experiments import config_checks
from experiments.lm import tasks
from experiments.lm import train
from tests.experiments.lm import toy_task


def test_an_unregistered_task_is_refused(tmp_path):
  with pytest.raises(config_checks.ConfigError, match="reverse"):
    train.run(toy_task.micro_config(), str(tmp_path))
  assert not os.listdir(tmp_path)


def test_register_refuses_a_taken_name():
  with toy_task.registered():
    with pytest.raises(ValueError, match="already registered"):
      tasks.register("reverse", toy_task.Reverse)
    tasks.register("renamed", toy_task.Reverse)  # Its tasks are named "reverse".
    try:
      with pytest.raises(ValueError, match="built a task named 'reverse'"):
        tasks.make_task("renamed")
    finally:
      del tasks.TASKS["renamed"]
  assert "reverse" not in tasks.TASKS
