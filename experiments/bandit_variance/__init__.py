r"""Bias and variance of every max@k gradient estimator on toy bandits (PKPO Fig. 4).

For each policy, objective, k, n and estimator: the Monte Carlo mean of the gradient
estimate over ``num_replicates`` independent groups, its bias against the exact
gradient of the objective, its variance (summed over coordinates) and the standard
error of the mean. The objectives (``objectives``, column ``objective``) are max@k
(``max``: both policies, every estimator of :mod:`experiments.estimators`) and, on
the categorical bandit only, the rank objectives ``top_m`` (mean of the top
``top_m`` of k), ``min`` (min@k) and ``maxrl`` (``sum_{j<=k} pass@j / j`` on the
binarised reward) with the baselines ``none``, ``loo``, ``loo_centered`` of
``maxk.order_stat_advantages`` and MaxRL's peers ``maxrl`` / ``maxrl_no_cv``
(:mod:`experiments.bandits.rank_objectives`). A second table checks the variance
estimators ``maxk.max_at_k_variance`` / ``maxk.pass_at_k_variance`` against the
empirical variance of the estimates (:mod:`experiments.bandits.variance_check`).

Usage:
  python -m experiments.bandit_variance --workdir=/tmp/bandit_variance

Writes ``results.csv``, ``variance_check.csv``, ``config.json``,
``variance_<policy>.png``, ``bias_<policy>.png``, ``objective_<objective>.png`` and
``variance_check.png`` into ``--workdir``.

* :mod:`experiments.bandit_variance.configs.default`: the config (``get_config``).
* :mod:`experiments.bandit_variance.validation`: its checks (``validate``).
* :mod:`experiments.bandit_variance.main`: the flags (``--config``, ``--workdir``).
* :mod:`experiments.bandit_variance.study`: the study (policies, cells, outputs).
* :mod:`experiments.bandit_variance.plotting`: the figures.

References: PKPO, arXiv 2505.15201, Sec. 5.1 and Fig. 4.
"""
