"""The study config a summary reads (``--study_config`` of
:mod:`experiments.lm_study.summary`): a config module such as
``experiments/lm/configs/study_8seed.py``, reduced to what the summary uses.

The module defines ``TASKS`` (names; a dict's keys count) and ``SEEDS`` (the design,
TASKS x SEEDS), ``CONTRASTS`` (the declared :class:`experiments.lm.contrasts.Contrast`
tuple), and optionally ``POWER_EFFECT`` (the effect at which a contrast without a
margin reports its power), ``REQUIRE_PROVENANCE`` (default True),
``EQUIVALENT_COMMITS`` (default none), ``AUDIT`` and ``AUDIT_MARGIN`` (an archived
study's audit, :mod:`experiments.lm_study.audit`) and ``SWEEP`` (the launcher's sweep
file, default ``launch/sweeps/lm_<module name>.json``, named in the README).
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import os
from typing import Any

from experiments.lm import contrasts as contrasts_lib
from experiments.lm_study import files

DEFAULT = "experiments.lm.configs.study"


@dataclasses.dataclass(frozen=True)
class StudyConfig:
  """What the summary reads of a study config module (module docstring).

  ``name`` is the module's dotted name (``experiments.lm.configs.study_8seed``) and
  ``path`` its file relative to the repository (``experiments/lm/configs/study_8seed.py``),
  as the README and error lines name it.
  """

  name: str
  path: str
  tasks: tuple[str, ...]
  seeds: tuple[int, ...]
  contrasts: tuple[contrasts_lib.Contrast, ...]
  power_effect: float | None = None
  require_provenance: bool = True
  equivalent_commits: tuple[tuple[str, ...], ...] = ()
  audit: bool = False
  audit_margin: float | None = None
  sweep: str = ""

  @property
  def short_path(self) -> str:
    """``path`` below ``experiments/lm/`` (``configs/study_8seed.py``), else ``path``."""
    return self.path.removeprefix("experiments/lm/")

  @property
  def stem(self) -> str:
    """The module's own name (``study_8seed``)."""
    return self.name.rsplit(".", 1)[-1]

  @property
  def matched_kl(self) -> tuple[contrasts_lib.Contrast, ...]:
    """The declared contrasts compared at matched KL (``at_kl`` set)."""
    return tuple(c for c in self.contrasts if c.at_kl is not None)


def from_module(module: Any, *, name: str | None = None) -> StudyConfig:
  """The :class:`StudyConfig` of a config module (or any object with its attributes;
  ``name`` defaults to its ``__name__``), read now.

  Raises:
    StudyError: naming the module and the attribute it lacks or that is malformed.
  """
  name = str(name or getattr(module, "__name__", "study"))
  missing = [a for a in ("TASKS", "SEEDS", "CONTRASTS") if not hasattr(module, a)]
  if missing:
    raise files.StudyError(f"Study config {name} defines no {' and no '.join(missing)}.")
  declared = tuple(module.CONTRASTS)
  if not all(isinstance(c, contrasts_lib.Contrast) for c in declared):
    raise files.StudyError(f"Study config {name}: CONTRASTS must hold contrasts.Contrast.")
  questions = [c.question for c in declared]
  if len(set(questions)) != len(questions):
    raise files.StudyError(f"Study config {name}: the CONTRASTS' questions must be unique.")
  stem = name.rsplit(".", 1)[-1]
  return StudyConfig(
    name=name,
    path=name.replace(".", "/") + ".py",
    tasks=tuple(module.TASKS),
    seeds=tuple(module.SEEDS),
    contrasts=declared,
    power_effect=getattr(module, "POWER_EFFECT", None),
    require_provenance=bool(getattr(module, "REQUIRE_PROVENANCE", True)),
    equivalent_commits=tuple(tuple(g) for g in getattr(module, "EQUIVALENT_COMMITS", ())),
    audit=bool(getattr(module, "AUDIT", False)),
    audit_margin=getattr(module, "AUDIT_MARGIN", None),
    sweep=getattr(module, "SWEEP", f"launch/sweeps/lm_{stem}.json"),
  )


def module_name(spec: str) -> str | None:
  """The dotted module name of ``spec``: a module name as it is, or a ``.py`` file
  path below the working directory (``experiments/lm/configs/study.py``) as the
  module it is; None for a file elsewhere (imported from its path by :func:`load`)."""
  if not (spec.endswith(".py") or "/" in spec or os.sep in spec):
    return spec
  relative = os.path.relpath(os.path.abspath(spec))
  if relative.startswith(os.pardir) or not relative.endswith(".py"):
    return None
  return relative.removesuffix(".py").replace(os.sep, ".")


def _import(spec: str, name: str | None) -> Any:
  """The module of ``spec``: by ``name``, or from the file ``spec`` when None."""
  if name is not None:
    if importlib.util.find_spec(name) is None:
      raise ModuleNotFoundError(f"No module named {name!r}")
    return importlib.import_module(name)
  if not (spec.endswith(".py") and os.path.isfile(spec)):
    raise FileNotFoundError(f"no .py file {spec!r}")
  found = importlib.util.spec_from_file_location(os.path.basename(spec).removesuffix(".py"), spec)
  assert found is not None and found.loader is not None
  module = importlib.util.module_from_spec(found)
  found.loader.exec_module(module)
  return module


def load(spec: str) -> StudyConfig:
  """The :class:`StudyConfig` of ``spec``: a module name, or a ``.py`` file (below the
  working directory: imported as its module, :func:`module_name`; elsewhere: from its
  path, which the README then names).

  Raises:
    StudyError: one line, when the module cannot be found or imported (its own code
      raising included) or lacks what :func:`from_module` needs.
  """
  name = module_name(spec)
  try:
    module = _import(spec, name)
  except Exception as e:  # noqa: BLE001 - any failure of the config's own code is one line.
    first = (str(e).strip().splitlines() or [type(e).__name__])[0]
    raise files.StudyError(f"--study_config={spec!r} cannot be imported: {first}") from None
  if name is None:
    return dataclasses.replace(from_module(module), path=spec)
  return from_module(module, name=name)
