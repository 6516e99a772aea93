"""Tests of experiments.lm.tasks: tokenizer, parser and every reward on hand-written cases."""

import numpy as np
import pytest

from experiments.lm import tasks


def test_encode_decode_round_trip():
  ids = tasks.encode("12+(3*4)")
  assert tasks.decode_completion(ids + [tasks.EOS_ID, 5, 6]) == "12+(3*4)"
  assert tasks.decode_completion([tasks.BOS_ID] + ids) == "?12+(3*4)"
  with pytest.raises(ValueError, match="not in the vocabulary"):
    tasks.encode("1/2")


@pytest.mark.parametrize(
  "text,value,numbers",
  [
    ("7", 7, [7]),
    ("3*5+7", 22, [3, 5, 7]),
    ("3+5*7", 38, [3, 5, 7]),
    ("(3+5)*7", 56, [3, 5, 7]),
    ("9-4-3", 2, [9, 4, 3]),
    ("2*(9-(4+1))", 8, [2, 9, 4, 1]),
  ],
)
def test_parse_expression(text, value, numbers):
  assert tasks.parse_expression(text) == (value, numbers)


@pytest.mark.parametrize("text", ["", "+3", "3+", "3**4", "(3+4", "3+4)", "3?4", "()", "12345"])
def test_parse_expression_rejects_malformed(text):
  with pytest.raises(ValueError, match="Malformed"):
    tasks.parse_expression(text)


COUNTDOWN = tasks.Countdown(num_numbers=3, max_number=9)


@pytest.mark.parametrize(
  "completion,binary,continuous",
  [
    ("3*5+7", 1.0, 1.0),  # The reference.
    ("7+3*5", 1.0, 1.0),  # Another valid answer.
    ("(7+15)", 0.0, (1 + 0 + 1) / 3),  # Right value, 15 is not given.
    ("3*5", 0.0, (1 + 1 + (1 - 7 / 22)) / 3),  # Valid numbers, wrong value.
    ("3*3+7", 0.0, (1 + 0 + (1 - 6 / 22)) / 3),  # 3 used twice.
    ("3*5+", 0.0, 0.0),  # Does not parse.
    ("?", 0.0, 0.0),
    ("9*9*9", 0.0, (1 + 0 + 0) / 3),  # Far off: closeness floors at 0.
  ],
)
def test_countdown_score(completion, binary, continuous):
  score = COUNTDOWN.score("3,5,7>022=", completion)
  assert score.binary == binary
  assert score.continuous == pytest.approx(continuous)


def test_countdown_two_digit_numbers_and_repeats():
  task = tasks.Countdown(num_numbers=4, max_number=20, min_used=2)
  assert task.score("02,15,15,07>030=", "15+15").binary == 1.0
  assert task.score("02,15,15,07>030=", "2*15").binary == 1.0
  assert task.score("02,15,15,07>030=", "15*2*1").binary == 0.0


ADDITION = tasks.Addition(num_digits=3)


@pytest.mark.parametrize(
  "completion,binary,continuous",
  [
    ("1329", 1.0, 1.0),
    ("01329", 0.0, 0.0),  # Shifted: every position is wrong.
    ("1339", 0.0, 0.75),
    ("132", 0.0, 0.75),  # One digit missing.
    ("13290", 0.0, 0.8),  # One extra character.
    ("", 0.0, 0.0),
  ],
)
def test_addition_score(completion, binary, continuous):
  score = ADDITION.score("371+958=", completion)
  assert score.binary == binary
  assert score.continuous == pytest.approx(continuous)


@pytest.mark.parametrize(
  "name,kwargs",
  [
    ("countdown", {}),
    ("countdown", {"num_numbers": 4, "max_number": 25, "min_used": 3}),
    ("addition", {"num_digits": 1}),
    ("addition", {"num_digits": 5}),
  ],
)
def test_generated_instances_are_solved_by_their_reference(name, kwargs):
  task = tasks.make_task(name, **kwargs)
  rng = np.random.default_rng(0)
  examples = tasks.sample_examples(task, rng, 50)
  for e in examples:
    assert len(e.prompt) == task.prompt_len
    assert len(e.solution) + 1 <= task.completion_len
    assert task.score(e.prompt, e.solution) == tasks.Score(1.0, 1.0)
  # Deterministic in the generator's seed.
  assert examples == tasks.sample_examples(task, np.random.default_rng(0), 50)


def test_countdown_has_many_answers():
  # Some prompt admits an answer other than its reference.
  examples = tasks.sample_examples(COUNTDOWN, np.random.default_rng(1), 20)
  others = 0
  for e in examples:
    numbers = [int(x) for x in e.prompt.split(">")[0].split(",")]
    for a in numbers:
      for b in numbers:
        for op in "+-*":
          text = f"{a}{op}{b}"
          if text != e.solution and COUNTDOWN.score(e.prompt, text).binary:
            others += 1
  assert others > 0


def test_heldout_set_and_exclusion():
  task = tasks.make_task("addition", num_digits=1)
  heldout = tasks.heldout_examples(task, seed=3, num=30)
  prompts = {e.prompt for e in heldout}
  assert len(prompts) == 30
  train = tasks.sample_examples(task, np.random.default_rng(0), 200, exclude=frozenset(prompts))
  assert not prompts & {e.prompt for e in train}


def test_registry_and_errors():
  assert set(tasks.TASKS) >= {"countdown", "addition"}
  with pytest.raises(ValueError, match="Unknown task"):
    tasks.make_task("chess")
  with pytest.raises(ValueError, match="min_used"):
    tasks.Countdown(num_numbers=3, min_used=4)


def test_score_batch_and_encodings():
  prompts = ["371+958=", "001+001="]  # 1329 and 0002.
  completions = tasks.encode_completions(["1329", "12"], ADDITION.completion_len)
  assert completions[0, 4] == tasks.EOS_ID and completions[1, 3] == tasks.PAD_ID
  binary, continuous = tasks.score_batch(ADDITION, prompts, completions[:, None])
  np.testing.assert_allclose(binary, [[1.0], [0.0]])
  np.testing.assert_allclose(continuous, [[1.0], [0.0]])
  ids = tasks.encode_prompts(prompts)
  assert ids.shape == (2, 9) and (ids[:, 0] == tasks.BOS_ID).all()
  assert tasks.decode_prompt(ids[0]) == prompts[0]
  with pytest.raises(ValueError, match="tokens > length"):
    tasks.encode_completions(["01329"], ADDITION.completion_len)
  with pytest.raises(ValueError, match="share one length"):
    tasks.encode_prompts(["1+1=", "10+1="])
