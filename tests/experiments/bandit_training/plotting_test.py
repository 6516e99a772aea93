"""Tests for experiments.bandit_training.plotting: runs that coincide are named as such."""

import numpy as np

from experiments import plot_style
from experiments.bandit_training import plotting


def _curves(seed, shape=(2, 5, 2)):
  rng = np.random.default_rng(seed)
  return {"max_at_k": rng.random(shape), "pass_at_k": rng.random(shape)}


def test_runs_with_the_same_curves_are_labelled_in_the_legend(tmp_path, monkeypatch):
  loo = _curves(0)
  # max_minus_second at k_opt = n: the same updates as loo_minus_one, up to float rounding.
  mms = {m: v * (1 + 1e-7) for m, v in loo.items()}
  near = {m: v + 1e-2 for m, v in loo.items()}  # close, but a different run
  runs = [
    ("loo_minus_one k=8", loo),
    ("grpo", _curves(1)),
    ("max_minus_second", mms),
    ("loo k=8", near),
  ]
  assert plotting.coinciding_runs(runs) == {"max_minus_second": "loo_minus_one k=8"}
  assert plotting.coinciding_runs([runs[0], runs[3]]) == {}

  figures = []
  real_save = plot_style.save
  monkeypatch.setattr(
    plot_style, "save", lambda fig, path: figures.append(fig) or real_save(fig, path)
  )
  plotting.plot_curves(runs, title="t", k_evals=[1, 4], path=str(tmp_path / "curves.png"))
  labels = [t.get_text() for t in figures[0].legends[0].get_texts()]
  assert labels == [
    "loo_minus_one k=8",
    "grpo",
    "max_minus_second (= loo_minus_one k=8)",
    "loo k=8",
  ]
