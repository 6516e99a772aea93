"""Trains tunix's GRPOLearner for two steps with maxk's estimators; run by tunix_test.py.

Usage: ``python tunix_grpo.py OUT_JSON`` with the Python of a virtual environment that
holds google-tunix and this maxk checkout.  For each case below it builds tunix's
RLCluster and GRPOLearner the way tunix's own tests do (``ToyTransformer`` and
``MockVocab`` from ``tunix.tests.test_common``, randomly initialised; the vanilla
rollout engine on one CPU device), sets ``GRPOConfig(advantage_estimator=...)`` to a
name from ``maxk.contrib.tunix``, and trains two steps.  A metric function records
what tunix hands it at each step: the prompts, the rewards and the advantages that
tunix puts into the training batch.  The script only collects; tunix_test.py checks.
"""

import json
import sys

from flax import nnx
import jax
import numpy as np
import optax
from tunix.rl import function_registry
from tunix.rl import rl_cluster as rl_cluster_lib
from tunix.rl.grpo import grpo_learner
from tunix.rl.rollout import base_rollout
from tunix.tests import test_common

from maxk.contrib import tunix as maxk_tunix

NUM_GENERATIONS = 4
PROMPTS_PER_STEP = 2
STEPS = 2
# Words of MockVocab, so the toy tokenizer encodes every prompt.
PROMPTS = ["hello world", "input string", "My name", "hello there"]


def _cluster(seed: int):
  vocab = test_common.MockVocab()
  config = test_common.ModelConfig(vocab_size=vocab.GetPieceSize())
  actor = test_common.ToyTransformer(config=config, rngs=nnx.Rngs(seed))
  reference = test_common.ToyTransformer(config=config, rngs=nnx.Rngs(seed))
  # Auto axes: the toy model's partitioning annotations then leave XLA to place values.
  mesh = jax.make_mesh((1, 1), ("fsdp", "tp"), axis_types=(jax.sharding.AxisType.Auto,) * 2)
  cluster_config = rl_cluster_lib.ClusterConfig(
    role_to_mesh={
      rl_cluster_lib.Role.ACTOR: mesh,
      rl_cluster_lib.Role.REFERENCE: mesh,
      rl_cluster_lib.Role.ROLLOUT: mesh,
    },
    rollout_engine="vanilla",
    offload_to_cpu=False,
    training_config=rl_cluster_lib.RLTrainingConfig(
      actor_optimizer=optax.sgd(1e-2),
      eval_every_n_steps=100,
      max_steps=STEPS,
    ),
    rollout_config=base_rollout.RolloutConfig(
      max_tokens_to_generate=6, max_prompt_length=8, kv_cache_size=64
    ),
  )
  cluster = rl_cluster_lib.RLCluster(
    actor=actor, reference=reference, tokenizer=vocab, cluster_config=cluster_config
  )
  return cluster


def run_case(name: str, binary: bool, seed: int) -> dict:
  """Two GRPO steps with advantage estimator ``name``; what tunix computed at each."""
  rng = np.random.default_rng(seed)

  def reward(prompts, completions, **unused):
    del prompts, unused
    if binary:
      return rng.integers(0, 2, size=len(completions)).astype(float).tolist()
    return rng.normal(size=len(completions)).round(1).tolist()  # rounded: ties occur

  steps = []

  def record(prompts, completions, rewards, advantages, **unused):
    del completions, unused
    steps.append(
      {
        "prompts": list(prompts),
        "rewards": np.asarray(rewards, np.float64).tolist(),
        "advantages": np.asarray(advantages, np.float64).tolist(),
      }
    )
    return {}

  cluster = _cluster(seed)
  trained = cluster.actor_trainer.model  # the cluster's (resharded) copy of the actor
  before = jax.tree.map(np.array, nnx.state(trained, nnx.Param))
  learner = grpo_learner.GRPOLearner(
    rl_cluster=cluster,
    algo_config=grpo_learner.GRPOConfig(
      num_generations=NUM_GENERATIONS, num_iterations=1, advantage_estimator=name
    ),
    reward_fns=reward,
    metric_fns=[record],
  )
  batches = [
    {"prompts": np.array(PROMPTS[i : i + PROMPTS_PER_STEP])}
    for i in range(0, STEPS * PROMPTS_PER_STEP, PROMPTS_PER_STEP)
  ]
  learner.train(batches)
  after = jax.tree.map(np.array, nnx.state(trained, nnx.Param))
  changed = jax.tree.leaves(jax.tree.map(lambda a, b: bool(np.any(a != b)), before, after))
  return {
    "name": name,
    "num_generations": NUM_GENERATIONS,
    "steps": steps,
    "trainer_steps": int(cluster.actor_trainer.train_steps),
    "params_changed": any(changed),
  }


def main(out_path: str) -> None:
  cases = [
    (maxk_tunix.advantage_estimator("max_at_k", k=2), False),
    (maxk_tunix.advantage_estimator("pass_at_k_training", k=2), True),
  ]
  results = [run_case(name, binary, seed) for seed, (name, binary) in enumerate(cases)]
  # tunix's own RLOO and maxk's k = 1 "loo_centered" entry on the rewards tunix produced.
  rewards = np.asarray(results[0]["steps"][0]["rewards"])
  rloo = function_registry.get_advantage_estimator("rloo")
  k1 = function_registry.get_advantage_estimator(
    maxk_tunix.advantage_estimator("max_at_k", k=1, baseline="loo_centered")
  )
  report = {
    "cases": results,
    "rloo_check": {
      "rewards": rewards.tolist(),
      "tunix_rloo": np.asarray(rloo(rewards=rewards, num_generations=NUM_GENERATIONS)).tolist(),
      "maxk_k1": np.asarray(k1(rewards=rewards, num_generations=NUM_GENERATIONS)).tolist(),
    },
    "versions": {
      "tunix": __import__("tunix").__version__,
      "jax": jax.__version__,
      "flax": __import__("flax").__version__,
    },
    "maxk_file": maxk_tunix.__file__,
  }
  with open(out_path, "w") as f:
    json.dump(report, f)


if __name__ == "__main__":
  main(sys.argv[1])
