"""The command line every experiment binary shares: ``--config`` and ``--workdir``.

A binary's ``main.py`` defines these flags with :func:`define_flags` and calls its
``run(config, workdir)`` inside :func:`one_line_errors`. ``--config`` is an
ml_collections config file (``path`` or ``path:variant``; the binary's
``configs/default.py`` by default) whose fields ``--config.FIELD=VALUE`` overrides;
``--workdir`` (alias ``--out_dir``) is the output folder. A list field (a tuple in
the config file) is overridden comma-separated, ``--config.ns=4,8``
(:class:`ListParser`).

A binary's ``__main__`` starts it with :func:`run`: a mistake on the command line (an
unknown config field, a config file that does not exist, an unknown variant, a value
that does not parse, an unknown flag) ends the process before any work with one line on
stderr naming it and exit code 1, and ``--help`` exits 0. Ctrl-C (SIGINT) ends it with
one line, ``BINARY: interrupted (...)``, and exit code 130 (128 + SIGINT, the shell's
convention), without a traceback. The output starts clean: JAX's report that it found
no TPU (:mod:`experiments.startup_logs`) is not printed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
import contextlib
import difflib
import importlib.util
import inspect
import logging
import os
import signal
import sys
from typing import Any, NoReturn

from absl import app
from absl import flags
import ml_collections
from ml_collections import config_flags
from ml_collections.config_flags import tuple_parser

from experiments import config_checks
from experiments import outputs
from experiments import startup_logs

# At import, before any binary's module can start JAX's backends.
startup_logs.quiet_startup_noise()


class ListParser(tuple_parser.TupleParser):
  """The parser of ``--config.FIELD=TEXT`` for a list (tuple) field:
  :func:`experiments.config_checks.parse_list` (``4,8``, ``(4, 8)``, ``4``,
  ``easy,hard``, ``1,8:200:1``; empty: the empty list).

  A subclass of ml_collections' tuple parser, registered for ``tuple`` when this module
  is imported (every binary with ``--config`` imports it), so that a repeated flag
  (``--config.ns=4 --config.ns=8``) still extends the list as ml_collections does. The
  tuple parser itself reads ``easy,hard`` as one item and refuses ``1,8:200:1``, comma
  forms the README documents.
  """

  def parse(self, argument: Any) -> tuple[Any, ...]:
    if isinstance(argument, str):
      return config_checks.parse_list(argument)
    return super().parse(argument)


config_flags.register_flag_parser_for_type(tuple, ListParser())


def define_flags(
  package_file: str,
) -> tuple[flags.FlagHolder[ml_collections.ConfigDict], flags.FlagHolder[str]]:
  """Defines ``--config`` (default: ``configs/default.py`` beside ``package_file``),
  ``--workdir`` and its alias ``--out_dir``; returns the holders of the first two.

  A ``--workdir`` that cannot be created or written stops the binary while its flags
  are parsed (:func:`experiments.outputs.register_workdir_validator`).
  """
  default = os.path.join(os.path.dirname(os.path.abspath(package_file)), "configs", "default.py")
  config = define_config(
    default,
    "Config file, 'PATH' or 'PATH:VARIANT' (e.g. configs/default.py:smoke); override a "
    "field with --config.FIELD=VALUE.",
  )
  workdir = flags.DEFINE_string(
    "workdir", None, "Output folder (created; config.json and the results go here).", required=True
  )
  flags.DEFINE_alias("out_dir", "workdir")
  outputs.register_workdir_validator("workdir")
  return config, workdir


@contextlib.contextmanager
def one_line_errors(argv: Sequence[str], *errors: type[Exception]) -> Iterator[None]:
  """Runs the body of a binary's ``main``: stray arguments, or a
  :class:`experiments.config_checks.ConfigError` (the run raises it before writing
  anything) or one of ``errors`` (a binary's own refusals, e.g. a study it cannot
  summarise), end the process with exit code 1 and one line, ``BINARY: PROBLEM``.

  Every binary ends this way, so that the binary's name is written once, here
  (:func:`experiments.outputs.binary_name`), and stray arguments get the same line in
  every binary (absl's ``app.UsageError`` prints the whole usage).
  """
  if len(argv) > 1:
    _exit_with(f"unexpected arguments {list(argv[1:])} (flags are written --NAME=VALUE).")
  caught: tuple[type[Exception], ...] = (config_checks.ConfigError, *errors)
  try:
    yield
  except caught as e:
    raise SystemExit(f"{outputs.binary_name()}: {e}") from None


# The config file --config defaults to (None: --config is required), for the error lines.
_default_config: str | None = None

# absl's help flags (their parse prints the help and exits with 1).
_HELP_FLAGS = ("help", "helpshort", "helpfull", "helpxml", "?")


def define_config(
  default: str | None, help_string: str
) -> flags.FlagHolder[ml_collections.ConfigDict]:
  """Defines ``--config``, an ml_collections config file (``PATH`` or ``PATH:VARIANT``,
  locked, fields overridden with ``--config.FIELD=VALUE``); ``default=None``: none.

  Without ``--config`` on the command line, ml_collections loads ``default`` and reads
  the overrides in ``sys.argv`` here, while the flag is defined (at the binary's import),
  so an unknown field fails here: the process ends with one line, as in
  :func:`parse_flags`.
  """
  global _default_config
  _default_config = default
  try:
    return config_flags.DEFINE_config_file("config", default, help_string, lock_config=True)
  except Exception as e:  # noqa: BLE001 (ml_collections raises KeyError, AttributeError, ...)
    _exit_with(_error_line(e, sys.argv))


# The exit code of a process ended by Ctrl-C: 128 + SIGINT, as the shell reports it.
INTERRUPTED_EXIT_CODE = 128 + signal.SIGINT


def run(main: Callable[[list[str]], Any]) -> None:
  """``app.run(main)`` with :func:`parse_flags` as the flags parser.

  Ctrl-C (a ``KeyboardInterrupt`` out of ``main`` or the flag parsing) ends the process
  with :data:`INTERRUPTED_EXIT_CODE` and one line on stderr, ``BINARY: interrupted
  (Ctrl-C, ...)``, instead of Python's traceback. By then the interrupt has unwound
  ``main``: its ``finally`` blocks and context managers have run (files closed, a run's
  session recorded as interrupted). The process then ends without the interpreter's
  shutdown (:func:`_exit_now`): a shutdown that tears down JAX's objects while an
  interrupted computation's threads still run can crash (``Fatal Python error:
  Segmentation fault``), and it joins library worker threads that a second Ctrl-C
  would interrupt with a traceback.
  """
  try:
    app.run(main, flags_parser=parse_flags)
  except KeyboardInterrupt:
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # Another Ctrl-C now ends it silently.
    print(_interrupted_line(), file=sys.stderr, flush=True)
    _exit_now(INTERRUPTED_EXIT_CODE)


def _exit_now(code: int) -> NoReturn:
  """Flushes Python's logging handlers and the standard streams, then ends the process
  with ``code`` at once (``os._exit``: no atexit functions, no joining of threads, no
  teardown of modules)."""
  logging.shutdown()
  for stream in (sys.stdout, sys.stderr):
    try:
      stream.flush()
    except (OSError, ValueError):  # A closed or broken stream: nothing more to write.
      pass
  os._exit(code)


def _interrupted_line() -> str:
  """The line a binary ended by Ctrl-C prints: its name and what was left behind."""
  return (
    f"{outputs.binary_name()}: interrupted (Ctrl-C, exit code {INTERRUPTED_EXIT_CODE}); "
    "what it wrote so far may be incomplete"
  )


def parse_flags(argv: list[str]) -> list[str]:
  """Parses ``argv`` into ``flags.FLAGS``; returns the arguments left (absl's parser's
  contract).

  Any error ends the process with exit code 1 and one line on stderr,
  ``BINARY: PROBLEM``: a ``--config`` file that does not exist (with the config files
  beside it), a variant its ``get_config`` refuses (its message, which lists the valid
  ones), an unknown ``--config.FIELD`` (with the closest field), or absl's one-line
  message (a value that does not parse, an unknown flag, a failed validator). A help
  flag prints the help and exits with 0 (absl exits with 1).
  """
  spec = _config_spec(argv)
  if spec is not None:
    path = spec.split(":", 1)[0]
    if not os.path.isfile(path):
      _exit_with(f"--config={spec}: no such file{_configs_beside(path)}")
  try:
    return flags.FLAGS(argv)
  except SystemExit as e:
    if e.code == 1 and _asks_for_help(argv):
      raise SystemExit(0) from None
    raise
  except Exception as e:  # noqa: BLE001 (ml_collections' errors are not all flags.Error)
    _exit_with(_error_line(e, argv))


def _exit_with(problem: str) -> NoReturn:
  """Ends the process: ``BINARY: PROBLEM`` (its lines joined into one) on stderr, exit 1."""
  line = " ".join(part.strip() for part in problem.splitlines() if part.strip())
  raise SystemExit(f"{outputs.binary_name()}: {line}")


def _asks_for_help(argv: Sequence[str]) -> bool:
  """Whether ``argv`` holds one of absl's help flags."""
  return any(arg.lstrip("-").split("=", 1)[0] in _HELP_FLAGS for arg in argv[1:] if arg[:1] == "-")


def _config_spec(argv: Sequence[str]) -> str | None:
  """The value of ``--config`` in ``argv`` (the last one, as absl keeps), or None when
  the binary has no ``--config`` or the command line does not set it."""
  if "config" not in flags.FLAGS:
    return None
  spec = None
  for i, arg in enumerate(argv[1:], start=1):
    name, eq, value = arg.lstrip("-").partition("=")
    if arg.startswith("-") and name == "config":
      spec = value if eq else (argv[i + 1] if i + 1 < len(argv) else None)
  return spec


def _configs_beside(path: str) -> str:
  """``" (configs in DIR: a.py, b.py)"`` for the folder of ``path``, or ``""``."""
  folder = os.path.dirname(path) or "."
  if not os.path.isdir(folder):
    return ""
  names = sorted(n for n in os.listdir(folder) if n.endswith(".py") and n != "__init__.py")
  return f" (configs in {folder}: {', '.join(names)})" if names else ""


def _error_line(error: BaseException, argv: Sequence[str]) -> str:
  """The one-line problem behind ``error`` (raised while the flags were defined or
  parsed): the config's variant or an override diagnosed directly when one is wrong,
  else the error's own message."""
  spec = _config_spec(argv) or _default_config
  if spec is not None and os.path.isfile(spec.split(":", 1)[0]):
    problem = _config_problem(spec, argv)
    if problem is not None:
      return problem
  return str(error)


def _config_problem(spec: str, argv: Sequence[str]) -> str | None:
  """What is wrong with ``--config=spec`` and the ``--config.FIELD`` overrides in
  ``argv``: a variant ``get_config`` refuses, or the first override naming no field;
  None when both are fine."""
  path, *variant = spec.split(":", 1)
  shown = spec if spec != _default_config else os.path.relpath(spec)
  try:
    module_spec = importlib.util.spec_from_file_location("_config_check", path)
    assert module_spec is not None and module_spec.loader is not None
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    get_config = module.get_config
  except Exception as e:  # noqa: BLE001 (any error of the config file itself)
    return f"--config={shown}: the file cannot be loaded ({type(e).__name__}: {e})"
  try:
    config = get_config(*variant)
  except TypeError as e:
    if variant and not inspect.signature(get_config).parameters:
      return f"--config={shown}: {os.path.basename(path)} takes no variant (drop ':{variant[0]}')"
    return f"--config={shown}: {e}"
  except ValueError as e:
    return f"--config={shown}: {e}"
  for override in _overrides(argv):
    problem = _field_problem(config, override)
    if problem is not None:
      return problem
  return None


def _overrides(argv: Sequence[str]) -> list[str]:
  """The field paths of the ``--config.FIELD[=VALUE]`` (or ``--noconfig.FIELD``) arguments."""
  paths = []
  for arg in argv[1:]:
    name = arg.lstrip("-").split("=", 1)[0]
    if arg.startswith("-") and (name.startswith("config.") or name.startswith("noconfig.")):
      paths.append(name.split(".", 1)[1])
  return paths


def _field_problem(config: Any, path: str) -> str | None:
  """``--config.PATH`` names no field of ``config``: the line saying so, with the
  closest field (or the fields there); None when it names one. List indices
  (``a[0]``) are left to ml_collections."""
  node = config
  parts = path.split(".")
  for depth, part in enumerate(parts):
    if "[" in part:
      return None
    prefix = ".".join(parts[:depth])
    if not isinstance(node, ml_collections.ConfigDict):
      return f"--config.{path}: config.{prefix} is a value ({node!r}), not a group of fields"
    if part not in node:
      fields = sorted(node.keys())
      close = difflib.get_close_matches(part, fields, n=1)
      where = f"config.{prefix}" if prefix else "the config"
      hint = (
        f"did you mean --config.{prefix + '.' if prefix else ''}{close[0]}?"
        if close
        else f"its fields: {', '.join(fields)}"
      )
      return f"--config.{path}: {where} has no field {part!r}; {hint}"
    node = node[part]
  return None
