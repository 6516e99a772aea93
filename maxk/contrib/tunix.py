"""maxk's advantage estimators in tunix's GRPO learner (``pip install google-tunix``).

tunix, Google's JAX post-training library, chooses the advantage of its GRPO learner
by name: ``GRPOConfig(advantage_estimator=NAME)`` is looked up in
``tunix.rl.function_registry`` and called once per batch as
``fn(rewards=r, num_generations=G)``, r the B*G summed rewards as a flat float
NumPy array in prompt-major order (the G samples of prompt b at positions
b*G .. b*G + G - 1); the B*G values returned are the samples' advantages.  This
module registers maxk's estimators there under names that begin with ``maxk_``.
tunix is imported only when a name is registered, never by ``import maxk``::

  from maxk.contrib import tunix as maxk_tunix
  from tunix.rl.grpo import grpo_learner

  name = maxk_tunix.advantage_estimator("max_at_k", k=4)  # "maxk_max_at_k_k4"
  config = grpo_learner.GRPOConfig(num_generations=8, advantage_estimator=name)

Names.  The estimator, its rank weights, k, and any other parameter that differs
from its default, in that order; each distinct estimator has one name (k <=
``num_generations`` is checked when tunix calls the function):

* ``advantage_estimator("max_at_k", k=4)``: ``maxk_max_at_k_k4``, with maxk's
  default baseline ``"loo_minus_one"``; ``baseline="loo"``: ``maxk_max_at_k_k4_loo``
  (also ``"none"`` and ``"loo_centered"``; the biased ``"mean_std"`` is not offered).
* ``advantage_estimator("order_stat", kind="min", k=4)``:
  ``maxk_order_stat_min_k4``, baseline ``"loo_centered"`` (or ``"none"``,
  ``"loo"``: ``maxk_order_stat_min_k4_loo``); ``kind`` is a :func:`maxk.rank_weights`
  kind, named with its parameter (``kind="top_m", m=2``: ``top_m2``;
  ``kind="upper_tail_mean", alpha=0.25``: ``upper_tail_mean_alpha0.25``).
* ``advantage_estimator("maxrl")``: ``maxk_maxrl``, with the control variate;
  ``control_variate=False``: ``maxk_maxrl_no_control_variate``.
* ``advantage_estimator("pass_at_k_training", k=4)``:
  ``maxk_pass_at_k_training_k4`` (eps 0); ``eps=0.1``:
  ``maxk_pass_at_k_training_k4_eps0.1``.

:func:`register` registers a catalogue of these at once.

Scale.  tunix's GRPO loss (``grpo_loss_fn`` in ``tunix/rl/algo_core.py``) multiplies
each sample's advantage A by its per-token importance ratio and reduces with
``common.aggregate_loss``, whose default ``loss_agg_mode="sequence-mean-token-mean"``
averages over the tokens of each sequence and then over the B*G sequences of the
batch (``optax.MultiSteps`` averages the micro-batches of gradient accumulation).
On-policy (ratio 1) the policy-gradient step is therefore
(1/(BG)) Σ_{b,i} A_{b,i} ∇ℓ_{b,i}, ℓ the sequence's mean token log-probability (its
log-likelihood log π(y) under ``loss_agg_mode="seq-mean-token-sum"``).  maxk's
unbiased transforms a satisfy E[Σ_i a_i ∇log π(y_i)] = ∇J for each prompt, so
``max_at_k`` and ``order_stat`` are registered as A = G · a: the step is then
(1/B) Σ_b Σ_i a_{b,i} ∇log π(y_{b,i}), an unbiased estimate of the gradient of J
averaged over the batch's prompts, on the footing of tunix's own GRPO advantages
(O(1) per sample, averaged over samples).  At k = 1 with ``baseline="loo_centered"``,
G · a_i = r_i − mean_{j≠i} r_j is tunix's ``"rloo"`` advantage exactly.  Under the
default token mean each sequence's score is divided by its length, as for every
tunix estimator; ``"seq-mean-token-sum"`` gives the gradient above exactly.
In full, for the G rewards r of one prompt:

* ``max_at_k``: G · :func:`maxk.max_at_k_advantages` (r, k, baseline=...).
* ``order_stat``: G · :func:`maxk.order_stat_advantages`
  (r, :func:`maxk.rank_weights` (kind, k, ...), baseline=...).
* ``maxrl``: 1 · :func:`maxk.maxrl_advantages` (r, control_variate=...), whose
  values are already on this footing (the mean over the group of a_i ∇log π(y_i)
  estimates the gradient).
* ``pass_at_k_training``: 1 · :func:`maxk.pass_at_k_training_advantages`
  (r, k, eps=...), the paper's advantage, normalised by the group's std like GRPO's
  and used in its place.

``maxrl`` and ``pass_at_k_training`` take binary rewards: every reward must be 0 or
1 (tunix sums the reward functions, so use one 0/1 reward function, or several whose
sum is 0 or 1); any other finite value raises ``ValueError``.  The others take any
real rewards.  A NaN reward makes its prompt's G advantages NaN (maxk's rule).
Results are float32 NumPy arrays (maxk computes in JAX's default float32).

Tested with google-tunix 0.1.7, jax 0.10.2 and flax 0.12.8:
``tests/integration/tunix_test.py`` trains tunix's ``GRPOLearner`` with these names.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
import importlib
import math
import numbers
import types
from typing import NamedTuple

import jax
from jax.typing import ArrayLike
import numpy as np

from maxk._src import checks
from maxk._src import peers
from maxk._src import rank_objectives
from maxk._src.advantages import max_at_k_advantages

#: The ``estimator`` options of :func:`advantage_estimator`.
ESTIMATORS = ("max_at_k", "order_stat", "maxrl", "pass_at_k_training")
#: The ``baseline`` options of ``"max_at_k"`` (maxk's unbiased ones; default first).
MAX_AT_K_BASELINES = ("loo_minus_one", "none", "loo", "loo_centered")
#: The ``baseline`` options of ``"order_stat"`` (default first).
ORDER_STAT_BASELINES = ("loo_centered", "none", "loo")
#: The rank-weight kinds that :func:`register` registers for each k.
CATALOGUE_KINDS = ("max", "min", "mean", "median")

_PREFIX = "maxk_"
_PARAMETERS = {
  "max_at_k": ("k", "baseline"),
  "order_stat": ("kind", "k", "m", "alpha", "baseline"),
  "maxrl": ("control_variate",),
  "pass_at_k_training": ("k", "eps"),
}
_INSTALL = "pip install google-tunix"


class _Spec(NamedTuple):
  """One registered estimator: its name and its [B, G] -> [B, G] transform."""

  name: str
  transform: Callable[[jax.Array], jax.Array]
  k: int | None  # checked against num_generations at call time
  binary: bool  # rewards must be 0 or 1
  group_scale: bool  # multiply by G (see the module docstring)


def _check_eps(eps: object) -> float:
  if isinstance(eps, (bool, np.bool_)) or not isinstance(eps, numbers.Real):
    raise ValueError(f"eps={eps!r} must be a real number >= 0.")
  x = float(eps)
  if not (math.isfinite(x) and x >= 0):
    raise ValueError(f"eps={eps!r} must be a finite number >= 0.")
  return x


def _spec(
  estimator: str,
  *,
  k: object = None,
  baseline: object = None,
  kind: object = None,
  m: object = None,
  alpha: object = None,
  control_variate: object = None,
  eps: object = None,
) -> _Spec:
  """Validates an (estimator, parameters) combination and builds its spec.

  A parameter equal to its default is left out of the name, so that each distinct
  estimator has one name.
  """
  estimator = checks.check_option(estimator, "estimator", ESTIMATORS)
  given = {
    "k": k,
    "baseline": baseline,
    "kind": kind,
    "m": m,
    "alpha": alpha,
    "control_variate": control_variate,
    "eps": eps,
  }
  allowed = _PARAMETERS[estimator]
  for key, value in given.items():
    if value is not None and key not in allowed:
      raise ValueError(
        f"{key}={value!r} does not apply to estimator={estimator!r}, which takes {list(allowed)}."
      )
  size = 0
  if "k" in allowed:
    if k is None:
      raise ValueError(f"k is required for estimator={estimator!r}.")
    size = checks.check_int(k, "k", low=1, high=checks.MAX_SIZE)
  if estimator == "max_at_k":
    return _max_at_k_spec(size, baseline)
  if estimator == "order_stat":
    return _order_stat_spec(size, kind, m, alpha, baseline)
  if estimator == "maxrl":
    return _maxrl_spec(control_variate)
  return _pass_at_k_training_spec(size, eps)


def _baseline_suffix(baseline: object, options: Sequence[str]) -> tuple[str, str]:
  """The chosen baseline (``options[0]`` by default) and its name suffix ("" for the
  default)."""
  chosen = checks.check_option(options[0] if baseline is None else baseline, "baseline", options)
  return chosen, "" if chosen == options[0] else f"_{chosen}"


def _max_at_k_spec(size: int, baseline: object) -> _Spec:
  """max@k's unbiased advantages (``max_at_k_advantages``), scaled by G."""
  if baseline == "mean_std":
    raise ValueError(
      f"baseline='mean_std' is biased and not offered here; use one of {list(MAX_AT_K_BASELINES)}."
    )
  chosen, suffix = _baseline_suffix(baseline, MAX_AT_K_BASELINES)
  return _Spec(
    f"{_PREFIX}max_at_k_k{size}{suffix}",
    lambda r: max_at_k_advantages(r, size, baseline=chosen),
    size,
    binary=False,
    group_scale=True,
  )


def _order_stat_spec(size: int, kind: object, m: object, alpha: object, baseline: object) -> _Spec:
  """A rank objective's advantages (``order_stat_advantages`` with ``rank_weights``),
  scaled by G; its name carries the kind and its m or alpha."""
  if kind is None:
    raise ValueError(
      "kind is required for estimator='order_stat'; one of"
      f" {list(rank_objectives.RANK_WEIGHT_KINDS)}."
    )
  kind = checks.check_option(kind, "kind", rank_objectives.RANK_WEIGHT_KINDS)
  kind_params = {key: value for key, value in (("m", m), ("alpha", alpha)) if value is not None}
  # rank_weights validates m and alpha (and that the kind takes them).
  weights = rank_objectives.rank_weights(kind, size, **kind_params)
  if m is not None:
    label = f"{kind}{int(m)}"  # type: ignore[call-overload]
  elif alpha is not None:
    label = f"{kind}_alpha{float(alpha)!r}"  # type: ignore[arg-type]
  else:
    label = kind
  chosen, suffix = _baseline_suffix(baseline, ORDER_STAT_BASELINES)
  return _Spec(
    f"{_PREFIX}order_stat_{label}_k{size}{suffix}",
    lambda r: rank_objectives.order_stat_advantages(r, weights, baseline=chosen),
    size,
    binary=False,
    group_scale=True,
  )


def _maxrl_spec(control_variate: object) -> _Spec:
  """MaxRL's advantages on 0/1 rewards (with its control variate by default)."""
  cv = True if control_variate is None else control_variate
  if not isinstance(cv, (bool, np.bool_)):
    raise ValueError(f"control_variate={cv!r} must be a bool.")
  use_cv = bool(cv)
  return _Spec(
    f"{_PREFIX}maxrl" + ("" if use_cv else "_no_control_variate"),
    lambda r: peers.maxrl_advantages(r, control_variate=use_cv),
    None,
    binary=True,
    group_scale=False,
  )


def _pass_at_k_training_spec(size: int, eps: object) -> _Spec:
  """Pass@k training's advantages on 0/1 rewards (``eps`` 0 by default)."""
  e = 0.0 if eps is None else _check_eps(eps)
  return _Spec(
    f"{_PREFIX}pass_at_k_training_k{size}" + (f"_eps{e!r}" if e else ""),
    lambda r: peers.pass_at_k_training_advantages(r, size, eps=e),
    size,
    binary=True,
    group_scale=False,
  )


def _estimator_function(spec: _Spec) -> Callable[..., np.ndarray]:
  """The function tunix calls: flat prompt-major [B*G] rewards -> [B*G] advantages."""

  def estimate(rewards: ArrayLike, num_generations: int) -> np.ndarray:
    g = checks.check_int(num_generations, "num_generations", low=1)
    r = checks.as_float_array(rewards, "rewards")
    if r.ndim != 1 or r.shape[0] % g:
      raise ValueError(
        f"rewards must be a flat array of B*num_generations values (prompt-major);"
        f" got shape {r.shape} with num_generations={g}."
      )
    if spec.k is not None and spec.k > g:
      raise ValueError(f"k={spec.k} of {spec.name} must be <= num_generations={g}.")
    if spec.binary:
      v = np.asarray(rewards, dtype=np.float64)  # before float32 could round 1 + 1e-9 to 1
      finite = v[np.isfinite(v)]
      if not np.all((finite == 0) | (finite == 1)):
        raise ValueError(
          f"rewards must be 0 or 1 for {spec.name} (binary rewards; tunix sums the"
          f" reward functions): got values {np.unique(finite[(finite != 0) & (finite != 1)])[:5]}."
        )
    out = spec.transform(r.reshape(-1, g))
    if spec.group_scale:
      out = out * g
    return np.asarray(out, dtype=np.float32).reshape(-1)

  estimate.__name__ = estimate.__qualname__ = spec.name
  estimate.__doc__ = f"maxk advantage estimator {spec.name!r} for tunix (see maxk.contrib.tunix)."
  return estimate


def _function_registry() -> types.ModuleType:
  """tunix's ``tunix.rl.function_registry``, imported on first use."""
  try:
    return importlib.import_module("tunix.rl.function_registry")
  except ImportError as e:
    raise ImportError(
      f"maxk.contrib.tunix registers estimators with tunix, which could not be imported"
      f" ({e}); install it with `{_INSTALL}`."
    ) from e


def _register(spec: _Spec) -> str:
  registry = _function_registry()
  try:
    registry.get_advantage_estimator(spec.name)
  except LookupError:
    registry.register_advantage_estimator(spec.name)(_estimator_function(spec))
  return spec.name


def advantage_estimator(
  estimator: str,
  *,
  k: int | None = None,
  baseline: str | None = None,
  kind: str | None = None,
  m: int | None = None,
  alpha: float | None = None,
  control_variate: bool | None = None,
  eps: float | None = None,
) -> str:
  """The tunix registry name of a maxk estimator, registered on first use.

  Set ``GRPOConfig(advantage_estimator=...)`` to the returned name.  Names and the
  scale of each estimator are in the module docstring.

  Args:
    estimator: ``"max_at_k"`` (``k``, ``baseline``), ``"order_stat"`` (``kind``,
      ``k``, ``m`` or ``alpha`` as the kind needs, ``baseline``), ``"maxrl"``
      (``control_variate``) or ``"pass_at_k_training"`` (``k``, ``eps``).
    k: keyword-only int >= 1, the number of draws of the objective.
    baseline: keyword-only; ``None`` is the estimator's default (``"loo_minus_one"``
      for max_at_k, ``"loo_centered"`` for order_stat), which the name leaves out.
    kind: keyword-only, a :func:`maxk.rank_weights` kind (order_stat).
    m: keyword-only, the ``m`` of kinds ``"top_m"`` and ``"bottom_m"``.
    alpha: keyword-only, the ``alpha`` of kind ``"upper_tail_mean"``.
    control_variate: keyword-only bool for maxrl (``None``: True).
    eps: keyword-only real >= 0 for pass_at_k_training (``None``: 0).

  Returns:
    The registered name, e.g. ``"maxk_max_at_k_k4_loo"``.

  Raises:
    ValueError: unknown estimator, a parameter the estimator does not take, a
      missing or out-of-range parameter (naming it).
    ImportError: tunix is not installed (``pip install google-tunix``).
  """
  spec = _spec(
    estimator,
    k=k,
    baseline=baseline,
    kind=kind,
    m=m,
    alpha=alpha,
    control_variate=control_variate,
    eps=eps,
  )
  return _register(spec)


def register(k_values: Sequence[int] = (1, 2, 4, 8, 16)) -> tuple[str, ...]:
  """Registers a catalogue of maxk estimators with tunix; returns their names.

  For each k in ``k_values``: max_at_k with each of :data:`MAX_AT_K_BASELINES`,
  order_stat for each of :data:`CATALOGUE_KINDS` (default baseline) and
  pass_at_k_training (eps 0); then maxrl with and without its control variate.
  Any other combination is registered by :func:`advantage_estimator`.

  Args:
    k_values: non-empty sequence of ints >= 1 (repeats are registered once).

  Returns:
    The registered names, in the order above, each once.

  Raises:
    ValueError: bad ``k_values``.
    ImportError: tunix is not installed (``pip install google-tunix``).
  """
  if isinstance(k_values, (str, bytes)) or not isinstance(k_values, Sequence) or not k_values:
    raise ValueError(f"k_values={k_values!r} must be a non-empty sequence of ints >= 1.")
  ks = dict.fromkeys(
    checks.check_int(k, "k_values entry", low=1, high=checks.MAX_SIZE) for k in k_values
  )
  specs = []
  for k in ks:
    specs += [_spec("max_at_k", k=k, baseline=b) for b in MAX_AT_K_BASELINES]
    specs += [_spec("order_stat", kind=c, k=k) for c in CATALOGUE_KINDS]
    specs.append(_spec("pass_at_k_training", k=k))
  specs.append(_spec("maxrl", control_variate=True))
  specs.append(_spec("maxrl", control_variate=False))
  return tuple(_register(s) for s in specs)
