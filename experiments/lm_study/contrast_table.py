"""contrasts.csv: the study's declared contrasts across seeds, each with its floored
interval over seeds, p-value, Holm-adjusted p-value within its family, equivalence
test, power and verdict (:func:`contrast_rows`; the statistics are
:mod:`~experiments.lm_study.significance`'s). A final-step contrast comes from the
gathered ``paired.csv``; a contrast at matched KL from the runs' checkpoints
(:func:`matched_kl_contrasts`, :mod:`~experiments.lm_study.matched_kl`). Columns: the
module docstring of :mod:`experiments.lm_study.summary`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from experiments.lm import contrasts
from experiments.lm_study import config as config_lib
from experiments.lm_study import evaluation_tables
from experiments.lm_study import files
from experiments.lm_study import matched_kl
from experiments.lm_study import seeds as seeds_lib
from experiments.lm_study import significance
from experiments.lm_study.checkpoints import Arm

# contrasts.csv's columns after verdict when the study declares contrasts at matched KL:
# the KL level in nats ("final" for a final-step contrast) and the seeds in which both
# arms reached it (every seed for a final-step contrast).
MATCHED_COLUMNS = ("at_kl", "num_seeds_reached")


def _declared_row(
  task: str,
  c: contrasts.Contrast,
  k: int,
  seeds: Sequence[int],
  diffs: Sequence[float],
  ses: Sequence[float],
) -> dict[str, Any]:
  """contrasts.csv's row of contrast ``c`` on ``task`` (Holm's columns still absent)
  from its per-seed differences a − b and their standard errors over problems."""
  iv = seeds_lib.seed_interval(diffs, ses)
  t_lo, t_hi = seeds_lib.plain_bounds(diffs)
  return {
    "task": task,
    "question": c.question,
    "a": c.a,
    "b": c.b,
    "measure": c.measure,
    "k": k,
    "num_seeds": len(seeds),
    "seeds": " ".join(str(s) for s in seeds),
    "diff_seeds": seeds_lib.fmt_seeds(diffs),
    "se_seeds": seeds_lib.fmt_seeds(ses),
    "diff": float(iv.mean),
    "lo": float(iv.lo),
    "hi": float(iv.hi),
    "p_value": float(iv.p_value),
    "floored": bool(iv.floored),
    "t_lo": t_lo,
    "t_hi": t_hi,
    "family": c.family,
    "stderr": float(iv.stderr),
  }


def _paired_row(
  task: str, c: contrasts.Contrast, k: int, sign: float, by_seed: dict[int, dict[str, Any]]
) -> dict[str, Any]:
  """:func:`_declared_row` from the contrast's paired rows per seed, ``sign`` = -1
  where they hold b − a."""
  seeds = sorted(by_seed)
  diffs = [sign * float(by_seed[s]["diff"]) for s in seeds]
  ses = [float(by_seed[s]["diff_se"]) for s in seeds]
  return _declared_row(task, c, k, seeds, diffs, ses)


def matched_kl_contrasts(
  arms: dict[str, dict[int, dict[str, Arm]]], config: config_lib.StudyConfig
) -> dict[tuple[str, str], dict[str, Any]]:
  """(task, question) -> contrasts.csv's row (Holm's columns still absent) of every
  declared contrast with ``at_kl``, per task of ``arms`` (task -> seed -> run ->
  :class:`~experiments.lm_study.checkpoints.Arm`, the runs' checkpoints.csv).

  Each seed's difference and standard error is
  :func:`experiments.lm_study.matched_kl.seed_difference` at the contrast's KL
  (``matched_kl.matched_kl_rows``'s numbers: each arm's per-prompt pass@k where its
  mean held-out KL first reaches ``at_kl``, paired over prompts); the interval runs
  over the seeds in which both arms reached it (``seeds``; ``num_seeds_reached``),
  while ``num_seeds`` counts the task's seeds with checkpoints. Where fewer than two
  seeds reached it the row has no interval and a NaN p-value, which Holm counts in its
  family.

  Raises:
    StudyError: for a matched-KL contrast in max@k (checkpoints hold pass@k), seeds
      evaluated with different n, or a k above n.
  """
  out: dict[tuple[str, str], dict[str, Any]] = {}
  for task, by_seed in arms.items():
    ns = {arm.n for seed_arms in by_seed.values() for arm in seed_arms.values()}
    for c in config.matched_kl:
      if c.measure != "pass" or len(ns) != 1:
        raise files.StudyError(
          f"Task {task}: the contrast {c.question!r} at matched KL needs pass@k and one n "
          f"in every checkpoints.csv (measure {c.measure!r}, n in {sorted(ns)})."
        )
      try:
        k = c.resolve_k(next(iter(ns)))
      except ValueError as e:
        raise files.StudyError(f"Task {task}: {e}") from None
      assert c.at_kl is not None
      per_seed = {
        s: matched_kl.seed_difference(seed_arms[c.a], seed_arms[c.b], k, c.at_kl)
        if c.a in seed_arms and c.b in seed_arms
        else None
        for s, seed_arms in sorted(by_seed.items())
      }
      reached = [(s, v) for s, v in per_seed.items() if v is not None]
      row = _declared_row(
        task,
        c,
        k,
        [s for s, _ in reached],
        [d for _, (d, _) in reached],
        [se for _, (_, se) in reached],
      )
      row["num_seeds"] = len(per_seed)
      out[task, c.question] = row | {"at_kl": c.at_kl, "num_seeds_reached": len(reached)}
  return out


def contrast_rows(
  paired: Sequence[dict[str, Any]],
  config: config_lib.StudyConfig,
  *,
  matched: dict[tuple[str, str], dict[str, Any]] | None = None,
) -> list[dict[str, Any]]:
  """contrasts.csv: every declared contrast (``config.contrasts``) of every task in
  ``paired`` (paired.csv rows), in declared order per task, with the floored interval
  over seeds, its p-value, the Holm-adjusted one within its family over every task,
  the verdict (:func:`decide`), and the plain t-interval beside (``t_lo``, ``t_hi``).

  A final-step contrast comes from ``paired``: a contrast whose runs it holds as
  b − a is negated; k = "n" is the task's largest k_eval (its evaluation's n). A
  contrast with ``at_kl`` is not in paired.csv: its row comes from ``matched``
  (:func:`matched_kl_contrasts`), and every row then carries :data:`MATCHED_COLUMNS`
  after ``verdict`` (a final-step row: ``at_kl`` = ``final``, ``num_seeds_reached`` =
  ``num_seeds``); Holm's families span final-step and matched-KL rows alike. A study
  without ``at_kl`` contrasts keeps the columns it always had.

  Raises:
    StudyError: if a task lacks the runs or the k of a declared contrast, or a
      contrast with ``at_kl`` has no row in ``matched`` (no checkpoints.csv).
  """
  groups = evaluation_tables.paired_groups(paired)
  has_matched = bool(config.matched_kl)
  out = []
  for task in dict.fromkeys(r["task"] for r in paired):
    n = max(int(r["k_eval"]) for r in paired if r["task"] == task)
    for c in config.contrasts:
      if c.at_kl is not None:
        row = (matched or {}).get((task, c.question))
        if row is None:
          raise files.StudyError(
            f"Task {task}: the declared contrast {c.question!r} at KL {c.at_kl:g} needs the "
            "runs' checkpoints.csv, which this summary did not read."
          )
        out.append(dict(row))
        continue
      row = _final_step_row(task, c, n, groups, config.path)
      if has_matched:
        row |= {"at_kl": matched_kl.FINAL, "num_seeds_reached": row["num_seeds"]}
      out.append(row)
  margins = {c.question: c.margin for c in config.contrasts}
  rows = decide(out, margins, power_effect=config.power_effect)
  if has_matched:  # The matched-KL columns after every other, in every row.
    rows = [
      {c: v for c, v in r.items() if c not in MATCHED_COLUMNS} | {c: r[c] for c in MATCHED_COLUMNS}
      for r in rows
    ]
  return rows


def _final_step_row(
  task: str,
  c: contrasts.Contrast,
  n: int,
  groups: dict[tuple, dict[int, dict[str, Any]]],
  config_path: str,
) -> dict[str, Any]:
  """The row of final-step contrast ``c`` on ``task`` (evaluated with n samples) from
  the paired.csv ``groups`` (:func:`evaluation_tables.paired_groups`), negated where
  they hold b − a.

  Raises:
    StudyError: if ``c``'s k exceeds n or the task lacks its paired difference.
  """
  try:
    k = c.resolve_k(n)
  except ValueError as e:
    raise files.StudyError(f"Task {task}: {e}") from None
  sign, by_seed = 1.0, groups.get((task, c.a, c.b, c.metric, k))
  if by_seed is None:
    sign, by_seed = -1.0, groups.get((task, c.b, c.a, c.metric, k))
  if by_seed is None:
    raise files.StudyError(
      f"Task {task} has no paired difference {c.a} − {c.b} in {c.metric} at k={k}, "
      f"which the declared contrast {c.question!r} needs ({config_path})."
    )
  return _paired_row(task, c, k, sign, by_seed)


def decide(
  rows: list[dict[str, Any]],
  margins: dict[str, float | None],
  *,
  power_effect: float | None = None,
) -> list[dict[str, Any]]:
  """Adds to each declared contrast's row (``family``, ``diff``, ``stderr``,
  ``p_value``, ``num_seeds``) its Holm-adjusted p-value within its family
  (``p_holm``), the equivalence columns (``margin``, ``p_equivalence`` and its Holm
  adjustment within the family's contrasts that declare a margin), the ``power`` of
  its test at an effect of ``margin`` (at α / family size, ``significance.power``; with
  the seeds that reached a matched KL, ``num_seeds_reached``, where a row has them)
  and the ``verdict`` (``significance.declared_verdict``). ``margins`` maps a question to its
  declared margin; a contrast without one gets ``power_effect`` as ``margin`` for its
  power alone (``p_equivalence`` NaN), or NaN."""
  families: dict[str, list[int]] = {}
  for i, row in enumerate(rows):
    families.setdefault(row["family"], []).append(i)
  for members in families.values():
    p_holm = significance.holm([rows[i]["p_value"] for i in members])
    for i, p in zip(members, p_holm.tolist()):
      rows[i]["p_holm"] = float(p)
    equivalence = []
    for i in members:
      row, declared_margin = rows[i], margins.get(rows[i]["question"])
      margin = declared_margin if declared_margin is not None else power_effect
      row["margin"] = float("nan") if margin is None else float(margin)
      row["p_equivalence"] = float("nan")
      df = int(row.get("num_seeds_reached", row["num_seeds"])) - 1
      if declared_margin is not None and df >= 1:
        row["p_equivalence"] = float(
          significance.equivalence_p_value(row["diff"], row["stderr"], df, declared_margin)
        )
        equivalence.append(i)
      alpha = significance.ALPHA / len(members)
      row["power"] = (
        significance.power(margin, row["stderr"], df, alpha=alpha)
        if margin is not None and df >= 1
        else float("nan")
      )
      row["p_equivalence_holm"] = float("nan")
    if equivalence:
      p_eq_holm = significance.holm([rows[i]["p_equivalence"] for i in equivalence])
      for i, p in zip(equivalence, p_eq_holm.tolist()):
        rows[i]["p_equivalence_holm"] = float(p)
  for row in rows:
    row["verdict"] = significance.declared_verdict(
      row["p_holm"], row["diff"], row["p_equivalence_holm"]
    )
  return rows
