"""One legend label, colour and line style per run of the study, the same in every
panel and figure, and the panels of the pass@k figure, both from the runs'
:class:`~experiments.lm_study.methods.Method`.

Colours: the base model black and dashed; a k-free estimator its colour of
:mod:`experiments.plot_style`; an estimator's constant-k runs shades of its colour
in k order; an annealed run the ``top_m`` colour, dash-dotted; a run with other
off-policy weights than its family's first run the colour of those weights.
"""

from __future__ import annotations

import dataclasses

from experiments import plot_style
from experiments.lm_study import methods as methods_lib


@dataclasses.dataclass(frozen=True)
class Style:
  """How one run is drawn: its legend label, colour and line style."""

  label: str
  color: str
  linestyle: str = "-"


def _main_weights(methods: list[methods_lib.Method]) -> dict[str, str]:
  """family -> the off-policy weights of its first run (the family's usual ones)."""
  out: dict[str, str] = {}
  for m in methods:
    out.setdefault(m.family, m.off_policy)
  return out


def run_styles(methods: dict[str, methods_lib.Method]) -> dict[str, Style]:
  """rl_run -> its :class:`Style` (module docstring), for every run of ``methods``."""
  listed = list(methods.values())
  main = _main_weights(listed)
  constant: dict[str, list[methods_lib.Method]] = {}
  for m in listed:
    if len(m.schedule) == 1 and m.off_policy == main[m.family]:
      constant.setdefault(m.family, []).append(m)
  for runs in constant.values():
    runs.sort(key=lambda m: m.schedule[0])
  out = {}
  for m in listed:
    label = methods_lib.long_label(m, listed)
    if m.is_base:
      out[m.run] = Style(label, "#000000", "--")
    elif not m.schedule:
      out[m.run] = Style(label, plot_style.color(m.family))
    elif m.off_policy != main[m.family]:
      out[m.run] = Style(label, plot_style.color(m.off_policy))
    elif m.annealed:
      out[m.run] = Style(label, plot_style.color("top_m"), "-.")
    else:
      mine = constant[m.family]
      out[m.run] = Style(label, plot_style.shade(m.family, mine.index(m), len(mine)))
  return out


def pass_at_k_panels(methods: dict[str, methods_lib.Method]) -> list[tuple[str, list[str]]]:
  """(title, rl_runs) of the pass@k figure's panels, each with the base model: the
  estimators (k-free ones, and the smallest and largest constant k), k_opt and
  annealing (every run with its family's usual weights), and off-policy weights
  (per schedule run with several weights). Only panels with two or more runs
  besides base (one would repeat another panel's curve); the first if none has."""
  listed = list(methods.values())
  main = _main_weights(listed)
  base = [m.run for m in listed if m.is_base]
  rl = [m for m in listed if not m.is_base]
  usual = [m for m in rl if m.schedule and m.off_policy == main[m.family]]
  constant = sorted((m for m in usual if not m.annealed), key=lambda m: m.schedule[0])
  ends = list(dict.fromkeys(m.run for m in constant[:1] + constant[-1:]))
  panels = [
    ("estimators", base + [m.run for m in rl if not m.schedule] + ends),
    ("k_opt and annealing", base + [m.run for m in usual]),
  ]
  for m in usual:
    others = [x.run for x in rl if (x.family, x.schedule) == (m.family, m.schedule) and x != m]
    if others and not m.annealed:
      panels.append((f"off-policy weights, k_opt={m.schedule[0]}", base + [m.run, *others]))
  shown = [p for p in panels if len([r for r in p[1] if r not in base]) >= 2]
  return shown or panels[:1]
