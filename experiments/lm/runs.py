"""Run specs of the LM experiment: which estimator, k_opt schedule and off-policy
method each RL run (an entry of ``rl.runs``) uses, and the on-policy advantages of a
run's estimator."""

from __future__ import annotations

import dataclasses

import jax

from experiments import estimators as estimators_lib
from experiments import schedules

# Run-spec estimators: "max_at_k" (its baseline is ``rl.baseline``) or a k-free peer.
K_FREE_ESTIMATORS = estimators_lib.K_FREE
ESTIMATORS = ("max_at_k", *K_FREE_ESTIMATORS)
OFF_POLICY = ("exact", "first_order", "surrogate", "ppo_clip")
BASELINES = estimators_lib.BASELINES


@dataclasses.dataclass(frozen=True)
class RunSpec:
  """One RL run: an estimator, its k_opt schedule (see :mod:`experiments.schedules`)
  and its off-policy method for inner epochs after the first (one of ``OFF_POLICY``;
  always ``"ppo_clip"`` for the k-free estimators)."""

  name: str
  estimator: str
  schedule: schedules.Schedule
  off_policy: str = "exact"

  def k_at(self, step: int) -> int:
    """k_opt of RL step ``step``, numbered from 1 as the training loop counts them.

    Step ``step`` has schedule index ``step - 1``: ``"8:50:1"`` uses k=8 for steps
    1-50 (the first 50 steps) and k=1 from step 51 on.
    """
    return self.schedule.k_at(step - 1)

  @property
  def k_label(self) -> str:
    return "n/a" if self.estimator in K_FREE_ESTIMATORS else self.schedule.spec

  @property
  def annealed(self) -> bool:
    return self.estimator not in K_FREE_ESTIMATORS and len(set(self.schedule.ks)) > 1

  def label(self, baseline: str, inner_epochs: int) -> str:
    """The run's ``method`` in results: the estimator (``max_at_k/<baseline>``), then
    ``/anneal`` for a k schedule that changes k, then the off-policy method when it
    applies (``inner_epochs > 1``): e.g. ``max_at_k/loo_minus_one/anneal/exact``,
    ``grpo/ppo_clip``."""
    label = f"max_at_k/{baseline}" if self.estimator == "max_at_k" else self.estimator
    if self.annealed:
      label += "/anneal"
    if inner_epochs > 1:
      label += f"/{self.off_policy}"
    return label


def parse_runs(
  text: str, n: int, *, num_steps: int | None = None, off_policy: str = "exact"
) -> list[RunSpec]:
  """Parses ``"max_at_k@1,max_at_k@8:50:1,max_at_k@4/ppo_clip,grpo"`` into run specs.

  Each entry is ``estimator[@schedule][/method]``. A schedule (default ``1``) is
  ``k`` or ``k0:t1:k1[:t2:k2...]``: k0 for the first t1 RL steps, then k1 until step
  t2, and so on (:func:`experiments.schedules.parse_schedule`; PKPO Fig. 3 anneals k
  this way). k-free estimators (GRPO, RLOO, max-minus-second) take no schedule. The
  method (one of ``OFF_POLICY``; default ``off_policy``, i.e. ``rl.off_policy``) sets
  the run's inner-epoch weights; k-free estimators accept only ``ppo_clip``. A run
  named with a method gets it in its name (``max_at_k_k4_ppo_clip``).

  Args:
    text: the comma-separated run specs (``rl.runs``).
    n: samples per prompt; every k must satisfy ``1 <= k <= n``.
    num_steps: the number of RL steps when known (``rl.steps``): switch steps must
      then be smaller.
    off_policy: the method of runs that name none (``rl.off_policy``).

  Raises:
    ValueError: on an unknown estimator or method, a bad schedule, k outside [1, n],
      switch steps that do not strictly increase inside (0, num_steps), or a repeated
      run.
  """
  if off_policy not in OFF_POLICY:
    raise ValueError(f"Unknown off_policy={off_policy!r}; valid: {OFF_POLICY}.")
  specs = []
  for entry in [e.strip() for e in text.split(",") if e.strip()]:
    head, slash, method = entry.partition("/")
    estimator, _, schedule_text = head.partition("@")
    if estimator not in ESTIMATORS:
      raise ValueError(f"Unknown estimator {estimator!r} in runs={text!r}; valid: {ESTIMATORS}.")
    if slash and method not in OFF_POLICY:
      raise ValueError(f"run {entry!r}: unknown off-policy method {method!r}; valid: {OFF_POLICY}.")
    suffix = f"_{method}" if slash else ""
    if estimator in K_FREE_ESTIMATORS:
      if schedule_text:
        raise ValueError(f"run {entry!r}: {estimator} does not depend on k; drop '@'.")
      if slash and method != "ppo_clip":
        raise ValueError(f"run {entry!r}: {estimator} supports only the ppo_clip method.")
      specs.append(RunSpec(estimator + suffix, estimator, schedules.constant(1), "ppo_clip"))
      continue
    try:
      schedule = schedules.parse_schedule(schedule_text or "1", num_steps=num_steps, n=n)
    except ValueError as e:
      raise ValueError(f"run {entry!r}: {e}") from None
    name = f"{estimator}_k{schedule.spec}{suffix}".replace(":", "-")
    specs.append(RunSpec(name, estimator, schedule, method if slash else off_policy))
  if not specs:
    raise ValueError("rl.runs must name at least one run.")
  names = [s.name for s in specs]
  same = [(s.estimator, s.schedule.spec, s.off_policy) for s in specs]
  if len(set(names)) != len(names) or len(set(same)) != len(same):
    raise ValueError(f"rl.runs={text!r} repeats a run.")
  return specs


def advantages(estimator: str, rewards_Pxn: jax.Array, k: int, baseline: str) -> jax.Array:
  """On-policy advantages [P, n] of a run-spec estimator (gradient scale).

  ``"max_at_k"`` is the registry estimator named ``baseline``
  (:func:`maxk.max_at_k_advantages`); the k-free peers are looked up by name.
  """
  if estimator not in ESTIMATORS:
    raise ValueError(f"Unknown estimator {estimator!r}; valid: {ESTIMATORS}.")
  name = baseline if estimator == "max_at_k" else estimator
  return estimators_lib.get(name)(rewards_Pxn, k)
