"""Tests of the best-of-n study (experiments/best_of_n)."""
