"""Configs of ``python -m experiments.bandit_variance`` (``default.py``: ``get_config``)."""
