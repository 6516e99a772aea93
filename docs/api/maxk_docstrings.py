"""Sphinx extension of the API reference: maxk's docstrings as reStructuredText, and checks.

maxk's docstrings are Google style (napoleon parses their Args/Returns/Raises sections)
with the mathematics written in Unicode plain text: displayed formulas are indented
blocks, and ``|`` is an absolute value or a set size (Σ_{|I|=k}).  Two rewrites make
that legible as reStructuredText, applied before napoleon:

- an indented block after a prose paragraph (outside a section) becomes a literal
  block, so displayed formulas keep their line breaks and alignment;
- ``|`` and ``@`` outside literals are escaped, so that ``|x|`` is not read as a
  substitution reference nor ``Pass@k-Training`` as an e-mail address.

Checks, reported as Sphinx warnings (the build runs with ``-W``, so they fail it): every
public name in ``maxk.__all__`` is documented on some page, and its docstring is not
empty.  A public constant's docstring is its ``#:`` comment in the module that defines
it.
"""

from __future__ import annotations

from collections.abc import Iterable
import importlib
import pkgutil
import re
from typing import Any

# Napoleon's Google-style section headers (a line of its own at the docstring's base
# indentation); the indented lines under one are the section's body, not a formula.
_SECTIONS = frozenset(
  "args, arguments, attention, attributes, caution, danger, error, example, examples, "
  "hint, important, keyword args, keyword arguments, methods, note, notes, "
  "other parameters, parameters, receive, receives, references, return, returns, "
  "raise, raises, see also, tip, todo, warning, warnings, warn, warns, yield, yields".split(", ")
)
_HEADER = re.compile(r"^([A-Za-z][A-Za-z ]*):\s*$")
_LIST_ITEM = re.compile(r"^([-*+]|\d+[.)]|#[.)])\s")
_LITERAL_SPAN = re.compile(r"(``.*?``)")


def _indent(line: str) -> int:
  return len(line) - len(line.lstrip(" "))


def _is_header(line: str) -> bool:
  match = _HEADER.match(line)
  return bool(match) and match.group(1).lower() in _SECTIONS


def _escape(line: str) -> str:
  """``|`` -> ``\\|`` and ``@`` -> ``\\@`` outside ````literal```` spans."""
  parts = _LITERAL_SPAN.split(line)
  return "".join(
    p if i % 2 else p.replace("|", "\\|").replace("@", "\\@") for i, p in enumerate(parts)
  )


def to_rst(lines: list[str]) -> list[str]:
  """A dedented Google-style docstring with plain-text math, as reStructuredText."""
  out: list[str] = []
  previous = "start"  # kind of the last non-blank line: prose, header, other, literal
  in_section = False
  i = 0
  while i < len(lines):
    line = lines[i]
    if not line.strip():
      out.append(line)
      i += 1
      continue
    if _indent(line) == 0:
      in_section = _is_header(line)
      if in_section:
        previous = "header"
      elif line.startswith("..") or _LIST_ITEM.match(line):
        previous = "other"  # a directive or list item: indented lines continue it
      else:
        previous = "literal" if line.rstrip().endswith("::") else "prose"
      out.append(line if previous == "literal" else _escape(line))
      i += 1
      continue
    if previous == "prose" and not in_section:
      # A displayed formula: every line up to the next one at the base indentation.
      end = i
      while end < len(lines) and (not lines[end].strip() or _indent(lines[end]) > 0):
        end += 1
      block = lines[i:end]
      while block and not block[-1].strip():
        block.pop()
      if out and out[-1].strip():
        out.append("")
      out += ["::", "", *block, ""]
      i += len(block)
      previous = "literal"
      continue
    out.append(line if previous == "literal" else _escape(line))
    i += 1
  return out


def missing_from_reference(public: Iterable[str], documented: Iterable[str]) -> list[str]:
  """The public names (of ``maxk``) that no page documents as ``maxk.NAME``."""
  documented = set(documented)
  return sorted(name for name in public if f"maxk.{name}" not in documented)


def constant_docstring(name: str, value: object, package: str = "maxk._src") -> list[str]:
  """The ``#:`` comment of the module-level constant ``name`` defined in ``package``."""
  from sphinx.pycode import ModuleAnalyzer

  root = importlib.import_module(package)
  for info in pkgutil.iter_modules(root.__path__, prefix=f"{package}."):
    module = importlib.import_module(info.name)
    if getattr(module, name, None) is not value:
      continue
    docs = ModuleAnalyzer.for_module(info.name).find_attr_docs()
    if ("", name) in docs:
      return list(docs["", name])
  return []


def _public_names() -> list[str]:
  import maxk

  return list(maxk.__all__)


def _process_docstring(
  app: Any, what: str, name: str, obj: object, options: Any, lines: list[str]
) -> None:
  from sphinx.util import logging

  short = name.removeprefix("maxk.")
  public = name.startswith("maxk.") and short in _public_names()
  if public and what == "data":
    inherited = (type(obj).__doc__ or "").strip()
    if not "".join(lines).strip() or "\n".join(lines).strip() == inherited:
      lines[:] = constant_docstring(short, obj)
  if public and not "".join(lines).strip():
    logging.getLogger(__name__).warning("maxk.%s has no docstring", short)
  lines[:] = to_rst(lines)


def _check_reference(app: Any, env: Any) -> None:
  from sphinx.util import logging

  documented = env.get_domain("py").objects
  for name in missing_from_reference(_public_names(), documented):
    logging.getLogger(__name__).warning("maxk.%s is missing from the API reference", name)


def setup(app: Any) -> dict[str, Any]:
  app.setup_extension("sphinx.ext.autodoc")
  app.setup_extension("sphinx.ext.napoleon")
  # Before napoleon (priority 500), which parses the sections of the rewritten text.
  app.connect("autodoc-process-docstring", _process_docstring, priority=400)
  app.connect("env-check-consistency", _check_reference)
  return {"parallel_read_safe": True, "parallel_write_safe": True}
