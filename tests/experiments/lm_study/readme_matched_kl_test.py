"""The README block of the matched-KL LM study (readme_matched_kl) is written from the
study folder's files, and its claims checker sees planted falsehoods.

The fixture ``fixtures/matched_kl_summary14`` holds files of the summary of the
study's first 14 seeds (``python -m experiments.lm_study.summary --allow_incomplete``):
its contrasts.csv and provenance.csv, frontier.csv's grid rows at k = 8 and 128, the
head of its README (the incomplete note) and docs/lm_study/design.json. Expected
values are computed here from the raw columns (p_holm, p_equivalence_holm, seeds,
diff, lo, hi, hours), from design.json, and from the 8-seed study's README, not from
the module under test.
"""

import csv
import json
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

from experiments.lm_study import frontier
from experiments.lm_study import readme_block
from experiments.lm_study import readme_claims
from experiments.lm_study import readme_matched_kl as mk
from experiments.lm_study import summary_readme
from tests.experiments.lm_study import readme_planting

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
FIXTURE = os.path.join(os.path.dirname(__file__), "fixtures", "matched_kl_summary14")
PREVIOUS = os.path.join(_ROOT, "docs", "lm_study_8seed")
FILES = ("contrasts.csv", "provenance.csv", "frontier.csv", "design.json", "README.md")
README = "intro\n\n<!-- lm-study-matched-kl:begin -->\n<!-- lm-study-matched-kl:end -->\n\nend\n"


def _read(path):
  with open(path, newline="") as f:
    return list(csv.DictReader(f))


def _write(path, rows):
  with open(path, "w", newline="") as f:
    writer = csv.DictWriter(f, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)


def _study(root, *, rows=None, readme_head=None, design=None):
  """A repository root ``root`` with docs/lm_study from the fixture (its contrasts.csv
  rows, summary README or design.json replaced where given), docs/lm_study_8seed
  linked to the real one, and a README with empty block markers; returns the paths
  of contrasts.csv and README."""
  study = os.path.join(root, "docs", "lm_study")
  os.makedirs(study)
  for name in FILES:
    shutil.copy(os.path.join(FIXTURE, name), study)
  if rows is not None:
    _write(os.path.join(study, "contrasts.csv"), rows)
  if readme_head is not None:
    with open(os.path.join(study, "README.md"), "w") as f:
      f.write(readme_head)
  if design is not None:
    with open(os.path.join(study, "design.json"), "w") as f:
      json.dump(design, f)
  os.symlink(PREVIOUS, os.path.join(root, "docs", "lm_study_8seed"))
  readme = os.path.join(root, "README.md")
  with open(readme, "w") as f:
    f.write(README)
  return os.path.join(study, "contrasts.csv"), readme


def _generate(contrasts, readme):
  return mk.block_text(mk.read_sources(contrasts, readme))


@pytest.fixture(name="rows", scope="module")
def _rows():
  return _read(os.path.join(FIXTURE, "contrasts.csv"))


@pytest.fixture(name="design", scope="module")
def _design():
  with open(os.path.join(FIXTURE, "design.json")) as f:
    return json.load(f)


@pytest.fixture(name="generated", scope="module")
def _generated(tmp_path_factory):
  return _generate(*_study(str(tmp_path_factory.mktemp("study"))))


def _flat(text):
  return " ".join(text.split())


def _estimate(r):
  """``+x [lo, hi]`` with U+2212 minus signs, from the raw columns."""
  diff, lo, hi = (float(r[c]) for c in ("diff", "lo", "hi"))
  sign = "+" if diff > 0 else "−"

  def plain(x):
    return f"{x:.3f}".replace("-", "−")

  return f"{sign}{abs(diff):.3f} [{plain(lo)}, {plain(hi)}]"


def _holm(r):
  p = float(r["p_holm"])
  return "<0.001" if p < 0.001 else f"{p:.3f}"


def _counts(rows, family):
  mine = [r for r in rows if r["family"] == family]
  detected = sum(float(r["p_holm"]) < 0.05 for r in mine)
  equivalent = sum(
    float(r["p_holm"]) >= 0.05 and float(r["p_equivalence_holm"]) < 0.05 for r in mine
  )
  return detected, equivalent, len(mine)


# ------------------------------------------------------------ the committed block


def test_the_committed_readme_block_is_generated_from_the_committed_study():
  """README.md's block is the one docs/lm_study's files give, and it passes the checker."""
  contrasts = os.path.join(_ROOT, "docs", "lm_study", "contrasts.csv")
  readme = os.path.join(_ROOT, "README.md")
  generated = _generate(contrasts, readme)
  with open(readme) as f:
    committed = mk.block_of(f.read())
  assert readme_block.first_difference(committed, generated) is None
  assert readme_claims.matched_kl_claim_problems(committed, _read(contrasts)) == []
  assert mk.INCOMPLETE_MARK.strip("*") not in committed


# ------------------------------------------------------------ the generated block


def test_the_generated_block_passes_the_checker(generated, rows):
  assert readme_claims.matched_kl_claim_problems(generated, rows) == []
  readme = mk.replace_block(README, generated)
  assert readme_claims.matched_kl_claim_problems(readme, rows) == []  # A README holding the block.
  assert "does not beat" not in _flat(generated)


def test_the_headline_holds_the_primary_contrasts(generated, rows):
  flat = _flat(generated)
  detected, _, total = _counts(rows, "primary")
  assert f"Countdown: {detected} of {total} primary declared contrasts detected" in flat
  assert (detected, total) == (4, 4)  # The 14-seed summary: every primary test holds.
  headline = flat[flat.index("primary declared") : flat.index("- At matched KL")]
  for r in rows:
    k = r["question"].split("@")[1].split(",")[0].replace("n", "128")
    where = " at matched KL" if r["at_kl"] != "final" else ""
    text = f"at pass@{k}{where} is {_estimate(r)}, Holm p {_holm(r)}:"
    assert (text in headline) == (r["family"] == "primary"), text


def test_the_secondary_counts_are_contrasts_csvs(generated, rows):
  detected, equivalent, total = _counts(rows, "secondary")
  flat = _flat(generated)
  assert (
    f"Countdown: {detected} of {total} secondary declared contrasts detected after Holm, "
    f"{equivalent} of {total} secondary declared contrasts equivalent" in flat
  )


def test_matched_kl_rows_name_their_level_and_seeds(generated, rows):
  flat = _flat(generated)
  matched = [r for r in rows if r["at_kl"] != "final"]
  assert len(matched) == 3
  for r in matched:
    reached = len(r["seeds"].split())  # The seeds where both arms reach the level.
    phrase = f"{r['question']} (at KL {float(r['at_kl']):g} nats; {reached} of {r['num_seeds']}"
    assert phrase + " seeds)" in flat
    assert f"| {float(r['at_kl']):g} nats; {reached} of {r['num_seeds']} seeds |" in generated
  assert "; 13 of 14 seeds)" in flat  # KL-matched GRPO vs GRPO: seed 8 never reaches it.


def test_the_design_and_the_runs_are_their_files(generated, design, rows):
  flat = _flat(generated)
  d = design["design"]
  assert f"{d['seeds']} seeds × {d['problems']} held-out problems, margin ±0.02" in flat
  assert f"designed power {round(100 * d['power_difference'])}% for a difference" in flat
  assert f"{round(100 * d['power_equivalence'])}% for equivalence" in flat
  assert f"{d['hours']:.1f} single-core hours" in flat
  assert f"matched-KL level {design['kl_level']:g} nats" in flat
  assert f"at learning rate {design['matched_learning_rate']:g}" in flat
  provenance = _read(os.path.join(FIXTURE, "provenance.csv"))
  hours = sum(float(r["hours"]) for r in provenance)
  (commit,) = {r["commit"] for r in provenance}
  assert f"Its runs (`docs/lm_study/provenance.csv`): {len(provenance)}," in flat
  assert f"from commit `{commit[:7]}` (the design note's commit), 0 from a modified" in flat
  assert f"{hours:.1f} hours in all" in flat
  assert "countdown seeds 0-13" in flat


def test_an_incomplete_summary_is_named(generated, rows, design, tmp_path):
  seeds = {s for r in rows for s in r["seeds"].split()}
  with open(os.path.join(FIXTURE, "README.md")) as f:
    missing = sum(line.startswith("* ") for line in f)
  flat = _flat(generated)
  want = design["design"]["seeds"]
  assert f"Incomplete study: {len(seeds)} of the design's {want} seeds" in flat
  assert f"its README lists {missing} runs missing" in flat
  assert (len(seeds), want, missing) == (14, 24, 10)
  # Without the README's note, the seeds against the design's still say it.
  text = _flat(_generate(*_study(str(tmp_path / "a"), readme_head="# LM study\n")))
  assert f"Incomplete study: {len(seeds)} of the design's {want} seeds**. Every" in text
  # A design of the seeds present, and no note: no such line.
  fewer = {**design, "design": {**design["design"], "seeds": len(seeds)}}
  text = _generate(*_study(str(tmp_path / "b"), readme_head="# LM study\n", design=fewer))
  assert "Incomplete" not in text and "incomplete" not in text


def test_the_incomplete_mark_is_the_summarys():
  assert summary_readme._incomplete_note(["countdown seed 1: no run folder"])[0].startswith(
    mk.INCOMPLETE_MARK
  )


def _audit_changes(task):
  """The 8-seed README's audit table of training reward: (mean, lo, hi) of each arm's
  'last − first' cell on ``task``."""
  with open(os.path.join(PREVIOUS, "README.md")) as f:
    text = f.read()
  section = text[text.index(f"**{task}**:\n") :]
  table = section[section.index("| method |") :].split("\n\n")[0].split("\n")[2:]
  cells = [[c.strip() for c in line.strip().strip("|").split("|")] for line in table]
  out = []
  for c in cells:
    m = re.fullmatch(r"(-?[\d.]+) \[(-?[\d.]+), (-?[\d.]+)\]", c[3])
    out.append(tuple(float(x) for x in m.groups()))
  return out


def test_program_is_out_by_the_8seed_studys_training_reward(generated):
  program, countdown = _audit_changes("program"), _audit_changes("countdown")
  flat = _flat(generated)
  lo, hi = min(m for m, _, _ in program), max(m for m, _, _ in program)
  zero = sum(a <= 0 <= b for _, a, b in program)
  assert f"its {len(program)} RL arms changed by +{lo:.3f} to +{hi:.3f}" in flat
  assert f"holds 0 in {zero} of {len(program)} arms" in flat
  c_lo, c_hi = min(m for m, _, _ in countdown), max(m for m, _, _ in countdown)
  assert f"countdown's arms +{c_lo:.3f} to +{c_hi:.3f}" in flat
  assert flat.index("Program is out of this study's claims") > flat.index("| countdown |")


def test_frontier_orders_by_brute_force():
  """Three arms with known curves: a = 0.5 + 0.1·kl (grid to 1), b = 0.5 + 0.151·kl −
  0.1·kl² (grid to 0.8, above a below kl = 0.51), c = 0.5 + 0.01·kl (grid to 1.5)."""
  curves = {
    "a": (1.0, lambda x: 0.5 + 0.1 * x),
    "b": (0.8, lambda x: 0.5 + 0.151 * x - 0.1 * x**2),
    "c": (1.5, lambda x: 0.5 + 0.01 * x),
  }
  rows = [{"task": "t", "run": "base", "k": "8", "point": "grid", "kl": "0", "mean": "0.5"}]
  for run, (top, f) in curves.items():
    for x in np.linspace(0, top, 41):
      rows.append({"task": "t", "run": run, "k": "8", "point": "grid", "kl": str(float(x))})
      rows[-1]["mean"] = str(float(f(x)))
  rows.append({**rows[-1], "point": "checkpoint", "mean": "2.0"})  # Not on the grid.
  top, segments = frontier.frontier_orders(rows, 8, "t")
  assert top == pytest.approx(0.8)
  grid = np.linspace(0, 0.8, 41)[1:]
  orders = [tuple(sorted(curves, key=lambda run: -curves[run][1](x))) for x in grid]
  assert orders[0] == ("b", "a", "c") and orders[-1] == ("a", "b", "c")
  expected = []
  for order, x in zip(orders, grid):
    if expected and expected[-1][0] == order:
      expected[-1] = (order, expected[-1][1] + 1, expected[-1][2], x)
    else:
      expected.append((order, 1, x, x))
  assert [(o, n) for o, n, _, _ in segments] == [(o, n) for o, n, _, _ in expected]
  np.testing.assert_allclose([s[2:] for s in segments], [e[2:] for e in expected])
  with pytest.raises(ValueError, match="arms"):
    frontier.frontier_orders(rows, 128, "t")


def test_the_frontier_sentence_is_exploratory(generated):
  flat = _flat(generated)
  sentence = flat[flat.index("**Exploratory**") : flat.index("| task |")]
  assert "no interval, no correction" in sentence
  assert "mean pass@8 ranks" in sentence and "mean pass@128 ranks" in sentence
  assert not re.search(r"beats|is below|equivalent|detected|significant", sentence)


# ------------------------------------------------------------ planted falsehoods


def _row(rows, question):
  return next(r for r in rows if r["question"] == question)


def _plants(rows):
  """(name, old, new) falsehoods planted in the block of the 14-seed summary."""
  p8 = _row(rows, "k_opt = 8 vs GRPO at pass@8")
  pn = _row(rows, "k_opt = 8 vs GRPO at pass@n")
  p8_kl = _row(rows, "k_opt = 8 vs GRPO at pass@8, matched KL")
  kl_grpo = _row(rows, "KL-matched GRPO vs GRPO at pass@n, matched KL")
  detected, equivalent, total = _counts(rows, "secondary")
  power = round(100 * float(p8["power"]))
  reached = len(kl_grpo["seeds"].split())
  return [
    ("wrong primary count", "4 of 4 primary", "3 of 4 primary"),
    (
      "wrong secondary count",
      f"{detected} of {total} secondary declared contrasts detected",
      f"{detected - 1} of {total} secondary declared contrasts detected",
    ),
    (
      "wrong equivalence count",
      f"{equivalent} of {total} secondary declared contrasts equivalent",
      f"{equivalent + 1} of {total} secondary declared contrasts equivalent",
    ),
    ("flipped sign", f"is {_estimate(p8)}", f"is {_estimate(p8).replace('+', '−', 1)}"),
    ("changed number", f"+{float(pn['diff']):.3f} [", f"+{float(pn['diff']) + 0.01:.3f} ["),
    (
      "changed number at matched KL",
      f"at matched KL is {_estimate(p8_kl)}",
      f"at matched KL is {_estimate({**p8_kl, 'diff': float(p8_kl['diff']) + 0.01})}",
    ),
    ("wrong Holm p", "Holm p <0.001: k_opt = 8 beats GRPO", "Holm p 0.020: k_opt = 8 beats GRPO"),
    (
      "are equivalent for a detected contrast",
      "k_opt = 8 beats GRPO.",
      "k_opt = 8 and GRPO are equivalent within ±0.02.",
    ),
    (
      "does not beat for a detected contrast",
      "k_opt = 8 beats KL-matched GRPO",
      "k_opt = 8 does not beat KL-matched GRPO",
    ),
    (
      "beats for an equivalent contrast",
      "k_opt = 8 and KL-matched GRPO are equivalent within ±0.02",
      "k_opt = 8 beats KL-matched GRPO",
    ),
    ("because", "k_opt = 8 beats GRPO.", "k_opt = 8 beats GRPO because it explores."),
    ("due to", "too little learning", "due to too little learning"),
    ("wrong table power", f"| {power}% at ±0.02 | primary", f"| {power - 10}% at ±0.02 | primary"),
    (
      "wrong matched-KL seeds in prose",
      f"nats; {reached} of {kl_grpo['num_seeds']} seeds)",
      f"nats; {reached + 1} of {kl_grpo['num_seeds']} seeds)",
    ),
    (
      "wrong matched-KL seeds in the table",
      f"| 0.6 nats; {reached} of {kl_grpo['num_seeds']} seeds |",
      f"| 0.6 nats; {reached + 1} of {kl_grpo['num_seeds']} seeds |",
    ),
    ("wrong matched-KL level", "(at KL 0.6 nats;", "(at KL 0.5 nats;"),
    (
      "wrong family",
      f"| better | {power}% at ±0.02 | primary |",
      f"| better | {power}% at ±0.02 | secondary |",
    ),
    ("table verdict", f"| {_holm(kl_grpo)} | equivalent |", f"| {_holm(kl_grpo)} | better |"),
  ]


_NUM_PLANTS = len(_plants(_read(os.path.join(FIXTURE, "contrasts.csv"))))


@pytest.mark.parametrize("plant", range(_NUM_PLANTS))
def test_each_planted_falsehood_fails_the_checker(generated, rows, plant):
  name, old, new = _plants(rows)[plant]
  planted = readme_planting.plant(generated, old, new)
  assert planted != generated
  assert readme_block.first_difference(planted, generated) is not None, name
  assert readme_claims.matched_kl_claim_problems(planted, rows), name


def _not_detected(rows):
  """The rows with the primary pass@8 contrast made not detected, its columns
  consistent: a smaller difference, an interval over 0, Holm p above 0.05, no
  equivalence, power 41%."""
  out = []
  for r in rows:
    if r["question"] == "k_opt = 8 vs GRPO at pass@8":
      r = {**r, "diff": "0.012", "lo": "-0.006", "hi": "0.030", "p_value": "0.155"}
      r.update(p_holm="0.31", power="0.41", p_equivalence_holm="0.2", verdict="not detected")
    out.append(r)
  return out


@pytest.fixture(name="weak", scope="module")
def _weak(rows, tmp_path_factory):
  weak = _not_detected(rows)
  return weak, _generate(*_study(str(tmp_path_factory.mktemp("weak")), rows=weak))


def test_a_not_detected_primary_contrast_gives_its_power(weak):
  weak_rows, text = weak
  assert readme_claims.matched_kl_claim_problems(text, weak_rows) == []
  flat = _flat(text)
  detected, _, total = _counts(weak_rows, "primary")
  assert f"Countdown: {detected} of {total} primary declared contrasts detected" in flat
  assert detected == 3
  assert (
    "k_opt = 8 − GRPO at pass@8 is +0.012 [−0.006, 0.030], Holm p 0.310: a difference is "
    "not detected (power 41% at ±0.02)." in flat
  )
  assert "does not beat" not in flat


@pytest.mark.parametrize(
  "old, new",
  [
    ("a difference is not detected (power 41%", "k_opt = 8 beats GRPO (power 41%"),
    ("a difference is not detected (power 41%", "k_opt = 8 does not beat GRPO (power 41%"),
    ("a difference is not detected", "k_opt = 8 and GRPO are equivalent within ±0.02;"),
    ("power 41% at", "power 81% at"),
    ("a difference is not detected", "the difference is significant"),
    ("Holm p 0.310", "Holm p 0.031"),
    ("3 of 4 primary", "4 of 4 primary"),
  ],
)
def test_planted_claims_on_a_not_detected_contrast_fail(weak, old, new):
  weak_rows, text = weak
  assert readme_claims.matched_kl_claim_problems(readme_planting.plant(text, old, new), weak_rows)


# ------------------------------------------------------------ the command


@pytest.mark.slow  # Integration: a binary in a subprocess (README's second test step).
def test_the_command_writes_and_checks_the_block(tmp_path, generated, rows):
  contrasts, readme = _study(str(tmp_path))
  command = [sys.executable, "-m", "experiments.lm_study.readme", f"--contrasts={contrasts}"]
  env = {**os.environ, "PYTHONPATH": _ROOT}

  def run(*flags):
    return subprocess.run(
      [*command, f"--readme={readme}", *flags], capture_output=True, text=True, env=env
    )

  write = run()  # --block=auto takes the matched-KL block from contrasts.csv's columns.
  assert write.returncode == 0, write.stderr
  with open(readme) as f:
    text = f.read()
  assert mk.block_of(text) == generated
  assert text.startswith("intro\n\n" + mk.BEGIN_LINE) and text.endswith(mk.END_LINE + "\n\nend\n")
  assert readme_claims.matched_kl_claim_problems(text, rows) == []
  assert run("--check").returncode == 0
  with open(readme, "w") as f:
    f.write(readme_planting.plant(text, *_plants(rows)[0][1:]))
  check = run("--check", "--block=matched_kl")
  assert check.returncode == 1 and "differs" in check.stderr
  assert len(check.stderr.strip().splitlines()) == 1


def test_the_study_is_told_by_its_columns(tmp_path):
  assert mk.is_matched_kl(os.path.join(FIXTURE, "contrasts.csv"))
  old = os.path.join(PREVIOUS, "contrasts.csv")
  assert not mk.is_matched_kl(old)
  with pytest.raises(ValueError, match="at_kl"):
    mk.read_sources(old, os.path.join(_ROOT, "README.md"))
