"""The command line every experiment binary shares: ``--config`` and ``--workdir``.

A binary's ``main.py`` defines these flags with :func:`define_flags` and calls its
``run(config, workdir)`` inside :func:`one_line_errors`. ``--config`` is an
ml_collections config file (``path`` or ``path:variant``; the binary's
``configs/default.py`` by default) whose fields ``--config.FIELD=VALUE`` overrides;
``--workdir`` (alias ``--out_dir``) is the output folder.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
import contextlib
import os

from absl import app
from absl import flags
import ml_collections
from ml_collections import config_flags

from experiments import config_checks
from experiments import outputs


def define_flags(
  package_file: str,
) -> tuple[flags.FlagHolder[ml_collections.ConfigDict], flags.FlagHolder[str]]:
  """Defines ``--config`` (default: ``configs/default.py`` beside ``package_file``),
  ``--workdir`` and its alias ``--out_dir``; returns the holders of the first two.

  A ``--workdir`` that cannot be created or written stops the binary while its flags
  are parsed (:func:`experiments.outputs.register_out_dir_validator`).
  """
  default = os.path.join(os.path.dirname(os.path.abspath(package_file)), "configs", "default.py")
  config = config_flags.DEFINE_config_file(
    "config",
    default,
    "Config file, 'PATH' or 'PATH:VARIANT' (e.g. configs/default.py:smoke); override a "
    "field with --config.FIELD=VALUE.",
    lock_config=True,
  )
  workdir = flags.DEFINE_string(
    "workdir", None, "Output folder (created; config.json and the results go here).", required=True
  )
  flags.DEFINE_alias("out_dir", "workdir")
  outputs.register_out_dir_validator("workdir")
  return config, workdir


@contextlib.contextmanager
def one_line_errors(argv: Sequence[str]) -> Iterator[None]:
  """Runs the body of a binary's ``main``: stray arguments are a usage error, and a
  :class:`experiments.config_checks.ConfigError` ends the process with exit code 1
  and one line naming the field (the run raises it before writing anything)."""
  if len(argv) > 1:
    raise app.UsageError(f"Too many command-line arguments: {list(argv[1:])}.")
  try:
    yield
  except config_checks.ConfigError as e:
    raise SystemExit(f"{outputs.binary_name()}: {e}") from None
