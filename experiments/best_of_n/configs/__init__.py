"""Configs of ``python -m experiments.best_of_n`` (``default.py``: ``get_config``)."""
