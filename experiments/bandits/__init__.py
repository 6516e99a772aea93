"""Toy-bandit studies of the max@k gradient estimators.

* :mod:`experiments.bandits.policies`: PKPO's Gaussian toy and a categorical
  softmax bandit, with exact objectives (max@k, pass@k) and exact gradients.
* :mod:`experiments.bandits.estimators`: the registry of gradient estimators
  compared in the studies (names as they appear in ``results.csv``).
* :mod:`experiments.bandits.variance`: the jitted, vmapped bias/variance harness.
* :mod:`experiments.bandits.training`: vmapped policy-gradient training loops.
"""
