"""Run specs of the LM experiment: which estimator, k_opt schedule, off-policy
method and own hyperparameters each RL run (an entry of ``rl.runs``) uses, and the
on-policy advantages of a run's estimator."""

from __future__ import annotations

from collections.abc import Sequence
import dataclasses
import math

import jax

from experiments import config_checks
from experiments import estimators as estimators_lib
from experiments import schedules

# A run spec names "max_at_k" (the registry's max@k baseline named by ``rl.baseline``)
# or one of the registry's max@k peers (:func:`estimator_choices`).
MAX_AT_K = "max_at_k"
BASELINES = tuple(e.name for e in estimators_lib.entries(kind="baseline"))
# Inner-epoch methods: the registry's off-policy estimators by their method name
# ("exact", "first_order"), and two that are no estimator of the registry.
OFF_POLICY = (
  *(e.method for e in estimators_lib.entries(kind="off_policy") if e.method),
  "surrogate",
  "ppo_clip",
)
# The estimators other than max@k weigh each sample by its own ratio only.
PEER_METHOD = "ppo_clip"
# A completion is correct exactly when its reward is 1 (binary or continuous, see
# ``tasks``): the threshold of the binary estimators (``pass_at_k_training``).
PASS_THRESHOLD = 1.0
# A run's own hyperparameters, ``[name=value,...]`` after its spec: the RL learning
# rate (> 0, instead of ``rl.learning_rate``) and the KL-penalty coefficient (>= 0,
# instead of ``rl.kl_coef``), in the order they appear in run names and labels.
RUN_OPTIONS = {"lr": "learning_rate", "kl": "kl_coef"}


def estimator_choices() -> tuple[str, ...]:
  """The estimators a run spec may name: ``"max_at_k"`` and every registered max@k
  peer (on-policy, objective ``max``), k-dependent or not."""
  return (MAX_AT_K, *(e.name for e in estimators_lib.entries(kind="peer")))


def estimator_entry(estimator: str, baseline: str) -> estimators_lib.Estimator:
  """The registry entry of a run-spec estimator: ``baseline``'s for ``"max_at_k"``.

  Raises:
    ValueError: on an estimator outside :func:`estimator_choices` or a baseline
      outside :data:`BASELINES`.
  """
  if estimator == MAX_AT_K:
    if baseline not in BASELINES:
      raise ValueError(f"Unknown baseline={baseline!r}; valid: {BASELINES}.")
    return estimators_lib.get(baseline)
  if estimator not in estimator_choices():
    raise ValueError(f"Unknown estimator {estimator!r}; valid: {estimator_choices()}.")
  return estimators_lib.get(estimator)


def uses_k(estimator: str) -> bool:
  """Whether a run-spec estimator's advantages depend on k (then it takes a schedule)."""
  return estimator == MAX_AT_K or estimators_lib.get(estimator).uses_k


@dataclasses.dataclass(frozen=True)
class RunLabels:
  """Every name of one run, derived from its :class:`RunSpec` by :meth:`RunSpec.labels`.

  Attributes:
    name: the run's name (folders, logs, checkpoints), e.g. ``max_at_k_k8-60-1`` or,
      with its own hyperparameters, ``grpo_lr3e-05``.
    k_opt: its k schedule, e.g. ``8:60:1``; ``n/a`` for a k-free estimator.
    method: the ``method`` column, e.g. ``max_at_k/loo_minus_one/anneal/exact`` or
      ``grpo/lr3e-05/ppo_clip``.
  """

  name: str
  k_opt: str
  method: str


@dataclasses.dataclass(frozen=True)
class RunSpec:
  """One RL run: an estimator, its k_opt schedule (see :mod:`experiments.schedules`),
  its off-policy method for inner epochs after the first (one of ``OFF_POLICY``;
  always ``"ppo_clip"`` for estimators other than ``max_at_k``) and its own RL
  learning rate and KL-penalty coefficient (None: the config's ``rl.learning_rate``
  and ``rl.kl_coef``)."""

  name: str
  estimator: str
  schedule: schedules.Schedule
  off_policy: str = "exact"
  learning_rate: float | None = None
  kl_coef: float | None = None

  def k_at(self, step: int) -> int:
    """k_opt of RL step ``step``, numbered from 1 as the training loop counts them.

    Step ``step`` has schedule index ``step - 1``: ``"8:50:1"`` uses k=8 for steps
    1-50 (the first 50 steps) and k=1 from step 51 on.
    """
    return self.schedule.k_at(step - 1)

  @property
  def k_label(self) -> str:
    """The run's ``k_opt`` label (``labels().k_opt``)."""
    return self.schedule.spec if uses_k(self.estimator) else "n/a"

  @property
  def options(self) -> tuple[str, ...]:
    """The run's own hyperparameters as ``<option><value>`` (``lr3e-05``, ``kl0.05``),
    in ``RUN_OPTIONS`` order; empty when it uses the config's."""
    values = ((option, getattr(self, field)) for option, field in RUN_OPTIONS.items())
    return tuple(f"{option}{value!r}" for option, value in values if value is not None)

  def labels(self, baseline: str, inner_epochs: int) -> RunLabels:
    """The run's name and labels. ``method`` is the estimator (``max_at_k/<baseline>``),
    then ``/anneal`` for a k schedule that changes k, then the run's own
    hyperparameters (``/lr3e-05``, ``/kl0.05``), then the off-policy method when
    it applies (``inner_epochs > 1``): e.g. ``max_at_k/loo_minus_one/anneal/exact``,
    ``grpo/ppo_clip``, ``grpo/lr3e-05/ppo_clip``."""
    method = f"{MAX_AT_K}/{baseline}" if self.estimator == MAX_AT_K else self.estimator
    if uses_k(self.estimator) and len(set(self.schedule.ks)) > 1:
      method += "/anneal"
    method += "".join(f"/{option}" for option in self.options)
    if inner_epochs > 1:
      method += f"/{self.off_policy}"
    return RunLabels(self.name, self.k_label, method)


def _split_entries(text: str) -> list[str]:
  """The comma-separated entries of ``text``, commas inside ``[...]`` kept
  (:func:`experiments.config_checks.split`, as the command line splits ``rl.runs``),
  empty ones dropped."""
  try:
    return [entry for entry in config_checks.split(text) if entry]
  except ValueError:
    raise ValueError(f"runs={text!r} has unbalanced or nested brackets.") from None


def _parse_options(entry: str) -> tuple[str, dict[str, float]]:
  """``(spec, {field: value})`` of ``"spec[lr=3e-5,kl=0.01]"`` (no brackets: no options)."""
  head, bracket, rest = entry.partition("[")
  if not bracket:
    if "]" in entry:
      raise ValueError(f"run {entry!r}: unbalanced brackets.")
    return entry, {}
  if not rest.endswith("]"):
    raise ValueError(f"run {entry!r}: options go last, in one [name=value,...].")
  values: dict[str, float] = {}
  for item in rest[:-1].split(","):
    name, equals, text = (part.strip() for part in item.partition("="))
    if name not in RUN_OPTIONS or not equals:
      raise ValueError(
        f"run {entry!r}: unknown option {item.strip()!r}; valid: name=value with name in "
        f"{tuple(RUN_OPTIONS)}."
      )
    field = RUN_OPTIONS[name]
    if field in values:
      raise ValueError(f"run {entry!r}: repeats option {name!r}.")
    try:
      value = float(text)
    except ValueError:
      value = math.nan
    if not math.isfinite(value) or value < 0 or (name == "lr" and value == 0):
      wanted = "a finite number > 0" if name == "lr" else "a finite number >= 0"
      raise ValueError(f"run {entry!r}: {name}={text!r} must be {wanted}.")
    values[field] = value
  return head.strip(), values


def parse_runs(
  runs: str | Sequence[str], n: int, *, num_steps: int | None = None, off_policy: str = "exact"
) -> list[RunSpec]:
  """Parses ``("max_at_k@1", "max_at_k@8:50:1", "max_at_k@4/ppo_clip", "grpo[lr=3e-5]")``
  (``rl.runs``), or the same comma-separated in one string, into run specs.

  Each entry is ``estimator[@schedule][/method][[options]]``, the estimator one of
  :func:`estimator_choices`. A schedule (default ``1``) is ``k`` or
  ``k0:t1:k1[:t2:k2...]``: k0 for the first t1 RL steps, then k1 until step t2, and
  so on (:func:`experiments.schedules.parse_schedule`; PKPO Fig. 3 anneals k this
  way). k-free estimators (GRPO, RLOO, max-minus-second) take no schedule. The
  method (one of ``OFF_POLICY``; default ``off_policy``, i.e. ``rl.off_policy``) sets
  the run's inner-epoch weights; estimators other than ``max_at_k`` accept only
  ``ppo_clip``. The options, ``[lr=X]``, ``[kl=Y]`` or ``[lr=X,kl=Y]``
  (:data:`RUN_OPTIONS`), give the run its own RL learning rate and KL-penalty
  coefficient (e.g. a GRPO arm that moves as little as a max@k one). A run is named
  ``<estimator>_k<schedule>`` (``:`` written ``-``), or ``<estimator>`` when k-free,
  plus ``_<method>`` when the entry names one (``max_at_k_k4_ppo_clip``), plus
  ``_lr<X>`` and ``_kl<Y>`` for its options (``grpo_lr3e-05``,
  ``max_at_k_k8_kl0.05``; each value as Python's ``repr`` of the float writes it).

  Args:
    runs: the run specs, one per entry (``rl.runs``), or one string of them
      comma-separated (commas inside ``[...]`` do not split), the form ``rl.runs``
      had in the ``config.json`` of runs before it was a list.
    n: samples per prompt; every k must satisfy ``1 <= k <= n``.
    num_steps: the number of RL steps when known (``rl.steps``): switch steps must
      then be smaller.
    off_policy: the method of runs that name none (``rl.off_policy``).

  Raises:
    ValueError: on an unknown estimator, method or option, a bad schedule, k outside
      [1, n], switch steps that do not strictly increase inside (0, num_steps), a
      learning rate <= 0 or a KL coefficient < 0 (each naming the entry), or a
      repeated run.
  """
  if off_policy not in OFF_POLICY:
    raise ValueError(f"Unknown off_policy={off_policy!r}; valid: {OFF_POLICY}.")
  entries = _split_entries(runs) if isinstance(runs, str) else [e.strip() for e in runs]
  text = ",".join(entries)  # For the error messages.
  specs = [
    _parse_entry(entry, text, n, num_steps=num_steps, off_policy=off_policy) for entry in entries
  ]
  if not specs:
    raise ValueError("rl.runs must name at least one run.")
  names = [s.name for s in specs]
  same = [(s.estimator, s.schedule.spec, s.off_policy, s.options) for s in specs]
  if len(set(names)) != len(names) or len(set(same)) != len(same):
    raise ValueError(f"rl.runs={text!r} repeats a run.")
  return specs


def _parse_entry(
  entry: str, text: str, n: int, *, num_steps: int | None, off_policy: str
) -> RunSpec:
  """The run spec of one entry of ``text`` (:func:`parse_runs`)."""
  spec_text, options = _parse_options(entry)
  head, slash, method = spec_text.partition("/")
  estimator, _, schedule_text = head.partition("@")
  if estimator not in estimator_choices():
    raise ValueError(
      f"Unknown estimator {estimator!r} in runs={text!r}; valid: {estimator_choices()}."
    )
  if slash and method not in OFF_POLICY:
    raise ValueError(f"run {entry!r}: unknown off-policy method {method!r}; valid: {OFF_POLICY}.")
  if estimator != MAX_AT_K and slash and method != PEER_METHOD:
    raise ValueError(f"run {entry!r}: {estimator} supports only the {PEER_METHOD} method.")
  method = method if slash else (off_policy if estimator == MAX_AT_K else PEER_METHOD)
  suffix = f"_{method}" if slash else ""
  if not uses_k(estimator):
    if schedule_text:
      raise ValueError(f"run {entry!r}: {estimator} does not depend on k; drop '@'.")
    spec = RunSpec(estimator + suffix, estimator, schedules.constant(1), method, **options)
  else:
    try:
      schedule = schedules.parse_schedule(schedule_text or "1", num_steps=num_steps, n=n)
    except ValueError as e:
      raise ValueError(f"run {entry!r}: {e}") from None
    name = f"{estimator}_k{schedule.spec}{suffix}".replace(":", "-")
    spec = RunSpec(name, estimator, schedule, method, **options)
  return dataclasses.replace(spec, name="_".join([spec.name, *spec.options])) if options else spec


def advantages(estimator: str, rewards_Pxn: jax.Array, k: int, baseline: str) -> jax.Array:
  """On-policy advantages [P, n] of a run-spec estimator (gradient scale): the
  registry entry of :func:`estimator_entry`, binary estimators at
  :data:`PASS_THRESHOLD`."""
  entry = estimator_entry(estimator, baseline)
  return entry(rewards_Pxn, k, pass_threshold=PASS_THRESHOLD)
