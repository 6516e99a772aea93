"""Up-front validation of an LM experiment config: one error naming the first bad field.

``validate_config`` runs before the experiment touches its workdir, so a bad value
(``--config.eval.n=0``, ``--config.rl.steps=-1``, a NaN learning rate, an unknown
estimator, a batch that does not divide over the devices) stops the run before it
writes anything, instead of failing after the warm start or, worse, finishing with
partial results.
"""

from __future__ import annotations

from collections.abc import Sequence
import dataclasses
import math
import numbers
import os
from typing import Any

import ml_collections

from experiments.lm import runs as runs_lib
from experiments.lm import tasks as tasks_lib

DTYPES = ("float32", "bfloat16", "float16")
REWARDS = ("binary", "continuous")
SFT_SCHEDULES = ("constant", "cosine")


class ConfigError(ValueError):
  """A config field holds a value the experiment cannot run with."""


def _value(config: ml_collections.ConfigDict, field: str) -> Any:
  node: Any = config
  for part in field.split("."):
    try:
      node = node[part]
    except (KeyError, TypeError, AttributeError):
      raise ConfigError(f"config.{field} is missing.") from None
  return node


def _integer(config: ml_collections.ConfigDict, field: str, minimum: int) -> int:
  value = _value(config, field)
  if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
    raise ConfigError(f"config.{field}={value!r} must be an integer >= {minimum}.")
  return int(value)


def _real(
  config: ml_collections.ConfigDict,
  field: str,
  *,
  above: float | None = None,
  at_least: float | None = None,
  at_most: float | None = None,
  below: float | None = None,
) -> float:
  """A finite real number in the given bounds (``above`` and ``below`` are strict)."""
  value = _value(config, field)
  number = float(value) if isinstance(value, numbers.Real) and not isinstance(value, bool) else None
  ok = (
    number is not None
    and math.isfinite(number)
    and (above is None or number > above)
    and (at_least is None or number >= at_least)
    and (at_most is None or number <= at_most)
    and (below is None or number < below)
  )
  if number is None or not ok:
    bounds = ((">", above), (">=", at_least), ("<=", at_most), ("<", below))
    wanted = " and ".join(f"{op} {bound}" for op, bound in bounds if bound is not None)
    raise ConfigError(f"config.{field}={value!r} must be a finite number {wanted}.")
  return number


def _flag(config: ml_collections.ConfigDict, field: str) -> bool:
  value = _value(config, field)
  if not isinstance(value, bool):
    raise ConfigError(f"config.{field}={value!r} must be True or False.")
  return value


def _choice(config: ml_collections.ConfigDict, field: str, choices: Sequence[str]) -> str:
  value = _value(config, field)
  if value not in choices:
    raise ConfigError(f"config.{field}={value!r} must be one of {tuple(choices)}.")
  return value


def _check_divides(field: str, rows: int, num_devices: int) -> None:
  if rows % num_devices:
    raise ConfigError(
      f"{field} gives batches of {rows} rows, which do not divide over {num_devices} devices."
    )


@dataclasses.dataclass(frozen=True)
class ValidConfig:
  """A config that passed ``validate_config``, with what validating it built.

  Attributes:
    config: the experiment config.
    task: its task (``config.task``).
    runs: its RL runs (``config.rl.runs``), in order.
  """

  config: ml_collections.ConfigDict
  task: tasks_lib.Task
  runs: tuple[runs_lib.RunSpec, ...]


def _model(config: ml_collections.ConfigDict) -> None:
  d_model = _integer(config, "model.d_model", 1)
  num_heads = _integer(config, "model.num_heads", 1)
  if d_model % num_heads:
    raise ConfigError(f"config.model.d_model={d_model} must be divisible by num_heads={num_heads}.")
  _integer(config, "model.num_layers", 1)
  _integer(config, "model.d_ff", 1)
  _choice(config, "model.dtype", DTYPES)


def _task(config: ml_collections.ConfigDict) -> tasks_lib.Task:
  name = _choice(config, "task.name", sorted(tasks_lib.TASKS))
  kwargs = _value(config, "task.kwargs")
  # Optional (absent: False), so that configs without it keep their config.json.
  novel = config.task.get("novel_answers", False)
  if not isinstance(novel, bool):
    raise ConfigError(f"config.task.novel_answers={novel!r} must be True or False.")
  try:
    return tasks_lib.make_task(name, **dict(kwargs))
  except (TypeError, ValueError) as e:
    raise ConfigError(f"config.task.kwargs={dict(kwargs)!r} for task {name!r}: {e}") from None


def _optimizer(config: ml_collections.ConfigDict, stage: str) -> None:
  _real(config, f"{stage}.learning_rate", above=0.0)
  _integer(config, f"{stage}.warmup_steps", 0)
  _real(config, f"{stage}.max_grad_norm", above=0.0)
  _real(config, f"{stage}.adam_b2", at_least=0.0, below=1.0)


def _sft(config: ml_collections.ConfigDict) -> None:
  _integer(config, "sft.steps", 0)  # 0: RL starts from the initial parameters.
  _integer(config, "sft.batch_size", 1)
  _optimizer(config, "sft")
  _real(config, "sft.weight_decay", at_least=0.0)
  _choice(config, "sft.schedule", SFT_SCHEDULES)
  _real(config, "sft.final_lr_fraction", at_least=0.0, at_most=1.0)
  _integer(config, "sft.eval_every", 0)
  _integer(config, "sft.eval_n", 1)


def _rl(config: ml_collections.ConfigDict) -> tuple[runs_lib.RunSpec, ...]:
  _choice(config, "rl.baseline", runs_lib.BASELINES)
  _choice(config, "rl.reward", REWARDS)
  rl_steps = _integer(config, "rl.steps", 1)
  _integer(config, "rl.prompts_per_step", 1)
  n = _integer(config, "rl.n", 1)
  off_policy = _choice(config, "rl.off_policy", runs_lib.OFF_POLICY)
  runs = _value(config, "rl.runs")
  if not isinstance(runs, str):
    raise ConfigError(f"config.rl.runs={runs!r} must be a string such as 'max_at_k@4,grpo'.")
  try:
    specs = runs_lib.parse_runs(runs, n, num_steps=rl_steps, off_policy=off_policy)
  except ValueError as e:
    raise ConfigError(f"config.rl.runs={runs!r}: {e}") from None
  _optimizer(config, "rl")
  _integer(config, "rl.inner_epochs", 1)
  _real(config, "rl.clip_eps", above=0.0)
  _real(config, "rl.kl_coef", at_least=0.0)
  _real(config, "rl.temperature", above=0.0)
  top_p = _real(config, "rl.top_p", above=0.0, at_most=1.0)
  if top_p < 1.0:
    raise ConfigError(
      f"config.rl.top_p={top_p!r}: RL needs top_p = 1. The update scores samples under the "
      "sampler's distribution, and a nucleus depends on the parameters (a sample can leave "
      "it after an update, with an infinite importance ratio); lower config.rl.temperature "
      "instead (eval.top_p may be < 1)."
    )
  return tuple(specs)


def _eval(config: ml_collections.ConfigDict) -> None:
  _integer(config, "eval.num_prompts", 1)
  _integer(config, "eval.n", 1)
  _integer(config, "eval.every", 1)
  _real(config, "eval.temperature", above=0.0)
  _real(config, "eval.top_p", above=0.0, at_most=1.0)
  _integer(config, "eval.chunk_prompts", 0)
  _integer(config, "eval.bin_n", 0)
  kl = _flag(config, "eval.kl")
  _integer(config, "eval.kl_samples", 0)
  _flag(config, "eval.common_keys")
  if _flag(config, "eval.checkpoint_rewards") and not kl:
    raise ConfigError(
      "config.eval.checkpoint_rewards=True adds rewards to checkpoints.csv, which only "
      "config.eval.kl=True writes."
    )
  if kl and config.eval.top_p < 1:
    raise ConfigError(
      f"config.eval.kl=True needs config.eval.top_p = 1, got {config.eval.top_p!r}: a "
      "nucleus's support depends on the parameters, so its KL is not the tempered policy's."
    )


def _mesh(config: ml_collections.ConfigDict, device_count: int) -> None:
  """Every batch divides over the mesh of ``config.num_devices`` (0: all) devices."""
  num_devices = int(config.num_devices)
  if num_devices > device_count:
    raise ConfigError(
      f"config.num_devices={num_devices} exceeds the {device_count} devices available."
    )
  mesh = num_devices or device_count
  _check_divides("config.sft.batch_size", config.sft.batch_size, mesh)
  _check_divides(
    "config.rl.prompts_per_step * config.rl.n", config.rl.prompts_per_step * config.rl.n, mesh
  )
  e = config.eval
  num_prompts, chunk = e.num_prompts, e.chunk_prompts or e.num_prompts
  samples = {"eval.n": e.n, "eval.bin_n": e.bin_n or e.n, "sft.eval_n": config.sft.eval_n}
  if e.kl:  # The held-out KL's rows: the first kl_samples of each prompt's samples.
    samples["eval.kl_samples"] = min(e.kl_samples or e.n, e.n)
  for start in range(0, num_prompts, chunk):
    for field, n in samples.items():
      rows = min(chunk, num_prompts - start) * n
      _check_divides(f"config.eval.num_prompts (or chunk_prompts) * config.{field}", rows, mesh)


def _study_design(config: ml_collections.ConfigDict) -> None:
  """Empty, or a path inside the repository relative to its root (whether it is
  committed is checked by ``provenance.design_note``)."""
  path = _value(config, "study_design")
  if not isinstance(path, str) or (
    path and (os.path.isabs(path) or os.path.normpath(path).split(os.sep)[0] == "..")
  ):
    raise ConfigError(
      f"config.study_design={path!r} must be '' or a path relative to the repository root "
      "(e.g. 'docs/lm_study/DESIGN.md')."
    )


def validate_config(
  config: ml_collections.ConfigDict, *, device_count: int | None = None
) -> ValidConfig:
  """Checks every field of an LM experiment config (layout: ``configs/tiny.py``).

  Args:
    config: the experiment config.
    device_count: devices available to the run; when given, ``num_devices`` must not
      exceed it and every batch (SFT rows, RL rows ``prompts_per_step * n``, each
      evaluation chunk's ``prompts * eval.n``, and of ``eval.kl_samples`` with
      ``eval.kl``) must divide over the mesh.

  Returns:
    The config with its task and parsed runs.

  Raises:
    ConfigError: naming the first field (``config.rl.steps``, ...) whose value is
      missing, of the wrong type, non-finite or out of range.
  """
  _integer(config, "seed", 0)
  _integer(config, "num_devices", 0)
  task = _task(config)
  _model(config)
  _sft(config)
  runs = _rl(config)
  _eval(config)
  _integer(config, "log_every", 1)
  _integer(config, "checkpoint_every", 1)
  _study_design(config)
  if device_count is not None:
    _mesh(config, device_count)
  return ValidConfig(config, task, runs)
