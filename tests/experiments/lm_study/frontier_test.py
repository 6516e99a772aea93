"""Tests of the pass@k-against-KL frontier and the contrasts at matched KL
(experiments.lm_study.checkpoints, frontier, matched_kl, plot_frontier): hand-built
interpolations, the first-crossing rule, and synthetic studies in which the answer
is known (a shared frontier, a known shift, the null)."""

import math
import os

import numpy as np
import pytest
from scipy import stats

from experiments.lm import contrasts
from experiments.lm_study import checkpoints
from experiments.lm_study import files
from experiments.lm_study import frontier
from experiments.lm_study import matched_kl
from experiments.lm_study import plot_frontier
from experiments.lm_study import runs as runs_lib
from experiments.lm_study import significance

STEPS = np.array([0, 50, 100, 150, 200, 250, 300])
GRPO = ("grpo/exact", "n/a")
MAXK8 = ("max_at_k/loo_minus_one/exact", "8")


def _arm(run, correct, kl, *, n, steps=None, method=GRPO):
  correct = np.asarray(correct, np.int64)
  steps = STEPS[: len(correct)] if steps is None else np.asarray(steps)
  return checkpoints.Arm(run, *method, n, steps, correct, np.asarray(kl, np.float64))


def _pass_at_k(c, n, k):
  """1 − C(n − c, k)/C(n, k) with exact integers."""
  return 1 - math.comb(n - c, k) / math.comb(n, k)


# ------------------------------------------------------------ interpolation by hand


def _hand_arm():
  """Three checkpoints on 2 prompts, n = 4: mean KL 0, 0.4, 1.0."""
  return _arm("grpo", [[1, 2], [3, 2], [4, 3]], [[0, 0], [0.2, 0.6], [0.8, 1.2]], n=4)


def test_matched_values_interpolate_linearly_in_kl_by_hand():
  arm = _hand_arm()
  # kappa = 0.1 lies between KL 0 and 0.4: w = 0.25. pass@1 = c/4.
  got = frontier.matched_values(arm, 1, 0.1)
  np.testing.assert_allclose(got, [0.75 * 0.25 + 0.25 * 0.75, 0.5], rtol=1e-6)
  # pass@2 of c of 4: c=1 -> 1/2, c=2 -> 5/6, c=3 -> 1, c=4 -> 1.
  got = frontier.matched_values(arm, 2, 0.1)
  np.testing.assert_allclose(got, [0.75 * 0.5 + 0.25 * 1.0, 5 / 6], rtol=1e-6)
  # kappa = 0.7 lies between 0.4 and 1.0: w = 0.5.
  got = frontier.matched_values(arm, 1, 0.7)
  np.testing.assert_allclose(got, [0.5 * 0.75 + 0.5 * 1.0, 0.5 * 0.5 + 0.5 * 0.75], rtol=1e-6)
  # On a checkpoint (kappa = 0.4) the value is that checkpoint's; at 0 the base's.
  np.testing.assert_allclose(frontier.matched_values(arm, 1, 0.4), [0.75, 0.5], rtol=1e-6)
  np.testing.assert_allclose(frontier.matched_values(arm, 1, 0.0), [0.25, 0.5], rtol=1e-6)


def test_pass_at_k_values_match_the_combinatorial_formula():
  n = 16
  counts = np.arange(n + 1)
  for k in (1, 3, 8, 16):
    expected = [_pass_at_k(int(c), n, k) for c in counts]
    np.testing.assert_allclose(frontier.pass_at_k_values(counts, n, k), expected, atol=1e-6)


def test_an_arm_that_never_reaches_the_level_has_no_value_and_its_seed_is_missing():
  arm = _hand_arm()
  assert np.all(np.isnan(frontier.matched_values(arm, 1, 1.5)))
  other = _arm("max_at_k_k8", [[1, 2], [2, 3], [3, 3]], [[0, 0], [0.5, 1.5], [1.8, 2.2]], n=4)
  assert matched_kl.seed_difference(other, arm, 1, 1.5) is None
  base = _arm("base", [[1, 2]], [[0, 0]], n=4)
  # Seed 0's GRPO reaches 1.5 (a copy of the far arm); seeds 1 and 2 do not.
  far = _arm("grpo", other.correct, other.kl, n=4)
  by_seed = {
    s: {"base": base, "grpo": far if s == 0 else arm, "max_at_k_k8": other} for s in range(3)
  }
  c = contrasts.Contrast("max_at_k_k8", "grpo", "pass", 1, "q")
  (row,) = matched_kl.matched_kl_rows("t", by_seed, [c], kl_levels=[1.5])
  assert (row["num_seeds"], row["num_seeds_reached"], row["seeds"]) == (3, 1, "0")
  assert math.isnan(row["lo"]) and math.isnan(row["p_value"])
  # Against the base (KL 0 only), no seed reaches a positive level.
  c_base = contrasts.Contrast("grpo", "base", "pass", 1, "q0")
  (row,) = matched_kl.matched_kl_rows("t", by_seed, [c_base], kl_levels=[0.3])
  assert row["num_seeds_reached"] == 0 and math.isnan(row["diff"])
  for kwargs in ({"kl_levels": [-0.1]}, {"kl_levels": [0.3], "stderr": "jackknife"}):
    with pytest.raises(ValueError, match="kl_levels"):
      matched_kl.matched_kl_rows("t", by_seed, [c_base], **kwargs)


def test_non_monotone_kl_is_read_at_its_first_crossing():
  # Mean KL 0, 0.5, 0.3, 0.9: 0.4 is crossed first between steps 0 and 1 (w = 0.8),
  # not again between steps 2 and 3; 0.6 is first reached at step 3, read between
  # steps 2 and 3 (w = (0.6 − 0.3)/(0.9 − 0.3) = 0.5).
  crossing = frontier.first_crossings([0.0, 0.5, 0.3, 0.9], 0.4)
  assert (int(crossing.lo), int(crossing.hi)) == (0, 1)
  assert float(crossing.weight) == pytest.approx(0.8)
  crossing = frontier.first_crossings([0.0, 0.5, 0.3, 0.9], 0.6)
  assert (int(crossing.lo), int(crossing.hi)) == (2, 3)
  assert float(crossing.weight) == pytest.approx(0.5)
  arm = _arm(
    "grpo", [[0, 0], [4, 2], [2, 2], [6, 6]], [[0, 0], [0.5, 0.5], [0.3, 0.3], [0.9, 0.9]], n=8
  )
  # pass@1 at 0.4: 0.2·(0, 0) + 0.8·(4/8, 2/8).
  np.testing.assert_allclose(frontier.matched_values(arm, 1, 0.4), [0.4, 0.2], rtol=1e-6)
  with pytest.raises(ValueError, match="level"):
    frontier.first_crossings([0.0, 1.0], -0.1)


def test_the_paired_standard_error_is_the_direct_numpy_one():
  rng = np.random.default_rng(0)
  P, n = 40, 8
  a = _arm("a", rng.integers(0, n + 1, (3, P)), np.outer([0, 0.3, 0.6], np.ones(P)), n=n)
  b = _arm("b", rng.integers(0, n + 1, (3, P)), np.outer([0, 0.4, 0.8], np.ones(P)), n=n)
  d, se = matched_kl.seed_difference(a, b, 1, 0.5)
  # By hand: a's w = (0.5 − 0.3)/0.3 between steps 1 and 2; b's w = 0.25 there.
  va = (1 - 2 / 3) * a.correct[1] / n + 2 / 3 * a.correct[2] / n
  vb = 0.75 * b.correct[1] / n + 0.25 * b.correct[2] / n
  diff = va - vb
  assert d == pytest.approx(diff.mean(), abs=1e-6)
  assert se == pytest.approx(np.std(diff, ddof=1) / np.sqrt(P), rel=1e-5)
  d, se = matched_kl.seed_difference(a, b, 1, None)
  final = (a.correct[-1] - b.correct[-1]) / n
  assert (d, se) == pytest.approx((final.mean(), np.std(final, ddof=1) / np.sqrt(P)), rel=1e-5)


# ------------------------------------------------------------------- the loader


def _csv_rows(extra=()):
  rows = [("base", 0, p, c, 0.0) for p, c in enumerate((1, 2))]
  rows += [
    ("grpo", s, p, c, kl)
    for s, cs, kls in ((50, (3, 2), (0.2, 0.6)),)
    for p, c, kl in zip(range(2), cs, kls)
  ]
  rows += list(extra)
  return [
    {"run": r, "method": "grpo/exact" if r != "base" else "base", "k_opt": "n/a", "seed": "3"}
    | {"step": str(s), "prompt": str(p), "n": "4", "correct": str(c), "kl": str(kl)}
    for r, s, p, c, kl in rows
  ]


def test_checkpoints_rows_make_arms_whose_step_zero_is_the_base():
  seed, arms = checkpoints.arms_from_rows(
    _csv_rows([("grpo", 0, p, c, 0.0) for p, c in enumerate((1, 2))]), "f"
  )
  assert seed == 3 and list(arms) == ["base", "grpo"]
  grpo = arms["grpo"]
  assert grpo.steps.tolist() == [0, 50] and grpo.correct.tolist() == [[1, 2], [3, 2]]
  assert grpo.kl.tolist() == [[0, 0], [0.2, 0.6]] and grpo.method == "grpo/exact"
  assert arms["base"].steps.tolist() == [0] and arms["base"].correct.tolist() == [[1, 2]]


@pytest.mark.parametrize(
  "extra, match",
  [
    ([("grpo", 0, 0, 4, 0.0), ("grpo", 0, 1, 2, 0.0)], "step 0 differs"),
    ([("grpo", 50, 1, 2, 0.6)], "twice"),
    ([("grpo", 100, 0, 2, 0.6)], "does not cover prompts"),
    ([("grpo", 100, 0, 5, 0.6)], "correct in"),
    ([("base", 50, 0, 1, 0.0)], "only there"),
    ([("grpo", 100, 0, 1, "nan")], "finite number"),
  ],
)
def test_malformed_checkpoints_name_the_problem(extra, match):
  with pytest.raises(files.StudyError, match=match):
    checkpoints.arms_from_rows(_csv_rows(extra), "f")


def test_task_checkpoints_reads_every_run_folder_and_checks_its_seed(tmp_path):
  def run(seed, name):
    folder = tmp_path / name
    folder.mkdir()
    return runs_lib.Run(str(folder), "countdown", seed, (), np.zeros(0), (), (), math.nan)

  runs = [run(3, "a"), run(4, "b")]
  header = list(checkpoints.COLUMNS)
  lines = [",".join(header)] + [",".join(str(x[c]) for c in header) for x in _csv_rows()]
  for r in runs:  # Both files say seed 3.
    with open(os.path.join(r.folder, "checkpoints.csv"), "w") as f:
      f.write("\n".join(lines) + "\n")
  with pytest.raises(files.StudyError, match="seed 3, but its run folder is seed 4"):
    checkpoints.task_checkpoints(runs)
  got = checkpoints.task_checkpoints(runs[:1])
  assert list(got) == ["countdown"] and list(got["countdown"]) == [3]
  os.remove(os.path.join(runs[0].folder, "checkpoints.csv"))
  with pytest.raises(files.StudyError, match="is missing"):
    checkpoints.task_checkpoints(runs)


# ------------------------------------------------------------- synthetic studies

SLOPE = 0.25  # Per-prompt success probability gained per nat of KL.


def _synthetic_seed(
  rng, speeds, *, P=128, n=16, shifts=None, tau=0.01, kl_spread=0.5, shared_profile=True
):
  """One seed: the base and an RL arm per run of ``speeds`` (run -> mean KL at the
  last step), on P new prompts. Along the way each arm sits on the frontier
  p = base_p + SLOPE·KL (+ the run's shift and a per-seed training offset of sd
  ``tau`` once it has moved); its KL grows linearly in the step with a per-seed
  speed factor, and per prompt it is KL times the prompt's length profile
  (lognormal of mean 1, shared by the arms unless not ``shared_profile``) with 10%
  noise."""
  base_p = rng.uniform(0.05, 0.5, P)
  profile = rng.lognormal(-(kl_spread**2) / 2, kl_spread, P)  # Population mean 1.
  base = rng.binomial(n, base_p)
  arms = {"base": _arm("base", base[None], np.zeros((1, P)), n=n, method=("base", "n/a"))}
  for run, speed in speeds.items():
    if not shared_profile:
      profile = rng.lognormal(-(kl_spread**2) / 2, kl_spread, P)
    K = speed * rng.lognormal(0.0, 0.15) * STEPS / STEPS[-1]
    offset = (shifts or {}).get(run, 0.0) + rng.normal(0.0, tau)
    p = np.clip(base_p + SLOPE * K[:, None] + offset * (K[:, None] > 0), 0, 1)
    correct = rng.binomial(n, p)
    correct[0] = base
    kl = K[:, None] * profile * (1 + 0.1 * rng.normal(size=(len(STEPS), P)))
    arms[run] = _arm(run, correct, kl, n=n, method=GRPO if run.startswith("grpo") else MAXK8)
  return arms


def _study(seed, speeds, *, num_seeds=8, **kwargs):
  rng = np.random.default_rng(seed)
  return {s: _synthetic_seed(rng, speeds, **kwargs) for s in range(num_seeds)}


A_VS_B = contrasts.Contrast("max_at_k_k8", "grpo", "pass", 1, "k_opt = 8 vs GRPO at pass@1")


def test_a_shared_frontier_moved_twice_as_far_is_a_final_step_gap_but_no_matched_gap():
  # The confound of issue 30: same pass@k for the same KL, GRPO moves twice as far.
  study = _study(1, {"max_at_k_k8": 0.6, "grpo": 1.2})
  for k in (1, 8):
    c = contrasts.Contrast("max_at_k_k8", "grpo", "pass", k, f"pass@{k}")
    (final,) = matched_kl.final_step_rows("t", study, [c])
    rows = matched_kl.matched_kl_rows("t", study, [c], kl_levels=[0.3, 0.5])
    assert final["kl_level"] == "final" and final["hi"] < 0 and final["p_value"] < 1e-3
    for row in rows:
      assert row["num_seeds_reached"] >= 7, row
      assert row["lo"] < 0 < row["hi"], row
      # Within a fifth of the final-step gap, and inside the interval.
      assert abs(row["diff"]) < abs(final["diff"]) / 5, (row, final)
  # Expected final gap at pass@1: SLOPE · (1.2 − 0.6) nats on average.
  (final,) = matched_kl.final_step_rows("t", study, [A_VS_B])
  assert final["lo"] < -SLOPE * 0.6 < final["hi"]


@pytest.mark.parametrize("stderr", matched_kl.STDERRS)
def test_a_shift_at_matched_kl_is_recovered(stderr):
  delta = 0.05
  study = _study(2, {"max_at_k_k8": 0.7, "grpo": 1.4}, shifts={"max_at_k_k8": delta})
  (row,) = matched_kl.matched_kl_rows(
    "t", study, [A_VS_B], kl_levels=[0.5], stderr=stderr, num_resamples=300
  )
  assert row["lo"] < delta < row["hi"] and row["lo"] > 0, row
  assert row["diff"] == pytest.approx(delta, abs=0.015)
  ses = np.array(row["se_seeds"].split(), float)
  assert np.all((ses > 0.005) & (ses < 0.05)), row["se_seeds"]


def test_null_studies_reject_at_most_at_the_nominal_rate():
  """200 synthetic 8-seed studies, both arms from the same model: the matched-KL
  test (and the final-step one) rejects at alpha = 0.05 in <= 7.5% of them."""
  c = contrasts.Contrast("max_at_k_k8", "grpo", "pass", 4, "q")
  p_matched, p_final = [], []
  for study in range(200):
    arms = _study(1000 + study, {"max_at_k_k8": 0.9, "grpo": 0.9}, P=64, tau=0.02)
    (row,) = matched_kl.matched_kl_rows("t", arms, [c], kl_levels=[0.4])
    p_matched.append(row["p_value"])
    p_final.append(matched_kl.final_step_rows("t", arms, [c])[0]["p_value"])
  rate, final_rate = (np.mean(np.asarray(p) < significance.ALPHA) for p in (p_matched, p_final))
  print(f"null rejection rate at 0.05: matched KL {rate:.3f}, final step {final_rate:.3f}")
  assert rate <= 0.075 and final_rate <= 0.075


def _w_noise_ratios(rng, *, independent, spread, reps=200):
  """(sd of d_s over repeated evaluations, mean fixed-w se_s, mean bootstrap se_s)
  for two fixed arms evaluated on new prompts and samples each time."""
  P, n, kappa = 128, 16, 0.3
  d, paired, boot = [], [], []
  for _ in range(reps):
    arms = _synthetic_seed(
      rng,
      {"max_at_k_k8": 0.8, "grpo": 1.6},
      P=P,
      n=n,
      tau=0.0,
      kl_spread=spread,
      shared_profile=not independent,
    )
    a, b = arms["max_at_k_k8"], arms["grpo"]
    d_s, se = matched_kl.seed_difference(a, b, 1, kappa)
    _, se_boot = matched_kl.bootstrap_matched_difference(a, b, 1, kappa, num_resamples=300)
    d.append(d_s)
    paired.append(se)
    boot.append(se_boot)
  return np.std(d, ddof=1), np.mean(paired), np.mean(boot)


def test_the_fixed_weight_standard_error_misses_the_kl_noise_and_the_bootstrap_does_not():
  rng = np.random.default_rng(5)
  # KL per prompt that varies a lot and independently between the arms: the mean KL,
  # hence w, is noisy, and the fixed-w se is too small; the bootstrap's is not.
  sd, paired, boot = _w_noise_ratios(rng, independent=True, spread=0.8)
  print(
    f"independent KL noise: fixed-w se / sd {paired / sd:.2f}, bootstrap se / sd {boot / sd:.2f}"
  )
  assert paired / sd < 0.9 and 0.85 < boot / sd < 1.15
  # The same spread shared by the arms (a prompt's answer length sets both arms' KL),
  # or every prompt with the same KL: the fixed-w se is right, and so is the bootstrap.
  for spread in (0.8, 0.0):
    sd, paired, boot = _w_noise_ratios(rng, independent=False, spread=spread)
    print(
      f"shared KL spread {spread}: fixed-w se / sd {paired / sd:.2f}, bootstrap {boot / sd:.2f}"
    )
    assert 0.85 < paired / sd < 1.15 and 0.85 < boot / sd < 1.15


# ------------------------------------------------------ the frontier over seeds


def test_frontier_curve_reads_every_seed_on_a_grid_up_to_the_common_reach():
  # Two seeds, 2 identical prompts, n = 10: mean KL 0, 0.2, 0.4 and 0, 0.3, 0.6;
  # pass@1 0.2, 0.4, 0.5 and 0.2, 0.5, 0.6. Every seed reached 0.4: grid 0, 0.2, 0.4.
  one = _arm("grpo", [[2, 2], [4, 4], [5, 5]], [[0, 0], [0.2, 0.2], [0.4, 0.4]], n=10)
  two = _arm("grpo", [[2, 2], [5, 5], [6, 6]], [[0, 0], [0.3, 0.3], [0.6, 0.6]], n=10)
  grid, values = frontier.frontier_curve({1: one, 2: two}, 1, num_points=3)
  np.testing.assert_allclose(grid, [0.0, 0.2, 0.4])
  # Seed 2 at 0.2: w = 2/3 from 0.2 to 0.5; at 0.4: w = 1/3 from 0.5 to 0.6.
  np.testing.assert_allclose(values, [[0.2, 0.4, 0.5], [0.2, 0.4, 0.5 + 0.1 / 3]], rtol=1e-6)
  mean, lo, hi = frontier.over_seeds(values.T)
  pair = np.array([0.5, 0.5 + 0.1 / 3])
  half = stats.t.ppf(0.975, 1) * np.std(pair, ddof=1) / np.sqrt(2)
  assert mean[2] == pytest.approx(pair.mean())
  assert (lo[2], hi[2]) == pytest.approx((pair.mean() - half, min(1.0, pair.mean() + half)))


def test_frontier_rows_hold_grid_and_checkpoint_points_of_every_run():
  study = _study(3, {"max_at_k_k8": 0.6, "grpo": 1.2}, num_seeds=3, P=32)
  rows = frontier.frontier_rows("countdown", study, (1, 8), num_points=11)
  assert all(set(r) == set(frontier.COLUMNS) for r in rows)
  for run in ("base", "max_at_k_k8", "grpo"):
    for k in (1, 8):
      mine = [r for r in rows if (r["run"], r["k"]) == (run, k)]
      grid = [r for r in mine if r["point"] == "grid"]
      points = [r for r in mine if r["point"] == "checkpoint"]
      assert len(grid) == (1 if run == "base" else 11) and grid[0]["kl"] == 0
      assert [r["step"] for r in points] == ([0] if run == "base" else STEPS.tolist())
      assert all(r["num_seeds"] == 3 and r["lo"] <= r["mean"] <= r["hi"] for r in mine)
      # Every curve starts at the base's pass@k (the shared warm start).
      base = next(r for r in rows if (r["run"], r["k"], r["point"]) == ("base", k, "grid"))
      assert grid[0]["mean"] == pytest.approx(base["mean"])
  # The grid ends at the smallest of the seeds' largest mean KL.
  reach = min(float(np.max(np.mean(study[s]["grpo"].kl, axis=1))) for s in study)
  grid_kl = [r["kl"] for r in rows if (r["run"], r["point"]) == ("grpo", "grid")]
  assert max(grid_kl) == pytest.approx(reach)
  last = [
    r for r in rows if (r["run"], r["k"], r["point"], r["step"]) == ("grpo", 1, "checkpoint", 300)
  ]
  expected = np.mean([np.mean(study[s]["grpo"].correct[-1]) / 16 for s in study])
  assert last[0]["mean"] == pytest.approx(expected, rel=1e-6)


def _png_width(path):
  with open(path, "rb") as f:
    header = f.read(24)
  assert header[:8] == b"\x89PNG\r\n\x1a\n"
  return int.from_bytes(header[16:20], "big")


def test_the_frontier_figure_is_written_at_least_900_px_wide_from_the_written_csv(tmp_path):
  study = _study(4, {"max_at_k_k8": 0.6, "grpo": 1.2, "grpo_lr3e-05": 0.6}, num_seeds=3, P=32)
  rows = frontier.frontier_rows("countdown", study, (1, 8, 16), num_points=11)
  path = frontier.write_frontier_csv(str(tmp_path), rows)
  written = files.read_csv(path, frontier.COLUMNS)
  assert len(written) == len(rows)
  for ks in ((1, 8, 16), (8,)):
    png = plot_frontier.plot_frontier(written, str(tmp_path / f"f{len(ks)}.png"), ks=ks)
    assert _png_width(png) >= 900
  # The second GRPO is told apart from the first.
  styles = plot_frontier.frontier_styles(rows)
  assert styles["grpo"].color == styles["grpo_lr3e-05"].color
  assert styles["grpo"].linestyle != styles["grpo_lr3e-05"].linestyle
  assert styles["grpo"].label != styles["grpo_lr3e-05"].label
  with pytest.raises(ValueError, match="every k"):
    plot_frontier.plot_frontier(written, str(tmp_path / "x.png"), ks=(2,))
