"""The progress display of a running stage shows our progress, not library logs."""

from experiments.reproduce import runner

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
