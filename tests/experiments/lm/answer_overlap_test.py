"""Tests of experiments.lm.answer_overlap: held-out problems whose answer the warm start shows."""

import json

import numpy as np
import pytest

from experiments import config_checks
from experiments.lm import answer_overlap
from experiments.lm import evaluation
from experiments.lm import splits
from experiments.lm import streams
from experiments.lm import tasks
from experiments.lm import validation
from experiments.lm.configs import tiny
from tests.experiments.lm import toy_task

# Small universes, so that random draws share answers with held-out problems.
_SMALL = [
  ("countdown", {"num_numbers": 3, "max_number": 6, "target_digits": 2}),
  ("countdown", {"num_numbers": 4, "max_number": 5, "min_used": 3, "target_digits": 2}),
  ("addition", {"num_digits": 2}),
  ("program", {"max_coef": 20}),
]


def _draws(task, seed, num_train, num_eval):
  """Training rows (random draws plus the evaluation problems' own keys, shown again)
  and the evaluation prompts."""
  eval_rows = tasks.heldout_problems(task, seed=seed, num=num_eval)
  train = task.sample_problems(np.random.default_rng([seed, 1]), num_train)
  pool = task.sample_problems(np.random.default_rng([seed, 2]), 4000)
  same_key = pool[np.isin(task.problem_keys(pool), task.problem_keys(eval_rows[:3]))]
  rows = np.concatenate([train, same_key[:6]])
  return rows, [task.example(r).prompt for r in eval_rows]


@pytest.mark.parametrize("name,kwargs", _SMALL, ids=[f"{n}{k}" for n, k in _SMALL])
def test_indexed_path_equals_scoring_every_pair(name, kwargs):
  task = tasks.make_task(name, **kwargs)
  assert isinstance(task, tasks.AnswerIndexed)
  rows, prompts = _draws(task, seed=0, num_train=60, num_eval=40)
  fast = answer_overlap.answer_seen(task, rows, prompts)
  slow = answer_overlap.answer_seen(task, rows, prompts, brute_force=True)
  np.testing.assert_array_equal(fast.seen, slow.seen)
  assert 0 < fast.seen.sum() < len(prompts)  # Informative: both outcomes occur.
  solutions = {task.example(r).solution for r in rows}
  for prompt, example in zip(prompts, fast.examples):
    if example is not None:
      assert example in solutions and task.score(prompt, example).binary == 1.0
  # The filter of the SFT draws agrees row by row with scoring each solution.
  reject = answer_overlap.answer_filter(task, prompts)(rows)
  by_scoring = [any(task.score(p, task.example(r).solution).binary for p in prompts) for r in rows]
  np.testing.assert_array_equal(reject, by_scoring)
  np.testing.assert_array_equal(
    answer_overlap.answer_filter(task, prompts, brute_force=True)(rows), by_scoring
  )


def test_program_solutions_solve_only_their_own_function():
  """Held out by key is held out by answer for program: only the problems whose own
  function was drawn are seen (the _draws rows repeat three evaluation keys)."""
  task = tasks.make_task("program", max_coef=20)
  rows, prompts = _draws(task, seed=1, num_train=200, num_eval=30)
  seen = answer_overlap.answer_seen(task, rows, prompts, brute_force=True).seen
  own = np.isin([task.prompt_key(p) for p in prompts], task.problem_keys(rows))
  np.testing.assert_array_equal(seen, own)


def _countdown_row(numbers, used, ops, target):
  """A countdown row whose reference solution is numbers[:used] joined by ops in order."""
  n = len(numbers)
  return np.array([*numbers, used, *range(n), *ops, target], np.int64)


def test_hand_built_countdown_answers():
  task = tasks.make_task("countdown", num_numbers=3, max_number=9, min_used=2, target_digits=2)
  rows = np.stack(
    [
      _countdown_row([3, 8, 5], 2, [2, 0], 24),  # "3*8" = 24
      _countdown_row([9, 2, 4], 3, [1, 0], 11),  # "9-2+4" = 11
    ]
  )
  assert [task.example(r).solution for r in rows] == ["3*8", "9-2+4"]
  prompts = [
    "3,8,7>24=",  # 3 and 8 given, target 24: "3*8" solves it.
    "8,1,3>24=",  # The same numbers in another order, another third number.
    "3,9,7>24=",  # No 8: "3*8" uses a number not given.
    "3,8,7>25=",  # Another target.
    "4,2,9>11=",  # "9-2+4" uses all three.
    "9,2,5>11=",  # No 4.
    "3,3,8>24=",  # "3*8" needs one 3 of two.
  ]
  for brute_force in (False, True):
    result = answer_overlap.answer_seen(task, rows, prompts, brute_force=brute_force)
    assert result.seen.tolist() == [True, True, False, False, True, False, True]
    assert result.examples == ["3*8", "3*8", None, None, "9-2+4", None, "3*8"]
  reject = answer_overlap.answer_filter(task, ["3,9,7>24=", "8,3,1>24="])(rows)
  assert reject.tolist() == [True, False]


def test_a_task_without_an_index_is_scored_pair_by_pair():
  with toy_task.registered():
    task = tasks.make_task(toy_task.NAME, num_digits=2)
    assert not isinstance(task, tasks.AnswerIndexed)
    rows = np.array([[12], [40], [12]])
    result = answer_overlap.answer_seen(task, rows, ["12=", "21=", "40=", "04="])
    assert result.seen.tolist() == [True, False, True, False]
    assert result.examples == ["21", None, "04", None]
    reject = answer_overlap.answer_filter(task, ["40="])
    assert reject(rows).tolist() == [False, True, False]


def test_empty_inputs():
  task = tasks.make_task("countdown", num_numbers=3, max_number=9, target_digits=2)
  none = answer_overlap.answer_seen(task, np.zeros((0, 10), np.int64), ["3,8,7>24="])
  assert none.seen.tolist() == [False] and none.share == 0.0
  assert answer_overlap.answer_seen(task, np.zeros((0, 10), np.int64), []).share == 0.0


def _tiny(novel):
  config = tiny.get_config()
  config.task.novel_answers = novel
  task = tasks.make_task(config.task.name, **config.task.kwargs.to_dict())
  return config, task, evaluation.make_eval_set(task, config.seed, config.eval.num_prompts)


def test_split_records_seen_answers_and_novel_answers_removes_them():
  """The tiny config (3 numbers in 1..9) shows most held-out answers; with
  novel_answers none, checked by scoring every SFT solution on every held-out prompt."""
  config, task, eval_set = _tiny(False)
  split = splits.make_split(task, config, eval_set.keys)
  sft, _ = streams.training_problems(task, config, eval_set.keys)
  expected = answer_overlap.answer_seen(task, sft, eval_set.prompts, brute_force=True)
  assert split["answer_seen"] == expected.seen.tolist()
  assert split["answer_seen_share"] == pytest.approx(expected.seen.mean())
  assert split["answer_seen_share"] > 0.5 and not split["novel_answers"]
  assert len(split["answer_seen_examples"]) == len(eval_set.keys)
  assert "verbatim" in split["answer_seen_rule"] or "exact" in split["answer_seen_rule"]

  config, task, eval_set = _tiny(True)
  novel = splits.make_split(task, config, eval_set.keys)
  assert novel["novel_answers"] and novel["answer_seen_share"] == 0.0
  assert not any(novel["answer_seen"]) and novel["overlap"] == 0
  reject = answer_overlap.sft_reject(task, config, eval_set.prompts)
  sft, rl = streams.training_problems(task, config, eval_set.keys, sft_reject=reject)
  assert len(sft) == config.sft.steps * config.sft.batch_size
  assert not answer_overlap.answer_seen(task, sft, eval_set.prompts, brute_force=True).seen.any()
  train_keys = np.concatenate([task.problem_keys(sft), task.problem_keys(rl)])
  assert not np.isin(train_keys, eval_set.keys).any()
  # The trainer's call (streams.sft_problems with the components' reject) is what
  # the split replays.
  batch = config.sft.batch_size
  for step in (1, config.sft.steps):
    rows = streams.sft_problems(
      task, config.seed, step, batch, frozenset(eval_set.keys.tolist()), reject=reject
    )
    np.testing.assert_array_equal(rows, sft[(step - 1) * batch : step * batch])


def test_novel_answers_is_deterministic_and_off_by_default():
  config, task, eval_set = _tiny(True)
  first = json.dumps(splits.make_split(task, config, eval_set.keys))
  assert json.dumps(splits.make_split(task, config, eval_set.keys)) == first
  plain = tiny.get_config()
  assert "novel_answers" not in plain.task  # Existing configs keep their config.json.
  assert answer_overlap.sft_reject(task, plain, eval_set.prompts) is None
  # Without the option the SFT draws are those of the plain key exclusion.
  sft_default, _ = streams.training_problems(task, plain, eval_set.keys)
  sft_false, _ = streams.training_problems(task, _tiny(False)[0], eval_set.keys)
  np.testing.assert_array_equal(sft_default, sft_false)


def test_novel_answers_must_be_a_bool():
  config = tiny.get_config("micro")
  config.task.novel_answers = "yes"
  with pytest.raises(config_checks.ConfigError, match=r"config\.task\.novel_answers="):
    validation.validate_config(config)
  with pytest.raises(ValueError, match="novel_answers"):
    answer_overlap.novel_answers(config)
  config = tiny.get_config("micro")
  config.task.novel_answers = True
  validation.validate_config(config)


def test_make_split_refuses_keys_that_are_not_the_held_out_problems():
  config, task, eval_set = _tiny(False)
  with pytest.raises(ValueError, match="held-out problems"):
    splits.make_split(task, config, eval_set.keys[::-1].copy())
