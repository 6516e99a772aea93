"""Tests of maxk, laid out like the package they test (tests/maxk, tests/experiments, ...)."""

import os

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
