"""One invocation of the trainer: its run's parts built and its workdir held.

Before anything is written the whole config is validated once (``validation``,
which also builds the task and parses the runs), the study's design note named by
``config.study_design`` is read (``provenance.design_note``) and the device mesh is
made (``parallel``); then the workdir is claimed (``workdir``: one writer at a time,
and a workdir resumes only with the config it was started with) and the invocation is
recorded as a session of ``run.json`` (``provenance.recorded``) while the run's parts
(``components``) are built and trained.
"""

from __future__ import annotations

from collections.abc import Iterator
import contextlib
import os

import jax
import ml_collections

from experiments.lm import components as components_lib
from experiments.lm import parallel
from experiments.lm import provenance
from experiments.lm import validation
from experiments.lm import workdir as workdir_lib


@contextlib.contextmanager
def opened(
  config: ml_collections.ConfigDict, workdir: str
) -> Iterator[tuple[components_lib.Components, str]]:
  """Validates ``config``, claims ``workdir`` and records the session around the
  body; yields the run's parts and the claimed workdir's path.

  Raises:
    config_checks.ConfigError: a bad config value or design note (before any write).
    workdir_lib.WorkdirError: the workdir is in use, holds another config, or its
      ``run.json`` is damaged.
  """
  valid = validation.validate_config(config, device_count=jax.device_count())
  design = provenance.design_note(config.study_design)
  mesh = parallel.make_mesh(config.num_devices)
  record = {
    **config.to_dict(),
    "workdir": os.path.abspath(workdir),
    "num_devices_used": int(mesh.size),
  }
  writer = jax.process_index() == 0
  with workdir_lib.claim(workdir, record, writer=writer) as path:
    with provenance.recorded(path, design, writer=writer):  # run.json's session.
      yield components_lib.build(valid, mesh), path
