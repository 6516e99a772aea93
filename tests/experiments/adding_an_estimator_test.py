"""README's "Adding an estimator" and "Adding a task": each added in one place, and the
binaries run them.

The toy estimator is one record, :data:`TOY` (twice ``loo_minus_one``), registered
for a test with ``estimators.registered``; the toy task is ``lm/toy_task.py``'s. With
the toy registered: the bandit variance study (``run(config, workdir)`` on its smoke
config cut to one cell), bandit training (its smoke config validated and expanded
into runs, one run trained), the LM's RL update, and the LM's micro config end to end
on the toy task (``train.run(config, workdir)``).
"""

import csv
import json

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from experiments import estimators as estimators_lib
from experiments import schedules
from experiments.bandit_training import study as training_study
from experiments.bandit_training import validation as training_validation
from experiments.bandit_training.configs import default as training_configs
from experiments.bandit_variance import study as variance_study
from experiments.bandit_variance.configs import default as variance_configs
from experiments.bandits import training
from experiments.lm import model as model_lib
from experiments.lm import policy as policy_lib
from experiments.lm import rl
from experiments.lm import rollouts
from experiments.lm import run_specs
from experiments.lm import tasks
from experiments.lm import train
import maxk
from tests.experiments.lm import toy_task

# Integration: binaries run a registered estimator and task (README's second test step, `-m slow`).
pytestmark = pytest.mark.slow

# The shapes of the rewards the toy's function was called on: proof that a binary
# computed its advantages with it.
CALLS: list[tuple[int, ...]] = []


def _double_loo_minus_one(rewards, k, log_ratio, weights):
  del log_ratio, weights
  CALLS.append(tuple(rewards.shape))
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


def _read_csv(path):
  with open(path) as f:
    return list(csv.DictReader(f))


def test_a_registered_estimator_runs_in_the_bandit_variance_study(tmp_path):
  config = variance_configs.get_config("smoke")
  # The smoke config cut to one cell of max@k (the toy's objective): the study is
  # compiled per cell, and n < 2k skips the variance check.
  config.policies, config.objectives, config.ns, config.ks = ("gaussian",), ("max",), (4,), (3,)
  config.estimators = ("loo_minus_one", "toy_double")
  with estimators_lib.registered(TOY):
    # "all" (the full config's choice) includes it, after the built-ins.
    assert estimators_lib.parse_names(["all"]) == (*estimators_lib.ESTIMATOR_NAMES, "toy_double")
    rows = variance_study.run(config, str(tmp_path), show_progress=False)
  by_name = {r["estimator"]: r for r in rows}
  assert list(by_name) == ["loo_minus_one", "toy_double"] and len(rows) == 2
  toy, loo = by_name["toy_double"], by_name["loo_minus_one"]
  assert (toy["policy"], toy["n"], toy["k"]) == ("gaussian", 4, 3)
  assert toy["expected_unbiased"] is False and loo["expected_unbiased"] is True
  assert loo["variance"] > 0
  np.testing.assert_allclose(toy["mean"], 2 * loo["mean"], rtol=1e-4)
  np.testing.assert_allclose(toy["variance"], 4 * loo["variance"], rtol=1e-4)
  written = _read_csv(tmp_path / "results.csv")
  assert [r["estimator"] for r in written] == ["loo_minus_one", "toy_double"]
  np.testing.assert_allclose(float(written[1]["variance"]), toy["variance"], rtol=1e-6)
  assert (tmp_path / "variance_gaussian.png").is_file()


def test_a_registered_estimator_runs_in_bandit_training():
  # The study itself (compiled per run, figures) is too slow for this test: its smoke
  # config is validated and expanded into runs, and its training function run on
  # the Gaussian toy (the cheapest bandit to compile).
  config = training_configs.get_config("smoke")
  config.estimators = ("toy_double", "grpo")
  with estimators_lib.registered(TOY):
    valid = training_validation.validate(config)
    runs = training_study.make_runs(
      valid.estimators,
      valid.k_schedules,
      num_steps=valid.num_steps,
      n=valid.n,
    )
    assert [(e, s.spec) for e, s in runs] == [
      ("toy_double", "1"),
      ("toy_double", "4"),
      ("grpo", "n/a"),
    ]
    policy, init = training_study.make_bandit(
      "gaussian",
      num_arms=config.num_arms,
      best_arm_prob=config.best_arm_prob,
      decoy_reward=config.decoy_reward,
      theta0=config.theta0,
      sigma=config.sigma,
    )

    def curves(estimator, learning_rate):
      return training.train(
        policy,
        init,
        jax.random.key(config.seed),
        estimator=estimator,
        schedule=schedules.constant(4),
        num_steps=3,
        n=config.n,
        num_seeds=config.num_seeds,
        k_evals=[1, 4],
        pass_threshold=config.pass_threshold,
        optimizer="sgd",
        learning_rate=learning_rate,
      )["max_at_k"]

    toy = curves("toy_double", config.gaussian_learning_rate)
  # SGD's step is linear in the advantages and the draws are shared: the toy at a
  # learning rate trains as loo_minus_one at twice it.
  loo = curves("loo_minus_one", 2 * config.gaussian_learning_rate)
  assert not np.allclose(loo[:, -1], loo[:, 0])  # The policy moved.
  np.testing.assert_allclose(toy, loo, rtol=1e-5)


def test_a_registered_peer_runs_in_the_lm_update():
  cfg = model_lib.ModelConfig(
    vocab_size=tasks.VOCAB_SIZE, max_len=13, d_model=16, num_heads=2, num_layers=1, d_ff=32
  )
  graphdef, params = model_lib.create(cfg, seed=0)
  # Any completions will do: the update's step is linear in the advantages.
  prompts = tasks.encode_prompts(["12+34=", "55+01="])
  policy = policy_lib.Policy(graphdef, cfg, prompts.shape[1])
  rows = np.repeat(prompts, 4, axis=0)
  completions = np.random.default_rng(0).integers(1, tasks.VOCAB_SIZE, (8, policy.completion_len))
  batch = rollouts.Batch(
    tokens_BxT=jnp.asarray(np.concatenate([rows, completions], axis=1)),
    mask_BxC=jnp.ones((8, policy.completion_len), jnp.float32),
    rewards_Pxn=jnp.asarray([[0.1, 0.9, 0.4, 1.0], [0.0, 0.3, 0.3, 0.8]], jnp.float32),
  )
  optimizer = optax.sgd(100.0)  # Steps far above float32 rounding of the params.

  def step(estimator):
    spec = rl.UpdateSpec(estimator=estimator, k=2, baseline="loo_minus_one")
    update = rl.make_update(policy, optimizer, spec)
    copy = jax.tree.map(jnp.copy, params)
    new, _, _ = update(copy, optimizer.init(copy), params, batch)
    return jax.tree.map(lambda a, b: a - b, new, params)

  with estimators_lib.registered(TOY):
    assert "toy_double" in run_specs.estimator_choices()
    (run,) = run_specs.parse_runs("toy_double@2:1:1", n=4, num_steps=2)
    labels = run.labels("loo", inner_epochs=2)
    assert (labels.name, labels.k_opt, labels.method) == (
      "toy_double_k2-1-1",
      "2:1:1",
      "toy_double/anneal/ppo_clip",
    )
    toy_delta = step("toy_double")
  loo_delta = step("max_at_k")
  # SGD's step is linear in the advantages: twice loo_minus_one's step.
  toy_vec, loo_vec = (
    np.concatenate([np.ravel(x) for x in jax.tree.leaves(d)]) for d in (toy_delta, loo_delta)
  )
  assert np.linalg.norm(loo_vec) > 0
  assert np.linalg.norm(toy_vec - 2 * loo_vec) < 1e-5 * np.linalg.norm(2 * loo_vec)
  assert "toy_double" not in run_specs.estimator_choices()


def test_a_registered_estimator_and_task_run_the_lm_micro_config(tmp_path):
  config = toy_task.micro_config(runs=("toy_double@2",))
  CALLS.clear()
  with toy_task.registered(), estimators_lib.registered(TOY):
    rows = train.run(config, str(tmp_path))
  # The RL update computed its advantages [prompts_per_step, n] with the toy.
  assert (config.rl.prompts_per_step, config.rl.n) in CALLS
  with open(tmp_path / "split.json") as f:
    split = json.load(f)
  assert split["task"] == "reverse"
  assert split["key"] == "the number"
  assert split["near_definition"] == "all digits but the last in common"
  eval_problems = [int(k) for k in split["eval_problems"]]
  assert len(set(eval_problems)) == config.eval.num_prompts
  assert all(0 <= k < 100 for k in eval_problems)
  assert split["overlap"] == 0
  assert split["sft_draws"] == config.sft.steps * config.sft.batch_size
  results = _read_csv(tmp_path / "results.csv")
  # The base model and the toy's one RL run, each at k = 1..eval.n.
  assert len(results) == len(rows) == 2 * config.eval.n
  assert [r["stage"] for r in results] == ["base"] * config.eval.n + ["rl"] * config.eval.n
  assert {(r["method"], r["k_opt"]) for r in results[config.eval.n :]} == {("toy_double", "2")}
  assert {int(r["k_eval"]) for r in results} == set(range(1, config.eval.n + 1))
  assert all(0.0 <= float(r["pass_at_k"]) <= 1.0 for r in results)
  # The evaluation prompts are the toy task's: the digits of each held-out number.
  prompts = {r["prompt"] for r in _read_csv(tmp_path / "prompts.csv")}
  assert prompts == {f"{k:02d}=" for k in eval_problems}
