"""Training dynamics from ``metrics.jsonl``: the compact per-step table ``steps.csv``.

``metrics.jsonl`` also holds every evaluation's per-prompt rewards, so it is large;
``steps.csv`` keeps only what the training curves need, one row per logged step:

* ``stage`` (``sft`` or ``rl``), ``run`` (the RL run's name, empty for SFT),
  ``method``, ``k_opt`` and ``step``;
* ``loss``: SFT's token NLL, or RL's policy loss at the first inner epoch;
* SFT: ``grad_norm``, and on evaluated steps the warm-start curve:
  ``warm_pass_at_1``, ``warm_pass_at_n``, ``warm_max_at_1`` on the held-out problems
  from ``warm_n`` samples each (``sft.eval_every``, ``sft.eval_n``);
* RL: the mean training ``reward`` (the run's reward), ``binary_reward``,
  ``continuous_reward``, the policy's token ``entropy`` along its samples,
  ``kl_to_warm_start`` (an unbiased estimate of KL(pi_old || pi_warm) over whole
  completions), ``clip_frac`` (the share of samples whose weight PPO-style clipping
  set to 0 at the last inner epoch; 0 in the first), ``ess_frac`` (the effective
  sample size of the importance ratios over n at the last inner epoch),
  ``grad_norm`` (first inner epoch, before clipping), ``grad_norm_max`` (over the
  inner epochs) and ``grad_clipped`` (1 when it exceeded ``rl.max_grad_norm``, i.e.
  the update was clipped), ``solved_cumulative`` (the distinct training problems
  with at least one correct sample in any step so far: PKPO's measure of solving
  harder problems, on training problems, beside the held-out one), and on evaluated
  steps ``eval_pass_at_1`` and ``eval_max_at_1``.

Empty cells mean the field does not apply to the row.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

STEP_COLUMNS = (
  "stage",
  "run",
  "method",
  "k_opt",
  "step",
  "loss",
  "warm_pass_at_1",
  "warm_pass_at_n",
  "warm_max_at_1",
  "warm_n",
  "reward",
  "binary_reward",
  "continuous_reward",
  "entropy",
  "kl_to_warm_start",
  "clip_frac",
  "ess_frac",
  "grad_norm",
  "grad_norm_max",
  "grad_clipped",
  "solved_cumulative",
  "eval_pass_at_1",
  "eval_max_at_1",
)
# steps.csv column <- metrics.jsonl field, where the names differ.
_SOURCES = {"clip_frac": "last_clip_frac", "ess_frac": "last_ess_frac"}


def step_rows(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
  """The rows of ``steps.csv`` (see the module docstring) from a run's log records."""
  rows = []
  solved: dict[str, set[int]] = {}
  for record in records:
    stage = record.get("stage")
    if stage not in ("sft", "rl"):
      continue
    run = record.get("run", "")
    row: dict[str, Any] = {name: "" for name in STEP_COLUMNS}
    row.update(stage=stage, run=run, method=record.get("method", ""), step=record["step"])
    row["k_opt"] = record.get("k_opt", "")
    for name in STEP_COLUMNS[5:]:
      value = record.get(_SOURCES.get(name, name))
      if isinstance(value, (int, float)) and not isinstance(value, bool):
        row[name] = value
    if stage == "rl":
      seen = solved.setdefault(run, set())
      seen.update(int(k) for k in record.get("train_solved_keys", ()))
      row["solved_cumulative"] = len(seen)
      for name, field in (("eval_pass_at_1", "eval_pass_at_k"), ("eval_max_at_1", "eval_max_at_k")):
        if record.get(field):
          row[name] = record[field][0]
    rows.append(row)
  return rows
