"""README's table of the checker's verdicts on 2026's estimators: each row re-run."""

import os
import re

import jax.numpy as jnp
import numpy as np
import pytest

import maxk

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_PROBS = np.array([0.5, 0.3, 0.2])
_REWARDS = np.array([0.0, 0.5, 1.0])
_BATCH_PROBS = np.stack([_PROBS, _PROBS[::-1]])
_BATCH_REWARDS = np.stack([_REWARDS, _REWARDS])


def _per_arm(table):
  """Rewards (0, 0.5, 1) -> a value of their arm, e.g. its squared score norm."""
  return lambda r: jnp.asarray(table)[jnp.rint(jnp.asarray(r) * 2).astype(jnp.int32)]


_SCORE_SQ = _per_arm(1 - 2 * _PROBS + _PROBS @ _PROBS)
_LOG_PROBS = _per_arm(np.log(_PROBS))

# README's first cell -> (advantage fn, probs, rewards, n, k, policies).
_CASES = {
  'MaxPO\'s leave-two-out, `max_at_k_advantages(r, 2, baseline="leave_two_out")`': (
    lambda r: maxk.max_at_k_advantages(r, 2, baseline="leave_two_out"),
    _PROBS,
    _REWARDS,
    6,
    2,
    None,
  ),
  "Greensmith's baseline, `optimal_baseline_advantages(r, score_sq_norms)`": (
    lambda r: maxk.optimal_baseline_advantages(r, _SCORE_SQ(r)),
    _PROBS,
    _REWARDS,
    6,
    1,
    None,
  ),
  "as OPO and verl's `optimal_token_baseline` ship it, `leave_one_out=False`": (
    lambda r: maxk.optimal_baseline_advantages(r, _SCORE_SQ(r), leave_one_out=False),
    _PROBS,
    _REWARDS,
    6,
    1,
    None,
  ),
  # Log-probabilities of the given policy: compared there only.
  "`unlikeliness_advantages(r, log_probs)` (one policy compared)": (
    lambda r: maxk.unlikeliness_advantages(r, _LOG_PROBS(r)),
    _PROBS,
    _REWARDS,
    6,
    1,
    (),
  ),
  "`jspo_advantages(r)`": (
    maxk.jspo_advantages,
    _BATCH_PROBS,
    _BATCH_REWARDS,
    3,
    1,
    None,
  ),
  '`jspo_advantages(r, variant="jspo++")`': (
    lambda r: maxk.jspo_advantages(r, variant="jspo++"),
    _BATCH_PROBS,
    _BATCH_REWARDS,
    3,
    1,
    None,
  ),
  "`jspo_max_at_k_advantages(r, 2)`": (
    lambda r: maxk.jspo_max_at_k_advantages(r, 2),
    _BATCH_PROBS,
    _BATCH_REWARDS,
    4,
    2,
    None,
  ),
  '`jspo_max_at_k_advantages(r, 2, variant="jspo++")`': (
    lambda r: maxk.jspo_max_at_k_advantages(r, 2, variant="jspo++"),
    _BATCH_PROBS,
    _BATCH_REWARDS,
    4,
    2,
    None,
  ),
}


def _readme_rows():
  with open(os.path.join(_ROOT, "README.md")) as f:
    text = f.read()
  start = text.index("| estimator | objective | verdict |")
  rows = {}
  for line in text[start:].splitlines()[2:]:
    if not line.startswith("|"):
      break
    name, objective, verdict = (cell.strip() for cell in line.strip("|").split(" | "))
    rows[name] = (objective, verdict)
  return rows


def test_readme_lists_every_case():
  assert set(_readme_rows()) == set(_CASES)


@pytest.mark.parametrize("name", list(_CASES))
def test_verdict(name):
  objective, verdict = _readme_rows()[name]
  fn, probs, rewards, n, k, policies = _CASES[name]
  assert objective == f"max@{k}"
  extra = {} if policies is None else {"policies": policies}
  check = maxk.testing.gradient_bias(fn, probs, rewards, n, maxk.rank_weights("max", k), **extra)
  shown = re.sub(r"factor ([\d.]+)", lambda m: f"factor {float(m.group(1)):.3g}", check.verdict)
  assert shown == verdict
