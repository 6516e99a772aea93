"""The version of maxk, defined here only: pyproject.toml and the docs read it."""

__version__ = "0.2.0"
