"""The experiment driver: supervised warm start, base evaluation, then RL runs.

``run(config, workdir)`` executes the stages in order

  sft (steps 1..S) -> base (held-out evaluation of the warm start) -> rl runs

where each RL run (``config.rl.runs``) starts from the warm-start parameters with
its own estimator and k_opt schedule. Runs share their prompts and sampling keys
step for step (common random numbers), so differences between them come from the
estimator. Every step is a deterministic function of (config, seed, step): data
come from ``numpy.random.default_rng([seed, stage, step])`` and sampling keys from
``fold_in``; with checkpoints holding parameters and optimiser state, a resumed
run reproduces an uninterrupted one exactly. See ``checkpointing`` for the
kill-safe resume protocol.

Before anything is written the whole config is validated (``validation``) and the
workdir is claimed (``workdir``): one writer at a time, and a workdir resumes only
with the config it was started with. A run that cannot finish with complete
results (a missing or damaged ``metrics.jsonl``, a damaged checkpoint folder)
stops with a message instead.

Throughput goes to ``throughput.jsonl`` (one record per logged step: SFT
``train_tokens_per_s``; RL ``tokens_per_s``, ``sample_tokens_per_s``,
``train_tokens_per_s`` and, on a known accelerator, MFU; see
``mfu.rl_step_throughput``), not to ``metrics.jsonl``, which stays a deterministic
function of the config.

Evaluation problems are held out by problem key (``splits``): no SFT batch or RL
prompt poses one of them in any form. The base model is evaluated twice, on
independent samples: once for its results, once (``bin_correct``) to bin the
problems by difficulty (``reporting``).

Outputs in ``workdir``: ``config.json``, ``metrics.jsonl``, ``split.json`` (the
evaluation problems, the distinct training problems drawn, ``overlap`` = 0),
``results.csv`` (stage, method, k_opt, k_eval, seed, pass_at_k and max_at_k with
95% intervals over prompts), ``prompts.csv`` (per-prompt counts and rewards),
``bins.csv`` and ``unsolved.csv`` (by base difficulty), ``paired.csv`` (paired
differences between methods), ``reward_hist.csv`` (each final evaluation's reward
histogram), ``steps.csv`` (the training curves: SFT loss and the warm start's
held-out pass@1 every ``sft.eval_every`` steps; per RL step reward, entropy, KL to
the warm start, clip fraction, ESS, gradient norm and clipping, distinct training
problems solved so far; see ``dynamics``), ``pass_at_k.png`` and ``bins.png``; see
``reporting`` for the columns. The base model's binning evaluation draws
``eval.bin_n`` samples per problem (default ``eval.n``): a problem is base-unsolved
when none of them is correct.
"""

from __future__ import annotations

from collections.abc import Sequence
import os
import time
from typing import Any

from absl import logging
import jax
import jax.numpy as jnp
import ml_collections
import numpy as np

from experiments import outputs
from experiments.lm import checkpointing
from experiments.lm import dynamics
from experiments.lm import evaluation
from experiments.lm import mfu as mfu_lib
from experiments.lm import model as model_lib
from experiments.lm import parallel
from experiments.lm import plotting
from experiments.lm import reporting
from experiments.lm import rl
from experiments.lm import sft
from experiments.lm import splits
from experiments.lm import tasks as tasks_lib
from experiments.lm import validation
from experiments.lm import workdir as workdir_lib
import maxk

_SFT_STREAM, _EVAL_STREAM, _RL_STREAM = splits.SFT_STREAM, 1, splits.RL_STREAM
_BIN_STREAM = 3  # The base model's binning evaluation (independent of its results).
_WARM_STREAM = 4  # The warm-start curve: held-out evaluations during SFT.
THROUGHPUT_FILE = "throughput.jsonl"
STEPS_FILE = "steps.csv"  # The per-step training curves (see dynamics).
REWARD_HIST_FILE = "reward_hist.csv"  # Each final evaluation's reward histogram.


def _json(metrics: dict[str, Any]) -> dict[str, Any]:
  return {name: float(value) for name, value in jax.device_get(metrics).items()}


def _eval_fields(metrics: dict[str, Any]) -> dict[str, Any]:
  return {f"eval_{name}": value for name, value in metrics.items()}


def sft_evaluated(config: ml_collections.ConfigDict, step: int) -> bool:
  """Whether SFT step ``step`` evaluates the warm start on the held-out problems
  (``sft.eval_every`` > 0: every that many steps and at the last)."""
  every = config.sft.eval_every
  return every > 0 and (step % every == 0 or step == config.sft.steps)


def sft_logged(config: ml_collections.ConfigDict, step: int) -> bool:
  """Whether SFT step ``step`` appends a metrics record (every evaluated step does)."""
  return step % config.log_every == 0 or step == config.sft.steps or sft_evaluated(config, step)


def rl_evaluated(config: ml_collections.ConfigDict, step: int) -> bool:
  """Whether RL step ``step`` runs the held-out evaluation (always the last step)."""
  return step % config.eval.every == 0 or step == config.rl.steps


def rl_logged(config: ml_collections.ConfigDict, step: int) -> bool:
  """Whether RL step ``step`` appends a metrics record: every ``log_every`` steps, every
  evaluated step, and every checkpointed one (so that ``train_solved_keys``, gathered
  since the previous record, survives a resume)."""
  return (
    step % config.log_every == 0
    or step % config.checkpoint_every == 0
    or step == config.rl.steps
    or rl_evaluated(config, step)
  )


def _key(record: dict[str, Any]) -> tuple[Any, Any, Any]:
  return record.get("stage"), record.get("run", ""), record.get("step")


def logged_keys(
  config: ml_collections.ConfigDict,
  run_names: Sequence[str],
  position: tuple[int, int] | None,
) -> list[tuple[str, str, int]]:
  """(stage, run, step) of every record the config logs up to ``position``, in order.

  Positions are (stage rank, step) with ranks sft = 0, base = 1, RL run i = 2 + i;
  None (no checkpoint yet) gives no records.
  """
  if position is None:
    return []
  c = config
  keyed = [(("sft", "", s), (0, s)) for s in range(1, c.sft.steps + 1) if sft_logged(c, s)]
  keyed.append((("base", "", c.sft.steps), (1, c.sft.steps)))
  for index, name in enumerate(run_names):
    keyed.extend(
      (("rl", name, s), (2 + index, s)) for s in range(1, c.rl.steps + 1) if rl_logged(c, s)
    )
  return [key for key, at in keyed if at <= position]


def log_problem(
  records: Sequence[dict[str, Any]], expected: Sequence[tuple[str, str, int]]
) -> str | None:
  """Why the leading records of a log are not exactly ``expected``; None if they are."""
  found = [_key(r) for r in records[: len(expected)]]
  if found == list(expected):
    return None
  bad = next((i for i, (f, e) in enumerate(zip(found, expected)) if f != e), len(found))
  if bad == len(found):
    return f"holds {len(found)} readable records where {len(expected)} were expected"
  return f"has record {bad + 1} = {found[bad]}, expected {expected[bad]}"


def method_label(config: ml_collections.ConfigDict, spec: rl.RunSpec) -> str:
  """A run's ``method`` column: ``max_at_k/<baseline>`` or the estimator, then
  ``/anneal`` for a changing k schedule and ``/<off-policy method>`` when inner
  epochs > 1 (``rl.RunSpec.labels``, which derives every label of a run)."""
  return spec.labels(config.rl.baseline, config.rl.inner_epochs).method


class Experiment:
  """Builds everything a run needs from its config (task, model, mesh, eval set)."""

  def __init__(self, config: ml_collections.ConfigDict, workdir: str, mesh: jax.sharding.Mesh):
    """``config`` is validated and ``workdir`` claimed by ``run`` (the function)."""
    self.config = config
    self.workdir = workdir
    self.is_main = jax.process_index() == 0
    self.task = tasks_lib.make_task(config.task.name, **config.task.kwargs.to_dict())
    self.prompt_len = 1 + self.task.prompt_len  # BOS + prompt.
    self.model_cfg = model_lib.ModelConfig(
      vocab_size=tasks_lib.VOCAB_SIZE,
      max_len=self.prompt_len + self.task.completion_len,
      d_model=config.model.d_model,
      num_heads=config.model.num_heads,
      num_layers=config.model.num_layers,
      d_ff=config.model.d_ff,
      dtype=config.model.dtype,
    )
    self.runs = rl.parse_runs(
      config.rl.runs, config.rl.n, num_steps=config.rl.steps, off_policy=config.rl.off_policy
    )
    self.stages = ["sft", "base"] + [f"rl/{r.name}" for r in self.runs]
    self.mesh = mesh
    self.eval_set = evaluation.make_eval_set(self.task, config.seed, config.eval.num_prompts)
    self.exclude = frozenset(self.eval_set.keys.tolist())  # Held out by problem key.
    self.graphdef, params = model_lib.create(self.model_cfg, config.seed)
    self.init_params = parallel.replicate(params, self.mesh)
    self.sft_opt = rl.make_optimizer(
      config.sft.learning_rate,
      config.sft.warmup_steps,
      config.sft.max_grad_norm,
      config.sft.weight_decay,
      decay_steps=config.sft.steps if config.sft.schedule == "cosine" else 0,
      final_lr_fraction=config.sft.final_lr_fraction,
    )
    self.rl_opt = rl.make_optimizer(
      config.rl.learning_rate, config.rl.warmup_steps, config.rl.max_grad_norm
    )
    ckpt_dir = os.path.join(self.workdir, "checkpoints")
    self.checkpointers = {
      "sft": checkpointing.Checkpointer(os.path.join(ckpt_dir, "sft"), max_to_keep=1)
    }
    for r in self.runs:
      self.checkpointers[f"rl/{r.name}"] = checkpointing.Checkpointer(
        os.path.join(ckpt_dir, f"rl_{r.name}")
      )
    self.log = checkpointing.MetricsLog(
      os.path.join(self.workdir, "metrics.jsonl"), writer=self.is_main
    )
    # Wall-clock rates vary from run to run, so they stay out of metrics.jsonl (which a
    # resumed or re-sharded run reproduces exactly); appended, never truncated.
    self.throughput_log = checkpointing.MetricsLog(
      os.path.join(self.workdir, THROUGHPUT_FILE), writer=self.is_main
    )
    self.peak_flops = mfu_lib.peak_flops(jax.devices()[0].device_kind)
    self.key = jax.random.key(config.seed)
    self.rl_updates: dict[rl.UpdateSpec, Any] = {}  # Jitted updates, shared by runs.

  # ------------------------------------------------------------------ positions

  def resume_position(self) -> tuple[int, int] | None:
    """(stage rank, step) of the latest committed checkpoint, or None."""
    for rank in reversed(range(len(self.stages))):
      ckpt = self.checkpointers.get(self.stages[rank])
      step = None if ckpt is None else ckpt.latest_step()
      if step is not None:
        return rank, step
    return None

  def records_to_keep(self, position: tuple[int, int] | None) -> list[dict[str, Any]]:
    """The log's records up to ``position``; ``WorkdirError`` if any is missing.

    Records after ``position`` are dropped (they are recomputed). A log that lacks
    one up to ``position`` cannot be completed without redoing checkpointed steps.
    """
    expected = logged_keys(self.config, [r.name for r in self.runs], position)
    records = self.log.read()
    problem = log_problem(records, expected)
    if problem is None:
      return records[: len(expected)]
    if not os.path.exists(self.log.path):
      problem = "is missing"
    where = f"{self.stages[position[0]]} step {position[1]}" if position else ""
    raise workdir_lib.WorkdirError(
      f"{self.log.path} {problem} (records up to the latest checkpoint, {where}), so the "
      "results would be partial. To recompute everything, delete "
      f"{os.path.join(self.workdir, 'checkpoints')} and the log (or use a new --workdir)."
    )

  def evaluate(
    self, params, step: int, stream: int = _EVAL_STREAM, n: int | None = None, curves: bool = True
  ):
    """``(metrics, rewards)`` of ``evaluation.evaluate`` with the sampling key of
    (``stream``, ``step``) and ``n`` samples per problem (default ``eval.n``)."""
    c = self.config.eval
    return evaluation.evaluate(
      self.graphdef,
      params,
      self.model_cfg,
      self.task,
      self.eval_set,
      jax.random.fold_in(jax.random.fold_in(self.key, stream), step),
      n or c.n,
      self.mesh,
      temperature=c.temperature,
      top_p=c.top_p,
      chunk_prompts=c.chunk_prompts,
      curves=curves,
    )

  # --------------------------------------------------------------------- stages

  def run_sft(self, position) -> Any:
    c = self.config.sft
    ckpt = self.checkpointers["sft"]
    state = parallel.replicate(
      {"params": self.init_params, "opt_state": self.sft_opt.init(self.init_params)}, self.mesh
    )
    start = 0
    if position is not None:
      latest = position[1] if position[0] == 0 else ckpt.latest_step()
      if latest is None:
        raise workdir_lib.WorkdirError(
          f"{ckpt.directory} holds no checkpoint, but the RL runs after it have some; "
          "use a new --workdir."
        )
      start = latest
      state = ckpt.restore(start, state)
    params, opt_state = state["params"], state["opt_state"]
    update = sft.make_update(
      self.graphdef, self.sft_opt, self.prompt_len, parallel.replicated(self.mesh)
    )
    t0 = time.time()
    since_step, since = start, time.perf_counter()  # Throughput since the last record.
    for step in range(start + 1, c.steps + 1):
      rng = splits.sft_rng(self.config.seed, step)
      tokens, mask = sft.make_batch(self.task, rng, c.batch_size, self.exclude)
      params, opt_state, metrics = update(
        params, opt_state, parallel.put_rows(tokens, self.mesh), parallel.put_rows(mask, self.mesh)
      )
      if sft_logged(self.config, step):
        record = {"stage": "sft", "step": step, **_json(metrics)}
        if sft_evaluated(self.config, step):
          record.update(self.warm_start_fields(params, step))
        self.log.append(record)
        now = time.perf_counter()  # Steps since the last record, checkpoints included.
        rate = (step - since_step) * c.batch_size * self.model_cfg.max_len / (now - since)
        since_step, since = step, now
        self.throughput_log.append({"stage": "sft", "step": step, "train_tokens_per_s": rate})
        logging.info(
          "sft step %d/%d loss %.4f (%.1fs, %.0f tokens/s)",
          step,
          c.steps,
          record["loss"],
          time.time() - t0,
          rate,
        )
      if step % self.config.checkpoint_every == 0 or step == c.steps:
        ckpt.save(step, {"params": params, "opt_state": opt_state})
    if ckpt.latest_step() is None:  # sft.steps == 0: record the initial parameters.
      ckpt.save(0, {"params": params, "opt_state": opt_state})
    return params

  def warm_start_fields(self, params, step: int) -> dict[str, float]:
    """The warm-start curve's point at SFT step ``step``: held-out pass@1, pass@n and
    max@1 from ``sft.eval_n`` fresh samples per evaluation problem."""
    n = self.config.sft.eval_n
    metrics, _ = self.evaluate(params, step, _WARM_STREAM, n)
    return {
      "warm_pass_at_1": metrics["pass_at_k"][0],
      "warm_pass_at_n": metrics["pass_at_k"][n - 1],
      "warm_max_at_1": metrics["max_at_k"][0],
      "warm_n": n,
    }

  def run_base_eval(self, params) -> None:
    metrics, rewards = self.evaluate(params, 0)
    bin_n = self.config.eval.bin_n or self.config.eval.n
    _, bin_rewards = self.evaluate(params, 0, _BIN_STREAM, bin_n, curves=False)
    self.log.append(
      {
        "stage": "base",
        "step": self.config.sft.steps,
        "method": "base",
        **_eval_fields(metrics),
        **reporting.prompt_fields(rewards),
        "bin_correct": reporting.prompt_fields(bin_rewards)["eval_correct"],
        "bin_n": bin_n,
      }
    )
    logging.info("base pass@k %s", np.round(metrics["pass_at_k"], 3).tolist())

  def run_rl(self, index: int, spec: rl.RunSpec, sft_params, position) -> None:
    c = self.config.rl
    rank = 2 + index
    ckpt = self.checkpointers[self.stages[rank]]
    params = jax.tree.map(jnp.copy, sft_params)
    state = parallel.replicate({"params": params, "opt_state": self.rl_opt.init(params)}, self.mesh)
    start = 0
    if position is not None and position[0] == rank:
      start = position[1]
      state = ckpt.restore(start, state)
    params, opt_state = state["params"], state["opt_state"]
    t0 = time.time()
    solved_since_record: set[int] = set()
    for step in range(start + 1, c.steps + 1):
      k = spec.k_at(step)
      update_spec = rl.UpdateSpec(
        estimator=spec.estimator,
        k=k,
        baseline=c.baseline,
        off_policy=spec.off_policy,
        inner_epochs=c.inner_epochs,
        clip_eps=c.clip_eps,
        kl_coef=c.kl_coef,
        n=c.n,
        prompt_len=self.prompt_len,
        temperature=c.temperature,
      )
      if update_spec not in self.rl_updates:
        self.rl_updates[update_spec] = rl.make_update(
          self.graphdef, self.rl_opt, update_spec, parallel.replicated(self.mesh)
        )
      step_start = time.perf_counter()
      rng = splits.rl_rng(self.config.seed, step)
      examples = tasks_lib.sample_examples(self.task, rng, c.prompts_per_step, exclude=self.exclude)
      prompts = [e.prompt for e in examples]
      prompt_ids = tasks_lib.encode_prompts(prompts)
      key = jax.random.fold_in(jax.random.fold_in(self.key, _RL_STREAM), step)
      out = evaluation.sample_and_score(
        self.graphdef,
        params,
        self.model_cfg,
        self.task,
        prompts,
        prompt_ids,
        key,
        c.n,
        self.mesh,
        temperature=c.temperature,
        top_p=c.top_p,
      )
      sampled_at = time.perf_counter()
      rewards = out[c.reward]
      # PKPO's measure of harder problems: distinct training problems solved (>= 1
      # of n samples correct), recorded per log record and accumulated by reporting.
      solved_since_record.update(
        self.task.prompt_key(p) for p, hit in zip(prompts, out["binary"].max(-1)) if hit > 0
      )
      num_rows = c.prompts_per_step * c.n
      tokens = np.concatenate(
        [np.repeat(prompt_ids, c.n, axis=0), out["tokens"].reshape(num_rows, -1)], axis=1
      )
      mask = out["mask"].reshape(num_rows, -1)
      params, opt_state, metrics = self.rl_updates[update_spec](
        params,
        opt_state,
        sft_params,
        parallel.put_rows(tokens, self.mesh),
        parallel.put_rows(mask, self.mesh),
        parallel.replicate(jnp.asarray(rewards), self.mesh),
      )
      metrics = _json(metrics)  # Waits for the update.
      throughput = mfu_lib.rl_step_throughput(
        rows=num_rows,
        prompt_len=self.prompt_len,
        completion_len=self.task.completion_len,
        inner_epochs=c.inner_epochs,
        sample_seconds=sampled_at - step_start,
        update_seconds=time.perf_counter() - sampled_at,
        forward_flops_per_token=model_lib.flops_per_token(self.model_cfg, self.model_cfg.max_len),
        peak=self.peak_flops,
        num_devices=self.mesh.size,
      )
      record = {
        "stage": "rl",
        "run": spec.name,
        "method": method_label(self.config, spec),
        "k_opt": k,
        "step": step,
        "reward": float(rewards.mean()),
        "binary_reward": float(out["binary"].mean()),
        "continuous_reward": float(out["continuous"].mean()),
        "train_pass_at_k_opt": float(jnp.mean(maxk.pass_at_k(out["binary"], k))),
        "entropy": float(np.sum(out["entropy"] * out["mask"]) / max(out["mask"].sum(), 1)),
        "length": float(out["mask"].sum(-1).mean()),
        # PKPO's measure of harder problems: the distinct training problems solved
        # (>= 1 of n samples correct), accumulated over steps by ``reporting``.
        "train_solved_keys": sorted(solved_since_record),
        **metrics,
        "grad_clipped": float(metrics["grad_norm_max"] > c.max_grad_norm),
      }
      if rl_evaluated(self.config, step):
        eval_metrics, eval_rewards = self.evaluate(params, step)
        record.update(_eval_fields(eval_metrics))
        if step == c.steps:  # The final evaluation: per-prompt data for reporting.
          record.update(reporting.prompt_fields(eval_rewards))
      if rl_logged(self.config, step):
        self.log.append(record)
        solved_since_record = set()
        self.throughput_log.append({"stage": "rl", "run": spec.name, "step": step, **throughput})
        logging.info(
          "rl %s step %d/%d reward %.3f (%.1fs, %.0f tokens/s)",
          spec.name,
          step,
          c.steps,
          record["reward"],
          time.time() - t0,
          throughput["tokens_per_s"],
        )
      if step % self.config.checkpoint_every == 0 or step == c.steps:
        ckpt.save(step, {"params": params, "opt_state": opt_state})

  # ---------------------------------------------------------------------- all

  def run(self) -> list[dict[str, Any]]:
    """Runs (or resumes) every stage and writes the outputs; returns the result rows."""
    try:
      return self._run()
    finally:
      for ckpt in self.checkpointers.values():
        ckpt.close()

  def _run(self) -> list[dict[str, Any]]:
    position = self.resume_position()
    if self.is_main:  # The only writer; other processes never read the log to resume.
      kept = self.records_to_keep(position)
      self.log.rewrite(kept)
      if position is not None:
        logging.info(
          "Resuming after %s step %d (%d metric records kept).",
          self.stages[position[0]],
          position[1],
          len(kept),
        )
    if self.is_main:  # What the run trains on, replayed without the model (deterministic).
      split = splits.make_split(self.task, self.config, self.eval_set.keys)
      splits.write_split(self.workdir, split)
      if split["overlap"]:
        raise RuntimeError(f"{split['overlap']} training problems are evaluation problems.")
    sft_params = self.run_sft(position)
    if position is None or position[0] < 1:
      self.run_base_eval(sft_params)
    for index, spec in enumerate(self.runs):
      if position is not None and position[0] > 2 + index:
        continue
      self.run_rl(index, spec, sft_params, position)
    if not self.is_main:
      return []  # Process 0 owns the log and writes the results.
    evals, bin_correct = reporting.final_evaluations(
      self.log.read(), self.config.eval.n, {r.name: r.k_label for r in self.runs}
    )
    tables = reporting.write_reports(
      self.workdir,
      evals,
      bin_correct,
      seed=self.config.seed,
      prompts=self.eval_set.prompts,
      keys=[self.task.key_text(int(k)) for k in self.eval_set.keys],
      bin_n=self.config.eval.bin_n or self.config.eval.n,
    )
    histogram = reporting.reward_histogram_rows(evals, self.config.seed)
    outputs.write_results_csv(self.workdir, histogram, filename=REWARD_HIST_FILE)
    outputs.write_results_csv(
      self.workdir, dynamics.step_rows(self.log.read()), filename=STEPS_FILE
    )
    rows = tables["results.csv"]
    plotting.plot_pass_at_k(rows, os.path.join(self.workdir, "pass_at_k.png"))
    plotting.plot_bins(
      tables["bins.csv"], tables["unsolved.csv"], os.path.join(self.workdir, "bins.png")
    )
    return rows


def result_rows(
  records: list[dict[str, Any]], n_eval: int, runs: list[rl.RunSpec], seed: int = 0
) -> list[dict[str, Any]]:
  """results.csv rows: the base evaluation and each run's last evaluation, k = 1..n_eval,
  with 95% intervals over prompts (``reporting.result_rows``).

  Raises:
    WorkdirError: if ``records`` lack the base evaluation, a run's last one, or their
      per-prompt data.
  """
  evals, _ = reporting.final_evaluations(records, n_eval, {r.name: r.k_label for r in runs})
  return reporting.result_rows(evals, seed)


def run(config: ml_collections.ConfigDict, workdir: str) -> list[dict[str, Any]]:
  """Runs (or resumes) the experiment of ``config`` in ``workdir``; returns the result
  rows (process 0; the other processes of a multi-host run return none).

  Raises:
    validation.ConfigError: a bad config value (before anything is written).
    workdir_lib.WorkdirError: the workdir is in use, holds another config, or its log
      or a checkpoint is damaged.
  """
  validation.validate_config(config, device_count=jax.device_count())
  mesh = parallel.make_mesh(config.num_devices)
  record = {
    **config.to_dict(),
    "workdir": os.path.abspath(workdir),
    "num_devices_used": int(mesh.size),
  }
  with workdir_lib.claim(workdir, record, writer=jax.process_index() == 0) as path:
    return Experiment(config, path, mesh).run()


def initialize_distributed(enabled: bool) -> None:
  """``jax.distributed.initialize()`` unless disabled or already done.

  ``python -m launch.distributed experiments.lm.main --distributed ...`` initialises
  before this binary starts; a second call would raise.
  """
  if enabled and not jax.distributed.is_initialized():
    jax.distributed.initialize()


def main(config: ml_collections.ConfigDict, workdir: str, *, distributed: bool = False) -> None:
  """The binary: ``run``, with a refused run (bad config, busy or mismatched workdir,
  damaged log or checkpoint) ending the process with one error line and exit code 1."""
  initialize_distributed(distributed)
  logging.info(
    "JAX devices: %s (process %d of %d)", jax.devices(), jax.process_index(), jax.process_count()
  )
  try:
    rows = run(config, workdir)
  except (validation.ConfigError, workdir_lib.WorkdirError) as e:
    raise SystemExit(f"experiments.lm.main: {e}") from None
  for row in rows:
    logging.info("%s", row)
