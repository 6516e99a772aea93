"""Tests of maxk.contrib."""
