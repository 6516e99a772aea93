"""The config-field checks shared by the experiment binaries' ``validate``."""

import ml_collections
import pytest

from experiments import config_checks as checks


def _config(**fields):
  return ml_collections.ConfigDict(fields)


def test_valid_fields_are_returned_parsed():
  c = _config(n=3, x=0.5, zero=0, names=("b", "a"), ks=(1, 4), listed=[2], empty=())
  assert checks.integer(c, "n", low=3) == 3
  assert checks.number(c, "x", above=0, below=1) == 0.5
  assert checks.number(c, "zero", at_least=0) == 0.0
  assert checks.names(c, "names", ("a", "b")) == ("b", "a")
  assert checks.ints(c, "ks", low=1) == (1, 4) and checks.ints(c, "listed", low=1) == (2,)
  assert checks.items(c, "empty") == () and checks.items(c, "names") == ("b", "a")
  assert checks.split("") == () and checks.split(" a ,b") == ("a", "b")
  runs = ("grpo[lr=3e-5,kl=0.01]", "max_at_k@4")
  assert checks.split("grpo[lr=3e-5,kl=0.01], max_at_k@4") == runs


# A list field's command-line text (--config.FIELD=TEXT): the comma form the README
# documents, a Python tuple, one value, nothing.
@pytest.mark.parametrize(
  "text, items",
  [
    ("1,2,4", (1, 2, 4)),
    ("(1, 2, 4)", (1, 2, 4)),
    ("[1,2]", (1, 2)),
    ("4", (4,)),
    ("", ()),
    (" ", ()),
    ("0,0.5,1", (0, 0.5, 1)),
    ("easy,hard", ("easy", "hard")),
    (" categorical , gaussian", ("categorical", "gaussian")),
    ("gaussian", ("gaussian",)),
    ("'a','b'", ("a", "b")),
    ("1,2,8:200:1", (1, 2, "8:200:1")),
    ("8:200:1", ("8:200:1",)),
    ("grpo,max_at_k@8,grpo[lr=3e-05]", ("grpo", "max_at_k@8", "grpo[lr=3e-05]")),
    ("grpo[lr=3e-5,kl=0.01],max_at_k@4", ("grpo[lr=3e-5,kl=0.01]", "max_at_k@4")),
    ("4,x", (4, "x")),
  ],
)
def test_parse_list_reads_a_list_field_as_the_command_line_writes_it(text, items):
  assert checks.parse_list(text) == items


@pytest.mark.parametrize("text", ["grpo[lr=1", "a]", "a[[b]]"])
def test_parse_list_refuses_unbalanced_brackets(text):
  with pytest.raises(ValueError, match="brackets"):
    checks.parse_list(text)


# A config.json written when list fields were comma-separated strings against the list
# the config holds now (as JSON reads it back).
@pytest.mark.parametrize(
  "recorded, current, same",
  [
    ("4,8,16", [4, 8, 16], True),
    ("1,2,4,8,8:200:1", ["1", "2", "4", "8", "8:200:1"], True),
    ("0,0.5,1,2", [0.0, 0.5, 1.0, 2.0], True),
    ("grpo,max_at_k@8,grpo[lr=3e-05]", ["grpo", "max_at_k@8", "grpo[lr=3e-05]"], True),
    ("all", ["all"], True),
    ("", [], True),
    ([4, 8], [4, 8], True),
    ("4,8", [4, 8, 16], False),
    ("4,8", [8, 4], False),
    ("grpo,max_at_k@8", ["grpo", "max_at_k@4"], False),
    ("grpo[", ["grpo["], False),
    ("4,8", "4, 8", False),  # Two strings: the same only when equal.
    (4, [4], False),
  ],
)
def test_same_value_reads_an_old_comma_separated_string_as_its_list(recorded, current, same):
  assert checks.same_value(recorded, current) is same


@pytest.mark.parametrize(
  "value, check, rule",
  [
    (2, lambda c: checks.integer(c, "f", low=3), "must be an integer >= 3"),
    (True, lambda c: checks.integer(c, "f", low=0), "must be an integer >= 0"),
    (2.0, lambda c: checks.integer(c, "f", low=0), "must be an integer >= 0"),
    (float("nan"), lambda c: checks.number(c, "f"), "must be a finite number"),
    (float("inf"), lambda c: checks.number(c, "f"), "must be a finite number"),
    ("1", lambda c: checks.number(c, "f"), "must be a finite number"),
    (0.0, lambda c: checks.number(c, "f", above=0), "> 0"),
    (-0.5, lambda c: checks.number(c, "f", at_least=0), ">= 0"),
    (1.0, lambda c: checks.number(c, "f", above=0, below=1), "< 1"),
    (("a", "c"), lambda c: checks.names(c, "f", ("a", "b")), "distinct names from ['a', 'b']"),
    (("a", "a"), lambda c: checks.names(c, "f", ("a", "b")), "distinct names"),
    ((), lambda c: checks.names(c, "f", ("a", "b")), "distinct names"),
    ("a", lambda c: checks.names(c, "f", ("a",)), "must be a list"),
    (("a", ["a"]), lambda c: checks.names(c, "f", ("a",)), "distinct names"),
    ("4,8", lambda c: checks.ints(c, "f", low=2), "must be a list"),
    ((4, "x"), lambda c: checks.ints(c, "f", low=2), "integers >= 2"),
    ((4, "8"), lambda c: checks.ints(c, "f", low=2), "integers >= 2"),
    ((1.5,), lambda c: checks.ints(c, "f", low=1), "integers >= 1"),
    ((True,), lambda c: checks.ints(c, "f", low=1), "integers >= 1"),
    ((0, 4), lambda c: checks.ints(c, "f", low=1), "integers >= 1"),
    ((), lambda c: checks.ints(c, "f", low=1), "integers >= 1"),
  ],
)
def test_bad_values_raise_a_config_error_naming_the_field(value, check, rule):
  with pytest.raises(checks.ConfigError, match=r"^config\.f=") as error:
    check(_config(f=value))
  assert rule in str(error.value)
  assert isinstance(error.value, ValueError)
