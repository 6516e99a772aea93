"""The checks of a bandit variance config: :func:`validate`, called once by ``study.run``,
which returns the validated config that the run reads."""

from __future__ import annotations

import ml_collections

from experiments import config_checks as checks
from experiments import estimators as estimators_lib
from experiments import objectives as objectives_lib
from experiments.bandits import atlas

POLICIES = ("gaussian", "categorical")


def validate(config: ml_collections.ConfigDict) -> ml_collections.FrozenConfigDict:
  """Checks every field of ``config`` (see ``configs/default.py``); returns it validated.

  Every objective asked for must give rows: the rank objectives run on the
  categorical bandit only, ``top_m`` needs a cell with ``top_m <= k <= n``, and some
  cell must have ``k <= n``.

  Returns:
    The fields of ``config``, frozen, with the list fields as tuples of their checked
    items and ``estimators`` the names it stands for (``("all",)``: every one). The
    atlas lists are empty without ``atlas_bandits`` (then they are not checked).

  Raises:
    experiments.config_checks.ConfigError: naming the first bad field.
  """
  checks.integer(config, "seed", low=0)
  policies = checks.names(config, "policies", POLICIES)
  objectives = checks.names(config, "objectives", objectives_lib.OBJECTIVES)
  top_m = checks.integer(config, "top_m", low=1)
  try:
    estimators = estimators_lib.parse_names(checks.items(config, "estimators"))
  except ValueError as e:
    checks.fail("estimators", config.estimators, f"is refused: {e}")
  ns = checks.ints(config, "ns", low=2)
  ks = checks.ints(config, "ks", low=1)
  if not any(k <= n for k in ks for n in ns):
    checks.fail("ks", config.ks, f"must give a cell with k <= n for an n of ns={config.ns!r}")
  rank = [o for o in objectives if o != "max"]
  if rank and "categorical" not in policies:
    checks.fail(
      "objectives",
      config.objectives,
      f"has {rank}, which run on the categorical bandit only: add 'categorical' to "
      "config.policies or drop them",
    )
  if "top_m" in rank and not any(top_m <= k <= n for k in ks for n in ns):
    checks.fail("top_m", top_m, f"must have a cell with top_m <= k <= n (ks={ks}, ns={ns})")
  checks.integer(config, "num_replicates", low=2)
  checks.integer(config, "num_arms", low=2)
  checks.number(config, "sigma", above=0)
  checks.number(config, "logit_scale", at_least=0)
  for name in ("theta", "gaussian_shift", "categorical_shift", "pass_threshold"):
    checks.number(config, name)
  atlas_bandits: tuple[str, ...] = ()
  atlas_ns: tuple[int, ...] = ()
  atlas_ks: tuple[int, ...] = ()
  if checks.items(config, "atlas_bandits"):
    atlas_bandits = checks.names(config, "atlas_bandits", tuple(atlas.BANDITS))
    atlas_ns = checks.ints(config, "atlas_ns", low=2)
    atlas_ks = checks.ints(config, "atlas_ks", low=1)
    if not any(k <= n for k in atlas_ks for n in atlas_ns):
      checks.fail("atlas_ks", config.atlas_ks, f"must give a cell with k <= n ({atlas_ns=})")
    checks.integer(config, "atlas_num_samples", low=2)
    checks.integer(config, "atlas_jspo_prompts", low=2)
  lists = dict(policies=policies, objectives=objectives, estimators=estimators, ns=ns, ks=ks)
  lists.update(atlas_bandits=atlas_bandits, atlas_ns=atlas_ns, atlas_ks=atlas_ks)
  return ml_collections.FrozenConfigDict({**config.to_dict(), **lists})
