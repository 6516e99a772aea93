"""Every binary answers a mistake on its command line (an unknown config field, a config
file that does not exist, an unknown variant, a value that does not parse, an unknown
flag) with one line on stderr naming it and exit code 1, before any work; and Ctrl-C
(SIGINT) inside its main with one line and exit code 130, never a traceback."""

import os
import signal
import subprocess
import sys
import time

import pytest

from tests import REPO_ROOT
from tests import WAIT_S
from tests import interruptible

# Integration: every binary in subprocesses (README's second test step, `-m slow`).
pytestmark = pytest.mark.slow

# The binaries with --config: the config file their cases start from.
_CONFIGS = {
  "experiments.bandit_variance": "experiments/bandit_variance/configs/default.py",
  "experiments.bandit_training": "experiments/bandit_training/configs/default.py",
  "experiments.best_of_n": "experiments/best_of_n/configs/default.py",
  "experiments.lm": "experiments/lm/configs/tiny.py",
}
# The other binaries: a flag value that does not parse.
_BAD_VALUES = {
  "experiments.reproduce": "--seed=abc",
  "experiments.demo": "--k=abc",
  "notebooks": "--notebooks=no_such_notebook",
  "experiments.lm_study.summary": "--allow_incomplete=maybe",
  "experiments.lm_study.readme": "--check=maybe",
  "experiments.lm_study.design": "--draws=abc",
  "experiments.lm_study.archive_runs": "--overwrite=maybe",
}
# Binaries without --workdir.
_NO_WORKDIR = (
  "experiments.demo",
  "experiments.lm_study.readme",
  "experiments.lm_study.archive_runs",
)
# A list field's value that parses (comma-separated) but that the run's validation
# refuses, or that does not parse: the texts the line holds.
_BAD_LISTS = {
  "experiments.bandit_variance": ("--config.ns=4,x", ["config.ns=(4, 'x')", "integers >= 2"]),
  "experiments.bandit_training": ("--config.k_schedules=1,8:0:1", ["config.k_schedules="]),
  "experiments.best_of_n": ("--config.uniform_sizes=10,x", ["config.uniform_sizes=", "'x'"]),
  "experiments.lm": ("--config.rl.runs=grpo[lr=1", ["--config.rl.runs=grpo[lr=1", "brackets"]),
}
# Binaries whose main takes no positional argument, started with one (the others
# stop at their flags' validators first).
_STRAY = (
  "experiments.demo",
  "experiments.lm_study.readme",
  "experiments.lm_study.design",
  "experiments.lm_study.archive_runs",
)
# The benchmarks (no --config, no --workdir): they start through experiments.command_line too.
_BENCHMARKS = (
  "benchmarks.compile_time",
  "benchmarks.estimators",
  "benchmarks.best_of_n",
  "benchmarks.objectives",
  "benchmarks.lm",
)


def _cases(workdir: str) -> dict[tuple[str, str], tuple[list[str], list[str]]]:
  """(binary, case) -> (its arguments, texts its error line must hold)."""
  cases = {}
  for module, config in _CONFIGS.items():
    # experiments.lm has no default config; the others are also run without --config,
    # where ml_collections reads the overrides while the flag is defined.
    base = [f"--workdir={workdir}"] + ([f"--config={config}"] if module == "experiments.lm" else [])
    folder = os.path.dirname(config)
    # experiments.lm's config has groups: a field of one (rl.runs) misspelt.
    field, close = ("rl.runz", "rl.runs") if module == "experiments.lm" else ("sed", "seed")
    cases[module, "unknown field"] = (
      [*base, f"--config.{field}=1"],
      [f"--config.{field}", f"did you mean --config.{close}?"],
    )
    cases[module, "missing file"] = (
      [f"--workdir={workdir}", f"--config={folder}/defaults.py"],
      [f"--config={folder}/defaults.py: no such file", os.path.basename(config)],
    )
    cases[module, "unknown variant"] = (
      [f"--workdir={workdir}", f"--config={config}:smok"],
      ["smok", "valid"],
    )
    cases[module, "bad value"] = ([*base, "--config.seed=abc"], ["--config.seed=abc"])
    bad_list, texts = _BAD_LISTS[module]
    cases[module, "bad list"] = ([*base, bad_list], texts)
  for module, bad_value in _BAD_VALUES.items():
    base = [] if module in _NO_WORKDIR else [f"--workdir={workdir}"]
    cases[module, "bad value"] = ([*base, bad_value], [bad_value.split("=")[0]])
  for module in _STRAY:
    base = [] if module in _NO_WORKDIR else [f"--workdir={workdir}"]
    cases[module, "stray argument"] = ([*base, "extra"], ["unexpected arguments ['extra']"])
  # Without --config, --config.FIELD is an unknown flag.
  cases["experiments.reproduce", "unknown flag"] = (
    [f"--workdir={workdir}", "--config.seed=1"],
    ["Unknown command line flag 'config.seed'"],
  )
  return cases


def test_every_binary_answers_a_command_line_mistake_with_one_line(tmp_path):
  workdir = str(tmp_path / "run")
  env = {**os.environ, "PYTHONPATH": REPO_ROOT, "JAX_PLATFORMS": "cpu"}
  cases = _cases(workdir)
  procs = {
    key: subprocess.Popen(
      [sys.executable, "-m", key[0], *args],
      cwd=REPO_ROOT,
      env=env,
      stdout=subprocess.PIPE,
      stderr=subprocess.PIPE,
      text=True,
    )
    for key, (args, _) in cases.items()
  }
  for key, proc in procs.items():
    out, err = proc.communicate(timeout=WAIT_S)
    assert proc.returncode == 1, (key, err)
    lines = err.splitlines()
    assert len(lines) == 1 and "Traceback" not in err, (key, err)
    assert lines[0].startswith(f"{key[0]}: "), (key, err)  # Names the binary.
    for text in cases[key][1]:
      assert text in lines[0], (key, text, err)
    assert out == "", (key, out)
  assert not os.path.exists(workdir)  # Each stopped before any work.


# Starts the binary sys.argv[2] (arguments sys.argv[3:]) as `python -m` does, with the
# main it hands to experiments.command_line.run replaced by one that creates the file
# sys.argv[1] and then waits: the test's Ctrl-C lands inside main, after the flags were
# parsed, however long the start took.
_WAIT_IN_MAIN = """
import runpy, sys, time
from experiments import command_line
ready, module, args = sys.argv[1], sys.argv[2], sys.argv[3:]
run = command_line.run
def wait_in_main(argv):
  open(ready, "w").close()
  while True:
    time.sleep(0.05)
command_line.run = lambda main: run(wait_in_main)
sys.argv = [module, *args]
runpy.run_module(module, run_name="__main__", alter_sys=True)
"""


def _interruptible(argv: list[str], env: dict[str, str]) -> subprocess.Popen:
  """Starts ``argv`` with Ctrl-C's default action, as a terminal starts it (a test runner
  started in the background inherits SIGINT ignored, and so would its children)."""
  return interruptible.popen(
    argv,
    cwd=REPO_ROOT,
    env=env,
    stdout=subprocess.PIPE,
    stderr=subprocess.PIPE,
    text=True,
  )


def _wait_for(path: str, proc: subprocess.Popen) -> None:
  """Waits until ``path`` exists; fails with the process's output if it ends first."""
  deadline = time.monotonic() + WAIT_S
  while not os.path.exists(path):
    if proc.poll() is not None:
      out, err = proc.communicate()
      raise AssertionError(f"ended with {proc.returncode} before {path}:\n{out}\n{err}")
    assert time.monotonic() < deadline, path
    time.sleep(0.1)


def _ctrl_c_args(module: str, workdir: str) -> list[str]:
  """Arguments that start ``module`` correctly (its required flags only)."""
  args = [] if module in (*_NO_WORKDIR, *_BENCHMARKS) else [f"--workdir={workdir}"]
  if module == "experiments.lm":
    args.append(f"--config={_CONFIGS[module]}")
  if module == "experiments.lm_study.summary":  # An existing folder (its validator checks).
    args.append(f"--study_dir={os.path.dirname(workdir)}")
  return args


def test_every_binary_answers_ctrl_c_in_main_with_one_line(tmp_path):
  env = {**os.environ, "PYTHONPATH": REPO_ROOT, "JAX_PLATFORMS": "cpu"}
  modules = sorted({*_CONFIGS, *_BAD_VALUES, *_BENCHMARKS})
  procs = {}
  for i, module in enumerate(modules):
    argv = [sys.executable, "-c", _WAIT_IN_MAIN, str(tmp_path / f"ready{i}"), module]
    procs[module] = (
      _interruptible([*argv, *_ctrl_c_args(module, str(tmp_path / f"run{i}"))], env),
      str(tmp_path / f"ready{i}"),
    )
  try:
    for proc, ready in procs.values():
      _wait_for(ready, proc)
      proc.send_signal(signal.SIGINT)
    for module, (proc, _) in procs.items():
      out, err = proc.communicate(timeout=WAIT_S)
      assert proc.returncode == 128 + signal.SIGINT, (module, proc.returncode, err)
      lines = [line for line in err.splitlines() if line.strip()]
      assert len(lines) == 1 and "Traceback" not in err, (module, err)
      assert lines[0].startswith(f"{module}: interrupted ("), (module, err)
      assert out == "", (module, out)
  finally:  # A failure leaves no binary waiting in main.
    for proc, _ in procs.values():
      proc.kill()
      proc.communicate()


def test_ctrl_c_during_training_ends_with_one_line_and_130(tmp_path):
  """A real run interrupted where it happens to be once training has started (compiling,
  stepping, checkpointing): the same ending, and no crash on the way out."""
  env = {**os.environ, "PYTHONPATH": REPO_ROOT, "JAX_PLATFORMS": "cpu"}
  workdir = tmp_path / "run"
  config = _CONFIGS["experiments.lm"] + ":micro"
  proc = _interruptible(
    [sys.executable, "-m", "experiments.lm", f"--config={config}", f"--workdir={workdir}"], env
  )
  try:
    _wait_for(str(workdir / "metrics.jsonl"), proc)  # Its first training step's metrics.
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=WAIT_S)
  finally:
    proc.kill()
    proc.communicate()
  assert proc.returncode == 128 + signal.SIGINT, err[-3000:]
  assert "Traceback" not in err and "Fatal Python error" not in err, err[-3000:]
  last = [line for line in err.splitlines() if line.strip()][-1]
  assert last.startswith("experiments.lm: interrupted ("), err[-3000:]
