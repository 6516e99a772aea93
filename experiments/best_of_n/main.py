"""Flags of ``python -m experiments.best_of_n`` (see :mod:`experiments.best_of_n`).

Every flag value is checked at parse time (:func:`config.check_flag`): a bad value
stops the binary with one line naming the flag and a non-zero exit status, before
anything is written.
"""

from __future__ import annotations

import functools
import json

from absl import flags

from experiments import outputs
from experiments.best_of_n import config as config_lib
from experiments.best_of_n import experiment

_OUT_DIR = flags.DEFINE_string("out_dir", None, "Output directory.", required=True)
_SEED = flags.DEFINE_integer(
  "seed",
  0,
  "Random seed (>= 0) for the Dirichlet references and the Monte Carlo draws "
  "(same seed and flags: identical results).",
)
_N_MAX = flags.DEFINE_integer("n_max", 10_000, "Largest n of the log-spaced n grid (>= 1).")
_NUM_N = flags.DEFINE_integer(
  "num_n",
  41,
  "Points (>= 1) of the log-spaced n grid from 1 to --n_max (duplicates after rounding "
  "are dropped).",
)
_UNIFORM_SIZES = flags.DEFINE_list(
  "uniform_sizes",
  ["10", "100", "1000", "10000"],
  "Distinct alphabet sizes L >= 1 of the uniform references (rewards 0..L-1, all "
  "distinct); empty: none.",
)
_CHERRY_EPS = flags.DEFINE_float(
  "cherry_eps",
  1e-4,
  "Reference probability, in (0, 1), of the best outcome of the cherry-picked references.",
)
_CHERRY_SIZE = flags.DEFINE_integer(
  "cherry_size",
  100,
  "'cherry_top' reference: the best outcome has --cherry_eps and the "
  "other cherry_size - 1 outcomes share the rest uniformly (>= 2).",
)
_CHERRY_STEP = flags.DEFINE_float(
  "cherry_step",
  100.0,
  "'cherry_staircase' reference: rewards increase as probabilities "
  "fall by this factor (> 1; about 2 at least) per level, down to --cherry_eps "
  "(larger steps: flatter plateaus).",
)
_DIRICHLET_ALPHAS = flags.DEFINE_list(
  "dirichlet_alphas",
  ["0.1", "1.0"],
  "Distinct concentrations (> 0) of the random Dirichlet references (one reference "
  "each); empty: none.",
)
_DIRICHLET_SIZE = flags.DEFINE_integer(
  "dirichlet_size",
  1000,
  "Alphabet size (>= 1) of the Dirichlet references (rewards ~ N(0, 1)).",
)
_NUM_MC_DRAWS = flags.DEFINE_integer(
  "num_mc_draws",
  100,
  "Best-of-n draws M >= 1 per (reference, n) for the Monte Carlo estimate of d_n "
  "(its standard error needs M >= 2).",
)
_NUM_THRESHOLDS = flags.DEFINE_integer(
  "num_thresholds",
  25,
  "Rewind-and-repeat thresholds (>= 1) per reference (acceptance "
  "probabilities log-spaced from 1 down to the best outcome's probability).",
)
_RR_MAX_TRIES = flags.DEFINE_list(
  "rr_max_tries",
  ["16"],
  "Distinct try limits (integers >= 1) of rewind-and-repeat besides the unlimited one "
  "('none' is always run).",
)
_FLOAT64 = flags.DEFINE_boolean(
  "float64",
  True,
  "Compute in float64 (jax_enable_x64), so that KL gaps below float32 "
  "resolution (~1e-7 nats) are resolved; --nofloat64 runs the library's float32 default.",
)
_PROXY_ARMS = flags.DEFINE_integer(
  "proxy_arms", 1000, "Arms (>= 2) of the base policy of the proxy-selection study."
)
_PROXY_SIGMAS = flags.DEFINE_list(
  "proxy_sigmas",
  ["0", "0.5", "1", "2"],
  "Distinct scales sigma >= 0 of the proxy's errors (proxy = reward + sigma * error).",
)
_PROXY_T_DF = flags.DEFINE_float(
  "proxy_t_df", 2.0, "Degrees of freedom (> 0) of the heavy-tailed (Student-t) proxy errors."
)
_PROXY_N_MAX = flags.DEFINE_integer(
  "proxy_n_max", 1024, "Largest n (>= 1) of the proxy-selection study's log-spaced n grid."
)
_PROXY_NUM_N = flags.DEFINE_integer(
  "proxy_num_n", 21, "Points (>= 1) of the proxy-selection study's n grid."
)
_PROXY_MC_DRAWS = flags.DEFINE_integer(
  "proxy_mc_draws",
  200,
  "Simulated best-of-n draws (>= 1) per (errors, sigma, n) for the Monte Carlo check.",
)
_STUDY_FLAGS = (
  _SEED,
  _N_MAX,
  _NUM_N,
  _UNIFORM_SIZES,
  _CHERRY_EPS,
  _CHERRY_SIZE,
  _CHERRY_STEP,
  _DIRICHLET_ALPHAS,
  _DIRICHLET_SIZE,
  _NUM_MC_DRAWS,
  _NUM_THRESHOLDS,
  _RR_MAX_TRIES,
  _FLOAT64,
  _PROXY_ARMS,
  _PROXY_SIGMAS,
  _PROXY_T_DF,
  _PROXY_N_MAX,
  _PROXY_NUM_N,
  _PROXY_MC_DRAWS,
)


def _check(name, value):
  try:
    config_lib.PARSERS[name](value)
  except ValueError as e:
    raise flags.ValidationError(f"{e}.") from None  # absl prefixes "flag --NAME=VALUE: ".
  return True


def _check_staircase(values):
  try:
    config_lib.check_staircase(values["cherry_eps"], values["cherry_step"])
  except ValueError as e:
    raise flags.ValidationError(str(e)) from None
  return True


for _flag in _STUDY_FLAGS:
  flags.register_validator(_flag.name, functools.partial(_check, _flag.name))
flags.register_multi_flags_validator(["cherry_eps", "cherry_step"], _check_staircase)
outputs.register_out_dir_validator("out_dir")


def main(argv):
  config = config_lib.from_flag_values({f.name: f.value for f in _STUDY_FLAGS})
  out_dir = outputs.start_run(argv, _OUT_DIR.value)
  summary = experiment.run(config, out_dir)
  print(json.dumps(summary, indent=2, sort_keys=True))
