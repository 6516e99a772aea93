"""Every binary answers a mistake on its command line (an unknown config field, a config
file that does not exist, an unknown variant, a value that does not parse, an unknown
flag) with one line on stderr naming it and exit code 1, before any work."""

import os
import subprocess
import sys

from tests import REPO_ROOT
from tests import WAIT_S

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
  "experiments.lm.study_summary": "--allow_incomplete=maybe",
  "experiments.lm.study_readme": "--check=maybe",
  "experiments.lm.study_design": "--draws=abc",
  "experiments.lm.archive_runs": "--overwrite=maybe",
}
# Binaries without --workdir.
_NO_WORKDIR = ("experiments.demo", "experiments.lm.study_readme", "experiments.lm.archive_runs")


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
  for module, bad_value in _BAD_VALUES.items():
    base = [] if module in _NO_WORKDIR else [f"--workdir={workdir}"]
    cases[module, "bad value"] = ([*base, bad_value], [bad_value.split("=")[0]])
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
