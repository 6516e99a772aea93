"""The main job: reproduces every CPU-feasible headline figure and table into one folder.

``python -m experiments.reproduce --workdir=DIR`` (see ``main``) runs the stages of
``stages`` and writes the index page of ``index_page``: its content computed by ``page``
(tables from ``tables``, figures from ``figures``), rendered by ``index_markdown`` and
``index_html``.
"""
