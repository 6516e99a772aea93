"""The text of a study's design note (``DESIGN.md``): every number formatted from
:func:`experiments.lm_study.design_note.compute`'s result, the prose fixed here."""

from __future__ import annotations

import types
from typing import Any

from experiments.lm_study import markdown as md


def _pct(x: float) -> str:
  return f"{100 * x:.0f}%"


def _contrast_lines(study: types.ModuleType) -> list[str]:
  lines = []
  for c in study.CONTRASTS:
    where = f"at held-out KL {c.at_kl:g} nats" if c.at_kl is not None else "at the final step"
    margin = f", margin ±{c.margin:g}" if c.margin is not None else ""
    lines.append(
      f"| {c.family} | {c.question} | `{c.a}` − `{c.b}` | {c.measure}@{c.k} | {where}{margin} |"
    )
  return ["| family | contrast | a − b | measure | where |", "|---|---|---|---|---|", *lines, ""]


def _pilot_table(result: dict[str, Any]) -> list[str]:
  rows = [
    (
      r["variant"],
      f"`{r['run']}`",
      f"{r['learning_rate']:g}",
      str(r["steps"]),
      f"{r['final_kl']:.3f}",
      f"{r['pass@1']:.3f}",
      f"{r['pass@8']:.3f}",
      f"{r['pass@128']:.3f}",
    )
    for r in result["arms"]
  ]
  header = (
    "pilot run",
    "arm",
    "learning rate",
    "RL steps",
    "final KL (last 20 steps)",
    "pass@1",
    "pass@8",
    "pass@128",
  )
  return md.table(header, rows)


def _power_table(result: dict[str, Any], target: float) -> list[str]:
  """Per contrast and number of problems: the fewest seeds of the grid whose difference
  and equivalence tests both reach ``target`` (``power.csv`` holds every cell)."""
  rows = []
  grid: dict[tuple[str, int], list[dict[str, Any]]] = {}
  for r in result["power_rows"]:
    grid.setdefault((r["contrast"], r["problems"]), []).append(r)
  for (contrast, problems), cells in grid.items():
    ok = [r for r in cells if min(r["power_difference"], r["power_equivalence"]) >= target]
    if ok:
      r = min(ok, key=lambda r: r["seeds"])
      rows.append(
        (
          contrast,
          str(problems),
          str(r["seeds"]),
          f"{r['hours']:.1f}",
          f"{r['power_difference']:.2f}",
          f"{r['power_equivalence']:.2f}",
        )
      )
    else:
      most = max(cells, key=lambda r: r["seeds"])
      rows.append((contrast, str(problems), f"> {most['seeds']}", "–", "–", "–"))
  header = (
    "contrast",
    "problems",
    f"fewest seeds for {_pct(target)}",
    "hours",
    "power (difference)",
    "power (equivalence)",
  )
  return md.table(header, rows)


def _chosen_table(result: dict[str, Any]) -> list[str]:
  """The chosen design's cells of ``power.csv``, one row per primary contrast."""
  d = result["design"]
  rows = [
    (
      r["contrast"],
      f"{r['power_difference']:.2f}",
      f"{r['power_equivalence']:.2f}",
      f"{r['power_difference_inflated']:.2f}",
      f"{r['power_equivalence_inflated']:.2f}",
      f"{r['mde_80']:.3f}",
    )
    for r in result["power_rows"]
    if (r["seeds"], r["problems"]) == (d["seeds"], d["problems"])
  ]
  header = (
    "contrast",
    "power (difference)",
    "power (equivalence)",
    "variances inflated: difference",
    "variances inflated: equivalence",
    "effect detected with 80% power",
  )
  return md.table(header, rows)


def _opening(study: types.ModuleType, result: dict[str, Any]) -> list[str]:
  """The title, the note's provenance, the question, the arms, the declared
  contrasts and the pilot."""
  return [
    f"# {study.TITLE}: design",
    "",
    # The committed note (docs/lm_study/DESIGN.md) is frozen: it names the binary and the
    # module as they were when it was written (CHANGELOG maps them to today's names).
    "Written by `python -m experiments.lm.study_design` before any run of the study, from "
    f"its config (`{study.CONFIG_PATH}`), its pilot (`{study.PILOT_DIR}`) and the variances "
    f"of the study before it (`{study.VARIANCE_SOURCE}`); every number below is computed "
    "from those files (`power.csv`, `pilot.csv`, `design.json`). Every run of the study "
    "records the commit of this note (`run.json`), and the study summary refuses a run "
    "that started before it.",
    "",
    "## Question",
    "",
    study.QUESTION.format(power=result["earlier_power"], margin=result["earlier_margin"]),
    "",
    "## Arms and schedule",
    "",
    study.ARMS_TEXT.format(
      lr=result["matched_learning_rate"], steps=study.RL_STEPS, every=study.EVAL_EVERY
    ),
    "",
    "## Declared contrasts",
    "",
    study.CONTRASTS_TEXT.format(
      margin=study.MARGIN, family=study.FAMILY_SIZE, kl=result["kl_level"]
    ),
    "",
    *_contrast_lines(study),
    "## Pilot",
    "",
    study.PILOT_TEXT.format(
      rates=len(
        {r["learning_rate"] for r in result["arms"] if r["run"] == study.PILOT_MATCHED_RUN}
      ),
      lr=result["matched_learning_rate"],
      kl=result["kl_level"],
      fraction=study.KL_FRACTION,
      step=study.KL_STEP,
    ),
    "",
    *_pilot_table(result),
  ]


def _power_section(study: types.ModuleType, result: dict[str, Any]) -> list[str]:
  """The variance components, the cost of a seed and the power of every cell."""
  t, cost = result["timing"], result["cost"]
  a, b, _ = study.PRIMARY
  comps = result["components"]
  source_seeds = next(iter(comps.values())).num_seeds
  comp_rows = [
    (name, f"{c.between:.2e}", f"{c.within:.4f}", f"{c.seed_variance(study.VARIANCE_PROBLEMS):.2e}")
    for name, c in comps.items()
  ]
  return [
    "## Power",
    "",
    f"Variance components of `{a}` − `{b}` in the earlier study ({source_seeds} "
    f"seeds of {study.VARIANCE_PROBLEMS} problems; `experiments/lm/study/power.py` defines them): "
    "τ² between seeds, ω² of one problem, and a seed's variance at that study's size.",
    "",
    *md.table(("contrast", "τ²", "ω²", "seed variance"), comp_rows),
    f"Cost of one seed on one core, the median over the pilot's runs: {t.sft_step:.3f} s per SFT "
    f"step, {t.rl_step:.2f} s per RL step, {t.eval_per_problem:.3f} s per problem and "
    f"evaluation of {t.eval_n} samples (times {1 + study.KL_OVERHEAD:g} for the held-out KL): "
    f"{cost.fixed_s / 3600:.2f} h fixed and {cost.per_problem_s:.2f} s per held-out problem. "
    "The pilot ran two runs at a time on two cores shared with other work, so these are upper "
    "bounds.",
    "",
    f"Power of each primary test at level 0.05 / {study.FAMILY_SIZE} (Holm's first step), "
    f"simulated with the floored test ({study.DRAWS} studies a cell): the difference test "
    f"against a true difference of {study.MARGIN:g}, the equivalence test (±{study.MARGIN:g}) "
    f"at a true difference of 0; `power.csv` also holds both with the variances times "
    f"{study.INFLATION:g} and the effect detected with 80% power, for every cell of the grid "
    f"({min(study.SEEDS_GRID)}-{max(study.SEEDS_GRID)} seeds, "
    f"{', '.join(map(str, study.PROBLEMS_GRID))} problems).",
    "",
    *_power_table(result, study.TARGET_POWER),
  ]


def _chosen_section(study: types.ModuleType, result: dict[str, Any]) -> list[str]:
  """The chosen design and its cells, then the exclusions and the analysis."""
  d = result["design"]
  verdict = (
    f"meets the target: every primary test has at least {_pct(study.TARGET_POWER)} power"
    if d["meets_target"]
    else f"falls short of the target ({_pct(study.TARGET_POWER)}) within the budget"
  )
  return [
    f"**Chosen design: {d['seeds']} seeds × {d['problems']} held-out problems**, "
    f"{d['hours']:.1f} single-core hours (budget {study.BUDGET_HOURS:g}); it {verdict}: "
    f"difference {d['power_difference']:.2f}, equivalence {d['power_equivalence']:.2f} "
    "(the smaller over the primary contrasts). Its cells:",
    "",
    *_chosen_table(result),
    "## Exclusions and analysis",
    "",
    study.ANALYSIS_TEXT,
    "",
  ]


def render(study: types.ModuleType, result: dict[str, Any]) -> str:
  """``DESIGN.md`` of ``study`` from ``result`` (``design_note.compute``)."""
  lines = _opening(study, result) + _power_section(study, result) + _chosen_section(study, result)
  return "\n".join(lines)
