r"""Policy-gradient training on toy bandits with max@k estimators and k_opt schedules.

For every bandit, estimator and k_opt schedule (fixed k or annealed, PKPO Fig. 3),
trains ``num_seeds`` independent policies in one vmapped computation and logs the
exact max@k and pass@k of the current policy after every step.

Bandits: ``easy`` (rewards evenly spaced on [0, 1], uniform start), ``hard`` (the
best arm starts with probability ``best_arm_prob`` next to a decoy arm) and
``gaussian`` (PKPO's toy, learning the mean theta).

Usage:
  python -m experiments.bandit_training --workdir=/tmp/bandit_training

Writes ``results.csv`` (one row per bandit, estimator, schedule and k_eval),
``config.json``, ``curves.npz`` (every seed's curves) and ``curves_<bandit>.png``.

* :mod:`experiments.bandit_training.configs.default`: the config (``get_config``).
* :mod:`experiments.bandit_training.validation`: its checks (``validate``).
* :mod:`experiments.bandit_training.main`: the flags (``--config``, ``--workdir``).
* :mod:`experiments.bandit_training.study`: the study (bandits, runs, outputs).
* :mod:`experiments.bandit_training.plotting`: the figures.

References: PKPO, arXiv 2505.15201, Sec. 5 and Fig. 3.
"""
