"""The README's LM-study block is generated from the 8-seed study's files, and its
claims checker (readme_claims.claim_problems) sees planted falsehoods.

Expected values are computed here from contrasts.csv's raw columns (p_holm, diff,
lo, hi), not from the module under test.
"""

import csv
import dataclasses
import math
import os
import re
import subprocess
import sys

import pytest
from scipy import stats

from experiments.lm_study import readme_8seed
from experiments.lm_study import readme_block
from experiments.lm_study import readme_claims
from experiments.lm_study import readme_verdicts
from tests.experiments.lm_study import readme_planting

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
DOCS = os.path.join(_ROOT, "docs", "lm_study_8seed")
CONTRASTS = os.path.join(DOCS, "contrasts.csv")
README = os.path.join(_ROOT, "README.md")


def _rows():
  with open(CONTRASTS, newline="") as f:
    return list(csv.DictReader(f))


@pytest.fixture(name="rows", scope="module")
def _rows_fixture():
  return _rows()


@pytest.fixture(name="readme", scope="module")
def _readme():
  with open(README) as f:
    return f.read()


@pytest.fixture(name="generated", scope="module")
def _generated():
  return readme_8seed.block_text(readme_8seed.read_sources(CONTRASTS, README))


def _differs(readme, generated):
  """Check (a): the committed block is not the generated one."""
  return readme_block.first_difference(readme_8seed.block_of(readme), generated) is not None


def test_the_committed_block_is_the_generated_one(readme, generated):
  assert not _differs(readme, generated), readme_block.first_difference(
    readme_8seed.block_of(readme), generated
  )


def test_the_generated_block_passes_the_claims_checker(readme, rows, generated):
  assert readme_claims.claim_problems(generated, rows) == []
  assert readme_claims.claim_problems(readme, rows) == []


def _holm_count(rows, task):
  return sum(float(r["p_holm"]) < 0.05 for r in rows if r["task"] == task)


def test_the_counts_are_contrasts_csvs(generated, rows):
  flat = " ".join(generated.split())
  for task in ("countdown", "program"):
    n = _holm_count(rows, task)
    m = sum(r["task"] == task for r in rows)
    assert f"{task.capitalize()}: {n} of {m} declared contrasts detected" in flat
  # The figures issue #30 found by hand.
  assert (_holm_count(rows, "countdown"), _holm_count(rows, "program")) == (5, 2)


def test_not_detected_is_never_worded_as_a_finding(generated):
  flat = " ".join(generated.split())
  assert "does not beat" not in flat
  assert not re.search(r"(?<!not )significant", flat)


def test_the_null_simulation_is_cited_as_the_test_runs_it(generated):
  """The README cites the number of studies and seeds of the test's own calls."""
  with open(os.path.join(_ROOT, "tests", "experiments", "lm_study", "significance_test.py")) as f:
    source = f.read()
  body = source[source.index("def test_a_real_effect_is_found") :]
  calls = re.findall(r"_simulated_holm\(rng, (\d+), (\d+),", body)
  flat = " ".join(generated.split())
  (studies, many), (_, few) = calls
  assert f"of {studies} studies with {many} seeds" in flat
  assert f"of {studies} with {few}" in flat


def test_the_first_studys_threshold_is_the_t_quantile(generated):
  """Holm's first step over 16 contrasts with 2 degrees of freedom: |t| above the
  quantile 1 − 0.05 / 16 / 2 of Student's t."""
  flat = " ".join(generated.split())
  assert f"|t| > {stats.t.isf(0.05 / 32, 2):.1f}" in flat


def _row(rows, task, question):
  return next(r for r in rows if r["task"] == task and r["question"] == question)


def _plants(rows):
  """(name, old, new) falsehoods planted in README."""
  k8 = _row(rows, "countdown", "k_opt = 8 vs GRPO at pass@8")
  k4 = _row(rows, "countdown", "k_opt = 4 vs GRPO at pass@4")
  grpo = _row(rows, "countdown", "GRPO vs base at pass@1")
  assert float(k8["p_holm"]) >= 0.05 and float(k4["p_holm"]) >= 0.05
  d8, d4, dg = (float(r["diff"]) for r in (k8, k4, grpo))
  n = _holm_count(rows, "countdown")
  changed = f"{d8 + 0.01:.3f}"

  def estimate(r):
    return f"+{float(r['diff']):.3f} [{float(r['lo']):.3f}, {float(r['hi']):.3f}]".replace("-", "−")

  not_detected_8 = f"{estimate(k8)}: a difference is not detected"
  not_detected_4 = f"{estimate(k4)}: a difference is not detected"
  return [
    ("wrong count", f"Countdown: {n} of 8", f"Countdown: {n + 1} of 8"),
    (
      "max@k beats GRPO",
      "detected after Holm.**",
      "detected after Holm.** max@k beats GRPO.",
    ),
    ("changed number", f"+{d8:.3f} [", f"+{changed} ["),
    ("flipped sign", f"is +{dg:.3f} [", f"is −{dg:.3f} ["),
    ("does not beat", not_detected_8, f"{estimate(k8)}: k_opt = 8 does not beat GRPO;"),
    ("beats for a not-detected row", not_detected_4, f"{estimate(k4)}: k_opt = 4 beats GRPO;"),
    (
      "significant for a not-detected row",
      not_detected_4,
      f"{estimate(k4)}: the difference is significant",
    ),
    ("because", "GRPO beats base.", "GRPO beats base because RL sharpens the policy."),
    ("causes", "an arm that did not learn.", "a larger k_opt causes coverage."),
    ("so max@k", "an arm that did not learn.", "so max@k needs more seeds."),
    ("table verdict", "| 0.622 | not detected |", "| 0.622 | better |"),
  ]


@pytest.mark.parametrize("plant", range(len(_plants(_rows()))))
def test_each_planted_falsehood_fails_both_checks(readme, rows, generated, plant):
  name, old, new = _plants(rows)[plant]
  # Planted inside the 8-seed block: the matched-KL block above it has its own checker.
  start = readme.index(readme_8seed.BEGIN)
  planted = readme[:start] + readme_planting.plant(readme[start:], old, new)
  assert planted != readme
  assert _differs(planted, generated), name
  assert readme_claims.claim_problems(planted, rows), name


@pytest.mark.slow  # Integration: a binary in a subprocess (README's second test step).
def test_the_check_flag_names_where_the_block_differs(tmp_path, readme, rows):
  path = tmp_path / "README.md"
  path.write_text(readme_planting.plant(readme, *_plants(rows)[0][1:]))
  # read_sources takes the repository root from the README's folder.
  os.symlink(os.path.join(_ROOT, "tests"), tmp_path / "tests")
  command = [sys.executable, "-m", "experiments.lm_study.readme", f"--contrasts={CONTRASTS}"]
  env = {**os.environ, "PYTHONPATH": _ROOT}
  check = subprocess.run(
    [*command, f"--readme={path}", "--check"], capture_output=True, text=True, env=env, cwd=_ROOT
  )
  assert check.returncode == 1 and "differs" in check.stderr
  assert len(check.stderr.strip().splitlines()) == 1
  fix = subprocess.run([*command, f"--readme={path}"], capture_output=True, text=True, env=env)
  assert fix.returncode == 0, fix.stderr
  assert path.read_text() != readme  # Links are relative to the tmp README's folder...
  assert readme_claims.claim_problems(path.read_text(), rows) == []  # ...and claims hold.


# ------------------------------------------------------- contrasts.csv's new form


def _new_row(task, question, a, b, k, diff, lo, hi, p_holm, verdict, *, power, margin=0.02):
  return {
    "task": task,
    "question": question,
    "a": a,
    "b": b,
    "measure": "pass",
    "k": str(k),
    "diff": str(diff),
    "lo": str(lo),
    "hi": str(hi),
    "p_value": str(p_holm / 4),
    "p_holm": str(p_holm),
    "verdict": verdict,
    "margin": str(margin),
    "power": str(power),
    "p_equivalence": "0.01" if verdict == "equivalent" else "0.4",
    "p_equivalence_holm": "0.02" if verdict == "equivalent" else "0.8",
  }


NEW_ROWS = [
  _new_row("countdown", "GRPO vs base at pass@1", "grpo", "base", 1, 0.06, 0.05, 0.07, 0.001,
           "better", power=0.99),
  _new_row("countdown", "GRPO vs base at pass@n", "grpo", "base", 128, -0.11, -0.14, -0.08,
           0.001, "worse", power=0.97),
  _new_row("countdown", "k_opt = 8 vs GRPO at pass@8", "max_at_k_k8", "grpo", 8, 0.004,
           -0.011, 0.015, 0.9, "equivalent", power=0.83),
  _new_row("countdown", "k_opt = 4 vs GRPO at pass@4", "max_at_k_k4", "grpo", 4, 0.009,
           -0.003, 0.022, 0.6, "not detected", power=0.0712),
]  # fmt: skip


def _new_text():
  lines = readme_verdicts.declared_table(NEW_ROWS) + [""]
  sentences = " ".join(readme_verdicts.verdict_sentence(r) for r in NEW_ROWS)
  return "\n".join(
    lines + [f"- {readme_verdicts.count_sentence('countdown', NEW_ROWS)} {sentences}"]
  )


def test_new_form_sentences_follow_their_templates():
  text = _new_text()
  assert "GRPO − base at pass@1 is +0.060 [0.050, 0.070]: GRPO beats base." in text
  assert "GRPO − base at pass@128 is −0.110 [−0.140, −0.080]: GRPO is below base." in text
  assert "k_opt = 8 and GRPO are equivalent within ±0.02." in text
  assert "+0.009 [−0.003, 0.022]: a difference is not detected (power 7% at ±0.02)." in text
  assert "Countdown: 2 of 4 declared contrasts detected after Holm, 1 of 4" in text
  assert "| equivalent | 83% at ±0.02 |" in text
  assert "does not beat" not in text
  assert readme_claims.claim_problems(text, NEW_ROWS) == []


@pytest.mark.parametrize(
  "old, new, ok",
  [
    ("k_opt = 8 and GRPO are equivalent", "k_opt = 8 does not beat GRPO and is", True),
    ("a difference is not detected", "k_opt = 4 does not beat GRPO;", False),
    ("a difference is not detected", "k_opt = 4 and GRPO are equivalent;", False),
    ("power 7% at", "power 70% at", False),
    ("GRPO is below base", "GRPO beats base", False),
    ("2 of 4 declared", "3 of 4 declared", False),
    ("1 of 4 declared contrasts equivalent", "2 of 4 declared contrasts equivalent", False),
    ("| 83% at ±0.02 |", "| 93% at ±0.02 |", False),
  ],
)
def test_new_form_claims_are_checked(old, new, ok):
  planted = readme_planting.plant(_new_text(), old, new)
  assert (readme_claims.claim_problems(planted, NEW_ROWS) == []) == ok, planted


def test_old_verdicts_read_as_the_new_ones(rows):
  """A contrasts.csv written before the power columns, with the old verdict words."""
  new_columns = ("margin", "power", "p_equivalence", "p_equivalence_holm", "family", "stderr")
  for r in rows:
    held = float(r["p_holm"]) < 0.05
    old = {k: v for k, v in r.items() if k not in new_columns}
    old["verdict"] = "significant" if held else "not significant"
    expected = ("better" if float(r["diff"]) > 0 else "worse") if held else "not detected"
    assert readme_verdicts.verdict_of(old) == expected
    assert math.isnan(readme_verdicts.power_of(old))
  with pytest.raises(ValueError, match="verdict"):
    readme_verdicts.verdict_of({**rows[0], "verdict": "maybe"})


def test_the_block_from_contrasts_csv_with_power_columns(rows):
  """The 8-seed rows as the new contrasts.csv writes them: a margin for power only
  (no equivalence test), power, verdicts better / worse / not detected."""
  new = []
  for r in rows:
    held = float(r["p_holm"]) < 0.05
    verdict = ("better" if float(r["diff"]) > 0 else "worse") if held else "not detected"
    extra = {"margin": "0.02", "power": "0.25", "p_equivalence": "nan"}
    new.append({**r, **extra, "p_equivalence_holm": "nan", "verdict": verdict})
  sources = readme_8seed.read_sources(CONTRASTS, README)
  tables = {**sources.tables, "contrasts.csv": new}
  text = readme_8seed.block_text(dataclasses.replace(sources, tables=tables))
  flat = " ".join(text.split())
  assert readme_claims.claim_problems(text, new) == []
  assert "a difference is not detected (power 25% at ±0.02)" in flat
  assert "`equivalent`" not in flat and "are equivalent" not in flat
  assert readme_claims.claim_problems(
    readme_planting.plant(text, "power 25% at", "power 35% at"), new
  )


def test_contrast_words_read_a_matched_kl_question(rows):
  row = {**rows[5], "question": "k_opt = 8 vs GRPO at pass@8, matched KL", "k": "8"}
  assert readme_verdicts.contrast_words(row) == ("k_opt = 8", "GRPO", "pass@8 at matched KL")
  with pytest.raises(ValueError, match="question"):
    readme_verdicts.contrast_words({**row, "question": "k_opt = 8 vs GRPO at pass@8, later"})
