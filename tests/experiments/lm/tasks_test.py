"""Tests of experiments.lm.tasks: tokenizer, problem keys and every reward."""

import collections

import numpy as np
import pytest

from experiments.lm import expressions
from experiments.lm import tasks
from experiments.lm.tasks import program as program_task


def test_encode_decode_round_trip():
  ids = tasks.encode("12+(3*x)")
  assert tasks.decode_completion(ids + [tasks.EOS_ID, 5, 6]) == "12+(3*x)"
  assert tasks.decode_completion([tasks.BOS_ID] + ids) == "?12+(3*x)"
  with pytest.raises(ValueError, match="not in the vocabulary"):
    tasks.encode("1/2")
  assert tasks.VOCAB_SIZE == 3 + len("0123456789+-*()=,>x")


# ------------------------------------------------------------------------- countdown

COUNTDOWN = tasks.Countdown(num_numbers=3, max_number=9)


@pytest.mark.parametrize(
  "completion,binary,continuous",
  [
    ("3*5+7", 1.0, 1.0),  # The reference.
    ("7+3*5", 1.0, 1.0),  # Another valid answer.
    ("22", 0.0, 0.0),  # Echoing the target: 22 is not a given number.
    ("(7+15)", 0.0, 0.0),  # Right value, 15 is not given.
    ("3*3+7", 0.0, 0.0),  # 3 used twice.
    ("3*5", 0.0, 1 / 8),  # Valid, off by 7.
    ("3*7", 0.0, 1 / 2),  # Valid, off by 1.
    ("7", 0.0, 0.0),  # A lone number: fewer than min_used = 2.
    ("7-3", 0.0, 1 / 19),  # Valid, far off.
    ("3*5+", 0.0, 0.0),  # Does not parse.
    ("?", 0.0, 0.0),
    ("9*9*9", 0.0, 0.0),  # Invalid numbers.
  ],
)
def test_countdown_score(completion, binary, continuous):
  score = COUNTDOWN.score("3,5,7>022=", completion)
  assert score.binary == binary
  assert score.continuous == pytest.approx(continuous)


def test_countdown_rejects_echoing_a_given_number_equal_to_the_target():
  # Hand-made: the target 8 is a given number; echoing it uses one number < min_used.
  assert COUNTDOWN.score("3,5,8>008=", "8") == tasks.Score(0.0, 0.0)
  assert COUNTDOWN.score("3,5,8>008=", "(8)") == tasks.Score(0.0, 0.0)
  assert COUNTDOWN.score("3,5,8>008=", "3+5") == tasks.Score(1.0, 1.0)
  stricter = tasks.Countdown(num_numbers=4, max_number=25, min_used=3)
  assert stricter.score("03,05,08,20>023=", "20+3") == tasks.Score(0.0, 0.0)  # 2 < 3 numbers.
  assert stricter.score("03,05,08,20>023=", "20+8-5") == tasks.Score(1.0, 1.0)
  assert stricter.score("03,05,08,20>023=", "20+3+8-8") == tasks.Score(0.0, 0.0)  # 8 twice.
  assert stricter.score("03,05,08,20>023=", "3*5-20+8") == tasks.Score(0.0, 1 / 21)  # 3.


@pytest.mark.parametrize("kwargs", [{}, {"num_numbers": 4, "max_number": 25, "min_used": 2}])
def test_countdown_never_poses_a_target_among_its_numbers(kwargs):
  task = tasks.Countdown(**kwargs)
  n = task.num_numbers
  problems = task.sample_problems(np.random.default_rng(5), 20_000)
  assert not np.any(problems[:, :n] == problems[:, 3 * n : 3 * n + 1])
  for row in problems[:200]:  # The prompt text agrees; echoing the target scores 0.
    prompt = task.example(row).prompt
    numbers = [int(x) for x in prompt.split(">")[0].split(",")]
    target = int(prompt.split(">")[1][:-1])
    assert target not in numbers and target == row[3 * n]
    assert task.score(prompt, str(target)) == tasks.Score(0.0, 0.0)


def test_the_default_countdown_has_a_large_problem_universe():
  task = tasks.Countdown()
  assert task == tasks.Countdown(num_numbers=4, max_number=25, min_used=2, target_digits=3)
  assert (task.prompt_len, task.completion_len) == (16, 21)
  keys = task.problem_keys(task.sample_problems(np.random.default_rng(0), 150_000))
  # Distinct keys among the draws: a lower bound on the universe (3 in 1..9: ~2,000).
  assert np.unique(keys).size >= 10**5
  small = COUNTDOWN.problem_keys(COUNTDOWN.sample_problems(np.random.default_rng(0), 150_000))
  assert np.unique(small).size < 2500


def test_countdown_two_digit_numbers_and_repeats():
  task = tasks.Countdown(num_numbers=4, max_number=20, min_used=2)
  assert task.score("02,15,15,07>030=", "15+15").binary == 1.0
  assert task.score("02,15,15,07>030=", "2*15").binary == 1.0
  assert task.score("02,15,15,07>030=", "15*2*1") == tasks.Score(0.0, 0.0)


def test_countdown_keys_ignore_the_order_of_the_numbers():
  assert COUNTDOWN.prompt_key("3,5,7>022=") == COUNTDOWN.prompt_key("7,3,5>022=")
  assert COUNTDOWN.prompt_key("3,5,7>022=") != COUNTDOWN.prompt_key("3,5,7>023=")
  assert COUNTDOWN.prompt_key("3,5,7>022=") != COUNTDOWN.prompt_key("3,5,8>022=")
  assert COUNTDOWN.prompt_key("3,3,7>022=") != COUNTDOWN.prompt_key("3,7,7>022=")
  assert COUNTDOWN.key_text(COUNTDOWN.prompt_key("7,3,5>022=")) == "3,5,7>22"
  with pytest.raises(ValueError, match="prompt="):
    COUNTDOWN.prompt_key("3,5>022=")
  with pytest.raises(ValueError, match="key="):
    COUNTDOWN.key_text(-1)


# -------------------------------------------------------------------------- addition

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


def test_addition_keys_are_unordered_pairs():
  assert ADDITION.prompt_key("371+958=") == ADDITION.prompt_key("958+371=")
  assert ADDITION.prompt_key("371+958=") != ADDITION.prompt_key("372+957=")  # Same sum.
  assert ADDITION.key_text(ADDITION.prompt_key("958+371=")) == "371+958"


# --------------------------------------------------------------------------- program

PROGRAM = tasks.Program(num_examples=3, degree=1, max_coef=50, max_input=9, value_digits=3)
# f(x) = 3x + 20 shown at x = 1, 4, 7; hidden inputs 0, 2, 3, 5, 6, 8, 9.
PROMPT = "1>023,4>032,7>041="


@pytest.mark.parametrize(
  "completion,binary,continuous",
  [
    ("3*x+20", 1.0, 1.0),
    ("20+x*3", 1.0, 1.0),  # Any equivalent expression.
    ("(x+7)*3-1", 1.0, 1.0),
    # Hidden x: sum 33, sum of squares 219, so sum (x - mean)^2 = 219 - 33^2/7 = 444/7
    # and SST = 3^2 * 444/7 = 3996/7. Reward: R^2 times the mean of 1 / (1 + |g - f|).
    ("3*x+21", 0.0, (1 - 7 / (3996 / 7)) / 2),  # Off by one everywhere: SSE = 7.
    # g - f = 5 - x = 5, 3, 2, 0, -1, -3, -4: SSE = 64.
    ("2*x+25", 0.0, (1 - 64 * 7 / 3996) * (1 / 6 + 1 / 4 + 1 / 3 + 1 + 1 / 2 + 1 / 4 + 1 / 5) / 7),
    ("23+0*x", 0.0, 0.0),  # A constant: right only at a shown input.
    ("26", 0.0, 0.0),  # A constant right at x = 2 (the old reward gave it 1/7).
    ("44", 0.0, 0.0),  # The constant closest to f's mean on the hidden inputs.
    # Agrees with f at x = 1 and 8 only; g - f = (x - 1)(x - 8) = 8, -6, -10, -12, -10,
    # 0, 8 on the hidden inputs: SSE = 508.
    (
      "x*x-6*x+28",
      0.0,
      (1 - 508 * 7 / 3996) * (1 / 9 + 1 / 7 + 1 / 11 + 1 / 13 + 1 / 11 + 1 + 1 / 9) / 7,
    ),
    ("3*x+", 0.0, 0.0),
    ("?", 0.0, 0.0),
  ],
)
def test_program_score(completion, binary, continuous):
  score = PROGRAM.score(PROMPT, completion)
  assert score.binary == binary
  assert score.continuous == pytest.approx(continuous)


def _literal(c):
  """An integer as the expression language writes it (no unary minus)."""
  return str(c) if c >= 0 else f"(0-{-c})"


def _r_squared(g, f):
  """Clipped coefficient of determination of g for f (rows), float64 NumPy."""
  sse = np.sum((g - f) ** 2, axis=-1)
  sst = np.sum((f - f.mean(axis=-1, keepdims=True)) ** 2, axis=-1)
  return np.maximum(0.0, 1.0 - sse / sst)


def _program_reward(g, f):
  """The program task's continuous reward, float64 NumPy: R^2 clipped at 0 times the
  mean closeness 1 / (1 + |g - f|) over the hidden inputs."""
  return _r_squared(g, f) * np.mean(1.0 / (1.0 + np.abs(g - f)), axis=-1)


@pytest.mark.parametrize("kwargs", [{}, {"degree": 2, "max_coef": 9, "num_examples": 4}])
def test_program_continuous_is_one_exactly_when_correct(kwargs):
  task = tasks.Program(**kwargs)
  rng = np.random.default_rng(11)
  checked = correct = partial = 0
  for row in task.sample_problems(rng, 40):
    prompt = task.example(row).prompt
    coefs = row[: task.degree + 1]
    hidden = np.array(task.hidden_inputs(prompt))
    f = np.polyval(coefs[::-1], hidden).astype(np.float64)
    # Polynomials at and around f (one of them f itself), then random character strings.
    for _ in range(12):
      g_coefs = coefs + rng.integers(-1, 2, size=coefs.shape) * rng.integers(0, 2)
      text = "+".join(f"{_literal(c)}" + "*x" * j for j, c in enumerate(g_coefs.tolist()))
      score = task.score(prompt, text)
      g = np.polyval(g_coefs[::-1], hidden).astype(np.float64)
      assert score.binary == float(np.array_equal(g, f))
      assert score.continuous == pytest.approx(_program_reward(g, f), rel=1e-12, abs=0)
      assert (score.continuous == 1.0) == (score.binary == 1.0)
      checked += 1
      correct += int(score.binary)
      partial += int(0.0 < score.continuous < 1.0)
    for _ in range(12):
      text = "".join(rng.choice(list("0123456789+-*()x"), size=rng.integers(1, 9)))
      score = task.score(prompt, text)
      assert (score.continuous == 1.0) == (score.binary == 1.0)
      assert 0.0 <= score.continuous <= 1.0
  assert checked > correct > 0 and partial > 0  # Both sides of the equivalence occur.


def test_program_no_constant_earns_credit():
  """The best constant in [0, 10**value_digits), chosen knowing f, scores 0 on average."""
  task = PROGRAM
  problems = task.sample_problems(np.random.default_rng(3), 200)
  constants = np.arange(10**task.value_digits, dtype=np.float64)
  best, old_best = [], []
  for row in problems:
    prompt = task.example(row).prompt
    hidden = np.array(task.hidden_inputs(prompt))
    f = (row[0] + row[1] * hidden).astype(np.float64)
    scores = _program_reward(np.broadcast_to(constants[:, None], (len(constants), len(f))), f)
    best.append(scores.max())
    old_best.append(np.max(np.sum(constants[:, None] == f, axis=1)))  # Hidden inputs hit.
    # The verifier agrees with the formula on the best constant, the one closest to the
    # mean and the old shortcut (f at one hidden input).
    for c in (int(np.argmax(scores)), int(np.rint(f.mean())), int(f[0])):
      assert task.score(prompt, str(c)).continuous == pytest.approx(scores[c], abs=1e-12)
  assert np.mean(best) <= 0.05
  # The reward this one replaced (the share of hidden inputs passed) gave a constant
  # credit on every problem.
  assert min(old_best) >= 1


def test_program_partial_credit_stays_below_one_in_float32():
  # f = 9999x + 1 on 0..99, shown at x = 0, 1, 2. Off by one: SSE = 97 hidden inputs, SST
  # = 9999^2 * sum (x - mean)^2 ~ 8e12, so R^2 alone would round to 1 in float32; the
  # closeness factor (1/2) keeps the reward well below 1.
  task = tasks.Program(max_coef=9999, max_input=99, value_digits=6)
  prompt = "00>000001,01>010000,02>019999="
  score = task.score(prompt, "9999*x+2")
  assert score.binary == 0.0 and 0.4999 < score.continuous < 0.5  # Closeness 1/2.
  assert np.float32(score.continuous) < 1.0
  assert task.score(prompt, "9999*x+1") == tasks.Score(1.0, 1.0)


def test_program_reads_the_hidden_function_and_its_tests():
  assert PROGRAM.function(PROMPT) == ((20, 3), (1, 4, 7))
  assert PROGRAM.hidden_inputs(PROMPT) == [0, 2, 3, 5, 6, 8, 9]
  quadratic = tasks.Program(degree=2, max_coef=9, max_input=9, num_examples=3)
  # f(x) = x^2 - 3x + 2 shown at 0, 4, 9.
  assert quadratic.function("0>002,4>006,9>056=") == ((2, -3, 1), (0, 4, 9))
  for bad in ("1>023,4>032,7>042=", "4>032,1>023,7>041=", "1>023,4>032=", "1>023,1>023,7>041="):
    with pytest.raises(ValueError, match="prompt="):
      PROGRAM.function(bad)  # Not linear, not ascending, too short, repeated input.


def test_program_keys_name_the_function_not_the_inputs():
  same = "0>020,2>026,9>047="  # 3x + 20 at other inputs.
  assert PROGRAM.prompt_key(same) == PROGRAM.prompt_key(PROMPT)
  assert PROGRAM.prompt_key("0>021,2>027,9>048=") != PROGRAM.prompt_key(PROMPT)
  assert PROGRAM.key_text(PROGRAM.prompt_key(same)) == "f=3*x+20"


@pytest.mark.parametrize(
  "coefs,text",
  [
    ((20, 3), "3*x+20"),
    ((9, -1), "9-x"),
    ((0, 20), "20*x"),
    ((2, -3, 1), "x*x-3*x+2"),
    ((0, 9, -1), "9*x-x*x"),
    ((5, 0, 0, 2), "2*x*x*x+5"),
  ],
)
def test_canonical_solutions(coefs, text):
  assert program_task.render_polynomial(coefs) == text
  program = expressions.parse(text, variable=True)
  for x in range(6):
    assert program(x) == sum(c * x**j for j, c in enumerate(coefs))


@pytest.mark.parametrize(
  "kwargs,field",
  [
    ({"num_examples": 2, "degree": 2}, "num_examples"),
    ({"num_examples": 9, "max_input": 9}, "max_input"),
    ({"degree": 4}, "degree"),
    ({"max_coef": 0}, "max_coef"),
    ({"value_digits": 1, "max_input": 10}, "value_digits"),
  ],
)
def test_program_rejects_bad_arguments(kwargs, field):
  with pytest.raises(ValueError, match=field):
    tasks.Program(**kwargs)


# ---------------------------------------------------------------------- all the tasks

TASK_CASES = [
  ("countdown", {"num_numbers": 3, "max_number": 9}),  # A small universe.
  ("countdown", {"min_used": 3}),  # The defaults: 4 numbers in 1..25.
  ("addition", {"num_digits": 1}),
  ("addition", {"num_digits": 5}),
  ("program", {}),
  ("program", {"degree": 2, "max_coef": 9, "num_examples": 4}),
]


@pytest.mark.parametrize("name,kwargs", TASK_CASES)
def test_generated_problems_are_solved_by_their_reference_and_keyed_consistently(name, kwargs):
  task = tasks.make_task(name, **kwargs)
  problems = task.sample_problems(np.random.default_rng(0), 200)
  keys = task.problem_keys(problems)
  assert problems.shape[0] == 200 and keys.dtype == np.int64
  for row, key in zip(problems, keys.tolist()):
    e = task.example(row)
    assert len(e.prompt) == task.prompt_len
    assert len(e.solution) + 1 <= task.completion_len
    assert task.score(e.prompt, e.solution) == tasks.Score(1.0, 1.0)
    assert task.prompt_key(e.prompt) == key
  # key_text tells keys apart exactly as the keys do.
  texts = {task.key_text(k) for k in keys.tolist()}
  assert len(texts) == len(set(keys.tolist()))
  # Deterministic in the generator's seed.
  np.testing.assert_array_equal(problems, task.sample_problems(np.random.default_rng(0), 200))


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


@pytest.mark.parametrize("name,kwargs", TASK_CASES[::2])
def test_heldout_problems_are_distinct_and_excluded_by_key(name, kwargs):
  task = tasks.make_task(name, **kwargs)
  heldout = tasks.heldout_problems(task, seed=3, num=30)
  keys = task.problem_keys(heldout)
  assert len(set(keys.tolist())) == 30
  drawn = tasks.draw_problems(task, np.random.default_rng(0), 500, exclude=frozenset(keys.tolist()))
  assert len(drawn) == 500
  train_keys = {task.prompt_key(task.example(row).prompt) for row in drawn}  # From the text.
  assert not train_keys & set(keys.tolist())
  unfiltered = tasks.draw_problems(task, np.random.default_rng(0), 500)
  assert set(task.problem_keys(unfiltered).tolist()) & set(keys.tolist())  # Would overlap.


def test_exclusion_catches_reordered_prompts():
  # Every other order of a held-out countdown problem is the same problem.
  task = tasks.Countdown(num_numbers=3, max_number=3, min_used=2, target_digits=2)
  heldout = task.problem_keys(tasks.heldout_problems(task, seed=0, num=5))
  for e in tasks.sample_examples(task, np.random.default_rng(1), 300, exclude=heldout):
    assert task.prompt_key(e.prompt) not in set(heldout.tolist())


def test_too_few_problems_raise():
  task = tasks.Addition(num_digits=1)  # 55 unordered pairs.
  with pytest.raises(RuntimeError, match="fewer than 56 distinct problems"):
    tasks.heldout_problems(task, seed=0, num=56)
  everything = task.problem_keys(tasks.heldout_problems(task, seed=0, num=55))
  with pytest.raises(RuntimeError, match="outside the 55 held-out keys"):
    tasks.draw_problems(task, np.random.default_rng(0), 4, exclude=everything)


def test_registry_and_errors():
  assert set(tasks.TASKS) >= {"countdown", "addition", "program"}
  with pytest.raises(ValueError, match="Unknown task"):
    tasks.make_task("chess")
  with pytest.raises(ValueError, match="min_used"):
    tasks.Countdown(num_numbers=3, min_used=4)
  with pytest.raises(ValueError, match="num_digits"):
    tasks.Addition(num_digits=0)


def test_score_batch_and_encodings():
  prompts = ["371+958=", "001+001="]  # 1329 and 0002.
  completions = tasks.encode_completions(["1329", "12"], ADDITION.completion_len)
  assert completions[0, 4] == tasks.EOS_ID and completions[1, 3] == tasks.PAD_ID
  binary, continuous = tasks.score_batch(ADDITION, prompts, completions[:, None])
  np.testing.assert_allclose(binary, [[1.0], [0.0]])
  np.testing.assert_allclose(continuous, [[1.0], [0.0]])
  ids = tasks.encode_prompts(prompts)
  assert ids.shape == (2, 9) and (ids[:, 0] == tasks.BOS_ID).all()
  assert tasks.decode_completion(ids[0, 1:]) == prompts[0]
  with pytest.raises(ValueError, match="tokens > length"):
    tasks.encode_completions(["01329"], ADDITION.completion_len)
  with pytest.raises(ValueError, match="share one length"):
    tasks.encode_prompts(["1+1=", "10+1="])


# ---------------------------------------------------------------------- near problems


def _countdown_near(task, a, b):
  n = task.num_numbers
  shared = collections.Counter(a[:n].tolist()) & collections.Counter(b[:n].tolist())
  return a[3 * n] == b[3 * n] and sum(shared.values()) >= n - 1


def _program_near(task, a, b):
  d = task.degree
  return int(np.sum(a[: d + 1] != b[: d + 1])) <= 1


# Each task's rule, from its problem rows, for "near" problems (README's "Adding a
# task": a new task adds its rule here and its cases below).
NEAR_RULES = {
  "countdown": _countdown_near,
  "addition": lambda task, a, b: bool(set(a.tolist()) & set(b.tolist())),
  "program": _program_near,
}


def _near_by_components(name, task, a, b):
  """Whether rows a and b pose problems that differ in at most one component."""
  assert name in NEAR_RULES, f"task {name!r} has no rule in NEAR_RULES"
  return NEAR_RULES[name](task, a, b)


@pytest.mark.parametrize(
  "name,kwargs",
  [
    ("countdown", {"num_numbers": 3, "max_number": 4, "target_digits": 2}),
    ("countdown", {"num_numbers": 4, "max_number": 5, "target_digits": 2}),
    ("addition", {"num_digits": 1}),
    ("program", {"max_coef": 4, "max_input": 4, "value_digits": 2}),
    ("program", {"degree": 2, "max_coef": 3, "max_input": 5, "value_digits": 2}),
  ],
)
def test_near_signatures_agree_with_pairwise_comparison(name, kwargs):
  task = tasks.make_task(name, **kwargs)
  rows = task.sample_problems(np.random.default_rng(0), 2000)
  _, first = np.unique(task.problem_keys(rows), return_index=True)
  rows = rows[np.sort(first)][:120]  # One row per key.
  signatures = task.near_signatures(task.problem_keys(rows))
  assert signatures.dtype == np.int64 and signatures.shape[0] == len(rows)
  near = far = 0
  for i in range(len(rows)):
    for j in range(i + 1, len(rows)):
      expected = _near_by_components(name, task, rows[i], rows[j])
      assert bool(set(signatures[i]) & set(signatures[j])) == expected, (rows[i], rows[j])
      near += expected
      far += not expected
  assert near > 20 and far > 20
