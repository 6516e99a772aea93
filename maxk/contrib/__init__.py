"""Adapters of maxk's estimators to other libraries, each importing its library lazily.

``maxk.contrib.tunix``: advantage estimators for tunix's GRPO learner
(``pip install google-tunix``).  Importing ``maxk`` imports none of these.
"""
