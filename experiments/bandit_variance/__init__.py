r"""Bias and variance of every max@k gradient estimator on toy bandits (PKPO Fig. 4).

For each policy, k, n and estimator: the Monte Carlo mean of the gradient estimate
over ``--num_replicates`` independent groups, its bias against the exact gradient of
max@k, its variance (summed over coordinates) and the standard error of the mean.

Usage:
  python -m experiments.bandit_variance --out_dir=/tmp/bandit_variance

Writes ``results.csv``, ``config.json``, ``variance_<policy>.png`` and
``bias_<policy>.png`` into ``--out_dir``.

* :mod:`experiments.bandit_variance.main`: the flags.
* :mod:`experiments.bandit_variance.study`: the study (policies, cells, outputs).
* :mod:`experiments.bandit_variance.plotting`: the figures.

References: PKPO, arXiv 2505.15201, Sec. 5.1 and Fig. 4.
"""
