"""Where no browser is installed, the browser test skips, unless CI requires it."""

import shutil

import pytest

from tests.experiments.reproduce import browser


def test_a_missing_browser_skips_unless_required(monkeypatch):
  monkeypatch.setattr(shutil, "which", lambda name: None)
  with pytest.raises(pytest.skip.Exception, match="chromium and chromedriver not found"):
    browser.require_or_skip({})
  with pytest.raises(pytest.fail.Exception, match="MAXK_REQUIRE_BROWSER=1 requires them"):
    browser.require_or_skip({"MAXK_REQUIRE_BROWSER": "1"})
  monkeypatch.setattr(shutil, "which", lambda name: f"/usr/bin/{name}")
  browser.require_or_skip({"MAXK_REQUIRE_BROWSER": "1"})  # Installed: the test runs.
