"""A headless Chromium for tests, driven by chromedriver over the W3C WebDriver protocol.

The protocol is JSON over HTTP, so the standard library is enough: no Selenium. The
browser is Debian's ``chromium`` with its ``chromium-driver`` (``.ci/run`` installs
both); :func:`find` says where they are, or why they are missing, and a test that needs
them starts with :func:`require_or_skip`.

Usage::

  with browser.Chromium() as chrome:
    chrome.get("file:///tmp/page.html")
    chrome.execute("return document.title")
    chrome.screenshot("/tmp/page.png")
    chrome.console_log()   # [{"level": "SEVERE", "message": ...}, ...]
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
from typing import Any
import urllib.error
import urllib.request

import pytest

from tests import WAIT_S

# Set to 1 where the browser must be installed (CI): then a missing one fails the tests
# that need it instead of skipping them.
REQUIRE_ENV = "MAXK_REQUIRE_BROWSER"

# Chromium's flags for a closed network and a container: no sandbox, no GPU, nothing
# fetched in the background, a fresh profile.
CHROMIUM_ARGS = (
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--disable-dev-shm-usage",
  "--hide-scrollbars",
)


def find() -> tuple[str | None, str | None, str]:
  """(chromium, chromedriver, reason): the two executables, or None and why not."""
  chromium = shutil.which("chromium") or shutil.which("chromium-browser")
  driver = shutil.which("chromedriver")
  missing = [name for name, path in (("chromium", chromium), ("chromedriver", driver)) if not path]
  reason = (
    f"{' and '.join(missing)} not found: `apt-get install chromium chromium-driver` "
    "(as .ci/run does)"
    if missing
    else ""
  )
  return chromium, driver, reason


def require_or_skip(environ: Mapping[str, str] = os.environ) -> None:
  """Skips the calling test, saying why, where Chromium or chromedriver is missing;
  where ``environ`` sets ``MAXK_REQUIRE_BROWSER=1`` a missing one fails it instead."""
  _, _, reason = find()
  if not reason:
    return
  if environ.get(REQUIRE_ENV) == "1":
    pytest.fail(f"{reason}; {REQUIRE_ENV}=1 requires them.")
  pytest.skip(f"{reason}; {REQUIRE_ENV}=1 makes this a failure (as in CI).")


def _free_port() -> int:
  with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    return s.getsockname()[1]


class WebDriverError(RuntimeError):
  """An error answer of chromedriver."""


class Chromium:
  """One headless Chromium session (a context manager) at a window of ``width x height``."""

  def __init__(self, width: int = 1400, height: int = 1000, timeout: float = WAIT_S):
    chromium, driver, reason = find()
    if reason:
      raise FileNotFoundError(reason)
    self._timeout = timeout
    self._profile = tempfile.mkdtemp(prefix="maxk-chromium-")
    port = _free_port()
    self._base = f"http://127.0.0.1:{port}"
    self._driver = subprocess.Popen(
      [driver, f"--port={port}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
      self._wait_ready()
      args = [*CHROMIUM_ARGS, f"--user-data-dir={self._profile}", f"--window-size={width},{height}"]
      capabilities = {
        "browserName": "chrome",
        "goog:chromeOptions": {"binary": chromium, "args": args},
        "goog:loggingPrefs": {"browser": "ALL"},
      }
      answer = self._call("POST", "/session", {"capabilities": {"alwaysMatch": capabilities}})
      self._session = answer["sessionId"]
    except BaseException:
      self._stop_driver()
      raise

  def _wait_ready(self) -> None:
    deadline = time.time() + self._timeout
    while time.time() < deadline:
      if self._driver.poll() is not None:
        raise WebDriverError(f"chromedriver exited with code {self._driver.returncode}")
      try:
        if self._call("GET", "/status").get("ready"):
          return
      except (OSError, WebDriverError):
        pass
      time.sleep(0.1)
    raise WebDriverError("chromedriver did not start")

  def _call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
      self._base + path, data=data, method=method, headers={"Content-Type": "application/json"}
    )
    try:
      with urllib.request.urlopen(request, timeout=self._timeout) as response:
        payload = json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as e:
      raise WebDriverError(f"{method} {path}: {e.code} {e.read()[:500]!r}") from None
    return payload.get("value", payload)

  def _session_call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
    return self._call(method, f"/session/{self._session}{path}", body)

  def get(self, url: str) -> None:
    """Opens ``url`` and waits for its load event."""
    self._session_call("POST", "/url", {"url": url})

  def execute(self, script: str, *args: Any) -> Any:
    """Runs the body of a JavaScript function in the page; returns its result."""
    return self._session_call("POST", "/execute/sync", {"script": script, "args": list(args)})

  def screenshot(self, path: str, *, full_page: bool = False) -> str:
    """Saves a PNG of the window (``full_page``: the window resized to the whole page)."""
    if full_page:
      height = self.execute("return document.documentElement.scrollHeight")
      width = self.execute("return window.outerWidth")
      self.set_window(width, min(height, 16000))
    png = base64.b64decode(self._session_call("GET", "/screenshot"))
    with open(path, "wb") as f:
      f.write(png)
    return path

  def set_window(self, width: int, height: int) -> None:
    """Resizes the browser window to ``width x height`` pixels."""
    self._session_call("POST", "/window/rect", {"width": width, "height": height})

  def console_log(self) -> list[dict[str, Any]]:
    """The browser console entries since the last call (chromedriver's log extension)."""
    return self._session_call("POST", "/se/log", {"type": "browser"})

  def _stop_driver(self) -> None:
    self._driver.terminate()
    try:
      self._driver.wait(timeout=10)
    except subprocess.TimeoutExpired:
      self._driver.kill()
    shutil.rmtree(self._profile, ignore_errors=True)

  def close(self) -> None:
    try:
      self._session_call("DELETE", "")
    except (OSError, WebDriverError):
      pass
    self._stop_driver()

  def __enter__(self) -> Chromium:
    return self

  def __exit__(self, *exc: object) -> None:
    self.close()
