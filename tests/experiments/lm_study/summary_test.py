"""Tests of experiments.lm_study (the library of experiments.lm_study.summary) on small
synthetic study folders."""

import csv
import json
import math
import os
import shutil

import numpy as np
import pytest
from scipy import stats

from experiments import outputs
from experiments.lm import dynamics
from experiments.lm import intervals
from experiments.lm import prompt_records
from experiments.lm import report_rows
from experiments.lm import run_outputs
from experiments.lm.configs import study_8seed as study_config
from experiments.lm_study import config as config_lib
from experiments.lm_study import evaluation_tables
from experiments.lm_study import figures
from experiments.lm_study import files
from experiments.lm_study import loading
from experiments.lm_study import markdown
from experiments.lm_study import methods as methods_lib
from experiments.lm_study import plot_curves
from experiments.lm_study import runs as runs_lib
from experiments.lm_study import seeds as seeds_lib
from experiments.lm_study import significance
from experiments.lm_study import styles as styles_lib
from experiments.lm_study import summarize as summary_lib
from experiments.lm_study import summary_readme as report_lib
from experiments.lm_study import training_tables
from tests import binaries

N = 8  # Samples per problem.
# The runs of the study's declared contrasts (configs/study_8seed.py), and no rloo.
RUNS = ("grpo", "max_at_k_k1", "max_at_k_k4", "max_at_k_k8", "max_at_k_k8-60-1")
TASKS = ("countdown", "program")  # The tasks of configs/study_8seed.py.


SEEDS = (0, 1, 2)  # The design's seeds in these tests (configs/study_8seed.py has 8).
# The binary's flag for the config these tests patch (a subprocess sees its 8 seeds).
STUDY_8SEED = "--study_config=experiments.lm.configs.study_8seed"
BIN_N = 32  # Samples per problem of the base model's binning evaluation.
RL_STEPS = 5
SFT_EVALS = (500, 1000, 1500)  # SFT steps of the warm-start curve.


def _config():
  """The study config of these tests: configs/study_8seed.py as patched now."""
  return config_lib.from_module(study_config)


@pytest.fixture(autouse=True, scope="module")
def _three_seeds():
  with pytest.MonkeyPatch.context() as patch:
    patch.setattr(study_config, "SEEDS", SEEDS)
    # The archived study's audit is tested in audit_test.py and, on these files, below.
    patch.setattr(study_config, "AUDIT", False)
    yield


def _evals(rng, num_problems, shift):
  """The base evaluation and one per RL run; run i solves a bit more than base, but
  max_at_k_k1 concentrates on half the problems (higher pass@1, lower pass@n, so that
  its curve crosses the base model's)."""
  evals = []
  for i, name in enumerate(("base", *RUNS)):
    p = np.clip(rng.uniform(0, 0.6, num_problems) + shift * i, 0, 1)
    if name == "max_at_k_k1":
      p = np.where(rng.uniform(size=num_problems) < 0.5, 0.95, 0.0)
    binary = rng.uniform(size=(num_problems, N)) < p[:, None]
    rewards = np.where(binary, 1.0, rng.uniform(0, 0.5, (num_problems, N))).astype(np.float32)
    rewards[:, 0] = np.where(binary[:, 0], 1.0, 0.0)  # Some exact zeros too.
    evals.append(
      prompt_records.Evaluation(
        run=name,
        stage="base" if name == "base" else "rl",
        method={"base": "base", "grpo": "grpo/ppo_clip"}.get(name, "max_at_k/loo_minus_one/exact"),
        k_opt={"base": "", "grpo": "n/a", "max_at_k_k8-60-1": "8:60:1"}.get(name, name[-1]),
        correct_P=binary.sum(-1),
        rewards_Pxn=rewards,
      )
    )
  return evals


def _step_rows(rng):
  """steps.csv rows (experiments/lm/dynamics.py's columns): a warm-start curve and
  RL_STEPS random steps per RL run, rows of the runs interleaved as train.py logs."""
  rows = []
  for step in range(1, SFT_EVALS[-1] + 1, 250):
    rows.append({"stage": "sft", "step": step, "loss": 1.0})
  for step in SFT_EVALS:
    rows.append({"stage": "sft", "step": step, "loss": 0.5, "warm_pass_at_1": rng.uniform(0, 0.4)})
  solved = {name: 0 for name in RUNS}
  for step in range(1, RL_STEPS + 1):
    for name in RUNS:
      solved[name] += int(rng.integers(0, 4))
      rows.append(
        {
          "stage": "rl",
          "run": name,
          "method": f"{name}/m",
          "step": step,
          "reward": rng.uniform(),
          "entropy": rng.uniform(1, 3),
          "kl_to_warm_start": rng.uniform(0, 0.2) * step,
          "clip_frac": rng.uniform(0, 0.05),
          "ess_frac": rng.uniform(0.8, 1),
          "grad_norm": rng.uniform(10, 300),
          "grad_norm_max": 400.0,
          "grad_clipped": float(rng.uniform() < 0.3),
          "solved_cumulative": solved[name],
        }
      )
  return rows


# checkpoints.csv of the synthetic runs (with_checkpoints): the evaluated RL steps, and
# each run's mean held-out KL at the last one in seed s, KL_SPEED[run] + KL_STEP * s.
CHECKPOINT_STEPS = (0, 2, RL_STEPS)
KL_SPEED = {
  "grpo": 0.2,
  "max_at_k_k1": 0.3,
  "max_at_k_k4": 0.25,
  "max_at_k_k8": 0.15,
  "max_at_k_k8-60-1": 0.2,
}
KL_STEP = 0.1


def checkpoint_kl(run, seed, step, num_problems):
  """``[P]`` the synthetic held-out KL per problem of ``run`` at ``step``: a profile
  over problems of mean exactly 1 (1 + (p − (P − 1)/2)/P), times the run's mean KL
  ``KL_SPEED[run] + KL_STEP·seed`` scaled linearly in the step."""
  profile = 1 + (np.arange(num_problems) - (num_problems - 1) / 2) / num_problems
  return (KL_SPEED[run] + KL_STEP * seed) * step / RL_STEPS * profile


def _write_checkpoints(folder, evals, seed, rng):
  """checkpoints.csv: the base at step 0 with its final evaluation's counts; each RL
  run at CHECKPOINT_STEPS, its last step holding its final evaluation's counts (so
  the final-step contrasts from this file are prompts.csv's), step 2 drawn between
  the base's and the final counts, KL from :func:`checkpoint_kl`."""
  base = evals[0].correct_P
  rows = []
  for e in evals:
    steps = (0,) if e.run == "base" else CHECKPOINT_STEPS
    for step in steps:
      if step == 0:
        correct = base
      elif step == RL_STEPS:
        correct = e.correct_P
      else:
        lo, hi = np.minimum(base, e.correct_P), np.maximum(base, e.correct_P)
        correct = rng.integers(lo, hi + 1)
      kl = np.zeros(len(base)) if e.run == "base" else checkpoint_kl(e.run, seed, step, len(base))
      rows += [
        {
          "run": e.run,
          "method": e.method,
          "k_opt": e.k_opt,
          "seed": seed,
          "step": step,
          "prompt": p,
          "n": N,
          "correct": int(correct[p]),
          "kl": float(kl[p]),
        }
        for p in range(len(base))
      ]
  outputs.write_results_csv(folder, rows, filename="checkpoints.csv")


def _write_run(root, task, seed, *, num_problems=12, shift=0.1, with_checkpoints=False):
  folder = os.path.join(root, f"{task}_seed{seed}")
  os.makedirs(folder)
  rng = np.random.default_rng(1000 * seed + len(task))
  evals = _evals(rng, num_problems, shift)
  if with_checkpoints:  # Its own generator: the other files stay those of the plain study.
    _write_checkpoints(folder, evals, seed, np.random.default_rng(7 + 1000 * seed + len(task)))
  bin_correct = rng.integers(0, BIN_N + 1, num_problems)
  bin_correct[:3] = 0  # A few base-unsolved problems (an interval needs 2 per seed).
  keys = [f"{task}-{seed}-{p}" for p in range(num_problems)]
  run_outputs.write_reports(
    folder, evals, bin_correct, seed=seed, prompts=[f"q{k}" for k in keys], keys=keys, bin_n=BIN_N
  )
  outputs.write_results_csv(
    folder, report_rows.reward_histogram_rows(evals, seed), filename="reward_hist.csv"
  )
  rows = [{c: row.get(c, "") for c in dynamics.STEP_COLUMNS} for row in _step_rows(rng)]
  outputs.write_results_csv(folder, rows, filename="steps.csv")
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
  if seed != 1:  # A split.json written before the near-duplicate count.
    split.update(near_eval_problems=seed + 2, near_eval_share=(seed + 2) / num_problems)
    split["near_definition"] = "synthetic neighbours"
  with open(os.path.join(folder, "split.json"), "w") as f:
    json.dump(split, f)
  with open(os.path.join(folder, "launch_status.json"), "w") as f:
    json.dump({"status": "ok", "seconds": 60.0 * (seed + 1)}, f)
  return folder


def _make_study(root, *, with_checkpoints=False):
  for task in TASKS:
    for seed in SEEDS:
      _write_run(root, task, seed, with_checkpoints=with_checkpoints)
  return root


@pytest.fixture(name="study")
def _study(tmp_path):
  """A study folder of its own, for the tests that damage it."""
  return _make_study(str(tmp_path / "study"))


FIGURE_CALLS = []  # write_figures' arguments in the `out` fixture (drawn by test_figures).


@pytest.fixture(name="out", scope="module")
def _out(tmp_path_factory):
  """The summary of one undamaged study, shared by the tests that only read it. Its
  figures are drawn once, for one task, by test_figures (drawing is the slow part)."""
  root = tmp_path_factory.mktemp("summary")
  out = str(root / "out")
  with pytest.MonkeyPatch.context() as patch:
    patch.setattr(figures, "write_figures", lambda *args: FIGURE_CALLS.append(args))
    summary_lib.summarize(_make_study(str(root / "study")), out, _config())
  return out


def _read(path):
  with open(path, newline="") as f:
    return list(csv.DictReader(f))


def test_a_config_with_audit_opens_the_readme_with_it(study, tmp_path, monkeypatch):
  """AUDIT = True puts the audit after the title; runs of 5 RL steps are too short for
  its KL and reward windows, which it says."""
  monkeypatch.setattr(study_config, "AUDIT", True)
  monkeypatch.setattr(figures, "write_figures", lambda *args: None)
  summary_lib.summarize(study, str(tmp_path / "out"), _config())
  with open(tmp_path / "out" / "README.md") as f:
    lines = f.read().splitlines()
  assert lines[2] == "## Audit"
  assert any(line.startswith("2. **Power.**") for line in lines)
  assert f"the shortest has {RL_STEPS}." in " ".join(lines)
  assert lines.index("## Audit") < lines.index("## Runs")


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
  np.testing.assert_allclose(holm, significance.holm(p_values), rtol=1e-6)
  for row, p in zip(rows, holm):
    if p < 0.05:
      assert row["verdict"] == ("better" if float(row["diff"]) > 0 else "worse")
    else:  # No margin declared: never "equivalent".
      assert row["verdict"] == "not detected"


@pytest.mark.slow  # Integration: a binary in a subprocess (README's second test step).
def test_contrasts_from_a_committed_paired_file(out, tmp_path):
  """--from_paired rebuilds contrasts.csv from paired.csv alone, identically."""
  written = summary_lib.contrasts_from_paired(
    os.path.join(out, "paired.csv"), str(tmp_path / "o"), _config()
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
  with pytest.raises(files.StudyError, match="no paired difference max_at_k_k8-60-1"):
    summary_lib.contrasts_from_paired(bad, str(tmp_path / "c"), _config())
  _replace_in(bad, "diff_se", "diff_sd")
  proc = binaries.run(
    "experiments.lm_study.summary",
    STUDY_8SEED,
    f"--from_paired={bad}",
    f"--workdir={tmp_path / 'c'}",
    check=False,
  )
  assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
  assert "lacks the column(s) ['diff_se']" in proc.stderr.strip().splitlines()[-1]
  assert not (tmp_path / "c").exists()


def test_one_seed_has_no_across_seeds_interval():
  mean, lo, hi = seeds_lib.across_seeds([0.3], (0.0, 1.0))
  assert mean == 0.3 and math.isnan(lo) and math.isnan(hi)
  mean, lo, hi = seeds_lib.across_seeds([0.3, float("nan"), 0.5], (0.0, 1.0))
  assert math.isnan(mean) and math.isnan(lo) and math.isnan(hi)
  iv = seeds_lib.seed_interval([0.3], [0.01])
  assert float(iv.mean) == 0.3 and math.isnan(iv.lo) and math.isnan(iv.p_value)


def test_unsolved_pooled_over_seeds(out):
  per_seed = _read(os.path.join(out, "unsolved.csv"))
  pooled = _read(os.path.join(out, "unsolved_summary.csv"))
  for row in pooled:
    mine = [r for r in per_seed if (r["task"], r["rl_run"]) == (row["task"], row["rl_run"])]
    assert int(row["solved"]) == sum(int(r["solved"]) for r in mine)
    assert int(row["num_base_unsolved"]) == sum(int(r["num_base_unsolved"]) for r in mine)
    p, _, lo, hi = intervals.wilson_interval(int(row["solved"]), int(row["num_base_unsolved"]))
    assert float(row["solved_fraction_lo"]) == pytest.approx(lo)
    assert float(row["solved_fraction"]) == pytest.approx(p)


def test_outputs_figures_and_report(out):
  for name in (
    *evaluation_tables.GATHERED,
    "contrasts.csv",
    "summary.csv",
    "paired_summary.csv",
    "unsolved_summary.csv",
    "dynamics.csv",
    "crossings.csv",
    "solved_training.csv",
    "reward_hist.csv",
    "splits.csv",
    "README.md",
  ):
    assert os.path.getsize(os.path.join(out, name)) > 0, name
  assert not os.path.exists(os.path.join(out, "prompts.csv"))  # The runs hold theirs.
  # Runs without run.json under configs/study.py's REQUIRE_PROVENANCE = False: no table.
  assert not os.path.exists(os.path.join(out, "provenance.csv"))
  # Runs without checkpoints.csv: no frontier, and contrasts.csv's columns as they were.
  assert not os.path.exists(os.path.join(out, "frontier.csv"))
  assert "at_kl" not in _read(os.path.join(out, "contrasts.csv"))[0]
  with open(os.path.join(out, "README.md")) as f:
    report = f.read()
  assert report.startswith("# LM study: base, GRPO and max@k, two tasks, three seeds\n")
  sections = [line for line in report.splitlines() if line.startswith("## ")]
  assert sections == [
    "## Runs",
    "## Provenance",
    "## Declared contrasts",
    "## Warm start",
    "## Training dynamics",
    "## pass@k and max@k",
    "## Crossings: where RL falls below the base model",
    "## Each method at its own k_opt",
    "## Base-unsolved problems",
    "## Training problems solved (PKPO's measure)",
    "## Reward histograms",
    "## Split closeness",
    "## Exploratory",
  ]
  declared = report.index("## Declared contrasts")
  table = "\n".join(markdown.declared_table(_read(os.path.join(out, "contrasts.csv"))))
  assert table in report[declared : report.index("## Warm start")]
  assert report.index("## Exploratory") < report.index(
    "### countdown", report.index("## Exploratory")
  )
  assert "k_opt = 8 vs k_opt = 1 |" in report  # An exploratory pair whose runs exist.
  assert "RLOO vs GRPO" not in report  # No rloo run: no row for it.
  assert f"none of the base model's {BIN_N} samples in its binning" in " ".join(report.split())
  for task in TASKS:
    for figure in ("warm_start", "training", "pass_at_k", "bins", "rewards", "contrasts"):
      assert f"]({figure}_{task}.png)" in report
  # Warm start: the count of seeds in [0.1, 0.3], from the steps files.
  for task in TASKS:
    last = [_steps_of(out, task, s)["warm"][-1] for s in SEEDS]
    inside = sum(0.1 <= v <= 0.3 for v in last)
    assert f"**{task}**: {inside} of 3 seeds in [0.1, 0.3]" in report


def test_a_results_file_that_disagrees_with_its_prompts_stops(study, tmp_path):
  path = os.path.join(study, "countdown_seed1", "results.csv")
  rows = _read(path)
  rows[5]["pass_at_k"] = str(float(rows[5]["pass_at_k"]) + 0.01)
  with open(path, "w", newline="") as f:
    writer = csv.DictWriter(f, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
  with pytest.raises(files.StudyError, match="countdown_seed1.*disagrees"):
    summary_lib.summarize(study, str(tmp_path / "out"), _config())


def test_unfinished_and_duplicate_runs_stop(study):
  # A run without prompts.csv, once accepted only when no other run lacked it.
  os.remove(os.path.join(study, "countdown_seed1", "prompts.csv"))
  with pytest.raises(files.StudyError, match="countdown seed 1: unfinished.*prompts.csv"):
    loading.load_study(study, _config())
  shutil.rmtree(os.path.join(study, "countdown_seed1"))
  shutil.copytree(os.path.join(study, "countdown_seed0"), os.path.join(study, "zz_copy"))
  with pytest.raises(files.StudyError, match="Two runs of task countdown, seed 0"):
    loading.load_study(study, _config())


def test_missing_or_empty_study_dir_stops(tmp_path):
  with pytest.raises(files.StudyError, match="not a folder"):
    loading.load_study(str(tmp_path / "nope"), _config())
  with pytest.raises(files.StudyError, match="No finished run folders"):
    loading.load_study(str(tmp_path), _config())


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
      "countdown_seed1: holds steps.csv but no config.json",
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
  with pytest.raises(files.StudyError, match=expected):
    loading.load_study(study, _config())


def test_runs_listed_by_the_launcher_must_all_be_there(study):
  listed = [{"name": n, "binary": "experiments.lm.main"} for n in sorted(os.listdir(study))]
  listed.append({"name": "config.seed-3", "binary": "experiments.lm.main"})
  listed.append({"name": "other", "binary": "experiments.best_of_n"})  # Not the study's.
  with open(os.path.join(study, "runs.json"), "w") as f:
    json.dump(listed, f)
  with pytest.raises(files.StudyError, match="config.seed-3: listed in runs.json"):
    loading.load_study(study, _config())
  listed.pop(-2)
  with open(os.path.join(study, "runs.json"), "w") as f:
    json.dump(listed, f)
  assert len(loading.load_study(study, _config()).runs) == 6


def test_allow_incomplete_names_the_missing_runs_first(study, tmp_path, monkeypatch):
  monkeypatch.setattr(figures, "write_figures", lambda *args: [])  # Not read here.
  shutil.rmtree(os.path.join(study, "program_seed2"))
  out = str(tmp_path / "out")
  summary_lib.summarize(study, out, _config(), allow_incomplete=True)
  with open(os.path.join(out, "README.md")) as f:
    report = f.read().splitlines()
  assert report[0] == "# LM study: base, GRPO and max@k, two tasks, three seeds"
  assert report[2].startswith("**INCOMPLETE STUDY.**")
  assert "* program seed 2: no run folder" in report[:10]
  summary = _read(os.path.join(out, "summary.csv"))
  seeds = {(r["task"], r["seeds"]) for r in summary if r["scope"] == "all"}
  assert seeds == {("countdown", "0 1 2"), ("program", "0 1")}


def test_report_title_counts_the_tasks_and_seeds_summarised():
  def ev(method):
    return prompt_records.Evaluation("r", "rl", method, "", np.zeros(1), np.zeros((1, 1)))

  evals = (ev("base"), ev("grpo/ppo_clip"), ev("max_at_k/loo_minus_one/exact"), ev("max_at_k/x"))

  def runs(tasks, seeds, evals=evals):
    return [runs_lib.Run("", t, s, evals, np.zeros(0), (), (), 0.0) for t in tasks for s in seeds]

  title = report_lib.report_title
  assert title(runs(TASKS, (0, 1, 2))) == "# LM study: base, GRPO and max@k, two tasks, three seeds"
  assert title(runs(TASKS, (4, 7))) == "# LM study: base, GRPO and max@k, two tasks, two seeds"
  assert (
    title(runs(TASKS[:1], range(12), evals[:2])) == "# LM study: base and GRPO, one task, 12 seeds"
  )
  assert title(runs(TASKS, range(8), ())) == "# LM study: two tasks, eight seeds"


def _replace_in(path, old, new):
  with open(path) as f:
    text = f.read()
  assert old in text
  with open(path, "w") as f:
    f.write(text.replace(old, new, 1))


def _drop_last_line(path):
  with open(path) as f:
    lines = f.readlines()
  with open(path, "w") as f:
    f.write("".join(lines[:-1]))


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
      lambda d: _replace_in(
        os.path.join(d, "program_seed1", "steps.csv"), "\nrl,grpo,", "\nrx,grpo,"
      ),
      r"program_seed1/steps.csv, line \d+: stage='rx' is neither sft nor rl",
    ),
    (
      lambda d: _replace_in(
        os.path.join(d, "program_seed1", "steps.csv"), "\nsft,,,,1,", "\nsft,,,,1x,"
      ),
      r"program_seed1/steps.csv, line 2: step='1x' is not a number",
    ),
    (
      lambda d: os.remove(os.path.join(d, "program_seed1", "steps.csv")),
      "program_seed1/steps.csv is missing",
    ),
    # A steps.csv of another run (other RL runs than its prompts.csv).
    (
      lambda d: _replace_in(os.path.join(d, "program_seed1", "steps.csv"), ",grpo,", ",rloo,"),
      r"program_seed1/steps.csv holds the RL runs .*'rloo'.*prompts.csv",
    ),
    # A run that logged fewer steps than the other seeds (a truncated log).
    (
      lambda d: _drop_last_line(os.path.join(d, "countdown_seed2", "steps.csv")),
      r"seeds of task countdown ran max_at_k_k8-60-1 for different numbers of RL steps",
    ),
    (
      lambda d: _replace_in(
        os.path.join(d, "program_seed2", "reward_hist.csv"), ",base,0,0.0,0.0,", ",base,0,0.0,0.0,9"
      ),
      "program_seed2: reward_hist.csv disagrees",
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
  with pytest.raises(files.StudyError, match=expected):
    summary_lib.summarize(study, str(tmp_path / "out"), _config())
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
    with pytest.raises(files.StudyError, match=f"line 2: correct='{correct}'"):
      runs_lib.run_from_prompt_rows([{**base, "correct": correct}], task="t", seed=0)
  for rewards in ("0", "0 1 1", "0 nan", "0 2"):
    with pytest.raises(files.StudyError, match="line 2: rewards must be 2 numbers"):
      runs_lib.run_from_prompt_rows(
        [{**base, "correct": "1", "rewards": rewards}], task="t", seed=0
      )


@pytest.mark.slow  # Integration: a binary in a subprocess (README's second test step).
def test_the_binary_refuses_with_one_line(study, tmp_path):
  _rewrite_json(os.path.join(study, "countdown_seed0", "launch_status.json"), status="failed (1)")
  proc = binaries.run(
    "experiments.lm_study.summary",
    STUDY_8SEED,
    f"--study_dir={study}",
    f"--workdir={tmp_path / 'o'}",
    check=False,
  )
  assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
  last = proc.stderr.strip().splitlines()[-1]
  assert last.startswith("experiments.lm_study.summary: ") and "'failed (1)'" in last, last
  assert not (tmp_path / "o").exists()
  # Flags: an output folder that is a file (either spelling: --out_dir sets --workdir), a
  # study folder that does not exist.
  (tmp_path / "file").write_text("")
  errors = binaries.flag_errors(
    "experiments.lm_study.summary",
    [
      [f"--study_dir={study}", f"--workdir={tmp_path / 'file'}"],
      [f"--study_dir={study}", f"--out_dir={tmp_path / 'file'}"],
      [f"--study_dir={tmp_path / 'no'}"],
    ],
  )
  for error in errors[:2]:
    assert "--workdir" in error and "not a folder" in error, error
  assert "--study_dir" in errors[2] and "existing folder" in errors[2]


def test_a_split_with_overlap_stops(study, tmp_path):
  path = os.path.join(study, "program_seed2", "split.json")
  with open(path) as f:
    split = json.load(f)
  with open(path, "w") as f:
    json.dump({**split, "overlap": 3}, f)
  with pytest.raises(files.StudyError, match="program_seed2.*3 training problems"):
    summary_lib.summarize(study, str(tmp_path / "out"), _config())


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


def _steps_of(out, task, seed):
  """The steps.csv of a run of the ``out`` fixture's study, read here: the warm-start
  values in file order, and per RL run each column in file (= step) order."""
  path = os.path.join(os.path.dirname(out), "study", f"{task}_seed{seed}", "steps.csv")
  warm, rl = [], {}
  for r in _read(path):
    if r["stage"] == "sft" and r["warm_pass_at_1"]:
      warm.append(float(r["warm_pass_at_1"]))
    elif r["stage"] == "rl":
      for column, value in r.items():
        rl.setdefault(r["run"], {}).setdefault(column, []).append(value)
  return {"warm": warm, "rl": rl}


def _floats(values):
  return np.array([float(v) for v in values], np.float64)


def _check_seeds_and_mean(row, values, bounds):
  assert [float(v) for v in row["value_seeds"].split()] == pytest.approx(values, rel=1e-5)
  mean, lo, hi = _t_interval(values)
  assert float(row["mean"]) == pytest.approx(mean, rel=1e-9)
  assert float(row["lo"]) == pytest.approx(max(bounds[0], lo), rel=1e-9)
  assert float(row["hi"]) == pytest.approx(min(bounds[1], hi), rel=1e-9)


def test_dynamics_are_the_steps_reduced_per_seed(out):
  rows = _read(os.path.join(out, "dynamics.csv"))
  # quantity -> (column, reduction over RL steps in step order, bounds of its interval).
  expected = {
    "clip_frac_median": ("clip_frac", np.median, (0, 1)),
    "grad_clipped_share": ("grad_clipped", np.mean, (0, 1)),
    "grad_norm_median": ("grad_norm", np.median, (0, np.inf)),
    "kl_to_warm_start_final": ("kl_to_warm_start", lambda x: x[-1], (-np.inf, np.inf)),
    "entropy_final": ("entropy", lambda x: x[-1], (0, np.inf)),
    "ess_frac_mean": ("ess_frac", np.mean, (0, 1)),
    "solved_cumulative_final": ("solved_cumulative", lambda x: x[-1], (0, np.inf)),
  }
  assert len(rows) == len(TASKS) * (1 + len(RUNS) * len(expected))
  for row in rows:
    steps = [_steps_of(out, row["task"], s) for s in SEEDS]
    assert row["seeds"] == "0 1 2"
    if row["quantity"] == "warm_pass_at_1_final":
      assert row["rl_run"] == "warm_start" and row["step_seeds"] == "1500 1500 1500"
      _check_seeds_and_mean(row, [s["warm"][-1] for s in steps], (0, 1))
      continue
    column, reduce, bounds = expected[row["quantity"]]
    values = [reduce(_floats(s["rl"][row["rl_run"]][column])) for s in steps]
    _check_seeds_and_mean(row, values, bounds)
    assert row["step_seeds"] == f"{RL_STEPS} {RL_STEPS} {RL_STEPS}"


def test_crossings_by_a_direct_scan(out):
  results = _read(os.path.join(out, "results.csv"))
  curves = {}  # (task, run, seed) -> {k: row}
  for r in results:
    curves.setdefault((r["task"], r["rl_run"], int(r["seed"])), {})[int(r["k_eval"])] = r
  rows = _read(os.path.join(out, "crossings.csv"))
  assert len(rows) == len(TASKS) * len(RUNS) * 2

  def scan(run_values, base_values):
    for k in range(1, N + 1):
      if run_values[k] < base_values[k]:
        return str(k)
    return "none"

  for row in rows:
    task, run, metric = row["task"], row["rl_run"], row["metric"]
    per_seed = [
      scan(
        {k: float(r[metric]) for k, r in curves[task, run, s].items()},
        {k: float(r[metric]) for k, r in curves[task, "base", s].items()},
      )
      for s in SEEDS
    ]
    assert row["crossing_k_seeds"] == " ".join(per_seed)
    mean = {
      k: np.mean([float(curves[task, run, s][k][metric]) for s in SEEDS])
      for k in curves[task, run, 0]
    }
    base = {
      k: np.mean([float(curves[task, "base", s][k][metric]) for s in SEEDS])
      for k in curves[task, run, 0]
    }
    assert row["crossing_k"] == scan(mean, base)
    assert row["n"] == str(N)
  # max_at_k_k1 was built to beat base at pass@1 and fall below it at pass@n.
  crossed = [r for r in rows if r["rl_run"] == "max_at_k_k1" and r["metric"] == "pass_at_k"]
  assert all(r["crossing_k"] not in ("none", "1") for r in crossed)
  assert any(r["crossing_k"] == "none" for r in rows)


def test_training_problems_solved_and_their_difference_to_grpo(out):
  rows = _read(os.path.join(out, "solved_training.csv"))
  assert [r["rl_run"] for r in rows] == list(RUNS) * len(TASKS)
  for row in rows:
    steps = [_steps_of(out, row["task"], s)["rl"] for s in SEEDS]
    solved = [float(s[row["rl_run"]]["solved_cumulative"][-1]) for s in steps]
    assert [float(v) for v in row["solved_seeds"].split()] == solved
    mean, lo, hi = _t_interval(solved)
    assert [float(row[c]) for c in ("solved", "solved_lo", "solved_hi")] == pytest.approx(
      [mean, max(0.0, lo), hi]
    )
    if row["rl_run"] == "grpo":
      assert row["diff_vs_grpo"] == "nan" and row["diff_vs_grpo_verdict"] == ""
      continue
    diffs = [a - float(s["grpo"]["solved_cumulative"][-1]) for a, s in zip(solved, steps)]
    mean, lo, hi = _t_interval(diffs)
    assert [float(row[c]) for c in ("diff_vs_grpo", "diff_vs_grpo_lo", "diff_vs_grpo_hi")] == (
      pytest.approx([mean, lo, hi])
    )
    excludes = lo > 0 or hi < 0
    assert row["diff_vs_grpo_verdict"] == (
      "exploratory, excludes 0" if excludes else "exploratory, includes 0"
    )


def test_reward_histograms_summed_over_seeds_and_splits(out):
  study = os.path.join(os.path.dirname(out), "study")
  rows = _read(os.path.join(out, "reward_hist.csv"))
  assert len(rows) == len(TASKS) * (1 + len(RUNS)) * len(report_rows.REWARD_BINS)
  for row in rows:
    mine = [
      r
      for s in SEEDS
      for r in _read(os.path.join(study, f"{row['task']}_seed{s}", "reward_hist.csv"))
      if r["rl_run"] == row["rl_run"]
    ]
    assert int(row["count"]) == sum(int(r["count"]) for r in mine if r["bin"] == row["bin"])
    # Every sample counted once: 3 seeds x 12 problems x N samples.
    assert sum(int(r["count"]) for r in mine) == 3 * 12 * N
    assert float(row["fraction"]) == pytest.approx(int(row["count"]) / (3 * 12 * N))
  zeros = [r for r in rows if r["bin"] == "0"]
  assert all(int(r["count"]) >= 3 * 12 * 0.3 for r in zeros if r["rl_run"] == "base")
  splits = _read(os.path.join(out, "splits.csv"))
  assert [(r["seed"], r["near_eval_problems"]) for r in splits[:3]] == [
    ("0", "2"),
    ("1", ""),
    ("2", "4"),
  ]
  assert float(splits[2]["near_eval_share"]) == pytest.approx(4 / 12)


def test_figures(out, tmp_path):
  """Every figure of one task, drawn from the `out` fixture's tables; the pass@k
  figure runs k over 1..n."""
  ((_, tables, tasks, steps),) = FIGURE_CALLS
  assert tasks == list(TASKS) and sorted(steps) == [(t, s) for t in TASKS for s in SEEDS]
  paths = figures.write_figures(str(tmp_path), tables, ["program"], steps)
  names = ("pass_at_k", "bins", "contrasts", "rewards", "training", "warm_start")
  assert sorted(paths) == sorted(str(tmp_path / f"{name}_program.png") for name in names)
  assert all(os.path.getsize(p) > 10_000 for p in paths)
  rows = [r for r in tables["summary.csv"] if r["task"] == "program" and r["scope"] == "all"]
  methods = methods_lib.methods_of_rows(rows)
  panels = styles_lib.pass_at_k_panels(methods)
  fig = plot_curves.study_pass_at_k_figure(rows, panels, styles_lib.run_styles(methods), "t")
  axes = [ax for ax in fig.axes if ax.lines]
  # No run has other off-policy weights here: two panels, pass@k and max@k.
  assert [title for title, _ in panels] == ["estimators", "k_opt and annealing"]
  assert len(axes) == 4
  for ax in axes:
    assert ax.get_xlim() == pytest.approx((1, N))
    assert all(list(line.get_xdata()) == list(range(1, N + 1)) for line in ax.lines)


# The first study's arms (docs/lm_study_3seed): (rl_run, method, k_opt).
ARMS_3SEED = (
  ("base", "base", ""),
  ("grpo", "grpo/ppo_clip", "n/a"),
  ("rloo", "rloo/ppo_clip", "n/a"),
  ("max_at_k_k1", "max_at_k/loo_minus_one/exact", "1"),
  ("max_at_k_k4", "max_at_k/loo_minus_one/exact", "4"),
  ("max_at_k_k8", "max_at_k/loo_minus_one/exact", "8"),
  ("max_at_k_k8-60-1", "max_at_k/loo_minus_one/anneal/exact", "8:60:1"),
  ("max_at_k_k4_first_order", "max_at_k/loo_minus_one/first_order", "4"),
  ("max_at_k_k4_ppo_clip", "max_at_k/loo_minus_one/ppo_clip", "4"),
)


def _arm_methods():
  return methods_lib.methods_of_rows(
    {"rl_run": run, "method": method, "k_opt": k_opt} for run, method, k_opt in ARMS_3SEED
  )


def test_one_label_and_colour_per_run_in_every_panel():
  """A run shown in several panels (max@k at k_opt = 4 in the k_opt and the
  off-policy panels) keeps its label and colour; different runs differ in either."""
  methods = _arm_methods()
  panels = styles_lib.pass_at_k_panels(methods)
  assert panels == [
    ("estimators", ["base", "grpo", "rloo", "max_at_k_k1", "max_at_k_k8"]),
    ("k_opt and annealing", ["base", *[run for run, *_ in ARMS_3SEED[3:7]]]),
    (
      "off-policy weights, k_opt=4",
      ["base", "max_at_k_k4", "max_at_k_k4_first_order", "max_at_k_k4_ppo_clip"],
    ),
  ]
  rows = [
    {
      "rl_run": run,
      "k_eval": k,
      **{m + s: 0.5 for m in ("pass_at_k", "max_at_k") for s in ("", "_lo", "_hi")},
    }
    for run, *_ in ARMS_3SEED
    for k in (1, 2, 4)
  ]
  styles = styles_lib.run_styles(methods)
  fig = plot_curves.study_pass_at_k_figure(rows, panels, styles, "t")
  drawn = {}
  for ax in fig.axes:
    for line in ax.lines:
      drawn.setdefault(line.get_label(), set()).add(line.get_color())
  assert all(len(colors) == 1 for colors in drawn.values()), drawn
  assert len(drawn) == len(ARMS_3SEED)  # One label per run, in every panel.
  looks = {(s.color, s.linestyle) for s in styles.values()}
  assert len(looks) == len(ARMS_3SEED)
  assert styles["max_at_k_k4"].label == "max@k, k_opt=4, exact"
  assert styles["max_at_k_k4_ppo_clip"].label == "max@k, k_opt=4, PPO-clip"


def test_methods_from_the_runs_records():
  methods = _arm_methods()
  assert methods_lib.own_k(methods["grpo"]) == 1 and methods_lib.own_k(methods["rloo"]) == 1
  assert methods_lib.own_k(methods["max_at_k_k8-60-1"]) == 1
  assert methods_lib.own_k(methods["max_at_k_k4_first_order"]) == 4
  assert methods_lib.reference_run(methods.values()) == "grpo"
  # Only the annealed run and max@k at its first k, same weights, train alike.
  assert methods_lib.coinciding_runs(methods.values()) == [("max_at_k_k8-60-1", "max_at_k_k8", 60)]
  # paired.csv holds each later run minus each earlier one.
  runs = [run for run, *_ in ARMS_3SEED]
  present = {(a, b) for i, a in enumerate(runs) for b in runs[:i]}
  declared = list(dict.fromkeys((c.a, c.b) for c in study_config.CONTRASTS))
  pairs = methods_lib.key_pairs(methods, present, [(c.a, c.b) for c in study_config.CONTRASTS])
  # Each declared pair once (two contrasts may compare one pair at two k).
  questions = {(c.a, c.b): c.question.split(" at ")[0] for c in reversed(study_config.CONTRASTS)}
  assert [(a, b) for a, b, _ in pairs[: len(declared)]] == declared
  assert len({frozenset((a, b)) for a, b, _ in pairs}) == len(pairs)
  assert all((a, b) in present for a, b, _ in pairs)
  labels = [label for *_, label in pairs]
  # k_opt = 4 ran with three weights here: its label names them.
  shown = [label.replace("k_opt = 4 exact", "k_opt = 4") for label in labels[: len(declared)]]
  assert shown == [questions[pair] for pair in declared]
  for expected in (
    "RLOO vs base",
    "RLOO vs GRPO",
    "k_opt = 4 exact vs k_opt = 1",
    "annealed 8 -> 1 vs k_opt = 1",
    "k_opt = 4 first-order vs k_opt = 4 exact",
    "k_opt = 4 PPO-clip vs k_opt = 4 exact",
  ):
    assert expected in labels
  # Runs the study did not run give no pair.
  only = methods_lib.key_pairs(methods, {("grpo", "base")}, declared)
  assert only == [("grpo", "base", "GRPO vs base")]


def test_the_training_figure_says_which_curves_coincide(out):
  ((_, tables, _, steps),) = FIGURE_CALLS
  rows = [r for r in tables["summary.csv"] if r["task"] == "program" and r["scope"] == "all"]
  methods = methods_lib.methods_of_rows(rows)
  coinciding = methods_lib.coinciding_runs(methods.values())
  assert coinciding == [("max_at_k_k8-60-1", "max_at_k_k8", 60)]
  curves = training_tables.training_curves(
    steps, "program", ["reward", "entropy", "kl_to_warm_start", "clip_frac"]
  )
  fig = plot_curves.study_training_figure(curves, styles_lib.run_styles(methods), "t", coinciding)
  notes = [t.get_text() for legend in fig.legends for t in legend.get_texts()]
  assert any(
    "step 60" in t
    and "max@k, annealed 8 -> 1 and max@k, k_opt=8 are identical by construction" in t
    for t in notes
  ), notes
  with open(os.path.join(out, "README.md")) as f:
    report = " ".join(f.read().split())
  assert (
    "Up to step 60 (dotted line) annealed 8 -> 1 and k_opt = 8 are identical by construction"
    in report
  )
