"""Toy bandits for the max@k gradient-estimator studies: policies, variance, training.

* :mod:`experiments.bandits.policies`: PKPO's Gaussian toy and a categorical
  softmax bandit, with exact objectives (max@k, pass@k) and exact gradients.
* :mod:`experiments.bandits.variance`: the jitted, vmapped bias/variance harness.
* :mod:`experiments.bandits.training`: vmapped policy-gradient training loops.

The estimators they compare are the registry :mod:`experiments.estimators`, the
k_opt schedules those of :mod:`experiments.schedules`. The binaries are
``experiments.bandit_variance`` and ``experiments.bandit_training``.
"""
