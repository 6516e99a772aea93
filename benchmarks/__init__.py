"""Micro-benchmarks (run as ``python -m benchmarks.NAME``)."""
