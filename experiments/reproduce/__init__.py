"""The main job: reproduces every CPU-feasible headline figure and table into one folder.

``python -m experiments.reproduce --workdir=DIR`` (see ``main``) runs the stages of
``stages`` and writes the index page of ``index_page`` (tables from ``tables``).
"""
