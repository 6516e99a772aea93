"""The study summary with checkpoints (experiments.lm_study.summarize on runs holding
checkpoints.csv): declared contrasts at matched KL decided together with the final-step
ones, frontier.csv, the frontier figures and the README's Frontiers section, on the
synthetic study folders of study_summary_test.py; and --study_config."""

import csv
import math
import os
import shutil
import types

import numpy as np
import pytest

from experiments.lm import contrasts
from experiments.lm_study import checkpoints
from experiments.lm_study import config as config_lib
from experiments.lm_study import files
from experiments.lm_study import loading
from experiments.lm_study import matched_kl
from experiments.lm_study import significance
from experiments.lm_study import summarize as summary_lib
from tests import binaries
from tests.experiments.lm_study import summary_test as synthetic

TASKS, SEEDS, N = synthetic.TASKS, synthetic.SEEDS, synthetic.N
PRIMARY, SECONDARY = "primary", "secondary"
# Declared in this order; two families, each spanning final-step and matched-KL rows.
# Every seed's runs reach KL 0.1; at 0.22 only seeds 1 and 2 (checkpoint_kl).
FINAL_8 = contrasts.Contrast(
  "max_at_k_k8", "grpo", "pass", 8, "k_opt = 8 vs GRPO at pass@8", margin=0.02, family=PRIMARY
)
MATCHED_8 = contrasts.Contrast(
  "max_at_k_k8",
  "grpo",
  "pass",
  8,
  "k_opt = 8 vs GRPO at pass@8, KL 0.1",
  margin=0.02,
  family=PRIMARY,
  at_kl=0.1,
)
BASE_1 = contrasts.Contrast("grpo", "base", "pass", 1, "GRPO vs base at pass@1", family=SECONDARY)
FINAL_4 = contrasts.Contrast(
  "max_at_k_k4", "grpo", "pass", 4, "k_opt = 4 vs GRPO at pass@4", margin=0.05, family=PRIMARY
)
PARTIAL_1 = contrasts.Contrast(
  "max_at_k_k8", "grpo", "pass", 1, "k_opt = 8 vs GRPO at pass@1, KL 0.22", family=SECONDARY,
  at_kl=0.22,
)  # fmt: skip
DECLARED = (FINAL_8, MATCHED_8, BASE_1, FINAL_4, PARTIAL_1)
POWER_EFFECT = 0.02
STUDY_MODULE = types.SimpleNamespace(
  __name__="tests.synthetic_study",
  TASKS=TASKS,
  SEEDS=SEEDS,
  CONTRASTS=DECLARED,
  POWER_EFFECT=POWER_EFFECT,
  REQUIRE_PROVENANCE=False,  # The synthetic runs have no run.json.
)
CONFIG = config_lib.from_module(STUDY_MODULE)
# contrasts.csv's columns of a study without contrasts at matched KL (the 8-seed study's).
COLUMNS = (
  "task,question,a,b,measure,k,num_seeds,seeds,diff_seeds,se_seeds,diff,lo,hi,p_value,"
  "floored,t_lo,t_hi,family,stderr,p_holm,margin,p_equivalence,power,p_equivalence_holm,verdict"
).split(",")


def _read(path):
  with open(path, newline="") as f:
    return list(csv.DictReader(f))


@pytest.fixture(name="out", scope="module")
def _out(tmp_path_factory):
  root = tmp_path_factory.mktemp("matched")
  study = synthetic._make_study(str(root / "study"), with_checkpoints=True)
  out = str(root / "out")
  summary_lib.summarize(study, out, CONFIG)
  return study, out


@pytest.fixture(name="study")
def _study(tmp_path):
  return synthetic._make_study(str(tmp_path / "study"), with_checkpoints=True)


def _holm_by_hand(p_values):
  """Holm's step-down adjustment written out: the i-th smallest p times (m − i + 1),
  kept monotone, capped at 1."""
  order = sorted(range(len(p_values)), key=lambda i: p_values[i])
  out, running = [0.0] * len(p_values), 0.0
  for rank, i in enumerate(order):
    running = max(running, (len(p_values) - rank) * p_values[i])
    out[i] = min(1.0, running)
  return out


def test_rows_in_declared_order_with_their_families_and_kl(out):
  _, out = out
  rows = _read(os.path.join(out, "contrasts.csv"))
  assert list(rows[0]) == [*COLUMNS, "at_kl", "num_seeds_reached"]
  assert [(r["task"], r["question"]) for r in rows] == [
    (t, c.question) for t in TASKS for c in DECLARED
  ]
  for row, c in zip(rows, DECLARED * len(TASKS)):
    assert row["family"] == c.family and row["k"] == str(c.k)
    if c.at_kl is None:
      assert row["at_kl"] == "final" and row["num_seeds_reached"] == row["num_seeds"] == "3"
    else:
      assert float(row["at_kl"]) == c.at_kl and row["num_seeds"] == "3"
  partial = [r for r in rows if r["question"] == PARTIAL_1.question]
  assert all(r["num_seeds_reached"] == "2" and r["seeds"] == "1 2" for r in partial)
  matched = [r for r in rows if r["question"] == MATCHED_8.question]
  assert all(r["num_seeds_reached"] == "3" and r["seeds"] == "0 1 2" for r in matched)
  # paired_summary.csv's rows are final-step differences: only final-step contrasts label
  # them, also where a matched-KL contrast compares the same runs at the same k.
  paired = _read(os.path.join(out, "paired_summary.csv"))
  labelled = {(r["a_run"], r["b_run"], r["k_eval"], r["question"]) for r in paired if r["question"]}
  finals = [c for c in DECLARED if c.at_kl is None]
  assert {q for *_, q in labelled} == {c.question for c in finals}
  assert ("max_at_k_k8", "grpo", "8", FINAL_8.question) in labelled


def test_holm_and_equivalence_run_over_final_and_matched_rows_of_a_family(out):
  _, out = out
  rows = _read(os.path.join(out, "contrasts.csv"))
  for family in (PRIMARY, SECONDARY):
    mine = [r for r in rows if r["family"] == family]
    assert {r["at_kl"] == "final" for r in mine} == {True, False}  # Both kinds in one family.
    p = [float(r["p_value"]) for r in mine]
    expected = _holm_by_hand(p)
    np.testing.assert_allclose([float(r["p_holm"]) for r in mine], expected, rtol=1e-9)
    np.testing.assert_allclose(expected, significance.holm(p), rtol=1e-12)
    with_margin = [r for r in mine if r["margin"] and not math.isnan(float(r["p_equivalence"]))]
    assert len(with_margin) == (6 if family == PRIMARY else 0)
    if with_margin:
      np.testing.assert_allclose(
        [float(r["p_equivalence_holm"]) for r in with_margin],
        _holm_by_hand([float(r["p_equivalence"]) for r in with_margin]),
        rtol=1e-9,
      )
    for r in mine:  # Power at α / family size, over the seeds that reached the level.
      df = int(r["num_seeds_reached"]) - 1
      margin = float(r["margin"])
      assert margin == ({c.question: c.margin for c in DECLARED}[r["question"]] or POWER_EFFECT)
      expected_power = significance.power(margin, float(r["stderr"]), df, alpha=0.05 / len(mine))
      assert float(r["power"]) == pytest.approx(expected_power, rel=1e-9)
  for r in rows:
    verdict = significance.declared_verdict(
      float(r["p_holm"]), float(r["diff"]), float(r["p_equivalence_holm"])
    )
    assert r["verdict"] == verdict, r


def _checkpoint_counts(study, task, seed):
  """run -> step -> ([P] correct, [P] kl), read with the csv module."""
  out = {}
  for r in _read(os.path.join(study, f"{task}_seed{seed}", "checkpoints.csv")):
    cell = out.setdefault(r["run"], {}).setdefault(int(r["step"]), ({}, {}))
    cell[0][int(r["prompt"])] = int(r["correct"])
    cell[1][int(r["prompt"])] = float(r["kl"])

  def array(cells):
    return np.array([cells[p] for p in sorted(cells)])

  return {run: {s: (array(c), array(k)) for s, (c, k) in by.items()} for run, by in out.items()}


def _matched_by_hand(counts, run, k, level):
  """[P] pass@k of ``run`` where its mean KL first reaches ``level``, interpolated by
  hand between the two checkpoints around it (the base's counts at step 0)."""
  steps = sorted(set(counts[run]) | {0})
  at = {s: counts["base"][0] if s == 0 else counts[run][s] for s in steps}
  mean_kl = [0.0 if s == 0 else float(np.mean(at[s][1])) for s in steps]
  j = next(j for j, kl in enumerate(mean_kl) if kl >= level)
  w = (level - mean_kl[j - 1]) / (mean_kl[j] - mean_kl[j - 1])

  def pass_at(s):
    return np.array([1 - math.comb(N - c, k) / math.comb(N, k) for c in at[s][0]])

  return (1 - w) * pass_at(steps[j - 1]) + w * pass_at(steps[j])


def test_matched_rows_are_the_per_seed_interpolations(out):
  study, out = out
  rows = {(r["task"], r["question"]): r for r in _read(os.path.join(out, "contrasts.csv"))}
  for task in TASKS:
    diffs, ses = [], []
    for seed in SEEDS:
      counts = _checkpoint_counts(study, task, seed)
      d = _matched_by_hand(counts, "max_at_k_k8", 8, 0.1) - _matched_by_hand(counts, "grpo", 8, 0.1)
      diffs.append(d.mean())
      ses.append(d.std(ddof=1) / math.sqrt(len(d)))
    row = rows[task, MATCHED_8.question]
    np.testing.assert_allclose([float(x) for x in row["diff_seeds"].split()], diffs, rtol=1e-5)
    np.testing.assert_allclose([float(x) for x in row["se_seeds"].split()], ses, rtol=1e-5)
    # pass@k in float32 (maxk.pass_at_k) against exact integers here.
    assert float(row["diff"]) == pytest.approx(np.mean(diffs), rel=1e-6, abs=1e-9)
    # The same numbers as matched_kl.matched_kl_rows over the runs' checkpoints.
    runs = loading.load_study(study, CONFIG).runs
    arms = checkpoints.task_checkpoints(runs)[task]
    for c in CONFIG.matched_kl:
      (expected,) = matched_kl.matched_kl_rows(task, arms, [c], kl_levels=[c.at_kl])
      got = rows[task, c.question]
      for column in ("diff_seeds", "se_seeds", "seeds", "num_seeds", "num_seeds_reached"):
        assert got[column] == str(expected[column]), column
      for column in ("diff", "lo", "hi", "p_value"):
        assert float(got[column]) == pytest.approx(expected[column], rel=1e-9, abs=1e-12)


def test_final_step_rows_from_checkpoints_equal_the_prompts_based_ones(out):
  """The synthetic runs' last checkpoint is their final evaluation: the final-step
  contrasts from checkpoints.csv (matched_kl.final_step_rows) are contrasts.csv's,
  computed from prompts.csv."""
  study, out = out
  rows = {(r["task"], r["question"]): r for r in _read(os.path.join(out, "contrasts.csv"))}
  arms = checkpoints.task_checkpoints(loading.load_study(study, CONFIG).runs)
  finals = [c for c in DECLARED if c.at_kl is None]
  for task in TASKS:
    for expected in matched_kl.final_step_rows(task, arms[task], finals):
      got = rows[task, expected["question"]]
      assert got["seeds"] == expected["seeds"]
      np.testing.assert_allclose(
        [float(x) for x in got["diff_seeds"].split()],
        [float(x) for x in expected["diff_seeds"].split()],
        rtol=1e-5,
      )
      # Both in float32 pass@k, summed in different orders.
      for column in ("diff", "lo", "hi", "p_value"):
        assert float(got[column]) == pytest.approx(expected[column], rel=1e-6, abs=1e-9)


def test_frontier_table_figures_and_readme_section(out):
  study, out = out
  rows = _read(os.path.join(out, "frontier.csv"))
  runs = ("base", *synthetic.RUNS)
  assert {(r["task"], r["run"], int(r["k"])) for r in rows} == {
    (t, run, k) for t in TASKS for run in runs for k in (1, N)
  }
  for task in TASKS:  # GRPO's last checkpoint: mean over seeds of KL and of pass@1.
    want = (task, "grpo", "1", "checkpoint", "5")
    (last,) = [r for r in rows if (r["task"], r["run"], r["k"], r["point"], r["step"]) == want]
    kl = [synthetic.KL_SPEED["grpo"] + synthetic.KL_STEP * s for s in SEEDS]
    passes = [np.mean(_checkpoint_counts(study, task, s)["grpo"][5][0] / N) for s in SEEDS]
    assert float(last["kl"]) == pytest.approx(np.mean(kl), rel=1e-9)
    assert float(last["mean"]) == pytest.approx(np.mean(passes), rel=1e-9)
    assert os.path.getsize(os.path.join(out, f"frontier_{task}.png")) > 10_000
  with open(os.path.join(out, "README.md")) as f:
    report = f.read()
  sections = [line for line in report.splitlines() if line.startswith("## ")]
  assert sections[sections.index("## Declared contrasts") + 1] == "## Frontiers"
  frontiers = report[report.index("## Frontiers") : report.index("## Warm start")]
  for task in TASKS:
    assert f"](frontier_{task}.png)" in frontiers
  assert f"| {PARTIAL_1.question} (at KL 0.22 nats; 2 of 3 seeds) |" in report


def test_a_study_without_checkpoints_that_declares_at_kl_is_refused(study, tmp_path):
  os.remove(os.path.join(study, "countdown_seed1", "checkpoints.csv"))
  with pytest.raises(files.StudyError, match=r"countdown_seed1/checkpoints.csv is missing") as e:
    summary_lib.summarize(study, str(tmp_path / "out"), CONFIG)
  assert "\n" not in str(e.value) and "task countdown, seed 1" in str(e.value)
  assert not (tmp_path / "out").exists()
  # With no checkpoints at all, the first run is named; --from_paired cannot compute it.
  for task in TASKS:
    for seed in SEEDS:
      path = os.path.join(study, f"{task}_seed{seed}", "checkpoints.csv")
      if os.path.exists(path):
        os.remove(path)
  with pytest.raises(files.StudyError, match=r"countdown_seed0/checkpoints.csv is missing"):
    summary_lib.summarize(study, str(tmp_path / "out"), CONFIG)
  with pytest.raises(files.StudyError, match="need the run folders' checkpoints.csv"):
    summary_lib.contrasts_from_paired("unused.csv", str(tmp_path / "o"), CONFIG)


@pytest.mark.slow  # Integration: a binary in a subprocess (README's second test step).
def test_the_binary_reads_a_config_file_and_refuses_with_one_line(study, tmp_path):
  config = tmp_path / "my_study.py"
  config.write_text(
    "from experiments.lm import contrasts\n"
    f"TASKS = {TASKS!r}\nSEEDS = {SEEDS!r}\nREQUIRE_PROVENANCE = False\n"
    'CONTRASTS = (contrasts.Contrast("max_at_k_k8", "grpo", "pass", 8, "q", at_kl=0.1),)\n'
  )
  os.remove(os.path.join(study, "program_seed2", "checkpoints.csv"))
  proc = binaries.run(
    "experiments.lm_study.summary",
    f"--study_config={config}",
    f"--study_dir={study}",
    f"--workdir={tmp_path / 'o'}",
    check=False,
  )
  assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
  last = proc.stderr.strip().splitlines()[-1]
  assert last.startswith("experiments.lm_study.summary: ") and "program_seed2" in last, last
  assert f"({config})" in last  # The config named as given.
  assert not (tmp_path / "o").exists()


@pytest.mark.parametrize(
  "spec, expected",
  [
    ("experiments.lm.configs.no_such_study", "No module named 'experiments.lm.configs.no_such_"),
    ("experiments/lm/configs/no_such_study.py", "No module named"),
    ("/no/such/study.py", "no .py file '/no/such/study.py'"),
  ],
)  # fmt: skip
@pytest.mark.slow  # Integration: a binary in a subprocess (README's second test step).
def test_a_study_config_that_cannot_be_imported_is_one_line(spec, expected, tmp_path):
  with pytest.raises(files.StudyError, match="cannot be imported") as e:
    config_lib.load(spec)
  assert str(e.value).startswith(f"--study_config={spec!r} cannot be imported: ")
  assert expected in str(e.value) and "\n" not in str(e.value)
  if spec.startswith("experiments."):
    proc = binaries.run(
      "experiments.lm_study.summary",
      f"--study_config={spec}",
      f"--study_dir={tmp_path}",
      f"--workdir={tmp_path / 'o'}",
      check=False,
    )
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert last == f"experiments.lm_study.summary: {e.value}"


def test_a_study_config_by_module_name_or_file_is_the_same():
  by_name = config_lib.load("experiments.lm.configs.study_8seed")
  by_file = config_lib.load("experiments/lm/configs/study_8seed.py")
  assert by_name == by_file
  assert by_name.path == "experiments/lm/configs/study_8seed.py"
  assert by_name.sweep == "launch/sweeps/lm_study_8seed.json" and by_name.matched_kl == ()
  assert len(by_name.seeds) == 8 and by_name.audit and not by_name.require_provenance
  with pytest.raises(files.StudyError, match="defines no SEEDS"):
    config_lib.from_module(types.SimpleNamespace(TASKS=(), CONTRASTS=()), name="bad")


def test_the_design_is_the_given_configs(tmp_path):
  """The runs a study lacks are those of the config passed, not the 8-seed study's."""
  study = synthetic._make_study(str(tmp_path / "study"))
  shutil.rmtree(os.path.join(study, "program_seed2"))
  one_task = config_lib.from_module(
    types.SimpleNamespace(**{**vars(STUDY_MODULE), "CONTRASTS": (FINAL_8,)})
  )
  with pytest.raises(files.StudyError, match="program seed 2: no run folder"):
    loading.load_study(study, one_task)
