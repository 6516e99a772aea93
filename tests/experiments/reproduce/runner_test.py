"""Running a stage: its progress display (our progress, not library logs), its time
limit, and when its finished outputs are reused."""

import dataclasses
import json
import os
import re
import shutil
import sys

from experiments.reproduce import reproduction
from experiments.reproduce import runner
from experiments.reproduce import stages as stages_lib
from tests.experiments.reproduce import processes

_ORBAX = (
  "I1201 05:50:09.968142 140383508437888 checkpoint_manager.py:1915] [thread=MainThread]"
  "[wait_until_finished] No Save Finalize thread to wait for. Returning."
)
_OWN = "I1201 05:50:10.000001 140383508437888 train.py:287] sft step 20/200 loss 1.2345"
_BAR = "runs:  43%|████▎     | 3/7 [00:23<00:31,  7.75s/it]"


def test_progress_message_keeps_our_lines_and_drops_library_output():
  assert runner.progress_message(_ORBAX) is None
  assert runner.progress_message(_OWN) == "sft step 20/200 loss 1.2345"
  assert runner.progress_message(_BAR) == _BAR
  assert runner.progress_message("  running notebook pkpo ...") == "running notebook pkpo ..."
  for library in (
    "WARNING:absl:Some library warning",
    "INFO:2026-12-01:orbax says hello",
    "[IPKernelApp] WARNING | Kernel is running over TCP without encryption.",
    "/site-packages/jax/_src/x.py:12: UserWarning: something",
    "",
  ):
    assert runner.progress_message(library) is None, library


def test_last_progress_line_skips_trailing_library_lines(tmp_path):
  log = tmp_path / "log.txt"
  log.write_text(f"$ python -m x\n{_BAR}\r{_OWN}\n{_ORBAX}\n{_ORBAX}\nWARNING:absl:late\n")
  assert runner._last_progress_line(str(log)) == "sft step 20/200 loss 1.2345"
  # A line cut by reading only the log's tail is not taken for progress.
  log.write_text(f"{_BAR}\n" + f"{_ORBAX}\n" * 400)
  assert runner._last_progress_line(str(log)) == ""
  log.write_text("x" * 300 + "\n")  # Long lines are clipped to the display width.
  shown = runner._last_progress_line(str(log))
  assert len(shown) <= 90 and "…" in shown
  assert runner._last_progress_line(str(tmp_path / "missing.txt")) == ""


# XLA's slow-compile alarm as its C++ logging writes it to stderr.
_XLA_BANNER = (
  "E0000 00:00:1733097600.123456   12345 slow_operation_alarm.cc:65] \n"
  + "*" * 32
  + "\n[Compiling module jit_step] Very slow compile? If you want to file a bug, run with "
  "envvar XLA_FLAGS=--xla_dump_to=/tmp/foo and attach the results.\n" + "*" * 32 + "\n"
)


def test_xla_slow_compile_banner_is_not_progress(tmp_path):
  log = tmp_path / "log.txt"
  log.write_text(f"$ python -m x\n{_OWN}\n{_XLA_BANNER}")
  assert runner._last_progress_line(str(log)) == "sft step 20/200 loss 1.2345"
  log.write_text(f"{_BAR}\n{_XLA_BANNER[: _XLA_BANNER.index('attach')]}")  # Still streaming.
  assert runner._last_progress_line(str(log)) == _BAR
  assert runner.progress_message("*" * 32) is None
  assert runner.progress_message("W0000 00:00:1733097600.1 1 xla_bridge.cc:9] no GPU") is None


# A stage binary for the tests: prints progress, then XLA's banner on file descriptor 2
# (as C++ logging does), sleeps $FAKE_SLEEP seconds (beside a worker process of its own
# that sleeps too), and writes results.csv holding the MAXK_SMOKE and input it saw.
_FAKE_STAGE = f"""
import os, subprocess, sys, time
out = sys.argv[1].split("=", 1)[1]
print("step 3/10", flush=True)
os.write(2, {_XLA_BANNER.encode()!r})
sleep = os.environ.get("FAKE_SLEEP", "0")
if sleep != "0":
  worker = subprocess.Popen([sys.executable, "-c", f"import time; time.sleep({{sleep}})"])
  with open(os.path.join(out, "worker.pid"), "w") as f:
    f.write(str(worker.pid))
time.sleep(float(sleep))
with open(os.path.join(out, "results.csv"), "w") as f:
  f.write(f"smoke,input\\n{{os.environ.get('MAXK_SMOKE')}},{{os.environ.get('FAKE_INPUT')}}\\n")
"""


def _fake_stage(tmp_path, **kwargs):
  (tmp_path / "fake_stage.py").write_text(_FAKE_STAGE)
  return stages_lib.Stage("fake", "a fake stage", "fake_stage", ("--seed=0",), 1, **kwargs)


def _run(stage, workdir, tmp_path, *, env=(), timeout=None):
  env = reproduction.stage_env(stage, str(workdir), base={**os.environ, **dict(env)})
  return runner.run_stage(
    stage, str(workdir), cwd=str(tmp_path), env=env, force=False, timeout=timeout
  )


def test_an_edited_config_file_reruns_its_stage(tmp_path):
  # The stage's sizes live in the file its --config flag names, not in its command.
  (tmp_path / "fake_stage.py").write_text(_FAKE_STAGE)
  (tmp_path / "cfg.py").write_text("SIZE = 1\n")
  stage = stages_lib.Stage("fake", "a fake stage", "fake_stage", ("--config=cfg.py:smoke",), 1)
  out = tmp_path / "out"
  assert _run(stage, out, tmp_path)[0] == "ok"
  assert _run(stage, out, tmp_path)[0] == "reused"
  (tmp_path / "cfg.py").write_text("SIZE = 2\n")
  assert _run(stage, out, tmp_path)[0] == "ok"
  assert _run(stage, out, tmp_path)[0] == "reused"
  assert "config cfg.py: absent" in runner.identity(stage, str(out), {}, cwd=str(out))


def test_a_stage_is_reused_only_when_its_identity_matches(tmp_path):
  out = tmp_path / "out"
  results = out / "fake" / "results.csv"
  # Smoke and full runs differ only in an environment setting, not in their flags.
  smoke = _fake_stage(tmp_path, env=(("MAXK_SMOKE", "1"),), smoke=True)
  full = _fake_stage(tmp_path, env=(("MAXK_SMOKE", "0"),))
  assert smoke.command("d") == full.command("d")
  assert _run(smoke, out, tmp_path)[0] == "ok" and results.read_text().split()[1] == "1,None"
  assert _run(smoke, out, tmp_path)[0] == "reused"
  assert _run(full, out, tmp_path)[0] == "ok" and results.read_text().split()[1] == "0,None"
  record = runner.read_record(str(out / "fake"))
  assert dataclasses.replace(record, seconds=0.0, ended="") == runner.StageRecord(
    runner.identity(full, str(out), {"JAX_PLATFORMS": "cpu"}),
    "MAXK_SMOKE=0 python -m fake_stage --workdir=fake --seed=0",
    False,
    "ok",
  )
  assert 0 < record.seconds < 60 and re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d UTC", record.ended)
  # An output of an earlier stage that it reads: rerun when it appears or changes.
  reader = _fake_stage(tmp_path, inputs=(("FAKE_INPUT", "lm/results.csv"),))
  assert _run(reader, out, tmp_path)[0] == "ok"
  assert _run(reader, out, tmp_path)[0] == "reused"
  (out / "lm").mkdir()
  (out / "lm" / "results.csv").write_text("seed\n0\n")
  assert _run(reader, out, tmp_path)[0] == "ok"
  assert results.read_text().split()[1] == f"None,{out / 'lm' / 'results.csv'}"
  assert _run(reader, out, tmp_path)[0] == "reused"
  (out / "lm" / "results.csv").write_text("seed\n7\n")
  assert _run(reader, out, tmp_path)[0] == "ok"
  # A backend chosen in the caller's environment is part of the identity too.
  assert _run(reader, out, tmp_path, env={"JAX_PLATFORMS": "cuda"})[0] == "ok"


def test_a_killed_stage_says_which_limit_and_keeps_its_output_off_the_terminal(
  tmp_path, capfd, monkeypatch
):
  stage = _fake_stage(tmp_path)
  monkeypatch.setattr(sys.stdout, "isatty", lambda: True)  # The live progress line.
  status, _ = _run(stage, tmp_path / "out", tmp_path, env={"FAKE_SLEEP": "60"}, timeout=3)
  assert status == "FAILED (killed at --stage_timeout=3 s; see fake/log.txt)"
  assert runner.read_record(str(tmp_path / "out" / "fake")).status == status
  worker = int((tmp_path / "out" / "fake" / "worker.pid").read_text())
  assert processes.ends_within(worker, 10)  # The processes the stage started are killed with it.
  # The stage's stderr (XLA's banner) is in its log, not on the terminal, and the live
  # line (shown every second) shows its progress, never the banner.
  assert "Very slow compile" in (tmp_path / "out" / "fake" / "log.txt").read_text()
  terminal, errors = capfd.readouterr()
  shown = [line.strip() for line in terminal.split("\r") if line.strip()]
  assert shown and all(re.fullmatch(r"\d+ s \|( step 3/10)?", line) for line in shown), shown
  assert errors == ""


def test_a_copied_reproduction_folder_is_reused(tmp_path):
  # The stage reads an earlier stage's output, so its identity names a file of the folder.
  stage = _fake_stage(tmp_path, inputs=(("FAKE_INPUT", "lm/results.csv"),))
  a, b = tmp_path / "a", tmp_path / "b"
  (a / "lm").mkdir(parents=True)
  (a / "lm" / "results.csv").write_text("seed\n0\n")
  assert _run(stage, a, tmp_path)[0] == "ok"
  shutil.copytree(a, b)
  assert _run(stage, b, tmp_path)[0] == "reused"
  shutil.move(str(a), str(tmp_path / "moved"))
  assert _run(stage, tmp_path / "moved", tmp_path)[0] == "reused"


def test_an_identity_holds_no_absolute_path_of_the_folder_or_the_checkout(tmp_path):
  out = tmp_path / "reproduce"
  (out / "lm").mkdir(parents=True)
  (out / "lm" / "results.csv").write_text("seed\n0\n")
  for smoke in (False, True):
    for stage in stages_lib.stages(seed=0, smoke=smoke):
      text = runner.identity(stage, str(out), {}, cwd=runner.ROOT)
      assert str(tmp_path) not in text and runner.ROOT not in text, text
      assert re.search(rf" --workdir={stage.name}(\s|$)", text), text
  # An interpreter inside the checkout (its virtual environment) moves with it.
  venv = os.path.dirname(os.path.dirname(sys.executable))
  assert runner._interpreter(root=venv) == sys.executable[len(venv) + 1 :]
  assert runner._interpreter(root=str(tmp_path)) == sys.executable


def test_would_replace_only_finished_outputs_of_another_identity(tmp_path):
  (tmp_path / "fake_stage.py").write_text(_FAKE_STAGE)
  (tmp_path / "cfg.py").write_text("SIZE = 1\n")

  def stage(smoke, seed=0):
    flags = ("--config=cfg.py" + (":smoke" if smoke else ""), f"--seed={seed}")
    env = (("MAXK_SMOKE", "1" if smoke else "0"),)
    return stages_lib.Stage("fake", "a fake stage", "fake_stage", flags, 1, env=env, smoke=smoke)

  out = tmp_path / "out"

  def replaces(s):
    env = reproduction.stage_env(s, str(out), base=os.environ)
    return runner.would_replace(s, str(out), env, cwd=str(tmp_path))

  assert not replaces(stage(False))  # Nothing there yet.
  assert _run(stage(False), out, tmp_path)[0] == "ok"  # Full size, finished.
  assert not replaces(stage(False))  # The same identity: reused, not replaced.
  assert replaces(stage(True)) and replaces(stage(False, seed=1))
  (tmp_path / "cfg.py").write_text("SIZE = 2\n")  # An edited config.
  assert replaces(stage(False))
  # A stage that failed, or was interrupted (no record), holds no finished outputs.
  record = runner.read_record(str(out / "fake"))
  runner._write_record(str(out / "fake"), dataclasses.replace(record, status="FAILED (x)"))
  assert not replaces(stage(True))
  os.remove(out / "fake" / runner.RECORD_FILE)
  assert not replaces(stage(True))


def test_a_folder_of_a_version_before_relative_identities_is_reused_not_refused(tmp_path):
  # Records of older versions held the interpreter and the stage folder as absolute
  # paths (and no seconds): rerunning README's command over such a folder must not
  # refuse or rerun its finished stages.
  stage = _fake_stage(tmp_path)
  out = tmp_path / "out"
  assert _run(stage, out, tmp_path)[0] == "ok"
  path = out / "fake" / runner.RECORD_FILE
  record = json.loads(path.read_text())
  lines = record["identity"].split("\n")
  absolute = [sys.executable, "-m", "fake_stage", f"--workdir={out / 'fake'}", "--seed=0"]
  assert lines[0] == " ".join([runner._interpreter(), *absolute[1:3], "--workdir=fake", "--seed=0"])
  record["identity"] = "\n".join([" ".join(absolute), *lines[1:]])
  del record["seconds"], record["ended"]
  path.write_text(json.dumps(record))
  env = reproduction.stage_env(stage, str(out), base=os.environ)
  assert not runner.would_replace(stage, str(out), env, cwd=str(tmp_path))
  assert _run(stage, out, tmp_path)[0] == "reused"
  other = dataclasses.replace(stage, flags=("--seed=1",))  # Other settings: still refused.
  assert runner.would_replace(other, str(out), env, cwd=str(tmp_path))
