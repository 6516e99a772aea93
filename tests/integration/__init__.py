"""Tests that run maxk inside other libraries, each in its own environment."""
