"""Tests of experiments.lm.study_summary on small synthetic study folders."""

import csv
import json
import math
import os
import shutil

import numpy as np
import pytest
from scipy import stats

from experiments.lm import checkpointing
from experiments.lm import contrasts
from experiments.lm import reporting
from experiments.lm import study_summary
from experiments.lm.configs import study as study_config
from tests import binaries

N = 8  # Samples per problem.
# The runs of the study's declared contrasts (configs/study.py), and no rloo.
RUNS = ("grpo", "max_at_k_k1", "max_at_k_k4", "max_at_k_k8", "max_at_k_k8-60-1")
TASKS = ("countdown", "program")  # The tasks of configs/study.py.


def _evals(rng, num_problems, shift):
  """The base evaluation and one per RL run; run i solves a bit more than base."""
  evals = []
  for i, name in enumerate(("base", *RUNS)):
    p = np.clip(rng.uniform(0, 0.6, num_problems) + shift * i, 0, 1)
    binary = rng.uniform(size=(num_problems, N)) < p[:, None]
    rewards = np.where(binary, 1.0, rng.uniform(0, 0.5, (num_problems, N))).astype(np.float32)
    evals.append(
      reporting.Evaluation(
        run=name,
        stage="base" if name == "base" else "rl",
        method="base" if name == "base" else f"{name.split('_k')[0]}/exact",
        k_opt="" if name == "base" else (name[-1] if name[-1].isdigit() else "n/a"),
        correct_P=binary.sum(-1),
        rewards_Pxn=rewards,
      )
    )
  return evals


def _write_run(root, task, seed, *, num_problems=12, shift=0.1):
  folder = os.path.join(root, f"{task}_seed{seed}")
  os.makedirs(folder)
  rng = np.random.default_rng(1000 * seed + len(task))
  evals = _evals(rng, num_problems, shift)
  bin_correct = rng.integers(0, N + 1, num_problems)
  bin_correct[0] = 0  # At least one base-unsolved problem.
  keys = [f"{task}-{seed}-{p}" for p in range(num_problems)]
  reporting.write_reports(
    folder, evals, bin_correct, seed=seed, prompts=[f"q{k}" for k in keys], keys=keys
  )
  with open(os.path.join(folder, "config.json"), "w") as f:
    json.dump({"task": {"name": task}, "seed": seed}, f)
  split = {
    "task": task,
    "key": "synthetic",
    "num_eval_problems": num_problems,
    "distinct_sft_problems": 50,
    "distinct_rl_problems": 20,
    "distinct_training_problems": 60,
    "overlap": 0,
  }
  with open(os.path.join(folder, "split.json"), "w") as f:
    json.dump(split, f)
  with open(os.path.join(folder, "launch_status.json"), "w") as f:
    json.dump({"status": "ok", "seconds": 60.0 * (seed + 1)}, f)
  log = checkpointing.MetricsLog(os.path.join(folder, "metrics.jsonl"))
  for step, ess in enumerate((0.9, 0.7)):
    for name in RUNS:
      record = {"stage": "rl", "run": name, "method": f"{name}/m", "step": step + 1}
      log.append({**record, "last_ess_frac": ess, "last_max_weight": 0.2 + seed})
  return folder


def _make_study(root):
  for task in TASKS:
    for seed in (0, 1, 2):
      _write_run(root, task, seed)
  return root


@pytest.fixture(name="study")
def _study(tmp_path):
  """A study folder of its own, for the tests that damage it."""
  return _make_study(str(tmp_path / "study"))


@pytest.fixture(name="out", scope="module")
def _out(tmp_path_factory):
  """The summary of one undamaged study, shared by the tests that only read it."""
  root = tmp_path_factory.mktemp("summary")
  out = str(root / "out")
  study_summary.summarize(_make_study(str(root / "study")), out)
  return out


def _read(path):
  with open(path, newline="") as f:
    return list(csv.DictReader(f))


def _t_interval(values):
  values = np.asarray(values, np.float64)
  half = stats.t.ppf(0.975, len(values) - 1) * values.std(ddof=1) / math.sqrt(len(values))
  return values.mean(), values.mean() - half, values.mean() + half


def test_summary_is_the_mean_over_seeds_with_a_t_interval(out):
  results = _read(os.path.join(out, "results.csv"))
  summary = _read(os.path.join(out, "summary.csv"))
  assert {r["task"] for r in results} == {"countdown", "program"}
  assert len(results) == 2 * 3 * (1 + len(RUNS)) * N
  checked = 0
  for row in summary:
    if row["scope"] != "all":
      continue
    per_seed = [
      float(r["pass_at_k"])
      for r in results
      if (r["task"], r["rl_run"], r["k_eval"]) == (row["task"], row["rl_run"], row["k_eval"])
    ]
    assert len(per_seed) == 3 and row["seeds"] == "0 1 2"
    mean, lo, hi = _t_interval(per_seed)
    assert float(row["pass_at_k"]) == pytest.approx(mean, abs=1e-6)
    assert float(row["pass_at_k_lo"]) == pytest.approx(max(0.0, lo), abs=1e-6)
    assert float(row["pass_at_k_hi"]) == pytest.approx(min(1.0, hi), abs=1e-6)
    checked += 1
  assert checked == 2 * (1 + len(RUNS)) * N
  # Per-bin rows exist for the bins that have problems, with per-seed counts.
  unsolved = [r for r in summary if r["scope"] == "unsolved" and r["k_eval"] == "1"]
  assert unsolved and all(
    len(r["num_problems_seeds"].split()) == int(r["num_seeds"]) for r in unsolved
  )


def _floored(diffs, ses):
  """(mean, lo, hi, p): the floored t-interval over seeds, computed here from its
  definition, max(sample variance, mean squared standard error) / S."""
  d, se = np.asarray(diffs, np.float64), np.asarray(ses, np.float64)
  S = len(d)
  sd = math.sqrt(max(d.var(ddof=1), np.mean(se**2)) / S)
  half = stats.t.ppf(0.975, S - 1) * sd
  if sd == 0:  # Identical seeds without noise (e.g. every run solves every problem).
    return d.mean(), d.mean(), d.mean(), float(d.mean() == 0)
  return d.mean(), d.mean() - half, d.mean() + half, 2 * stats.t.sf(abs(d.mean()) / sd, S - 1)


def _by_seed(rows, **match):
  mine = [r for r in rows if all(str(r[c]) == str(v) for c, v in match.items())]
  return sorted(mine, key=lambda r: int(r["seed"]))


def test_paired_summary_has_the_floored_interval_and_verdicts(out):
  paired = _read(os.path.join(out, "paired.csv"))
  declared = {(r["task"], r["question"]): r for r in _read(os.path.join(out, "contrasts.csv"))}
  rows = _read(os.path.join(out, "paired_summary.csv"))
  num_declared = 0
  for row in rows:
    mine = _by_seed(paired, **{c: row[c] for c in ("task", "a_run", "b_run", "metric", "k_eval")})
    mean, lo, hi, p = _floored([r["diff"] for r in mine], [r["diff_se"] for r in mine])
    assert float(row["diff"]) == pytest.approx(mean, abs=1e-6)
    assert float(row["diff_lo"]) == pytest.approx(max(-1.0, lo), abs=1e-6)
    assert float(row["diff_hi"]) == pytest.approx(min(1.0, hi), abs=1e-6)
    assert float(row["p_value"]) == pytest.approx(p, rel=1e-6)
    if row["question"]:
      num_declared += 1
      c = declared[row["task"], row["question"]]
      assert row["verdict"] == c["verdict"] and row["p_holm"] == c["p_holm"]
    elif max(-1.0, lo) > 0 or min(1.0, hi) < 0:
      assert row["verdict"] == "exploratory, excludes 0"
    else:
      assert row["verdict"] == "exploratory, includes 0"
  assert num_declared == len(declared) == 2 * len(study_config.CONTRASTS)
  # The runs were built to beat base by a lot at pass@1: some interval says so.
  assert any(
    r["verdict"] == "exploratory, excludes 0" and r["b_run"] == "base" and r["k_eval"] == "1"
    for r in rows
  )


def test_contrasts_are_holm_corrected_over_every_task(out):
  paired = _read(os.path.join(out, "paired.csv"))
  rows = _read(os.path.join(out, "contrasts.csv"))
  expected = [(t, c.question) for t in TASKS for c in study_config.CONTRASTS]
  assert [(r["task"], r["question"]) for r in rows] == expected
  p_values = []
  for row, c in zip(rows, list(study_config.CONTRASTS) * 2):
    k = N if c.k == "n" else c.k
    assert (row["a"], row["b"], row["measure"], int(row["k"])) == (c.a, c.b, c.measure, k)
    mine = _by_seed(paired, task=row["task"], a_run=c.a, b_run=c.b, metric=c.metric, k_eval=k)
    diffs, ses = [float(r["diff"]) for r in mine], [float(r["diff_se"]) for r in mine]
    assert row["diff_seeds"].split() == [f"{d:.6g}" for d in diffs]
    assert row["se_seeds"].split() == [f"{s:.6g}" for s in ses]
    mean, lo, hi, p = _floored(diffs, ses)
    assert [float(row[x]) for x in ("diff", "lo", "hi")] == pytest.approx(
      [mean, max(-1.0, lo), min(1.0, hi)], abs=1e-6
    )
    assert float(row["p_value"]) == pytest.approx(p, rel=1e-6)
    _, t_lo, t_hi = _t_interval(diffs)
    assert float(row["t_lo"]) == pytest.approx(max(-1.0, t_lo), abs=1e-6)
    assert float(row["t_hi"]) == pytest.approx(min(1.0, t_hi), abs=1e-6)
    p_values.append(p)
  # One family of 16: the smallest p-value is multiplied by 16, not by 8.
  holm = [float(r["p_holm"]) for r in rows]
  i = int(np.argmin(p_values))
  assert holm[i] == pytest.approx(min(1.0, 16 * p_values[i]), rel=1e-6)
  np.testing.assert_allclose(holm, contrasts.holm(p_values), rtol=1e-6)
  for row, p in zip(rows, holm):
    assert row["verdict"] == ("significant" if p < 0.05 else "not significant")


def test_contrasts_from_a_committed_paired_file(out, tmp_path):
  """--from_paired rebuilds contrasts.csv from paired.csv alone, identically."""
  written = study_summary.contrasts_from_paired(
    os.path.join(out, "paired.csv"), str(tmp_path / "o")
  )
  assert len(written) == 2 * len(study_config.CONTRASTS)
  assert os.listdir(tmp_path / "o") == ["contrasts.csv"]
  with open(tmp_path / "o" / "contrasts.csv") as f, open(os.path.join(out, "contrasts.csv")) as g:
    assert f.read() == g.read()
  # A paired file without a declared contrast's runs, or without diff_se.
  rows = [r for r in _read(os.path.join(out, "paired.csv")) if r["a_run"] != "max_at_k_k8-60-1"]
  bad = str(tmp_path / "bad.csv")
  with open(bad, "w", newline="") as f:
    writer = csv.DictWriter(f, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
  with pytest.raises(study_summary.StudyError, match="no paired difference max_at_k_k8-60-1"):
    study_summary.contrasts_from_paired(bad, str(tmp_path / "c"))
  _replace_in(bad, "diff_se", "diff_sd")
  proc = binaries.run(
    "experiments.lm.study_summary",
    f"--from_paired={bad}",
    f"--out_dir={tmp_path / 'c'}",
    check=False,
  )
  assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
  assert "lacks the column(s) ['diff_se']" in proc.stderr.strip().splitlines()[-1]
  assert not (tmp_path / "c").exists()


def test_one_seed_has_no_across_seeds_interval():
  mean, lo, hi = study_summary.across_seeds([0.3], (0.0, 1.0))
  assert mean == 0.3 and math.isnan(lo) and math.isnan(hi)
  mean, lo, hi = study_summary.across_seeds([0.3, float("nan"), 0.5], (0.0, 1.0))
  assert math.isnan(mean) and math.isnan(lo) and math.isnan(hi)
  iv = study_summary.seed_interval([0.3], [0.01])
  assert float(iv.mean) == 0.3 and math.isnan(iv.lo) and math.isnan(iv.p_value)


def test_unsolved_pooled_over_seeds_and_off_policy(out):
  per_seed = _read(os.path.join(out, "unsolved.csv"))
  pooled = _read(os.path.join(out, "unsolved_summary.csv"))
  for row in pooled:
    mine = [r for r in per_seed if (r["task"], r["rl_run"]) == (row["task"], row["rl_run"])]
    assert int(row["solved"]) == sum(int(r["solved"]) for r in mine)
    assert int(row["num_base_unsolved"]) == sum(int(r["num_base_unsolved"]) for r in mine)
    p, _, lo, hi = reporting.wilson_interval(int(row["solved"]), int(row["num_base_unsolved"]))
    assert float(row["solved_fraction_lo"]) == pytest.approx(lo)
    assert float(row["solved_fraction"]) == pytest.approx(p)
  off = _read(os.path.join(out, "off_policy.csv"))
  assert len(off) == 2 * len(RUNS)
  for row in off:
    assert float(row["ess_frac"]) == pytest.approx(0.8)  # Mean of 0.9 and 0.7.
    assert float(row["max_weight"]) == pytest.approx(1.2)  # Mean of 0.2, 1.2, 2.2.
    assert row["steps"] == "2"


def test_outputs_figures_and_report(out):
  for name in (
    *reporting.FILES,
    "contrasts.csv",
    "summary.csv",
    "paired_summary.csv",
    "unsolved_summary.csv",
    "off_policy.csv",
    "splits.csv",
    "pass_at_k_countdown.png",
    "bins_program.png",
    "contrasts_countdown.png",
    "README.md",
  ):
    assert os.path.getsize(os.path.join(out, name)) > 0, name
  prompts = _read(os.path.join(out, "prompts.csv"))
  assert len(prompts) == 2 * 3 * (1 + len(RUNS)) * 12
  with open(os.path.join(out, "README.md")) as f:
    report = f.read()
  declared = report.index("## Declared contrasts")
  assert declared < report.index("## Exploratory") < report.index("### countdown")
  assert "### program" in report
  table = "\n".join(study_summary.declared_table(_read(os.path.join(out, "contrasts.csv"))))
  assert table in report[declared : report.index("## Exploratory")]
  assert "k_opt = 8 vs k_opt = 1 |" in report  # An exploratory pair whose runs exist.
  assert "RLOO vs GRPO" not in report  # No rloo run: no row for it.


def test_a_results_file_that_disagrees_with_its_prompts_stops(study, tmp_path):
  path = os.path.join(study, "countdown_seed1", "results.csv")
  rows = _read(path)
  rows[5]["pass_at_k"] = str(float(rows[5]["pass_at_k"]) + 0.01)
  with open(path, "w", newline="") as f:
    writer = csv.DictWriter(f, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
  with pytest.raises(study_summary.StudyError, match="countdown_seed1.*disagrees"):
    study_summary.summarize(study, str(tmp_path / "out"))


def test_unfinished_and_duplicate_runs_stop(study):
  # A run without prompts.csv, once accepted only when no other run lacked it.
  os.remove(os.path.join(study, "countdown_seed1", "prompts.csv"))
  with pytest.raises(study_summary.StudyError, match="countdown seed 1: unfinished.*prompts.csv"):
    study_summary.load_study(study)
  shutil.rmtree(os.path.join(study, "countdown_seed1"))
  shutil.copytree(os.path.join(study, "countdown_seed0"), os.path.join(study, "zz_copy"))
  with pytest.raises(study_summary.StudyError, match="Two runs of task countdown, seed 0"):
    study_summary.load_study(study)


def test_missing_or_empty_study_dir_stops(tmp_path):
  with pytest.raises(study_summary.StudyError, match="not a folder"):
    study_summary.load_study(str(tmp_path / "nope"))
  with pytest.raises(study_summary.StudyError, match="No finished run folders"):
    study_summary.load_study(str(tmp_path))


def _rewrite_json(path, **changes):
  with open(path) as f:
    value = json.load(f)
  with open(path, "w") as f:
    json.dump({**value, **changes}, f)


@pytest.mark.parametrize(
  "damage, expected",
  [
    # A deleted seed folder once gave a summary over 2 seeds for that task.
    (
      lambda d: shutil.rmtree(os.path.join(d, "program_seed2")),
      "incomplete: program seed 2: no run folder",
    ),
    # A deleted config.json once made the folder invisible.
    (
      lambda d: os.remove(os.path.join(d, "countdown_seed1", "config.json")),
      "countdown_seed1: holds metrics.jsonl but no config.json",
    ),
    # A renamed task once became a silent extra task with one seed.
    (
      lambda d: _rewrite_json(
        os.path.join(d, "program_seed1", "config.json"), task={"name": "program2"}
      ),
      "program_seed1/config.json: task 'program2' is not a task of the study",
    ),
    # A failed run (status from launch.local) once counted as finished.
    (
      lambda d: _rewrite_json(
        os.path.join(d, "countdown_seed0", "launch_status.json"), status="failed (1)"
      ),
      "countdown seed 0: the launcher recorded status 'failed \\(1\\)'",
    ),
    # One seed only once gave NaN intervals without a word.
    (
      lambda d: [shutil.rmtree(os.path.join(d, f"{t}_seed{s}")) for t in TASKS for s in (1, 2)],
      "only seed 0: intervals over seeds need 2 or more",
    ),
  ],
)
def test_an_incomplete_study_stops(study, damage, expected):
  damage(study)
  with pytest.raises(study_summary.StudyError, match=expected):
    study_summary.load_study(study)


def test_runs_listed_by_the_launcher_must_all_be_there(study):
  listed = [{"name": n, "binary": "experiments.lm.main"} for n in sorted(os.listdir(study))]
  listed.append({"name": "config.seed-3", "binary": "experiments.lm.main"})
  listed.append({"name": "other", "binary": "experiments.best_of_n"})  # Not the study's.
  with open(os.path.join(study, "runs.json"), "w") as f:
    json.dump(listed, f)
  with pytest.raises(study_summary.StudyError, match="config.seed-3: listed in runs.json"):
    study_summary.load_study(study)
  listed.pop(-2)
  with open(os.path.join(study, "runs.json"), "w") as f:
    json.dump(listed, f)
  assert len(study_summary.load_study(study).runs) == 6


def test_allow_incomplete_names_the_missing_runs_first(study, tmp_path, monkeypatch):
  monkeypatch.setattr(study_summary, "write_figures", lambda *args: [])  # Not read here.
  shutil.rmtree(os.path.join(study, "program_seed2"))
  out = str(tmp_path / "out")
  study_summary.summarize(study, out, allow_incomplete=True)
  with open(os.path.join(out, "README.md")) as f:
    report = f.read().splitlines()
  assert report[0] == "# LM study: every estimator, two tasks, three seeds"
  assert report[2].startswith("**INCOMPLETE STUDY.**")
  assert "* program seed 2: no run folder" in report[:10]
  summary = _read(os.path.join(out, "summary.csv"))
  seeds = {(r["task"], r["seeds"]) for r in summary if r["scope"] == "all"}
  assert seeds == {("countdown", "0 1 2"), ("program", "0 1")}


def test_report_title_counts_the_tasks_and_seeds_summarised():
  def runs(tasks, seeds):
    return [study_summary.Run("", t, s, (), np.zeros(0), (), (), 0.0) for t in tasks for s in seeds]

  title = study_summary.report_title
  assert title(runs(TASKS, (0, 1, 2))) == "# LM study: every estimator, two tasks, three seeds"
  assert title(runs(TASKS, (4, 7))) == "# LM study: every estimator, two tasks, two seeds"
  assert title(runs(TASKS[:1], range(12))) == "# LM study: every estimator, one task, 12 seeds"


def _replace_in(path, old, new):
  with open(path) as f:
    text = f.read()
  assert old in text
  with open(path, "w") as f:
    f.write(text.replace(old, new, 1))


def _truncate(path):
  """Cuts the file 20 characters into its 11th line (a copy stopped mid-write)."""
  with open(path) as f:
    lines = f.readlines()
  with open(path, "w") as f:
    f.write("".join(lines[:10]) + lines[10][:20])


@pytest.mark.parametrize(
  "damage, expected",
  [
    (
      lambda d: os.remove(os.path.join(d, "countdown_seed1", "results.csv")),
      "countdown seed 1: unfinished or damaged: no results.csv",
    ),
    (
      lambda d: _replace_in(os.path.join(d, "program_seed0", "prompts.csv"), ",8,", ",x,"),
      r"program_seed0, prompts.csv line \d+: n='x'",
    ),
    (
      lambda d: _truncate(os.path.join(d, "program_seed0", "prompts.csv")),
      r"program_seed0/prompts.csv, line 11: \d of 16 fields",
    ),
    (
      lambda d: _replace_in(os.path.join(d, "countdown_seed2", "config.json"), "}", ""),
      "countdown_seed2/config.json is not valid JSON",
    ),
    (
      lambda d: _replace_in(os.path.join(d, "countdown_seed2", "launch_status.json"), ":", ""),
      "countdown_seed2/launch_status.json is not valid JSON",
    ),
    (
      lambda d: _replace_in(os.path.join(d, "program_seed1", "split.json"), "{", "["),
      "program_seed1/split.json is not valid JSON",
    ),
    (
      lambda d: _replace_in(os.path.join(d, "program_seed1", "metrics.jsonl"), "\n{", "\n{{"),
      "program_seed1/metrics.jsonl, line 2: not valid JSON",
    ),
    # An edited value (the checksum of each record), once invisible.
    (
      lambda d: _replace_in(os.path.join(d, "program_seed1", "metrics.jsonl"), "0.7", "0.75"),
      r"program_seed1/metrics.jsonl, line 6: the record's values do not match its crc32",
    ),
    (
      lambda d: os.remove(os.path.join(d, "program_seed1", "metrics.jsonl")),
      "program_seed1/metrics.jsonl is missing",
    ),
    (
      lambda d: _replace_in(
        os.path.join(d, "program_seed1", "results.csv"), "base,base,,1,1,", "base,base,,x,1,"
      ),
      r"program_seed1, results.csv line 2: a value is not a number",
    ),
  ],
)
def test_a_damaged_file_is_named(study, tmp_path, damage, expected):
  damage(study)
  with pytest.raises(study_summary.StudyError, match=expected):
    study_summary.summarize(study, str(tmp_path / "out"))
  assert not (tmp_path / "out").exists()


def test_correct_must_be_a_count_of_n():
  base = {
    "rl_run": "base",
    "stage": "base",
    "method": "base",
    "k_opt": "",
    "problem_key": "p",
    "prompt": "q",
    "n": "2",
    "bin_correct": "0",
    "rewards": "0 1",
  }
  for correct in ("x", "3", "-1", "1.5"):
    with pytest.raises(study_summary.StudyError, match=f"line 2: correct='{correct}'"):
      study_summary.run_from_prompt_rows([{**base, "correct": correct}], task="t", seed=0)
  for rewards in ("0", "0 1 1", "0 nan", "0 2"):
    with pytest.raises(study_summary.StudyError, match="line 2: rewards must be 2 numbers"):
      study_summary.run_from_prompt_rows(
        [{**base, "correct": "1", "rewards": rewards}], task="t", seed=0
      )


def test_the_binary_refuses_with_one_line(study, tmp_path):
  _rewrite_json(os.path.join(study, "countdown_seed0", "launch_status.json"), status="failed (1)")
  proc = binaries.run(
    "experiments.lm.study_summary",
    f"--study_dir={study}",
    f"--out_dir={tmp_path / 'o'}",
    check=False,
  )
  assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
  last = proc.stderr.strip().splitlines()[-1]
  assert last.startswith("experiments.lm.study_summary: ") and "'failed (1)'" in last, last
  assert not (tmp_path / "o").exists()
  # Flags: an output folder that is a file, a study folder that does not exist.
  (tmp_path / "file").write_text("")
  errors = binaries.flag_errors(
    "experiments.lm.study_summary",
    [
      [f"--study_dir={study}", f"--out_dir={tmp_path / 'file'}"],
      [f"--study_dir={tmp_path / 'no'}"],
    ],
  )
  assert "--out_dir" in errors[0] and "not a folder" in errors[0]
  assert "--study_dir" in errors[1] and "existing folder" in errors[1]


def test_a_split_with_overlap_stops(study, tmp_path):
  path = os.path.join(study, "program_seed2", "split.json")
  with open(path) as f:
    split = json.load(f)
  with open(path, "w") as f:
    json.dump({**split, "overlap": 3}, f)
  with pytest.raises(study_summary.StudyError, match="program_seed2.*3 training problems"):
    study_summary.summarize(study, str(tmp_path / "out"))


def test_unsolved_difference_to_base_across_seeds(out):
  per_seed = _read(os.path.join(out, "unsolved.csv"))
  checked = {"interval": 0, "no interval": 0}
  for row in _read(os.path.join(out, "unsolved_summary.csv")):
    if row["stage"] == "base":
      assert row["diff_vs_base"] == "nan" and row["diff_vs_base_verdict"] == ""
      continue
    mine = [r for r in per_seed if (r["task"], r["rl_run"]) == (row["task"], row["rl_run"])]
    diffs = [float(r["diff_vs_base"]) for r in sorted(mine, key=lambda r: int(r["seed"]))]
    assert float(row["diff_vs_base"]) == pytest.approx(np.mean(diffs), abs=1e-6)
    ses = [float(r["diff_vs_base_se"]) for r in sorted(mine, key=lambda r: int(r["seed"]))]
    if any(math.isnan(se) for se in ses):  # A seed with one base-unsolved problem.
      assert math.isnan(float(row["diff_vs_base_lo"]))
      assert row["diff_vs_base_verdict"] == "exploratory, no interval"
      checked["no interval"] += 1
      continue
    _, lo, hi, _ = _floored(diffs, ses)
    assert float(row["diff_vs_base_lo"]) == pytest.approx(max(-1.0, lo), abs=1e-6)
    excludes = max(-1.0, lo) > 0 or min(1.0, hi) < 0
    assert row["diff_vs_base_verdict"] == (
      "exploratory, excludes 0" if excludes else "exploratory, includes 0"
    )
    checked["interval"] += 1
  assert checked["interval"] > 0
