"""The gradient estimators of the experiments: one registry of records.

Every estimator is a reward transform: it maps a group of ``n`` rewards (samples on
the last axis) to advantages ``a [..., n]`` on the gradient scale, and
``sum_i a_i grad log pi(y_i)`` is the policy-gradient estimate. Each is one
:class:`Estimator` record, registered under ``(objective, name)``: ``name`` is the
``estimator`` column of the bandit studies, ``objective`` (:mod:`experiments.objectives`)
the ``objective`` column, the gradient its bias is measured against. A record
carries everything the experiments need: the function, whether it depends on k, on
binarised rewards or on off-policy samples, when it is unbiased, its label, colour
and marker. The bandit studies, the LM run specs (:mod:`experiments.lm.rl`), the
demo, the figures (:mod:`experiments.plot_style`) and the tests all read this
registry; adding an estimator is one :func:`register` call (see README, "Adding an
estimator").

The built-in entries:

* objective ``max``, kind ``baseline``: ``none``, ``loo``, ``loo_centered``,
  ``loo_minus_one``, ``mean_std``, the baselines of :func:`maxk.max_at_k_advantages`
  (unbiased for grad max@k except ``mean_std``). The LM's ``max_at_k`` runs use the
  one named by ``rl.baseline``.
* objective ``max``, kind ``peer``: ``grpo``, ``rloo``, ``max_minus_second``,
  ``pass_at_k_training``, the estimators ``maxk.<name>_advantages``. They target
  other objectives or scales, so their bias against grad max@k is reported as
  measured. ``pass_at_k_training`` is fed the binarised reward
  ``correct = reward >= pass_threshold``.
* objective ``max``, kind ``off_policy``: ``off_policy_exact``,
  ``off_policy_first_order``, the methods ``exact`` and ``first_order`` of
  :func:`maxk.max_at_k_advantages_off_policy` (the LM's off-policy method names).
  They use samples from a sampling policy ``pi_old`` and ``log_ratio = log
  pi_theta(y) - log pi_old(y)``; the estimate is of grad max@k at ``pi_theta``.
* objectives ``top_m``, ``min``, ``maxrl``, kind ``baseline``: ``none``, ``loo``,
  ``loo_centered`` of :func:`maxk.order_stat_advantages` with the objective's
  weights (unbiased for every objective).
* objective ``maxrl``, kind ``peer``: ``maxrl``, ``maxrl_no_cv``,
  :func:`maxk.maxrl_advantages` with and without the control variate, divided by n.
  They target ``sum_{j<n} pass@j / j`` and ``sum_{j<=n} pass@j / j`` (the truncation
  is set by n, not k), so against ``sum_{j<=k}`` they are unbiased only at
  ``k == n - 1`` and ``k == n`` respectively.

References: PKPO, arXiv 2505.15201 (Eqs. 18-34); max@k, arXiv 2510.23393 (Sec. 3.2,
App. E); Pass@k Training, arXiv 2508.10751; Tang et al. 2025 (max minus second);
MaxRL, arXiv 2602.02710.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
import contextlib

from experiments import objectives as objectives_lib
from experiments.estimators import builtin
from experiments.estimators.record import ALWAYS
from experiments.estimators.record import AT_K_EQUALS_N
from experiments.estimators.record import AT_K_EQUALS_N_MINUS_ONE
from experiments.estimators.record import NEVER
from experiments.estimators.record import ON_POLICY_OR_K_ONE
from experiments.estimators.record import AdvantageFn
from experiments.estimators.record import Estimator
from experiments.estimators.record import Kind
from experiments.estimators.record import Unbiasedness

__all__ = [
  "ALWAYS",
  "AT_K_EQUALS_N",
  "AT_K_EQUALS_N_MINUS_ONE",
  "AdvantageFn",
  "ESTIMATORS",
  "ESTIMATOR_NAMES",
  "Estimator",
  "Kind",
  "NEVER",
  "ON_POLICY_OR_K_ONE",
  "Unbiasedness",
  "by_method",
  "colors",
  "entries",
  "get",
  "markers",
  "names",
  "parse_names",
  "register",
  "registered",
]

# The registry: (objective, name) -> record, in registration order.
ESTIMATORS = dict[tuple[str, str], Estimator]()


def register(estimator: Estimator) -> Estimator:
  """Adds ``estimator`` to the registry and returns it.

  Raises:
    ValueError: on an unknown objective, or an ``(objective, name)`` already taken.
  """
  if estimator.objective not in objectives_lib.OBJECTIVES:
    raise ValueError(
      f"estimator.objective={estimator.objective!r} must be one of {objectives_lib.OBJECTIVES}."
    )
  key = (estimator.objective, estimator.name)
  if key in ESTIMATORS:
    raise ValueError(f"estimator {key} is already registered.")
  if estimator.off_policy != (estimator.method is not None):
    raise ValueError(f"estimator {key}: method must be given exactly for off-policy estimators.")
  ESTIMATORS[key] = estimator
  return estimator


@contextlib.contextmanager
def registered(estimator: Estimator) -> Iterator[Estimator]:
  """Registers ``estimator`` for the duration of a ``with`` block (e.g. a test)."""
  register(estimator)
  try:
    yield estimator
  finally:
    del ESTIMATORS[estimator.objective, estimator.name]


def entries(objective: str | None = "max", *, kind: Kind | None = None) -> tuple[Estimator, ...]:
  """The registered estimators of ``objective`` (every objective if None), of ``kind``
  if given, in registration order."""
  return tuple(
    e
    for e in ESTIMATORS.values()
    if (objective is None or e.objective == objective) and (kind is None or e.kind == kind)
  )


def names(objective: str = "max") -> tuple[str, ...]:
  """The names of ``objective``'s estimators, in registration order."""
  return tuple(e.name for e in entries(objective))


def get(name: str, objective: str = "max") -> Estimator:
  """The estimator ``name`` of ``objective``; ``ValueError`` listing the valid names otherwise."""
  if (objective, name) not in ESTIMATORS:
    raise ValueError(f"Unknown estimator={name!r}; valid options are {list(names(objective))}.")
  return ESTIMATORS[objective, name]


def by_method(method: str) -> Estimator:
  """The off-policy estimator of :func:`maxk.max_at_k_advantages_off_policy`'s ``method``."""
  for e in entries(kind="off_policy"):
    if e.method == method:
      return e
  valid = [e.method for e in entries(kind="off_policy")]
  raise ValueError(f"Unknown off-policy method={method!r}; valid options are {valid}.")


def parse_names(names_: Sequence[str]) -> tuple[str, ...]:
  """Validates a list of max@k estimator names (``["all"]`` means every one).

  Raises:
    ValueError: on an unknown or repeated name, or an empty list.
  """
  chosen = tuple(names_)
  if chosen == ("all",):
    return names()
  if not chosen:
    raise ValueError("estimators must name at least one estimator.")
  for name in chosen:
    get(name)
  if len(set(chosen)) != len(chosen):
    raise ValueError(f"estimators={list(chosen)} must not repeat a name.")
  return chosen


def colors() -> dict[str, str]:
  """Name -> colour of every registered estimator, plus the off-policy method names."""
  out = {e.name: e.color for e in ESTIMATORS.values()}
  out.update({e.method: e.color for e in entries(kind="off_policy") if e.method})
  return out


def markers() -> dict[str, str]:
  """Name -> marker, as :func:`colors`."""
  out = {e.name: e.marker for e in ESTIMATORS.values()}
  out.update({e.method: e.marker for e in entries(kind="off_policy") if e.method})
  return out


for _estimator in builtin.BUILTIN:
  register(_estimator)
# The built-in max@k estimators (a registered one joins :func:`names`, not this tuple).
ESTIMATOR_NAMES = names()
