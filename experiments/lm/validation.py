"""Up-front validation of an LM experiment config: one error naming the first bad field.

``validate_config`` runs before the experiment touches its workdir, so a bad value
(``--config.eval.n=0``, ``--config.rl.steps=-1``, a NaN learning rate, an unknown
estimator, a batch that does not divide over the devices) stops the run before it
writes anything, instead of failing after the warm start or, worse, finishing with
partial results.
"""

from __future__ import annotations

import dataclasses
import os

import ml_collections

from experiments import config_checks as checks
from experiments.lm import run_specs
from experiments.lm import tasks as tasks_lib

DTYPES = ("float32", "bfloat16", "float16")
REWARDS = ("binary", "continuous")
SFT_SCHEDULES = ("constant", "cosine")


def _check_divides(field: str, rows: int, num_devices: int) -> None:
  if rows % num_devices:
    raise checks.ConfigError(
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
  runs: tuple[run_specs.RunSpec, ...]


def _model(config: ml_collections.ConfigDict) -> None:
  d_model = checks.integer(config, "model.d_model", low=1)
  num_heads = checks.integer(config, "model.num_heads", low=1)
  if d_model % num_heads:
    raise checks.ConfigError(
      f"config.model.d_model={d_model} must be divisible by num_heads={num_heads}."
    )
  checks.integer(config, "model.num_layers", low=1)
  checks.integer(config, "model.d_ff", low=1)
  checks.choice(config, "model.dtype", DTYPES)


def _task(config: ml_collections.ConfigDict) -> tasks_lib.Task:
  name = checks.choice(config, "task.name", sorted(tasks_lib.TASKS))
  kwargs = checks.value(config, "task.kwargs")
  # Optional (absent: False), so that configs without it keep their config.json.
  novel = config.task.get("novel_answers", False)
  if not isinstance(novel, bool):
    raise checks.ConfigError(f"config.task.novel_answers={novel!r} must be True or False.")
  try:
    return tasks_lib.make_task(name, **dict(kwargs))
  except (TypeError, ValueError) as e:
    raise checks.ConfigError(
      f"config.task.kwargs={dict(kwargs)!r} for task {name!r}: {e}"
    ) from None


def _optimizer(config: ml_collections.ConfigDict, stage: str) -> None:
  checks.number(config, f"{stage}.learning_rate", above=0.0)
  checks.integer(config, f"{stage}.warmup_steps", low=0)
  checks.number(config, f"{stage}.max_grad_norm", above=0.0)
  checks.number(config, f"{stage}.adam_b2", at_least=0.0, below=1.0)


def _sft(config: ml_collections.ConfigDict) -> None:
  checks.integer(config, "sft.steps", low=0)  # 0: RL starts from the initial parameters.
  checks.integer(config, "sft.batch_size", low=1)
  _optimizer(config, "sft")
  checks.number(config, "sft.weight_decay", at_least=0.0)
  checks.choice(config, "sft.schedule", SFT_SCHEDULES)
  checks.number(config, "sft.final_lr_fraction", at_least=0.0, at_most=1.0)
  checks.integer(config, "sft.eval_every", low=0)
  checks.integer(config, "sft.eval_n", low=1)


def _rl(config: ml_collections.ConfigDict) -> tuple[run_specs.RunSpec, ...]:
  checks.choice(config, "rl.baseline", run_specs.BASELINES)
  checks.choice(config, "rl.reward", REWARDS)
  rl_steps = checks.integer(config, "rl.steps", low=1)
  checks.integer(config, "rl.prompts_per_step", low=1)
  n = checks.integer(config, "rl.n", low=1)
  off_policy = checks.choice(config, "rl.off_policy", run_specs.OFF_POLICY)
  runs = checks.value(config, "rl.runs")
  if not isinstance(runs, (tuple, list)) or not all(isinstance(r, str) for r in runs):
    raise checks.ConfigError(
      f"config.rl.runs={runs!r} must be a list of run specs such as ('max_at_k@4', 'grpo') "
      "(on the command line max_at_k@4,grpo)."
    )
  try:
    specs = run_specs.parse_runs(runs, n, num_steps=rl_steps, off_policy=off_policy)
  except ValueError as e:
    raise checks.ConfigError(f"config.rl.runs={runs!r}: {e}") from None
  _optimizer(config, "rl")
  checks.integer(config, "rl.inner_epochs", low=1)
  checks.number(config, "rl.clip_eps", above=0.0)
  checks.number(config, "rl.kl_coef", at_least=0.0)
  checks.number(config, "rl.temperature", above=0.0)
  top_p = checks.number(config, "rl.top_p", above=0.0, at_most=1.0)
  if top_p < 1.0:
    raise checks.ConfigError(
      f"config.rl.top_p={top_p!r}: RL needs top_p = 1. The update scores samples under the "
      "sampler's distribution, and a nucleus depends on the parameters (a sample can leave "
      "it after an update, with an infinite importance ratio); lower config.rl.temperature "
      "instead (eval.top_p may be < 1)."
    )
  return tuple(specs)


def _eval(config: ml_collections.ConfigDict) -> None:
  checks.integer(config, "eval.num_prompts", low=1)
  checks.integer(config, "eval.n", low=1)
  checks.integer(config, "eval.every", low=1)
  checks.number(config, "eval.temperature", above=0.0)
  checks.number(config, "eval.top_p", above=0.0, at_most=1.0)
  checks.integer(config, "eval.chunk_prompts", low=0)
  checks.integer(config, "eval.bin_n", low=0)
  kl = checks.flag(config, "eval.kl")
  checks.integer(config, "eval.kl_samples", low=0)
  checks.flag(config, "eval.common_keys")
  if checks.flag(config, "eval.checkpoint_rewards") and not kl:
    raise checks.ConfigError(
      "config.eval.checkpoint_rewards=True adds rewards to checkpoints.csv, which only "
      "config.eval.kl=True writes."
    )
  if kl and config.eval.top_p < 1:
    raise checks.ConfigError(
      f"config.eval.kl=True needs config.eval.top_p = 1, got {config.eval.top_p!r}: a "
      "nucleus's support depends on the parameters, so its KL is not the tempered policy's."
    )


def _mesh(config: ml_collections.ConfigDict, device_count: int) -> None:
  """Every batch divides over the mesh of ``config.num_devices`` (0: all) devices."""
  num_devices = int(config.num_devices)
  if num_devices > device_count:
    raise checks.ConfigError(
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
  path = checks.value(config, "study_design")
  if not isinstance(path, str) or (
    path and (os.path.isabs(path) or os.path.normpath(path).split(os.sep)[0] == "..")
  ):
    raise checks.ConfigError(
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
    checks.ConfigError: naming the first field (``config.rl.steps``, ...) whose value is
      missing, of the wrong type, non-finite or out of range.
  """
  checks.integer(config, "seed", low=0)
  checks.integer(config, "num_devices", low=0)
  task = _task(config)
  _model(config)
  _sft(config)
  runs = _rl(config)
  _eval(config)
  checks.integer(config, "log_every", low=1)
  checks.integer(config, "checkpoint_every", low=1)
  _study_design(config)
  if device_count is not None:
    _mesh(config, device_count)
  return ValidConfig(config, task, runs)
