"""The per-prompt data of the evaluations, as ``metrics.jsonl`` records them.

The trainer logs, at the final evaluation of the base model (after SFT) and of each
RL run, the number of correct samples and the continuous reward of every sample per
evaluation problem (:func:`prompt_fields`), and with the base model's evaluation the
counts of its *binning* evaluation (``bin_correct``: an independent draw used only to
sort the problems into difficulty bins). :func:`final_evaluations` reads them back as
:class:`Evaluation` records, which ``report_rows`` turns into the report's tables.

With ``eval.kl`` every evaluation (the base model's and each RL run's at every
evaluated step) also logs its counts and per-prompt KL to the warm start
(``eval_records``); :func:`checkpoint_rows` turns them into ``checkpoints.csv``.
"""

from __future__ import annotations

from collections.abc import Sequence
import dataclasses
from typing import Any

import numpy as np

from experiments.lm import workdir as workdir_lib


def encode_rewards(rewards_n: np.ndarray) -> str:
  """Space-separated float32 rewards, each in its shortest exact form."""
  values = np.asarray(rewards_n, np.float32).ravel()
  return " ".join(np.format_float_positional(v, unique=True, trim="-") for v in values)


def decode_rewards(text: str) -> np.ndarray:
  """Inverse of :func:`encode_rewards` (float32, bit for bit)."""
  return np.array([float(v) for v in text.split()], np.float32)


def prompt_fields(rewards: dict[str, np.ndarray]) -> dict[str, Any]:
  """Per-prompt fields of a log record from ``evaluation.evaluate``'s rewards.

  ``eval_correct``: correct samples per prompt; ``eval_rewards``: the continuous
  rewards of each prompt's samples (:func:`encode_rewards`).
  """
  binary_Pxn = np.asarray(rewards["binary"])
  return {
    "eval_correct": [int(c) for c in np.sum(binary_Pxn > 0, axis=-1)],
    "eval_rewards": [encode_rewards(row) for row in np.asarray(rewards["continuous"])],
  }


@dataclasses.dataclass(frozen=True)
class Evaluation:
  """One final evaluation on the evaluation problems (``correct_P``, ``rewards_Pxn``)."""

  run: str  # "base" or the RL run's name.
  stage: str  # "base" or "rl".
  method: str
  k_opt: str
  correct_P: np.ndarray
  rewards_Pxn: np.ndarray

  @property
  def n(self) -> int:
    return self.rewards_Pxn.shape[1]

  @property
  def binary_Pxn(self) -> np.ndarray:
    """A binary reward matrix with ``correct_P`` ones per row (pass@k needs only the count)."""
    return (np.arange(self.n)[None, :] < self.correct_P[:, None]).astype(np.float32)


def _prompt_data(record: dict[str, Any], name: str, n_eval: int) -> tuple[np.ndarray, np.ndarray]:
  if "eval_correct" not in record or "eval_rewards" not in record:
    raise workdir_lib.WorkdirError(
      f"metrics.jsonl's final evaluation of {name} lacks per-prompt rewards (an older "
      "version wrote it); use a new --workdir."
    )
  correct = np.asarray(record["eval_correct"], np.int64)
  rewards = [decode_rewards(text) for text in record["eval_rewards"]]
  if len(rewards) != len(correct) or any(r.size != n_eval for r in rewards):
    raise workdir_lib.WorkdirError(
      f"metrics.jsonl's final evaluation of {name} does not hold {n_eval} rewards per prompt."
    )
  if np.any(correct < 0) or np.any(correct > n_eval):
    raise workdir_lib.WorkdirError(f"metrics.jsonl's counts of {name} lie outside [0, {n_eval}].")
  return correct, np.stack(rewards) if rewards else np.zeros((0, n_eval), np.float32)


def final_evaluations(
  records: Sequence[dict[str, Any]], n_eval: int, k_labels: dict[str, str]
) -> tuple[list[Evaluation], np.ndarray]:
  """The base evaluation and each run's last one (in ``k_labels``' order), and the
  base model's binning counts ``[P]``.

  Args:
    records: the log.
    n_eval: samples per prompt.
    k_labels: run name -> its k_opt label (``run_specs.RunSpec.k_label``), in run order.

  Raises:
    WorkdirError: if the log lacks an evaluation, its per-prompt data, or the
      binning counts.
  """
  finals: dict[str, dict[str, Any]] = {}
  for record in records:
    if "eval_pass_at_k" in record:
      finals["base" if record["stage"] == "base" else record["run"]] = record
  missing = [name for name in ["base", *k_labels] if name not in finals]
  if missing:
    raise workdir_lib.WorkdirError(f"metrics.jsonl lacks the evaluation of {missing}.")
  evals = []
  for name in ["base", *k_labels]:
    record = finals[name]
    correct, rewards = _prompt_data(record, name, n_eval)
    stage = "base" if name == "base" else "rl"
    k_opt = "" if name == "base" else k_labels[name]
    evals.append(Evaluation(name, stage, record["method"], k_opt, correct, rewards))
  sizes = {len(e.correct_P) for e in evals}
  bin_correct = np.asarray(finals["base"].get("bin_correct", []), np.int64)
  if len(sizes) != 1 or bin_correct.size not in sizes:
    raise workdir_lib.WorkdirError(
      "metrics.jsonl's evaluations (and the base binning counts, bin_correct) do not "
      "cover the same prompts."
    )
  return evals, bin_correct


# checkpoints.csv's columns; ``rewards`` only with ``eval.checkpoint_rewards``.
CHECKPOINT_COLUMNS = ("run", "method", "k_opt", "seed", "step", "prompt", "n", "correct", "kl")


def checkpoint_rows(
  records: Sequence[dict[str, Any]],
  *,
  k_labels: dict[str, str],
  seed: int,
  n_eval: int,
  rewards: bool = False,
) -> list[dict[str, Any]]:
  """``checkpoints.csv``: one row per evaluation and evaluation problem, in log order.

  Columns (:data:`CHECKPOINT_COLUMNS`): ``run`` (``base`` or the RL run's name),
  ``method``, ``k_opt`` (the run's k label, ``run_specs.RunSpec.k_label``; empty for the
  base model), ``seed``, ``step`` (the RL step; 0 for the base model, once),
  ``prompt`` (index into the evaluation set), ``n`` (samples), ``correct`` (correct
  samples), ``kl`` (the prompt's held-out KL to the warm start, ``held_out_kl``),
  and with ``rewards`` the samples' continuous rewards (:func:`encode_rewards`).

  Args:
    records: the log of a run with ``eval.kl``.
    k_labels: run name -> its k_opt label.
    seed: the run's seed.
    n_eval: samples per prompt.
    rewards: add the ``rewards`` column (``eval.checkpoint_rewards``).

  Raises:
    WorkdirError: if an evaluation lacks its counts, KL (or rewards), or they do not
      cover the same prompts.
  """
  rows = []
  for record in records:
    if "eval_pass_at_k" not in record:
      continue
    base = record["stage"] == "base"
    name = "base" if base else record["run"]
    needed = ("eval_correct", "eval_kl", *(("eval_rewards",) if rewards else ()))
    if (
      any(field not in record for field in needed)
      or len({len(record[field]) for field in needed}) != 1
    ):
      raise workdir_lib.WorkdirError(
        f"metrics.jsonl's evaluation of {name} at step {record['step']} lacks per-prompt "
        f"{', '.join(needed)} for checkpoints.csv, or they cover different prompts."
      )
    for prompt, (correct, kl) in enumerate(zip(record["eval_correct"], record["eval_kl"])):
      row = {
        "run": name,
        "method": record["method"],
        "k_opt": "" if base else k_labels[name],
        "seed": seed,
        "step": 0 if base else record["step"],
        "prompt": prompt,
        "n": n_eval,
        "correct": int(correct),
        "kl": float(kl),
      }
      if rewards:
        row["rewards"] = record["eval_rewards"][prompt]
      rows.append(row)
  return rows
