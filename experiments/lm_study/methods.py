"""The study's runs as methods, read from the runs' own records instead of from names.

Every run of a study config (e.g. ``experiments/lm/configs/study_8seed.py``: its
``rl.runs``, plus the base model) reaches the summary as rows with ``rl_run``, ``method`` (e.g.
``max_at_k/loo_minus_one/anneal/exact``) and ``k_opt`` (``4``, ``8:60:1``, or
``n/a`` for a k-free estimator). :func:`method_of` turns them into a
:class:`Method` (estimator family, k schedule, off-policy weights), from which
come the labels of tables and figures, the k a run optimises, the reference run
(GRPO) of the "minus GRPO" comparisons, the pairs of the exploratory key
differences (the declared contrasts' pairs first) and the runs whose training
curves coincide by construction.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
import dataclasses
from typing import Any

BASE = "base"  # The base model's rl_run and stage (experiments.lm.reporting).
# The estimator whose run the "minus GRPO" comparisons subtract.
REFERENCE_FAMILY = "grpo"
# Estimators without k whose objective is the mean reward, i.e. pass@1's (GRPO, RLOO).
MEAN_REWARD_FAMILIES = ("grpo", "rloo")
# The name of each method family in titles and labels (``method`` up to its first "/").
FAMILY_NAMES = {
  "base": "base",
  "grpo": "GRPO",
  "rloo": "RLOO",
  "max_at_k": "max@k",
  "max_minus_second": "max minus second",
}
# Off-policy weights of an inner epoch (the last part of ``method``) and their labels.
OFF_POLICY_NAMES = {"exact": "exact", "first_order": "first-order", "ppo_clip": "PPO-clip"}


@dataclasses.dataclass(frozen=True)
class Method:
  """One run of a study: its name, estimator family, k schedule and off-policy weights.

  ``schedule`` is ``(k0, t1, k1, t2, k2, ...)`` (k0 for the first t1 RL steps, then
  k1, ...; one k for a constant schedule; empty for the base model and k-free
  estimators); ``off_policy`` is ``exact``, ``first_order``, ``ppo_clip`` or empty.
  """

  run: str
  family: str
  schedule: tuple[int, ...] = ()
  off_policy: str = ""

  @property
  def is_base(self) -> bool:
    """Whether this is the base model (the warm start, no RL)."""
    return self.run == BASE

  @property
  def annealed(self) -> bool:
    """Whether k changes during training."""
    return len(self.schedule) > 1

  @property
  def family_name(self) -> str:
    """The family's name in labels (``GRPO``, ``max@k``); the family itself if unknown."""
    return FAMILY_NAMES.get(self.family, self.family)


def method_of(run: str, method: str, k_opt: Any) -> Method:
  """The :class:`Method` of a row's ``rl_run``, ``method`` and ``k_opt``."""
  if run == BASE:
    return Method(run, BASE)
  parts = str(method).split("/")
  off_policy = parts[-1] if len(parts) > 1 and parts[-1] in OFF_POLICY_NAMES else ""
  text = str(k_opt)
  schedule = tuple(int(x) for x in text.split(":")) if text.replace(":", "").isdigit() else ()
  return Method(run, parts[0], schedule, off_policy)


def methods_of_rows(rows: Iterable[dict[str, Any]]) -> dict[str, Method]:
  """rl_run -> its :class:`Method`, in the rows' order (rows with ``rl_run``,
  ``method`` and ``k_opt``)."""
  out: dict[str, Method] = {}
  for r in rows:
    if r["rl_run"] not in out:
      out[r["rl_run"]] = method_of(r["rl_run"], r["method"], r["k_opt"])
  return out


def _several_weights(m: Method, methods: Iterable[Method]) -> bool:
  """Whether another run has ``m``'s family and schedule with other off-policy weights."""
  return any(
    (x.family, x.schedule) == (m.family, m.schedule) and x.off_policy != m.off_policy
    for x in methods
  )


def short_label(m: Method, methods: Iterable[Method] = ()) -> str:
  """A run in the key differences: ``base``, ``GRPO``, ``k_opt = 4`` (max@k),
  ``annealed 8 -> 1``; with its off-policy weights (``k_opt = 4 first-order``) where
  ``methods`` hold the same schedule with other weights."""
  if m.is_base or not m.schedule:
    return m.family_name
  prefix = "" if m.family == "max_at_k" else f"{m.family_name} "
  ks = m.schedule[0::2]
  text = f"annealed {ks[0]} -> {ks[-1]}" if m.annealed else f"k_opt = {ks[0]}"
  if m.off_policy and _several_weights(m, methods):
    text += f" {OFF_POLICY_NAMES[m.off_policy]}"
  return prefix + text


def long_label(m: Method, methods: Iterable[Method] = ()) -> str:
  """A run in a figure's legend: ``base (warm start)``, ``GRPO``, ``max@k, k_opt=4``,
  ``max@k, annealed 8 -> 1``; with ``, first-order`` etc. as :func:`short_label`."""
  if m.is_base:
    return "base (warm start)"
  if not m.schedule:
    return m.family_name
  ks = m.schedule[0::2]
  text = f"annealed {ks[0]} -> {ks[-1]}" if m.annealed else f"k_opt={ks[0]}"
  label = f"{m.family_name}, {text}"
  if m.off_policy and _several_weights(m, methods):
    label += f", {OFF_POLICY_NAMES[m.off_policy]}"
  return label


def own_k(m: Method) -> int | None:
  """The k a run optimises: 1 for GRPO and RLOO (their mean reward is pass@1's), k_opt
  for max@k, the last k of an annealed schedule (``8:60:1`` -> 1); None if unknown."""
  if m.family in MEAN_REWARD_FAMILIES:
    return 1
  return m.schedule[-1] if m.schedule else None


def reference_run(methods: Iterable[Method]) -> str | None:
  """The run of :data:`REFERENCE_FAMILY` (GRPO), or None if the study ran none."""
  return next((m.run for m in methods if m.family == REFERENCE_FAMILY), None)


def _candidate_pairs(
  methods: dict[str, Method], declared: Sequence[tuple[str, str]]
) -> list[tuple[str, str]]:
  """The pairs of :func:`key_pairs` in order, before orientation and deduplication."""
  listed = list(methods.values())
  rl = [m for m in listed if not m.is_base]
  reference = reference_run(listed)
  pairs = list(declared)
  pairs += [(m.run, BASE) for m in rl]
  pairs += [(m.run, reference) for m in rl if reference is not None]
  usual: dict[str, str] = {}
  for m in rl:
    usual.setdefault(m.family, m.off_policy)
  constant = {
    (m.family, m.schedule[0]): m.run
    for m in rl
    if len(m.schedule) == 1 and m.off_policy == usual[m.family]
  }
  for m in rl:
    if len(m.schedule) == 1 and m.off_policy == usual[m.family]:
      smallest = min(k for family, k in constant if family == m.family)
      pairs.append((m.run, constant[m.family, smallest]))
  for m in rl:
    if m.annealed:
      ends = (m.schedule[0], m.schedule[-1])
      pairs += [(m.run, constant[m.family, k]) for k in ends if (m.family, k) in constant]
  for m in rl:
    if len(m.schedule) == 1 and m.off_policy != usual[m.family]:
      if (m.family, m.schedule[0]) in constant:
        pairs.append((m.run, constant[m.family, m.schedule[0]]))
  return pairs


def key_pairs(
  methods: dict[str, Method],
  present: Iterable[tuple[str, str]],
  declared: Sequence[tuple[str, str]],
) -> list[tuple[str, str, str]]:
  """The exploratory key differences (a_run, b_run, label), top to bottom: the
  ``declared`` contrasts' (a, b) pairs (e.g. contrasts.csv's, :func:`declared_pairs`); every
  RL run against the base model, then against GRPO; each constant-k run against the
  smallest k_opt of its estimator; an annealed run against the constant runs at its
  first and last k; other off-policy weights against the usual ones at the same k.
  Each pair once, oriented as ``present`` holds it (paired.csv's (a_run, b_run));
  pairs not present are left out."""
  have = set(present)
  out: list[tuple[str, str, str]] = []
  seen: set[frozenset[str]] = set()
  for a, b in _candidate_pairs(methods, declared):
    if a == b or frozenset((a, b)) in seen:
      continue
    pair = (a, b) if (a, b) in have else (b, a) if (b, a) in have else None
    if pair is None:
      continue
    seen.add(frozenset(pair))
    labels = [short_label(methods[x], methods.values()) for x in pair]
    out.append((pair[0], pair[1], f"{labels[0]} vs {labels[1]}"))
  return out


def declared_pairs(contrast_rows: Iterable[dict[str, Any]], task: str) -> list[tuple[str, str]]:
  """The (a, b) runs of ``task``'s declared contrasts (contrasts.csv rows), in order."""
  return [(r["a"], r["b"]) for r in contrast_rows if r["task"] == task]


def coinciding_runs(methods: Iterable[Method]) -> list[tuple[str, str, int]]:
  """(annealed run, constant run, last step) for every annealed run whose first k a
  constant run of the same family and weights keeps: within a seed both see the same
  prompts and sampling keys, so their training is identical up to the first switch
  step ``t1`` by construction."""
  methods = list(methods)
  out = []
  for m in methods:
    if not m.annealed:
      continue
    for x in methods:
      same = (x.family, x.off_policy, x.schedule) == (m.family, m.off_policy, m.schedule[:1])
      if same:
        out.append((m.run, x.run, m.schedule[1]))
  return out
