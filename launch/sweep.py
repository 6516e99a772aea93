"""Expanding a sweep (a grid of flag values) into runs.

A sweep spec is either a JSON file / dict or command-line items ``flag=v1,v2``::

  {"binary": "experiments.best_of_n",          # optional; --binary overrides
   "fixed": {"config.n_max": 1000},            # flags every run gets
   "grid": {"config.seed": [0, 1], "config.num_mc_draws": [10, 100]}}

or a list of such grids under ``"grids"`` (their runs are concatenated). The grid is
expanded as a Cartesian product, the flag order of ``grid`` is kept (first flag
varies slowest; ``fixed`` flags come first, so a ``config`` file given there precedes
its ``config.FIELD`` overrides), and each run gets a deterministic name built from
its grid values (``config.seed=0,config.num_mc_draws=10`` ->
``config.seed-0_config.num_mc_draws-10``) and its own output folder
``OUT_ROOT/<name>``, passed to the binary as ``--workdir`` (:data:`OUT_FLAG`).
Values holding commas (list fields) are given as JSON lists of strings in a JSON
spec, e.g. ``"config.ks": ["1,4", "8"]``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
import dataclasses
import hashlib
import itertools
import json
import os
import re
import shlex
import sys
from typing import Any

# The flag that receives each run's output folder: every experiment binary takes
# --workdir (experiments/command_line.py; experiments.lm.main too).
OUT_FLAG = "workdir"
# Its spellings, which a sweep must not set: the launcher gives each run its folder,
# and the binaries accept --out_dir as the alias of --workdir.
OUT_FLAG_NAMES = ("workdir", "out_dir")


@dataclasses.dataclass(frozen=True)
class Run:
  """One run of a sweep: a binary, its flags and its output folder."""

  name: str
  binary: str
  flags: tuple[tuple[str, str], ...]  # Every flag but the output folder, in order.
  params: tuple[tuple[str, str], ...]  # The grid values that name this run.
  workdir: str

  @property
  def out_flag(self) -> str:
    """The flag that passes :attr:`workdir` to the binary (:data:`OUT_FLAG`)."""
    return OUT_FLAG

  def args(self) -> list[str]:
    """The binary's command-line arguments (output folder first)."""
    return [f"--{self.out_flag}={self.workdir}"] + [f"--{k}={v}" for k, v in self.flags]

  def command(self, python: str = sys.executable, *, distributed: bool = False) -> list[str]:
    """The full command; ``distributed`` wraps it in ``launch.distributed``."""
    if distributed:
      return [python, "-m", "launch.distributed", self.binary, *self.args()]
    return [python, "-m", self.binary, *self.args()]

  def shell(self, python: str = "python", *, distributed: bool = False) -> str:
    return " ".join(shlex.quote(a) for a in self.command(python, distributed=distributed))


# The record that a cluster script (SLURM, TPU) leaves in each run's folder: the
# binary and every flag but the output folder. A folder is reused only by the
# same record, so a changed flag can never count as "already finished".
IDENTITY_FILE = "launch_identity.txt"


def identity(run: Run) -> str:
  """One line naming ``run``'s binary and every flag except its output folder."""
  return shlex.join([run.binary, *(f"--{k}={v}" for k, v in run.flags)])


def shell_guard(identity_expr: str, dir_expr: str, label: str) -> str:
  """Bash that decides whether a run may start in its folder.

  ``identity_expr`` and ``dir_expr`` are bash expressions (quoted words or
  variable expansions) for :func:`identity` and the output folder. The snippet
  exits 1 with a message when the folder holds a run of another identity, or
  results of an unknown one; exits 0 ("already finished") when it holds the
  finished run of the same identity; otherwise records the identity and falls
  through to the run. A failed run of other flags must be removed by hand.
  """
  record = f"{dir_expr}/{IDENTITY_FILE}"
  return (
    f'if [ -f {record} ] && [ "$(cat {record})" != {identity_expr} ]; then '
    f'echo "{label}: {dir_expr} holds a run of other flags: $(cat {record}); '
    'use another --out_root or remove the folder" >&2; exit 1; fi; '
    f"if [ -f {dir_expr}/results.csv ]; then "
    f'if [ -f {record} ]; then echo "{label} already finished: {dir_expr}"; exit 0; fi; '
    f'echo "{label}: {dir_expr} holds results.csv of unknown flags; remove the folder to '
    'rerun it" >&2; exit 1; fi; '
    f"mkdir -p {dir_expr} && printf %s {identity_expr} > {record}"
  )


def _value(v: Any) -> str:
  if isinstance(v, bool):
    return "true" if v else "false"
  if isinstance(v, (list, tuple)):
    return ",".join(_value(x) for x in v)
  return str(v)


def _slug(text: str) -> str:
  return re.sub(r"[^A-Za-z0-9_.+-]+", "-", text).strip("-") or "x"


def run_name(params: Sequence[tuple[str, str]]) -> str:
  """Deterministic, filesystem-safe name of a run from its grid values."""
  if not params:
    return "run"
  name = "_".join(f"{_slug(k)}-{_slug(v)}" for k, v in params)
  if len(name) > 120:  # Keep paths short; the hash keeps names unique.
    digest = hashlib.sha1(name.encode()).hexdigest()[:10]
    name = name[:100] + "_" + digest
  return name


def parse_items(items: Sequence[str]) -> dict[str, list[str]]:
  """``["config.seed=0,1", "config.n_max=100"]`` ->
  ``{"config.seed": ["0", "1"], "config.n_max": ["100"]}``.

  Use ``flag:=v1;v2`` to split on ';' instead (for list-valued fields:
  ``config.ks:=1,4;8`` gives the values "1,4" and "8").
  """
  grid: dict[str, list[str]] = {}
  for item in items:
    if ":=" in item:
      key, values = item.split(":=", 1)
      split = values.split(";")
    elif "=" in item:
      key, values = item.split("=", 1)
      split = values.split(",")
    else:
      raise ValueError(f"Sweep item {item!r} must look like 'flag=v1,v2' or 'flag:=v1;v2'.")
    key = key.strip().lstrip("-")
    if not key:
      raise ValueError(f"Sweep item {item!r} names no flag.")
    if "" in split:  # 'seed=' or 'seed=0,,1': a typo, not a run with an empty flag value.
      raise ValueError(f"Sweep item {item!r} has an empty value.")
    grid[key] = split
  return grid


SPEC_KEYS = ("binary", "fixed", "grid", "grids")


def _check_spec(spec: Any, source: str) -> dict[str, Any]:
  """``spec`` if it has the layout of the module docstring; ValueError naming ``source``."""
  if not isinstance(spec, Mapping):
    raise ValueError(f"{source} must hold a JSON object, not {type(spec).__name__}.")
  unknown = sorted(set(spec) - set(SPEC_KEYS))
  if unknown:
    raise ValueError(f"{source} has the unknown key(s) {unknown}; valid: {list(SPEC_KEYS)}.")
  if "grid" in spec and "grids" in spec:
    raise ValueError(f"{source} has both 'grid' and 'grids'; give one.")
  grids = spec.get("grids", [spec.get("grid", {})])
  if not isinstance(grids, list) or not grids or not all(isinstance(g, Mapping) for g in grids):
    raise ValueError(f"{source}: 'grids' must be a non-empty list of objects, 'grid' an object.")
  if not isinstance(spec.get("fixed", {}), Mapping):
    raise ValueError(f"{source}: 'fixed' must be an object of flag values.")
  if not isinstance(spec.get("binary", ""), str):
    raise ValueError(f"{source}: 'binary' must be a module name.")
  return dict(spec)


def load_spec(spec: str | Mapping[str, Any] | Sequence[str]) -> dict[str, Any]:
  """A spec from a dict, a JSON file path, a JSON string or ``flag=v1,v2`` items.

  Raises:
    ValueError: for a ``.json`` path that is no file, a file or string that is not
      JSON or not a spec (an object of the keys :data:`SPEC_KEYS`), or bad items.
  """
  if isinstance(spec, Mapping):
    return _check_spec(spec, "The sweep spec")
  if isinstance(spec, str):
    if spec.endswith(".json") or os.path.exists(spec):
      try:
        with open(spec) as f:
          text = f.read()
      except OSError as e:
        raise ValueError(f"Sweep file {spec!r} cannot be read ({e.strerror}).") from None
      return _check_spec(_json(text, f"Sweep file {spec!r}"), f"Sweep file {spec!r}")
    if spec.lstrip().startswith("{"):
      return _check_spec(_json(spec, "The JSON sweep"), "The JSON sweep")
    spec = [s for s in re.split(r"\s+", spec.strip()) if s]
  return {"grid": parse_items(list(spec))}


def _json(text: str, source: str) -> Any:
  try:
    return json.loads(text)
  except ValueError as e:
    raise ValueError(f"{source} is not valid JSON ({e}).") from None


def expand(
  spec: str | Mapping[str, Any] | Sequence[str], *, out_root: str, binary: str | None = None
) -> list[Run]:
  """Every run of a sweep spec (see the module docstring), in a deterministic order.

  Raises:
    ValueError: no binary, an empty grid axis, or two runs with the same name.
  """
  spec = load_spec(spec)
  binary = binary or spec.get("binary")
  if not binary:
    raise ValueError('The sweep needs a binary (--binary or "binary" in the spec).')
  grids = spec.get("grids", [spec.get("grid", {})])
  fixed = {k: _value(v) for k, v in spec.get("fixed", {}).items()}
  runs: list[Run] = []
  for grid in grids:
    keys = list(grid)
    axes = []
    for k in keys:
      values = grid[k] if isinstance(grid[k], (list, tuple)) else [grid[k]]
      if not values:
        raise ValueError(f"Grid flag {k!r} has no values.")
      axes.append([_value(v) for v in values])
    for combo in itertools.product(*axes):
      params = tuple(zip(keys, combo))
      flags = dict(fixed)
      flags.update(params)
      for spelling in OUT_FLAG_NAMES:
        if spelling in flags:
          raise ValueError(
            f"--{spelling} is set by the launcher (--{OUT_FLAG}=OUT_ROOT/<run name>)."
          )
      name = run_name(params)
      runs.append(
        Run(
          name=name,
          binary=binary,
          flags=tuple(flags.items()),
          params=params,
          workdir=os.path.join(out_root, name),
        )
      )
  names = [r.name for r in runs]
  dupes = sorted({n for n in names if names.count(n) > 1})
  if dupes:
    raise ValueError(f"Runs with the same name {dupes}: make the grids distinct.")
  return runs


def expand_many(specs: Sequence[str], *, out_root: str, binary: str | None = None) -> list[Run]:
  """Runs of several ``--sweep`` values: JSON files/strings (their runs concatenated)
  or ``flag=v1,v2`` items (one grid); mixing the two kinds is an error."""
  files = [s for s in specs if s.endswith(".json") or s.lstrip().startswith("{")]
  items = [s for s in specs if s not in files]
  if files and items:
    raise ValueError("Give either JSON sweep files or 'flag=v1,v2' items, not both.")
  if not files:
    return expand(items, out_root=out_root, binary=binary)
  runs = []
  for spec in files:
    runs += expand(spec, out_root=out_root, binary=binary)
  names = [r.name for r in runs]
  dupes = sorted({n for n in names if names.count(n) > 1})
  if dupes:
    raise ValueError(f"Runs with the same name {dupes} across sweep files.")
  return runs


def write_script(path: str, script: str) -> str:
  """Writes ``script`` to ``path`` (creating its folder) as an executable file."""
  os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
  with open(path, "w") as f:
    f.write(script)
  os.chmod(path, 0o755)
  return path


def write_manifest(
  runs: Sequence[Run], out_root: str, statuses: Mapping[str, tuple[str, float]] | None = None
) -> str:
  """Writes ``out_root/runs.json`` (name, binary, workdir, params, command[, status])."""
  os.makedirs(out_root, exist_ok=True)
  path = os.path.join(out_root, "runs.json")
  with open(path, "w") as f:
    json.dump(
      [
        {
          "name": r.name,
          "binary": r.binary,
          "workdir": r.workdir,
          "params": dict(r.params),
          "command": r.command("python"),
          **(
            {"status": statuses[r.name][0], "seconds": statuses[r.name][1]}
            if statuses and r.name in statuses
            else {}
          ),
        }
        for r in runs
      ],
      f,
      indent=2,
    )
  return path
