"""The comparisons an LM study declares before its runs (its config's ``CONTRASTS``).

A study config (e.g. ``experiments/lm/configs/study.py``, which the trainer also runs)
lists its declared comparisons as :class:`Contrast` values; the study's summary
(``experiments.lm_study``) tests them: the interval over seeds, Holm's correction
within each family and the verdicts are in :mod:`experiments.lm_study.significance`.
"""

from __future__ import annotations

import dataclasses
import math

MEASURES = {"pass": "pass_at_k", "max": "max_at_k"}
DEFAULT_FAMILY = "declared"


@dataclasses.dataclass(frozen=True)
class Contrast:
  """A comparison declared before the study: run ``a`` minus run ``b`` in pass@k
  (``measure="pass"``) or max@k (``"max"``) at ``k``.

  ``a`` and ``b`` are run names as in ``paired.csv`` (``base``, ``grpo``,
  ``max_at_k_k4``, ``max_at_k_k8-60-1``, ...); ``k`` is an int >= 1 or ``"n"``, the
  largest k evaluated (the evaluation's n); ``question`` is the label of the
  comparison in tables (unique within a study).

  ``margin`` (> 0, optional) is the declared equivalence margin: the contrast may
  then also conclude that |a − b| < margin
  (:func:`experiments.lm_study.significance.equivalence_p_value`). ``family``
  names the contrast's Holm family (e.g. ``"primary"``, ``"secondary"``): Holm's
  correction runs within each family over every task of the study. ``at_kl`` (> 0,
  optional) compares the arms where each reaches that held-out KL to the warm start
  (nats), interpolated along each seed's evaluated checkpoints
  (``experiments.lm_study.frontier``); by default they are compared at the final step.

  Raises:
    ValueError: naming the field that is malformed.
  """

  a: str
  b: str
  measure: str
  k: int | str
  question: str
  margin: float | None = None
  family: str = DEFAULT_FAMILY
  at_kl: float | None = None

  def __post_init__(self) -> None:
    for field in ("a", "b", "question"):
      value = getattr(self, field)
      if not isinstance(value, str) or not value.strip():
        raise ValueError(f"Contrast.{field}={value!r} must be a non-empty string.")
    if self.a == self.b:
      raise ValueError(f"Contrast.b={self.b!r} must differ from Contrast.a.")
    if self.measure not in MEASURES:
      raise ValueError(f"Contrast.measure={self.measure!r} must be one of {sorted(MEASURES)}.")
    k = self.k
    if k != "n" and (isinstance(k, bool) or not isinstance(k, int) or k < 1):
      raise ValueError(f"Contrast.k={k!r} must be an int >= 1 or 'n'.")
    margin = self.margin
    if margin is not None and (
      isinstance(margin, bool) or not isinstance(margin, (int, float)) or not 0 < margin < math.inf
    ):
      raise ValueError(f"Contrast.margin={margin!r} must be a finite number > 0 or None.")
    at_kl = self.at_kl
    if at_kl is not None and (
      isinstance(at_kl, bool) or not isinstance(at_kl, (int, float)) or not 0 < at_kl < math.inf
    ):
      raise ValueError(f"Contrast.at_kl={at_kl!r} must be a finite number > 0 or None.")
    if not isinstance(self.family, str) or not self.family.strip():
      raise ValueError(f"Contrast.family={self.family!r} must be a non-empty string.")

  @property
  def metric(self) -> str:
    """The metric's column value in the study's tables: ``pass_at_k`` or ``max_at_k``."""
    return MEASURES[self.measure]

  def resolve_k(self, n: int) -> int:
    """``k`` for an evaluation of n samples per problem (``"n"`` is n).

    Raises:
      ValueError: if k > n.
    """
    k = n if self.k == "n" else int(self.k)
    if k > n:
      raise ValueError(f"Contrast.k={k} exceeds the evaluation's n={n} ({self.question}).")
    return k
