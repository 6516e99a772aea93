"""Tests of experiments.schedules: one k_opt schedule syntax for the bandit and LM runs."""

import pytest

from experiments import schedules


def test_constant_schedule():
  s = schedules.parse_schedule("4", num_steps=10)
  assert s.spec == "4" and s.ks == (4,) and s.switches == () and s.max_k == 4
  assert s.segments(10) == ((4, 10),)
  assert [s.k_at(t) for t in (0, 9, 100)] == [4, 4, 4]
  assert schedules.constant(1, spec="n/a") == schedules.Schedule("n/a", (1,))
  assert schedules.constant(3).spec == "3"


def test_switch_steps_count_from_zero():
  # "8:6:1": k=8 for the first 6 steps (indices 0-5), then k=1.
  s = schedules.parse_schedule("8:6:1", num_steps=10)
  assert s.segments(10) == ((8, 6), (1, 4)) and s.max_k == 8
  assert [s.k_at(t) for t in range(10)] == [8] * 6 + [1] * 4
  s = schedules.parse_schedule(" 8:2:4:5:1 ", num_steps=10)
  assert s.spec == "8:2:4:5:1"
  assert s.segments(10) == ((8, 2), (4, 3), (1, 5))
  assert [s.k_at(t) for t in range(10)] == [8, 8, 4, 4, 4, 1, 1, 1, 1, 1]


def test_without_num_steps_the_schedule_extends_its_last_k():
  s = schedules.parse_schedule("8:50:1")
  assert [s.k_at(t) for t in (0, 49, 50, 10_000)] == [8, 8, 1, 1]
  with pytest.raises(ValueError, match="smaller than num_steps=50"):
    s.segments(50)


@pytest.mark.parametrize(
  "spec, match",
  [
    ("0", "k=0 must satisfy k >= 1"),
    ("8:6", "must look like"),
    ("a", "must look like"),
    ("4:x:1", "must look like"),
    ("", "must look like"),
    ("8:0:1", "positive and strictly increasing"),
    ("8:-2:1", "positive and strictly increasing"),
    ("8:6:4:6:1", "positive and strictly increasing"),
    ("8:6:4:3:1", "positive and strictly increasing"),
    ("8:10:1", "smaller than num_steps=10"),
    ("8:12:1", "smaller than num_steps=10"),
    ("9:5:1", "k=9 must satisfy 1 <= k <= n=8"),
  ],
)
def test_bad_schedules(spec, match):
  with pytest.raises(ValueError, match=match):
    schedules.parse_schedule(spec, num_steps=10, n=8)


def test_bad_num_steps():
  with pytest.raises(ValueError, match="num_steps=0 must satisfy num_steps >= 1"):
    schedules.parse_schedule("4", num_steps=0)
  with pytest.raises(ValueError, match="one k more than switch steps"):
    schedules.Schedule("x", (4, 1), ())
