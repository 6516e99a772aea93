"""Sphinx configuration of maxk's API reference; README.md gives the build command."""

import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.dirname(os.path.dirname(_HERE)), _HERE]  # maxk, maxk_docstrings

import maxk  # noqa: E402

project = "maxk"
author = "the maxk authors"
copyright = "2026, the maxk authors"
release = version = maxk.__version__
# maxk_docstrings: the docstrings' plain-text math as reStructuredText, and the checks
# that every public name is documented and has a docstring.
extensions = ["sphinx.ext.autodoc", "sphinx.ext.napoleon", "maxk_docstrings"]
napoleon_google_docstring = True
napoleon_numpy_docstring = False
autodoc_typehints = "signature"
autodoc_type_aliases = {"ArrayLike": "jax.typing.ArrayLike"}
autodoc_member_order = "bysource"
highlight_language = "none"  # displayed formulas are literal blocks, not code
html_theme = "alabaster"
html_theme_options = {
  "description": "estimators for pass@k, max@k and best-of-n in JAX",
  "page_width": "1180px",  # formulas are up to ~90 characters of monospace
  "sidebar_width": "240px",
}
html_static_path = ["_static"]
html_show_sourcelink = False
html_copy_source = False
