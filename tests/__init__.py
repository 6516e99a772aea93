"""Tests of maxk, laid out like the package they test (tests/maxk, tests/experiments, ...)."""

import os

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# How long a test waits for a subprocess, a file or a browser before it fails: long
# enough that a slow or loaded machine (CI has 2 cores) is never a failure; it only
# ends a hang.
WAIT_S = 1800
