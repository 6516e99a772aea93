"""Configs of ``python -m experiments.bandit_training`` (``default.py``: ``get_config``)."""
