"""python -m experiments.reproduce: the smoke run end to end, its page in a real browser,
and its flags.

One smoke reproduction (three stages, tiny sizes) serves the tests of this file.
"""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import pytest

from experiments.reproduce import figures
from experiments.reproduce import runner
from tests import REPO_ROOT
from tests import WAIT_S
from tests import binaries
from tests import interruptible
from tests.experiments.reproduce import browser
from tests.experiments.reproduce import processes

# Integration: the reproduction's smoke run and its binary (README's second test step, `-m slow`).
pytestmark = pytest.mark.slow

# Where the browser test keeps its screenshots besides pytest's tmp_path (CI artifacts).
ARTIFACTS = os.path.join(REPO_ROOT, "out", "test-artifacts")


def _pngs(workdir):
  return sorted(
    os.path.relpath(os.path.join(d, f), workdir).replace(os.sep, "/")
    for d, _, files in os.walk(workdir)
    for f in files
    if f.endswith(".png")
  )


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory):
  """(workdir, completed process) of one smoke reproduction of three stages."""
  out = tmp_path_factory.mktemp("smoke") / "reproduce"
  stages = "--stages=best_of_n,bandit_variance,bandit_training"
  proc = binaries.run(
    "experiments.reproduce", f"--workdir={out}", "--smoke", "--seed=1", stages, check=False
  )
  assert proc.returncode == 0, proc.stdout + proc.stderr
  return out, proc


def test_smoke_run_writes_index_with_every_figure(smoke_run):
  out, proc = smoke_run
  # Progress display: one line per stage start and end, with timings, and nothing from
  # the libraries' loggers.
  assert "[1/3] best_of_n" in proc.stdout and "[3/3] bandit_training: ok in" in proc.stdout
  assert "[thread=" not in proc.stdout
  assert not re.search(r"[DIWEF]\d{4} \d\d:\d\d:\d\d", proc.stdout)
  assert json.loads((out / "config.json").read_text())["seed"] == 1
  index_md = (out / "index.md").read_text()
  index_html = (out / "index.html").read_text()
  pngs = _pngs(out)
  assert len(pngs) >= 8
  for png in pngs:  # Every figure is shown, with its one-line explanation.
    assert f"({png})" in index_md and f"src='{png}'" in index_html
    assert figures.caption(png), png
  assert "SMOKE" in index_md
  assert "| estimator | var n=4 | var n=8 | max abs bias_z |" in index_md  # PKPO Fig. 4.
  assert "Gradient variance of min@k of each estimator" in index_md  # Rank objectives.
  assert "| policy | statistic | n | k | empirical var | s.e. | mean estimated var |" in index_md
  assert "| bandit | estimator | k_opt schedule | max@1 | max@4 |" in index_md
  assert "table unavailable" not in index_md
  assert "<table>" in index_html
  assert "<code>python -m experiments.reproduce</code>" in index_html
  for stage in ("best_of_n", "bandit_variance", "bandit_training"):
    assert (out / stage / "results.csv").exists() and (out / stage / "log.txt").exists()
    record = runner.read_record(str(out / stage))
    assert record.ok and record.smoke and "--config.seed=1" in record.command
    assert f"`{record.command}`" in index_md
  # Figures at a legible size: at least 1000 px wide (PNG header: width at bytes 16-20).
  for png in pngs:
    with open(out / png, "rb") as f:
      header = f.read(24)
    width = int.from_bytes(header[16:20], "big")
    assert width >= 1000, (png, width)


def _wait_for_images(chrome, timeout=WAIT_S):
  deadline = time.time() + timeout
  while time.time() < deadline:
    if chrome.execute("return Array.from(document.images).every(i => i.complete)"):
      return
    time.sleep(0.2)
  raise AssertionError("images still loading")


def test_index_page_in_headless_chromium(smoke_run, tmp_path):
  browser.require_or_skip()  # CI installs Chromium and requires it (.ci/run).
  out, _ = smoke_run
  pngs = _pngs(out)
  url = (out / "index.html").as_uri()
  os.makedirs(ARTIFACTS, exist_ok=True)
  with browser.Chromium(width=1400, height=1000) as chrome:
    chrome.get(url)
    _wait_for_images(chrome)
    shot = chrome.screenshot(str(tmp_path / "index.png"), full_page=True)
    shutil.copy(shot, os.path.join(ARTIFACTS, "reproduce_index.png"))
    images = chrome.execute(
      "return Array.from(document.images).map(i => [i.getAttribute('src'), i.naturalWidth])"
    )
    # Every figure is on the page (in the grid and in its enlarged view), and loads.
    assert sorted({src for src, _ in images}) == pngs
    assert [src for src, width in images if width == 0] == []
    # Nothing on the page errors: no console error, exception or failed load.
    errors = [e for e in chrome.console_log() if e["level"] in ("SEVERE", "WARNING")]
    assert errors == []
    # A table of contents down to each figure, every link landing on the page.
    links = chrome.execute(
      "return Array.from(document.querySelectorAll('nav.toc a')).map(a => a.hash.slice(1))"
    )
    assert chrome.execute(
      "return arguments[0].every(id => document.getElementById(id) !== null)", links
    )
    figure_links = [h for h in links if h.startswith("fig-")]
    linked = chrome.execute(
      "return arguments[0].map(id => "
      "document.getElementById(id).querySelector('img').getAttribute('src'))",
      figure_links,
    )
    assert sorted(linked) == pngs
    # Each figure's explanation beneath it; inline code as code, no raw backticks.
    captions = chrome.execute(
      "return Array.from(document.querySelectorAll('main figure')).map("
      "f => [f.querySelector('img').getBoundingClientRect().bottom,"
      " f.querySelector('figcaption').getBoundingClientRect().top,"
      " f.querySelector('figcaption').innerText.length])"
    )
    assert len(captions) == len(pngs)
    assert all(top >= bottom and length > 20 for bottom, top, length in captions)
    assert "`" not in chrome.execute("return document.body.innerText")
    assert chrome.execute("return document.querySelectorAll('.intro code').length") >= 1
    # Figures in a grid: several side by side at this width.
    tops = chrome.execute(
      "return Array.from(document.querySelectorAll('#best_of_n ~ .grid figure'))"
      ".map(f => Math.round(f.getBoundingClientRect().top))"
    )
    assert len(tops) > len(set(tops))
    # Wide tables scroll inside their own box; the page itself never scrolls sideways.
    assert chrome.execute(
      "return Array.from(document.querySelectorAll('table'))"
      ".every(t => t.parentElement.classList.contains('table-wrap'))"
    )
    for width in (1400, 700):
      chrome.set_window(width, 1000)
      overflow = chrome.execute(
        "return document.documentElement.scrollWidth - document.documentElement.clientWidth"
      )
      assert overflow <= 0, (width, overflow)
    # Click to enlarge: the figure's overlay shows the image at full window size.
    chrome.set_window(1400, 1000)
    first = figure_links[0]
    chrome.execute(f"document.querySelector('a[href=\"#zoom-{first}\"]').click()")
    shown = chrome.execute(
      f"return getComputedStyle(document.getElementById('zoom-{first}')).display"
    )
    assert shown != "none"
    zoomed = chrome.screenshot(str(tmp_path / "index_zoomed.png"))
    shutil.copy(zoomed, os.path.join(ARTIFACTS, "reproduce_index_zoomed.png"))
    chrome.execute(f"document.querySelector('#zoom-{first} a').click()")
    assert (
      chrome.execute(f"return getComputedStyle(document.getElementById('zoom-{first}')).display")
      == "none"
    )
    assert chrome.console_log() == []


def test_reused_stages_on_a_second_run(smoke_run):
  out, _ = smoke_run
  proc = binaries.run(
    "experiments.reproduce",
    f"--out_dir={out}",  # The old name of --workdir.
    "--smoke",
    "--seed=1",
    "--stages=best_of_n",
    check=False,
  )
  assert proc.returncode == 0 and "best_of_n: reused" in proc.stdout, proc.stdout


def test_another_seed_or_full_sizes_refuse_to_replace_the_finished_smoke_stages(smoke_run):
  out, _ = smoke_run
  before = _files(out)
  for args in (["--smoke", "--seed=2"], ["--seed=1"]):
    proc = binaries.run(
      "experiments.reproduce",
      f"--workdir={out}",
      "--stages=best_of_n,bandit_training",
      *args,
      check=False,
    )
    assert proc.returncode == 1 and proc.stdout == "", proc.stdout
    (line,) = _lines(proc.stderr)
    assert "finished results of best_of_n, bandit_training made with other settings" in line
    assert "Rerun with --force to replace them" in line
    assert _files(out) == before


@pytest.mark.parametrize("flag", ["--stages=best_of_n,nope", "--stage_timeout=-5"])
def test_bad_flag_exits_nonzero_naming_it(flag, tmp_path):
  proc = binaries.run("experiments.reproduce", f"--workdir={tmp_path / 'out'}", flag, check=False)
  assert proc.returncode != 0
  assert flag.split("=")[0] in proc.stderr
  assert not (tmp_path / "out").exists()


def test_selecting_no_stage_is_refused_and_leaves_the_folder_as_it_was(smoke_run):
  out, _ = smoke_run
  before = {name: (out / name).read_bytes() for name in ("index.md", "index.html", "config.json")}
  proc = binaries.run(
    "experiments.reproduce", f"--workdir={out}", "--stages=lm", "--nolm", "--seed=7", check=False
  )
  assert proc.returncode == 1 and proc.stdout == ""
  assert "--stages=lm with --nolm selects no stage." in proc.stderr.splitlines()[0]
  assert {name: (out / name).read_bytes() for name in before} == before
  argvs = [["--stages="], ["--stages=notebooks", "--nonotebooks"], ["--stages=all", "--nolm"]]
  errors = binaries.flag_errors("experiments.reproduce.main", argvs)
  assert "--stages is empty" in errors[0]
  assert "--stages=notebooks with --nonotebooks selects no stage." in errors[1]
  assert errors[2] is None


def test_a_stage_out_of_time_says_how_to_go_on_and_the_page_keeps_each_stages_command(
  smoke_run, tmp_path
):
  out = tmp_path / "reproduce"
  shutil.copytree(smoke_run[0], out)
  # No time limit unless one is asked for.
  assert binaries.flag_errors("experiments.reproduce.main", [["--stage_timeout=0"]]) == [None]
  # best_of_n at full size and another seed, killed at a 1 s limit.
  proc = binaries.run(
    "experiments.reproduce",
    f"--workdir={out}",
    "--stages=best_of_n",
    "--seed=7",
    "--stage_timeout=1",
    "--force",  # Replaces the smoke run's finished best_of_n.
    check=False,
  )
  assert proc.returncode == 1
  status = "FAILED (killed at --stage_timeout=1 s; see best_of_n/log.txt)"
  assert f"best_of_n: {status}" in proc.stderr
  assert "rerun the same command: finished stages are reused" in proc.stderr
  assert "raise --stage_timeout=SECONDS, or set --stage_timeout=0 (no limit)" in proc.stderr
  # The page: each stage with the command and sizes it ran with; none of the failed
  # stage's outputs.
  md = (out / "index.md").read_text()
  sections = dict(s.split("\n", 1) for s in md.split("\n## ")[1:])
  command = (
    "`python -m experiments.best_of_n --workdir=best_of_n "
    "--config=experiments/best_of_n/configs/default.py --config.seed=7`"
  )
  assert command in sections["best_of_n"]
  assert f"> **Warning:** {status}" in sections["best_of_n"]
  assert ".png" not in sections["best_of_n"] and "SMOKE" not in sections["best_of_n"]
  assert f"| [best_of_n](#best_of_n) | {status} | full |" in md
  for stage in ("bandit_variance", "bandit_training"):
    record = runner.read_record(str(out / stage))  # With its seconds when it ran.
    assert record.seconds > 0
    ran = f"from an earlier run (ran {record.ended}, {record.seconds:.0f} s)"
    assert f"| [{stage}](#{stage}) | {ran} | smoke | {record.seconds:.0f} |" in md
    assert "--config.seed=1`" in sections[stage] and "--config.seed=7" not in sections[stage]
    assert "> **Warning:** SMOKE sizes" in sections[stage]


def test_readme_documents_every_flag():
  with open(os.path.join(REPO_ROOT, "experiments", "reproduce", "main.py")) as f:
    names = re.findall(r"flags\.DEFINE_\w+\(\s*\"(\w+)\"", f.read())
  with open(os.path.join(REPO_ROOT, "README.md")) as f:
    readme = f.read()
  assert {"stages", "smoke", "force", "stage_timeout"} <= set(names)
  undocumented = [n for n in names if f"`--{n}" not in readme and f"`--no{n}`" not in readme]
  assert undocumented == []


# python -m experiments.reproduce whose one stage, best_of_n, is a cheap fake: it sleeps
# $FAKE_SLEEP seconds (beside a worker process), fails where $FAKE_FAIL is set, and
# writes results.csv holding the seed and MAXK_SMOKE it ran with.
_FAKE_STAGE = """
import os, subprocess, sys, time
out = sys.argv[1].split("=", 1)[1]
with open(os.path.join(out, "stage.pid"), "w") as f:
  f.write(str(os.getpid()))
sleep = os.environ.get("FAKE_SLEEP", "0")
worker = subprocess.Popen([sys.executable, "-c", f"import time; time.sleep({sleep})"])
with open(os.path.join(out, "worker.pid"), "w") as f:
  f.write(str(worker.pid))
time.sleep(float(sleep))
if os.environ.get("FAKE_FAIL"):
  sys.exit(2)
with open(os.path.join(out, "results.csv"), "w") as f:
  f.write(f"seed,smoke\\n{sys.argv[2]},{os.environ['MAXK_SMOKE']}\\n")
"""
_LAUNCHER = """
import runpy
from experiments.reproduce import stages as stages_lib

def fake_stages(*, seed, smoke):
  env = (("MAXK_SMOKE", "1" if smoke else "0"),)
  flags = (f"--config.seed={seed}",)
  return [stages_lib.Stage("best_of_n", "a fake stage", "fake_stage", flags, 1,
                           out_flag="workdir", env=env, smoke=smoke)]

stages_lib.stages = fake_stages
runpy.run_module("experiments.reproduce", run_name="__main__", alter_sys=True)
"""


def _fake_reproduce(tmp_path, *args, env=(), popen=False):
  """``python -m experiments.reproduce --stages=best_of_n ARGS`` with the fake stage."""
  (tmp_path / "fake_stage.py").write_text(_FAKE_STAGE)
  (tmp_path / "launcher.py").write_text(_LAUNCHER)
  command = [sys.executable, str(tmp_path / "launcher.py"), "--stages=best_of_n", *args]
  path = os.pathsep.join([REPO_ROOT, str(tmp_path), os.environ.get("PYTHONPATH", "")])
  full_env = {**os.environ, "PYTHONPATH": path, "JAX_PLATFORMS": "cpu", **dict(env)}
  kwargs = dict(cwd=REPO_ROOT, env=full_env, text=True)
  if popen:  # With Ctrl-C's default action, as a terminal starts it (a test runner
    # started in the background inherits SIGINT ignored, and so would its children).
    return interruptible.popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kwargs)
  return subprocess.run(command, capture_output=True, timeout=WAIT_S, check=False, **kwargs)


def _files(folder):
  return {
    os.path.relpath(os.path.join(d, f), folder): open(os.path.join(d, f), "rb").read()
    for d, _, files in os.walk(folder)
    for f in files
  }


def _lines(text):
  return [line for line in text.splitlines() if line.strip()]


def test_finished_results_of_other_settings_are_never_replaced_without_force(tmp_path):
  out = tmp_path / "reproduce"
  full = _fake_reproduce(tmp_path, f"--workdir={out}")  # A full-size run.
  assert full.returncode == 0, full.stderr
  assert (out / "best_of_n" / "results.csv").read_text() == "seed,smoke\n--config.seed=0,0\n"
  before = _files(out)
  for args in (["--smoke"], ["--seed=1"], ["--smoke", "--stage_timeout=5"]):
    proc = _fake_reproduce(tmp_path, f"--workdir={out}", *args)
    assert proc.returncode == 1 and proc.stdout == "", (args, proc.stdout, proc.stderr)
    (line,) = _lines(proc.stderr)
    assert line.startswith("experiments.reproduce: ") and "finished results of best_of_n" in line
    assert "--force" in line and "Traceback" not in line
    assert _files(out) == before, args  # Not one byte written or deleted.
  # --force replaces them.
  proc = _fake_reproduce(tmp_path, f"--workdir={out}", "--smoke", "--force")
  assert proc.returncode == 0, proc.stderr
  assert (out / "best_of_n" / "results.csv").read_text() == "seed,smoke\n--config.seed=0,1\n"
  # A failed stage has no finished results: another seed reruns it without --force.
  failed = _fake_reproduce(
    tmp_path, f"--workdir={out}", "--seed=3", "--force", env={"FAKE_FAIL": "1"}
  )
  assert failed.returncode == 1 and "best_of_n: FAILED (exit code 2" in failed.stderr
  proc = _fake_reproduce(tmp_path, f"--workdir={out}", "--seed=4")
  assert proc.returncode == 0, proc.stderr
  assert (out / "best_of_n" / "results.csv").read_text() == "seed,smoke\n--config.seed=4,0\n"


def _wait_for(predicate, seconds=WAIT_S):
  deadline = time.monotonic() + seconds
  while not predicate():
    assert time.monotonic() < deadline, "timed out"
    time.sleep(0.05)


def test_ctrl_c_stops_the_stage_and_says_how_to_go_on_in_one_line(tmp_path):
  out = tmp_path / "reproduce"
  proc = _fake_reproduce(tmp_path, f"--workdir={out}", env={"FAKE_SLEEP": "120"}, popen=True)
  worker_file = out / "best_of_n" / "worker.pid"
  _wait_for(lambda: worker_file.exists() and worker_file.read_text() != "")
  pids = [int((out / "best_of_n" / name).read_text()) for name in ("stage.pid", "worker.pid")]
  proc.send_signal(signal.SIGINT)
  stdout, stderr = proc.communicate(timeout=WAIT_S)
  assert proc.returncode == 130, stderr
  (line,) = _lines(stderr)
  assert "Traceback" not in stderr
  assert line == (
    "experiments.reproduce: interrupted while stage best_of_n ran (stopped; its folder is "
    "not kept as finished). To go on, rerun the same command: finished stages are reused."
  )
  for pid in pids:  # The stage and the process it started are stopped: no orphan.
    assert processes.ends_within(pid, 10)
  record = runner.read_record(str(out / "best_of_n"))
  assert record.status == "FAILED (interrupted; see best_of_n/log.txt)"
  assert not (out / "best_of_n" / "results.csv").exists()
  # Rerunning the same command goes on: the interrupted stage runs again.
  again = _fake_reproduce(tmp_path, f"--workdir={out}")
  assert again.returncode == 0 and "best_of_n: ok in" in again.stdout, again.stderr


def test_reused_stages_keep_their_measured_seconds_also_in_a_copied_folder(tmp_path):
  first = tmp_path / "a"
  proc = _fake_reproduce(tmp_path, f"--workdir={first}", env={"FAKE_SLEEP": "2"})
  assert proc.returncode == 0, proc.stderr
  record = runner.read_record(str(first / "best_of_n"))
  assert record.seconds >= 2  # The stage slept 2 s.
  assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d UTC", record.ended)
  copy = tmp_path / "b"
  shutil.copytree(first, copy)
  for out in (first, copy):
    again = _fake_reproduce(tmp_path, f"--workdir={out}", env={"FAKE_SLEEP": "2"})
    assert again.returncode == 0, again.stderr
    reused = f"reused (ran {record.ended}, {record.seconds:.0f} s)"
    assert f"best_of_n: {reused} in 0 s" in again.stdout
    md = (out / "index.md").read_text()
    assert f"| [best_of_n](#best_of_n) | {reused} | full | {record.seconds:.0f} |" in md
    this_run = float(re.search(r" in (\d+) s; the results shown took (\d+) s", md).group(1))
    assert this_run < record.seconds
    assert f"the results shown took {record.seconds:.0f} s when their stages ran." in md
