r"""Small-LM RL with pass@k / max@k estimators: warm start, then RL, on verifiable tasks.

Usage (python -m experiments.lm.main is the same binary):
  python -m experiments.lm --config=experiments/lm/configs/tiny.py --workdir=/tmp/lm
  python -m experiments.lm --workdir=/tmp/lm_default  # configs/default.py
  python -m experiments.lm --config=experiments/lm/configs/default.py \
      --config.rl.runs=max_at_k@1,max_at_k@8,grpo --workdir=/tmp/lm_default
  python -m experiments.lm --config=experiments/lm/configs/study_8seed.py:program \
      --config.seed=1 --workdir=/tmp/lm_study_program_1
  python -m experiments.lm --config=experiments/lm/configs/default.py \
      --config.rl.inner_epochs=4 --workdir=/tmp/lm_off_policy \
      --config.rl.runs=max_at_k@4/exact,max_at_k@4/first_order,max_at_k@4/ppo_clip

Running the same command again resumes from the last checkpoint in
WORKDIR/checkpoints (see experiments/lm/checkpointing.py). A workdir belongs to
the config it was started with: a rerun with any config field changed stops with
the fields that differ, and a second run on a workdir in use stops at once (see
experiments/lm/workdir.py). A bad config value stops the run, naming the field,
before anything is written; so does a --workdir that is empty, a file, below a
file or not writable (see experiments/outputs.py).
"""

from absl import flags

from experiments import command_line
from experiments.lm import train

_CONFIG, _WORKDIR = command_line.define_flags(train.__file__)
# Run as `python -m experiments.lm.main`, --help lists --config and --workdir too.
flags.adopt_module_key_flags(command_line)
_DISTRIBUTED = flags.DEFINE_bool(
  "distributed",
  False,
  "Call jax.distributed.initialize() first (multi-host runs); a no-op under launch.distributed.",
)


def main(argv: list[str]) -> None:
  """Runs the experiment of ``--config`` in ``--workdir`` (``train.main``); a refused
  run (bad config, busy or mismatched workdir, damaged log or checkpoint) ends with
  one error line and exit code 1."""
  with command_line.one_line_errors(argv):
    train.main(_CONFIG.value, _WORKDIR.value, distributed=_DISTRIBUTED.value)


def start() -> None:
  """Parses the flags and calls ``main`` (:func:`experiments.command_line.run`)."""
  command_line.run(main)


if __name__ == "__main__":
  start()
