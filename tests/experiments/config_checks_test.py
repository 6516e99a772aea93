"""The config-field checks shared by the experiment binaries' ``validate``."""

import ml_collections
import pytest

from experiments import config_checks as checks


def _config(**fields):
  return ml_collections.ConfigDict(fields)


def test_valid_fields_are_returned_parsed():
  c = _config(n=3, x=0.5, zero=0, names="b, a", ks="1,4", empty="")
  assert checks.integer(c, "n", low=3) == 3
  assert checks.number(c, "x", above=0, below=1) == 0.5
  assert checks.number(c, "zero", at_least=0) == 0.0
  assert checks.names(c, "names", ("a", "b")) == ("b", "a")
  assert checks.ints(c, "ks", low=1) == (1, 4)
  assert checks.split(c.empty) == () and checks.split(" a ,b") == ("a", "b")


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
    ("a,c", lambda c: checks.names(c, "f", ("a", "b")), "distinct names from ['a', 'b']"),
    ("a,a", lambda c: checks.names(c, "f", ("a", "b")), "distinct names"),
    ("", lambda c: checks.names(c, "f", ("a", "b")), "distinct names"),
    (("a",), lambda c: checks.names(c, "f", ("a",)), "comma-separated string"),
    ("4,x", lambda c: checks.ints(c, "f", low=2), "integers >= 2"),
    ("1.5", lambda c: checks.ints(c, "f", low=1), "integers >= 1"),
    ("0,4", lambda c: checks.ints(c, "f", low=1), "integers >= 1"),
    ("", lambda c: checks.ints(c, "f", low=1), "integers >= 1"),
  ],
)
def test_bad_values_raise_a_config_error_naming_the_field(value, check, rule):
  with pytest.raises(checks.ConfigError, match=r"^config\.f=") as error:
    check(_config(f=value))
  assert rule in str(error.value)
  assert isinstance(error.value, ValueError)
