r"""KL divergence and win rate of the best-of-n policy (Beirami et al. 2401.01879).

Reproduces the paper's numerical study with the exact best-of-n functions of
``maxk`` (``bon_kl``, ``bon_pmf``, ``bon_win_rate``, ``rewind_repeat_pmf``, ...):

* KL(pi_n || pi) vs n (n from 1 to ``n_max`` on a log grid) for uniform
  references of each size in ``uniform_sizes``, "cherry-picked" references whose
  best outcome has small probability ``cherry_eps`` (the KL grows in steps) and
  random Dirichlet references: the exact KL, the analytical formula
  log(n) - (n-1)/n (an upper bound, as the paper's abstract states), the exact
  expectation of the estimator d_n under pi_n, and a Monte Carlo estimate of d_n from
  ``num_mc_draws`` best-of-n draws with its standard error.
* The KL gap with its upper bound 2n(n-1)exp(-H_2) (Sec. 3 of the paper;
  ``maxk.bon_kl_gap_bound``, exp(-H_2) being ``maxk.reward_collision_probability``)
  and the lower bound log(n eps_inf) - (n-1)/n (``maxk.bon_kl_gap_lower_bound``);
  both are proved in docs/best_of_n_bounds.md.
* Win rate vs KL for best-of-n and rewind-and-repeat (Sec. 6, without a try limit
  and with each ``rr_max_tries``) on the same references, with the curve
  (log(n) - (n-1)/n, n/(n+1)).

* Best-of-n selected by a noisy proxy score (``proxy``): the true reward of the
  arm chosen by the proxy r + sigma * error (Gaussian and Student-t errors) vs n,
  exactly (``maxk.selected_at_k_exact``) and by simulation, the selected policy's KL,
  and the n where the true reward peaks (over-optimisation).
* The win rate vs KL frontier (``frontier``): best-of-n at every n up to
  ``frontier_n_max``, soft best-of-n for each of ``frontier_lams``, Best-of-Poisson,
  the tilt and the chi-squared optimum, selecting by the true reward; and the same
  policies selecting by a Student-t proxy, their true reward vs KL (reward hacking),
  with the best n of best-of-n (``maxk.proxy_bon_best_n``).

Best-of-n draws for the Monte Carlo estimate are sampled from the exact PMF
``maxk.bon_pmf`` (the same law as drawing n outcomes and keeping the best one;
``tests/maxk/best_of_n_test.py`` checks that equivalence).

Usage:
  python -m experiments.best_of_n --workdir=/tmp/best_of_n

Writes ``results.csv`` (one row per reference and n, or per reference, threshold
and try limit), ``config.json``, ``summary.json``, ``proxy.csv`` (one row per error
family, sigma and n), ``proxy_peaks.csv`` and the figures ``kl_vs_n_uniform.png``,
``kl_vs_n_other.png``, ``kl_gap.png``, ``win_rate_vs_kl.png`` and
``proxy_overoptimisation.png`` into ``--workdir``.

Modules: ``configs/default.py`` (the config, ``get_config``), ``validation`` (its
checks, ``validate``), ``main`` (the flags ``--config``, ``--workdir``), ``references``
(the reference policies), ``study`` (result rows and summary), ``plotting``
(figures), ``proxy`` (the proxy-selection study), ``frontier`` (the frontier of every
policy family), ``experiment`` (the whole run).
"""
