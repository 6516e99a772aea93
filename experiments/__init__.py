"""Experiment binaries built on :mod:`maxk` (run as ``python -m experiments.NAME``)."""
