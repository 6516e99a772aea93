"""README's "Adding an estimator": one registration, and the bandit study and the LM use it."""

import jax
import jax.numpy as jnp
import numpy as np
import optax

from experiments import estimators as estimators_lib
from experiments.bandit_variance import study
from experiments.lm import model as model_lib
from experiments.lm import rl
from experiments.lm import tasks
import maxk


def _double_loo_minus_one(rewards, k, log_ratio, weights):
  del log_ratio, weights
  return 2.0 * maxk.max_at_k_advantages(rewards, k, baseline="loo_minus_one")


# The one place: a record. Twice loo_minus_one, so its estimates are exactly twice
# loo_minus_one's on the same draws (on-policy estimators share a cell's draws).
TOY = estimators_lib.Estimator(
  name="toy_double",
  objective="max",
  kind="peer",
  fn=_double_loo_minus_one,
  uses_k=True,
  unbiased=estimators_lib.NEVER,
  label="twice loo_minus_one",
  color="#000080",
  marker="*",
)


def test_a_registered_estimator_runs_in_the_bandit_variance_study(tmp_path):
  with estimators_lib.registered(TOY):
    rows = study.run(
      str(tmp_path),
      policies=["gaussian"],
      estimators=["all"],
      ns=[4],
      ks=[2],
      num_replicates=64,
      seed=0,
      theta=1.0,
      sigma=0.1,
      gaussian_shift=0.05,
      num_arms=3,
      logit_scale=1.0,
      categorical_shift=0.5,
      pass_threshold=0.5,
      objectives=["max"],
      show_progress=False,
    )
  by_name = {r["estimator"]: r for r in rows}
  assert list(by_name) == [*estimators_lib.ESTIMATOR_NAMES, "toy_double"]
  toy, loo = by_name["toy_double"], by_name["loo_minus_one"]
  assert toy["expected_unbiased"] is False
  np.testing.assert_allclose(toy["mean"], 2 * loo["mean"], rtol=1e-4)
  np.testing.assert_allclose(toy["variance"], 4 * loo["variance"], rtol=1e-4)
  assert "toy_double" in (tmp_path / "results.csv").read_text()


def test_a_registered_peer_runs_in_the_lm_update():
  cfg = model_lib.ModelConfig(
    vocab_size=tasks.VOCAB_SIZE, max_len=14, d_model=16, num_heads=2, num_layers=1, d_ff=32
  )
  graphdef, params = model_lib.create(cfg, seed=0)
  # Any completions will do: the update's step is linear in the advantages.
  prompts = tasks.encode_prompts(["12+34=", "55+01="])
  rows = np.repeat(prompts, 4, axis=0)
  completions = np.random.default_rng(0).integers(1, tasks.VOCAB_SIZE, (8, 6))
  tokens = jnp.asarray(np.concatenate([rows, completions], axis=1))
  mask = jnp.ones((8, 6), jnp.float32)
  rewards = jnp.asarray([[0.1, 0.9, 0.4, 1.0], [0.0, 0.3, 0.3, 0.8]], jnp.float32)
  optimizer = optax.sgd(100.0)  # Steps far above float32 rounding of the params.

  def step(estimator, baseline):
    spec = rl.UpdateSpec(
      estimator=estimator, k=2, baseline=baseline, n=4, prompt_len=prompts.shape[1]
    )
    update = rl.make_update(graphdef, optimizer, spec)
    copy = jax.tree.map(jnp.copy, params)
    new, _, _ = update(copy, optimizer.init(copy), params, tokens, mask, rewards)
    return jax.tree.map(lambda a, b: a - b, new, params)

  with estimators_lib.registered(TOY):
    (run,) = rl.parse_runs("toy_double@2:1:1", n=4, num_steps=2)
    labels = run.labels("loo", inner_epochs=2)
    assert (labels.name, labels.k_opt, labels.method) == (
      "toy_double_k2-1-1",
      "2:1:1",
      "toy_double/anneal/ppo_clip",
    )
    toy_delta = step("toy_double", "loo_minus_one")
  loo_delta = step("max_at_k", "loo_minus_one")
  # SGD's step is linear in the advantages: twice loo_minus_one's step.
  toy_vec, loo_vec = (
    np.concatenate([np.ravel(x) for x in jax.tree.leaves(d)]) for d in (toy_delta, loo_delta)
  )
  assert np.linalg.norm(loo_vec) > 0
  assert np.linalg.norm(toy_vec - 2 * loo_vec) < 1e-5 * np.linalg.norm(2 * loo_vec)
  assert "toy_double" not in rl.estimator_choices()
